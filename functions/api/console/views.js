// The pages. Each renders into `root` from API calls only.

import { h, fill, fmt, dur, badge, table, facts, toast, confirmAction, showError, link, enc, jobHref, execHref } from './ui.js';
import { get, post, call, all } from './api.js';
import { scheduleInWords } from './schedule.js';
import { jobForm } from './jobform.js';
import { lineChart } from './chart.js';
import { runStrip, stripLegend } from './strip.js';

/** Fires in the jobs list's history strip. */
const HISTORY = 12;

/** Pause / resume / trigger / delete, each confirmed. Resolves true when done. */
async function jobAction(job, action) {
  const id = job.jobId;
  const ask = {
    pause: [`Pause ${id}? Fires stop until you resume it; its future executions are cancelled.`, 'Pause'],
    resume: [`Resume ${id}? It fires again from its next scheduled time.`, 'Resume'],
    trigger: [`Run ${id} now, once, outside its schedule?`, 'Run now'],
    delete: [`Delete ${id}? It stops firing; its history stays readable.`, 'Delete'],
  }[action];
  // A resume may replay the fires the pause skipped (docs/api.md, "Resume and catch-up").
  const choice = action === 'resume'
    ? { label: 'Fires the pause skipped', options: [['none', 'Skip them'], ['last', 'Run the latest one'], ['all', 'Run each of them']] }
    : null;
  const { ok, choice: catchUp } = await confirmAction(ask[0], { action: ask[1], choice });
  if (!ok) return false;
  try {
    if (action === 'resume' && catchUp && catchUp !== 'none') {
      const r = await post(`/v1/jobs/${enc(id)}/resume`, { catchUp });
      const c = r.catchUp || { fires: 0, created: 0 };
      toast(`Resumed ${id}: ${c.fires} skipped fire${c.fires === 1 ? '' : 's'} caught up, ${c.created} started`);
      return true;
    }
    if (action === 'delete') await call('DELETE', `/v1/jobs/${enc(id)}`, undefined, { 'If-Match': job.etag });
    else if (action === 'trigger') {
      const e = await post(`/v1/jobs/${enc(id)}/trigger`);
      toast(`Started ${e.executionId}`);
      return true;
    } else await post(`/v1/jobs/${enc(id)}/${action}`);
    toast(`${ask[1]}: ${id} done`);
    return true;
  } catch (e) {
    showError(e);
    return false;
  }
}

function actionButtons(job, after) {
  const b = (action, label, cls) => h('button', {
    type: 'button', class: cls, 'data-action': action, 'aria-label': `${label} ${job.jobId}`,
    onclick: async () => { if (await jobAction(job, action)) after(action); },
  }, label);
  if (job.state === 'DELETED') return h('span', { class: 'muted' }, 'deleted');
  return h('div', { class: 'actions' },
    job.state === 'ENABLED' ? b('pause', 'Pause', 'ghost') : b('resume', 'Resume', 'ghost'),
    b('trigger', 'Run now', 'ghost'),
    b('delete', 'Delete', 'ghost'));
}

// ---- jobs ------------------------------------------------------------------------------------

/** Whether and how a job fires on events (docs/dependencies.md, docs/events.md). */
function eventsInWords(e) {
  if (!e) return 'no';
  return e.oncePerPeriod ? 'once per period: an event runs the next fire now, whichever comes first' : 'each event runs';
}

/** What the job's target calls: its URL, function, queue, ARN or handler; an ECS task by its
 *  container, task definition and cluster (and the launch type when not the default). */
function targetInWords(t) {
  if (t.type === 'ecs') {
    return `container ${t.containerName} of ${t.taskDefinitionArn} on ${t.clusterArn}` +
      (t.launchType && t.launchType !== 'FARGATE' ? ` (${t.launchType})` : '');
  }
  return t.url || t.function || t.queueUrl || t.eventBusArn || t.topicArn || t.stateMachineArn || t.handler;
}

/** The job's deadlines and outcome policy in words (docs/outcomes.md). */
function outcomesInWords(d) {
  const parts = [];
  if (d.maxRuns) parts.push(`ends after ${d.maxRuns} fires`);
  if (d.outcomeNotify) parts.push(`also notifies ${d.outcomeNotify.url}`);
  if (d.finishDeadlineSecs) parts.push(`must finish within ${d.finishDeadlineSecs} s`);
  if (d.autoPauseAfterDeadFires) parts.push(`pauses after ${d.autoPauseAfterDeadFires} dead fires in a row`);
  const o = d.outcomeEvents;
  const tracked = o || d.autoPauseAfterDeadFires;
  parts.push(o && o.succeeded ? 'an event for every outcome' : tracked ? 'events for failures and recoveries' : 'events for failures');
  return parts.join('; ');
}

/** A sharded or broadcast job's fan-out in words (docs/children.md). */
function fanOut(d) {
  if (d.shards) return `${d.shards} shards`;
  if (d.broadcast) return `broadcast: ${d.broadcast.members.join(', ')}`;
  return '—';
}

/** A child's place in its fire: shard i of n, or the member. */
function childLabel(c) {
  if (!c) return '—';
  if (c.kind === 'shard') return `shard ${c.shardIndex}${c.shardTotal ? ` of ${c.shardTotal}` : ''}`;
  if (c.kind === 'member') return `member ${c.member}`;
  if (c.kind === 'item') return `item ${c.item}`;
  return c.tag;
}

export async function jobsPage(root, _p, query) {
  const filters = { state: query.get('state') || '', pool: query.get('pool') || '', q: query.get('q') || '' };
  const list = h('div', { id: 'jobs-list' }, h('p', { class: 'muted' }, 'Loading…'));
  const stateSel = h('select', { id: 'filter-state' }, ['', 'ENABLED', 'PAUSED', 'COMPLETED', 'DELETED'].map((s) =>
    h('option', { value: s, selected: s === filters.state }, s || 'any')));
  const pool = h('input', { id: 'filter-pool', value: filters.pool, placeholder: 'any' });
  const search = h('input', { id: 'filter-q', type: 'search', value: filters.q, placeholder: 'job id contains' });
  const apply = () => {
    const q = new URLSearchParams();
    if (stateSel.value) q.set('state', stateSel.value);
    if (pool.value) q.set('pool', pool.value);
    if (search.value) q.set('q', search.value);
    location.hash = `#/jobs${q.toString() ? `?${q}` : ''}`;
  };
  fill(root, 
    h('h1', {}, 'Jobs', h('a', { class: 'button', href: '#/jobs/new', id: 'new-job' }, 'New job')),
    h('form', { class: 'toolbar', role: 'search', onsubmit: (e) => { e.preventDefault(); apply(); } },
      h('label', { for: 'filter-state' }, 'State', stateSel),
      h('label', { for: 'filter-pool' }, 'Pool', pool),
      h('label', { for: 'filter-q' }, 'Search', search),
      h('button', { type: 'submit', class: 'ghost' }, 'Filter')),
    list);
  let jobs;
  try {
    jobs = await all(`/v1/jobs${filters.state === 'DELETED' ? '?includeDeleted=true' : ''}`);
  } catch (e) { showError(e, list); return; }
  jobs = jobs.filter((j) => (!filters.state || j.state === filters.state)
    && (!filters.pool || j.definition.pool === filters.pool)
    && (!filters.q || j.jobId.includes(filters.q)));
  const last = new Map();
  const lastCell = (j) => h('span', { 'data-last': j.jobId }, '…');
  const historyCell = (j) => h('span', { 'data-history': j.jobId }, '…');
  fill(list, table([
    { label: 'Job', cell: (j) => link(jobHref(j.jobId), j.jobId) },
    { label: 'State', cell: (j) => badge(j.state) },
    { label: 'Schedule', cell: (j) => scheduleInWords(j.definition.schedule.expression, j.definition.schedule.timezone) },
    { label: 'Pool', cell: (j) => j.definition.pool + (j.definition.priority && j.definition.priority !== 'normal' ? ` (${j.definition.priority})` : ''), narrow: true },
    { label: 'Fan-out', cell: (j) => fanOut(j.definition), narrow: true },
    { label: 'Last run', cell: lastCell },
    { label: `Last ${HISTORY} fires`, cell: historyCell },
    { label: 'Next fire', cell: (j) => fmt(j.nextFireAt), narrow: true },
    { label: 'Actions', cell: (j) => actionButtons(j, () => route()) },
  ], jobs, { empty: 'No jobs yet. Create one with “New job”.' }));
  if (jobs.length) list.append(stripLegend());
  // Last run and history per job: one small list call each, after the table is on screen.
  await Promise.all(jobs.map(async (j) => {
    const cell = list.querySelector(`[data-last="${CSS.escape(j.jobId)}"]`);
    const history = list.querySelector(`[data-history="${CSS.escape(j.jobId)}"]`);
    try {
      // The list filters children out after DynamoDB's limit and a fire's children sort next to
      // it, so a fan-out job's page can be empty with a cursor: follow it (a few pages at most).
      // `until` now: the last run is the newest fire due, not one the tick has planned ahead.
      const fan = j.definition.shards || j.definition.broadcast;
      const path = `/v1/jobs/${enc(j.jobId)}/executions?limit=${fan ? 100 : HISTORY}&until=${enc(new Date().toISOString())}`;
      let page = await get(path);
      for (let i = 0; i < 3 && !page.items.length && page.nextCursor; i += 1) {
        page = await get(`${path}&cursor=${enc(page.nextCursor)}`);
      }
      const e = page.items[0];
      last.set(j.jobId, e);
      fill(cell, e ? h('span', {}, badge(e.status), ' ', link(execHref(e.executionId), fmt(e.scheduledAt))) : '—');
      const tz = j.definition.schedule.timezone || 'UTC';
      const next = j.state === 'ENABLED' && j.nextFireAt ? [j.nextFireAt] : [];
      // With a business calendar, whether the next fire is rolled is the upcoming window's answer
      // (when that window reaches it).
      let calendar = null;
      if (next.length && j.definition.schedule.businessCalendar) {
        const u = await get(`/v1/jobs/${enc(j.jobId)}/upcoming?days=90`).catch(() => null);
        if (u && u.fires.length && Date.parse(u.fires[0]) === Date.parse(next[0])) calendar = u;
      }
      fill(history, runStrip(page.items.slice(0, HISTORY), next, { def: j.definition, tz, execHref, id: j.jobId, calendar }));
    } catch { cell.textContent = '?'; history.textContent = '?'; }
  }));
}

export async function newJobPage(root) {
  const box = h('div');
  fill(root, h('h1', {}, 'New job'), box);
  jobForm(box, null, { onSaved: (id) => { location.hash = jobHref(id); } });
}

export async function editJobPage(root, [id]) {
  const box = h('div');
  fill(root, h('h1', {}, `Edit ${id}`), box);
  try {
    const job = await get(`/v1/jobs/${enc(id)}`);
    jobForm(box, job, { onSaved: () => { location.hash = jobHref(id); } });
  } catch (e) { showError(e, box); }
}

/** Upcoming fires with the daylight-saving transitions in range, as the API explains them. */
function upcoming(u, tz) {
  const notes = new Map();
  for (const t of u.transitions) for (const a of t.affected) if (a.at) notes.set(a.at, a.note);
  const rolls = new Map((u.rolled || []).map((r) => [r.at, `rolled from ${fmt(r.rolledFrom, tz)} (${r.reason})`]));
  const rows = u.fires.map((at) => ({ at, note: notes.get(at), roll: rolls.get(at) }));
  return h('div', { id: 'upcoming' },
    u.transitions.length
      ? h('ul', { id: 'dst-transitions' }, u.transitions.map((t) => h('li', { class: 'dst' }, h('span', { class: 'note' }, t.note),
        t.affected.map((a) => h('span', { class: 'dst', 'data-dst': 'affected' }, a.note)))))
      : h('p', { class: 'muted' }, `No daylight-saving transition in ${tz} in this range.`),
    table([
      { label: `Local time (${tz})`, cell: (r) => h('span', {}, fmt(r.at, tz), r.note ? h('span', { class: 'dst note', 'data-dst': 'fire' }, r.note) : null,
        r.roll ? h('span', { class: 'roll note', 'data-roll': 'fire' }, r.roll) : null) },
      { label: 'UTC', cell: (r) => fmt(r.at), narrow: true },
    ], rows, { empty: 'No fires in this range.' }));
}

function diffLines(a, b) {
  // Line diff by longest common subsequence: small documents, exact output.
  const x = a.split('\n'); const y = b.split('\n');
  const n = x.length; const m = y.length;
  const L = Array.from({ length: n + 1 }, () => new Array(m + 1).fill(0));
  for (let i = n - 1; i >= 0; i -= 1) for (let j = m - 1; j >= 0; j -= 1) {
    L[i][j] = x[i] === y[j] ? L[i + 1][j + 1] + 1 : Math.max(L[i + 1][j], L[i][j + 1]);
  }
  const out = [];
  let i = 0; let j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && x[i] === y[j]) { out.push(h('span', {}, `  ${x[i]}\n`)); i += 1; j += 1; }
    else if (i < n && (j >= m || L[i + 1][j] >= L[i][j + 1])) { out.push(h('span', { class: 'del' }, `- ${x[i]}`)); i += 1; }
    else { out.push(h('span', { class: 'add' }, `+ ${y[j]}`)); j += 1; }
  }
  return out;
}

function versionsBox(job, pick) {
  const box = h('div', { id: 'versions' });
  const n = job.version;
  const opts = (sel) => Array.from({ length: n }, (_, i) => n - i).map((v) => h('option', { value: v, selected: v === sel }, `v${v}`));
  const a = h('select', { id: 'diff-from', 'aria-label': 'Older version' }, opts(Math.max(1, (pick && pick <= n ? pick : n) - 1)));
  const b = h('select', { id: 'diff-to', 'aria-label': 'Newer version' }, opts(pick && pick <= n ? pick : n));
  const out = h('pre', { class: 'diff', id: 'diff', tabindex: 0 });
  // Every version in one list call (GET /v1/jobs/{id}/versions, newest first), read once.
  const listed = all(`/v1/jobs/${enc(job.jobId)}/versions?limit=100`, 1000)
    .then((vs) => new Map(vs.map((x) => [x.version, x])));
  const version = async (v) => {
    const found = (await listed).get(Number(v));
    if (!found) throw new Error(`version v${v} is no longer kept`);
    return found;
  };
  const show = async () => {
    try {
      const [va, vb] = await Promise.all([version(a.value), version(b.value)]);
      // Absent fields (`null`) are left out: a diff shows what a version sets.
      const text = (v) => JSON.stringify({ state: v.state, definition: v.definition }, (_, x) => (x === null ? undefined : x), 2);
      fill(out, ...diffLines(text(va), text(vb)));
    } catch (e) { showError(e, out); }
  };
  a.addEventListener('change', show); b.addEventListener('change', show);
  box.append(h('div', { class: 'toolbar' }, h('label', {}, 'From', a), h('label', {}, 'To', b)), out);
  show();
  return box;
}

function lagChart(execs) {
  const done = execs.filter((e) => e.startedAt).reverse();
  const t = (e) => Date.parse(e.scheduledAt);
  const series = [
    { label: 'Schedule lag (created after the fire)', cls: 'l1', points: done.map((e) => [t(e), Math.max(0, Date.parse(e.createdAt) - t(e))]) },
    { label: 'Start lag', cls: 'l2', points: done.map((e) => [t(e), e.startLagMs]) },
    { label: 'Duration', cls: 'l3', points: done.filter((e) => e.finishedAt).map((e) => [t(e), Date.parse(e.finishedAt) - Date.parse(e.startedAt)]) },
  ];
  return h('figure', { class: 'chart', id: 'lag-chart' },
    lineChart(series, { title: 'Schedule lag, start lag and duration per execution' }),
    h('figcaption', { class: 'legend' }, series.map((s) => h('span', {}, h('span', { class: `sw ${s.cls}` }), s.label))));
}

export function execTable(execs, { job = false } = {}) {
  return table([
    { label: 'Execution', cell: (e) => link(execHref(e.executionId), e.executionId) },
    job ? { label: 'Job', cell: (e) => link(jobHref(e.jobId), e.jobId) } : null,
    { label: 'Status', cell: (e) => badge(e.status) },
    { label: 'Scheduled', cell: (e) => fmt(e.scheduledAt) },
    { label: 'Start lag', cell: (e) => dur(e.startLagMs), num: true, narrow: true },
    { label: 'Ran', cell: (e) => (e.finishedAt && e.startedAt ? dur(Date.parse(e.finishedAt) - Date.parse(e.startedAt)) : '—'), num: true, narrow: true },
    { label: 'Attempt', cell: (e) => e.attempt, num: true, narrow: true },
  ].filter(Boolean), execs, { empty: 'No executions yet.' });
}

// ---- dependencies ----------------------------------------------------------------------------

function periodText(d) {
  if (d.period === 'offset') return `offset ${d.offsetSecs} s`;
  return d.period || 'same';
}

// A job's dependency graph: what its fires wait for → the job → who waits for its runs, each a
// link (docs/dependencies.md). Wraps to one column at phone width.
export function depsGraph(id, g) {
  const ups = g.upstreams || [];
  const downs = g.downstreams || [];
  if (!ups.length && !downs.length) return h('p', { class: 'muted', id: 'deps-graph' }, 'Waits for no job, and no job waits for it.');
  const node = (e) => h('li', { class: 'dep-node', 'data-job': e.job },
    e.state ? link(jobHref(e.job), e.job) : h('span', {}, `${e.job} (no such job)`),
    h('span', { class: 'muted' }, ` ${periodText(e.dependency)} period, ${e.dependency.status || 'succeeded'}`));
  const col = (title, cls, items) => h('div', { class: `dep-col ${cls}` }, h('h3', {}, title),
    items.length ? h('ul', {}, ...items.map(node)) : h('p', { class: 'muted' }, 'none'));
  return h('div', { class: 'dep-graph', id: 'deps-graph' },
    col('Waits for', 'dep-up', ups),
    h('div', { class: 'dep-arrow', 'aria-hidden': 'true' }, '→'),
    h('div', { class: 'dep-col dep-self' }, h('strong', {}, id)),
    h('div', { class: 'dep-arrow', 'aria-hidden': 'true' }, '→'),
    col('Waited for by', 'dep-down', downs),
    g.downstreamsComplete === false ? h('p', { class: 'muted' }, 'More jobs than one lookup reads: some may be missing.') : null);
}

export async function jobPage(root, [id], query) {
  fill(root, h('p', { class: 'muted' }, 'Loading…'));
  let job;
  try { job = await get(`/v1/jobs/${enc(id)}`); } catch (e) { showError(e, root); return; }
  const d = job.definition;
  const tz = d.schedule.timezone || 'UTC';
  const execBox = h('div', { id: 'executions' }, h('p', { class: 'muted' }, 'Loading…'));
  const upBox = h('div', {}, h('p', { class: 'muted' }, 'Loading…'));
  const chartBox = h('div');
  const stripBox = h('div', {}, h('p', { class: 'muted' }, 'Loading…'));
  const depsBox = h('div', {}, h('p', { class: 'muted' }, 'Loading…'));
  fill(root, 
    h('h1', {}, job.jobId, badge(job.state), job.state !== 'DELETED' ? h('a', { class: 'button ghost', href: `${jobHref(id)}/edit`, id: 'edit-job' }, 'Edit') : null,
      actionButtons(job, () => route())),
    h('p', { class: 'sub' }, `Fires ${scheduleInWords(d.schedule.expression, tz)}.`),
    facts([
      ['Next fire', fmt(job.nextFireAt, tz) + (job.nextFireAt && tz !== 'UTC' ? ` ${tz}` : '')],
      ['Pool', d.pool], ['Version', `v${job.version}`], ['Target', targetInWords(d.target)],
      ['Concurrency', d.concurrency], ['Retry', `${d.retry?.maxAttempts ?? '—'} attempts`],
      ['Gap / overlap policy', `${d.schedule.onGap} / ${d.schedule.onOverlap}`],
      ['Priority', d.priority || 'normal'], ['Resources', (d.resources || []).join(', ') || '—'],
      ['Fan-out', fanOut(d)],
      ['Events', eventsInWords(d.events)],
      ['Outcomes', outcomesInWords(d)],
      ...(d.maxRuns ? [['Runs', `${job.runs ?? '—'} of ${d.maxRuns} scheduled fires`]] : []),
      ['Updated', fmt(job.updatedAt)],
    ]),
    h('div', { class: 'actions' }, link(`#/ops?jobId=${enc(id)}`, 'Operations log of this job')),
    h('div', { class: 'cols' },
      h('section', { 'aria-labelledby': 'up-h' }, h('h2', { id: 'up-h' }, 'Upcoming fires (4 weeks)'), upBox),
      h('section', { 'aria-labelledby': 'ver-h' }, h('h2', { id: 'ver-h' }, 'Versions'), versionsBox(job, Number(query.get('v')) || null))),
    h('section', { 'aria-labelledby': 'hist-h' }, h('h2', { id: 'hist-h' }, 'Run history'), stripBox),
    h('section', { 'aria-labelledby': 'deps-h' }, h('h2', { id: 'deps-h' }, 'Dependencies'), depsBox),
    h('h2', {}, 'Recent executions'), chartBox, execBox);
  get(`/v1/jobs/${enc(id)}/dependencies`).then((g) => fill(depsBox, depsGraph(id, g)), (e) => showError(e, depsBox));
  const up = get(`/v1/jobs/${enc(id)}/upcoming?days=28`);
  up.then((u) => fill(upBox, upcoming(u, tz)), (e) => showError(e, upBox));
  try {
    const page = await get(`/v1/jobs/${enc(id)}/executions?limit=50`);
    fill(execBox, execTable(page.items));
    // The strip: the fires due by now (a fire the tick planned ahead is upcoming), then the next five.
    const now = Date.now();
    const u = await up.catch(() => null);
    const next = u ? u.fires.filter((f) => Date.parse(f) > now).slice(0, 5) : [];
    const due = page.items.filter((x) => Date.parse(x.scheduledAt) <= now);
    const calendar = d.schedule.businessCalendar ? u : null;
    fill(stripBox, h('div', { id: 'run-strip' }, runStrip(due, job.state === 'ENABLED' ? next : [], { def: d, tz, execHref, id, calendar })), stripLegend());
    if (page.items.some((x) => x.startedAt)) fill(chartBox, lagChart(page.items));
  } catch (e) { showError(e, execBox); fill(stripBox, '—'); }
}

// ---- executions ------------------------------------------------------------------------------

export async function execPage(root, [id]) {
  fill(root, h('p', { class: 'muted' }, 'Loading…'));
  let e;
  try { e = await get(`/v1/executions/${enc(id)}`); } catch (err) { showError(err, root); return; }
  // The execution carries only its children's counts; the first page of children is its own read.
  let kids = null;
  if (e.children) {
    try { kids = (await get(`/v1/executions/${enc(id)}/children?limit=100`)).items; } catch (err) { kids = []; }
  }
  const opsBox = h('div', {}, h('p', { class: 'muted' }, 'Loading…'));
  const logsBox = h('div', { class: 'logs', id: 'logs' }, h('p', { class: 'muted' }, 'Loading…'));
  const cancel = ['READY', 'RUNNING', 'RETRY_WAIT'].includes(e.status)
    ? h('button', { type: 'button', class: 'ghost', id: 'cancel-exec', onclick: async () => {
      const { ok } = await confirmAction(`Cancel ${id}?`, { action: 'Cancel execution' });
      if (!ok) return;
      try { await post(`/v1/executions/${enc(id)}/cancel`); route(); } catch (err) { showError(err); }
    } }, 'Cancel') : null;
  const replay = e.status === 'DEAD' ? h('button', { type: 'button', class: 'ghost', onclick: () => replayMany([id]) }, 'Replay') : null;
  fill(root, 
    h('h1', {}, h('span', { class: 'mono' }, e.executionId), h('span', { id: 'exec-status' }, badge(e.status)), cancel, replay),
    facts([
      ['Job', link(jobHref(e.jobId), e.jobId)],
      e.parentExecutionId ? ['Parent (the fire)', h('a', { href: execHref(e.parentExecutionId), id: 'parent-link' }, e.parentExecutionId)] : null,
      e.child ? ['Child', childLabel(e.child)] : null,
      e.children ? ['Children', `${e.children.finished} of ${e.children.total} finished, ${e.children.succeeded} succeeded`] : null,
      ['Definition version', link(`${jobHref(e.jobId)}?v=${e.definitionVersion}`, `v${e.definitionVersion}`)],
      ['Scheduled', fmt(e.scheduledAt)],
      e.businessCalendar && e.businessCalendar.rolledFrom
        ? ['Rolled by the business calendar', h('span', { id: 'rolled-from' }, `from ${fmt(e.businessCalendar.rolledFrom)} (${e.businessCalendar.reason})`)] : null,
      e.businessCalendar && e.businessCalendar.skippedBeforeCount
        ? ['Removed by the business calendar since the previous fire', `${e.businessCalendar.skippedBeforeCount}: ${e.businessCalendar.skippedBefore.map((x) => fmt(x.at)).join(', ')}${e.businessCalendar.skippedBeforeCount > e.businessCalendar.skippedBefore.length ? ', …' : ''}`] : null,
      ['Created', fmt(e.createdAt)],
      ['Started', fmt(e.startedAt)], ['Finished', fmt(e.finishedAt)],
      ['Waited (start lag)', dur(e.startLagMs)],
      ['Ran', e.finishedAt && e.startedAt ? dur(Date.parse(e.finishedAt) - Date.parse(e.startedAt)) : '—'],
      ['Attempt', e.attempt], ['Fencing token', e.fencingToken],
      ['Lease owner', e.leaseOwner || '—'], ['Lease until', fmt(e.leaseUntil)],
      e.lastError ? ['Last error', `${e.lastError.code}: ${e.lastError.message}`] : null,
      e.waitingFor ? ['Waiting for', h('ul', { id: 'waiting-for', class: 'plain' }, ...e.waitingFor.map((u) => h('li', {},
        u.executionId ? h('a', { href: execHref(u.executionId) }, u.executionId) : h('span', {}, `${u.job}: no fire for this period`),
        ` ${u.status ? u.status : 'not created yet'}${u.met ? ' (met)' : ''}`)))] : null,
      e.waitingSince ? ['Waiting since', fmt(e.waitingSince)] : null,
      e.missedRange ? ['Missed range', `${fmt(e.missedRange.from)} – ${fmt(e.missedRange.to)}`] : null,
      e.missedRange && e.missedRange.except && e.missedRange.except.length
        ? ['Not in this run (ran on their own)', e.missedRange.except.map(fmt).join(', ')] : null,
    ]),
    kids ? h('h2', {}, 'Children') : null,
    kids ? h('div', { id: 'children' }, table([
      { label: 'Execution', cell: (c) => link(execHref(c.executionId), c.executionId) },
      { label: 'Child', cell: (c) => childLabel(c.child) },
      { label: 'Status', cell: (c) => badge(c.status) },
      { label: 'Attempt', cell: (c) => c.attempt, num: true, narrow: true },
      { label: 'Ran', cell: (c) => (c.finishedAt && c.startedAt ? dur(Date.parse(c.finishedAt) - Date.parse(c.startedAt)) : '—'), num: true, narrow: true },
    ], kids, { empty: 'No children yet (created when the fire starts).' })) : null,
    h('h2', {}, 'Checkpoint and progress'),
    e.checkpoint !== null && e.checkpoint !== undefined
      ? h('div', {}, h('p', { class: 'muted' }, `${e.totalRunMs ? `Run time of earlier attempts: ${dur(e.totalRunMs)}. ` : ''}The last checkpoint the handler saved (its progress):`),
        h('pre', { class: 'diff', id: 'checkpoint' }, JSON.stringify(e.checkpoint, null, 2)))
      : h('p', { class: 'muted', id: 'checkpoint' }, `No checkpoint saved${e.totalRunMs ? `; run time of earlier attempts ${dur(e.totalRunMs)}` : ''}.`),
    h('h2', {}, 'Timeline'),
    table([
      { label: 'At', cell: (t) => fmt(t.at) },
      { label: 'Transition', cell: (t) => h('span', {}, t.from ? badge(t.from) : '', ' → ', badge(t.to)) },
      { label: 'Actor', cell: (t) => h('span', { class: 'mono' }, t.actor) },
      { label: 'Attempt', cell: (t) => t.attempt, num: true },
      { label: 'Token', cell: (t) => t.token ?? '—', num: true },
      { label: 'Code', cell: (t) => t.code || '—' },
    ], e.timeline || [], { empty: 'No transitions recorded.' }),
    h('h2', {}, 'Operations log entries'), opsBox,
    h('h2', {}, 'Worker log lines'), logsBox);
  all(`/v1/operations?jobId=${enc(e.jobId)}`, 200).then((ops) => {
    const mine = ops.filter((o) => !o.executionId || o.executionId === id);
    fill(opsBox, opsTable(mine.filter((o) => o.executionId === id).length ? mine.filter((o) => o.executionId === id) : mine.slice(0, 10)),
      h('p', {}, link(`#/ops?jobId=${enc(e.jobId)}`, `All operations of ${e.jobId}`)));
  }, (err) => showError(err, opsBox));
  get(`/v1/executions/${enc(id)}/logs`).then((l) => fill(logsBox, logLines(l, id)), (err) => showError(err, logsBox));
}

/** The worker's log lines (the local run keeps them per execution), or the Insights link. */
function logLines(l, id) {
  const link = l.logsInsightsUrl
    ? h('p', {}, h('a', { href: l.logsInsightsUrl, rel: 'noreferrer', target: '_blank', id: 'logs-link' },
      'Open this execution\u2019s worker log lines in CloudWatch Logs Insights'))
    : null;
  if (!l.captured) return link || h('p', { class: 'muted' }, 'No log lines are kept here; filter the workers\u2019 logs by ', h('code', {}, id), '.');
  if (!l.lines.length) return h('p', { class: 'muted', id: 'log-lines' }, 'No log lines yet (the last 200 lines of each execution are kept while sundial dev runs).');
  return h('div', {}, link, h('pre', { class: 'diff', id: 'log-lines' },
    ...l.lines.map((x) => h('span', { class: `log ${x.level.toLowerCase()}` }, `${fmt(x.at)}  ${x.level.padEnd(5)}  ${x.message}\n`))));
}

// ---- dead letters ----------------------------------------------------------------------------

async function replayMany(ids) {
  const { ok, reason } = await confirmAction(`Replay ${ids.length} dead execution${ids.length > 1 ? 's' : ''}? Each runs again with its definition version.`, { action: 'Replay', reason: true });
  if (!ok) return;
  try {
    const r = await post('/v1/dlq/replay', { executionIds: ids, reason });
    const counts = {};
    for (const x of r.results) counts[x.outcome] = (counts[x.outcome] || 0) + 1;
    toast(`Replay: ${Object.entries(counts).map(([k, v]) => `${v} ${k}`).join(', ')}`);
    route();
  } catch (e) { showError(e); }
}

export async function dlqPage(root, _p, query) {
  const job = query.get('jobId') || '';
  const box = h('div', {}, h('p', { class: 'muted' }, 'Loading…'));
  const jobInput = h('input', { id: 'dlq-job', value: job, placeholder: 'any' });
  const replaySel = h('button', { type: 'button', id: 'replay-selected', disabled: true }, 'Replay selected');
  fill(root, h('h1', {}, 'Dead letters'),
    h('p', { class: 'sub' }, 'Executions that used up their attempts. Replaying runs one again, recorded in the operations log.'),
    h('form', { class: 'toolbar', role: 'search', onsubmit: (e) => { e.preventDefault(); location.hash = `#/dlq${jobInput.value ? `?jobId=${enc(jobInput.value)}` : ''}`; } },
      h('label', { for: 'dlq-job' }, 'Job', jobInput), h('button', { type: 'submit', class: 'ghost' }, 'Filter'), replaySel),
    box);
  let items;
  try { items = (await all('/v1/dlq')).filter((e) => !job || e.jobId === job); } catch (e) { showError(e, box); return; }
  const selected = new Set();
  const check = (e) => h('input', { type: 'checkbox', 'aria-label': `Select ${e.executionId}`, 'data-exec': e.executionId, onchange: (ev) => {
    if (ev.target.checked) selected.add(e.executionId); else selected.delete(e.executionId);
    replaySel.disabled = selected.size === 0;
  } });
  replaySel.addEventListener('click', () => replayMany([...selected]));
  fill(box, table([
    { label: 'Select', cell: check },
    { label: 'Execution', cell: (e) => link(execHref(e.executionId), e.executionId) },
    { label: 'Job', cell: (e) => link(jobHref(e.jobId), e.jobId) },
    { label: 'Scheduled', cell: (e) => fmt(e.scheduledAt), narrow: true },
    { label: 'Attempts', cell: (e) => e.attempt, num: true, narrow: true },
    { label: 'Last error', cell: (e) => (e.lastError ? `${e.lastError.code}: ${e.lastError.message}` : '—') },
    { label: 'Replay', cell: (e) => h('button', { type: 'button', class: 'ghost', 'data-replay': e.executionId, onclick: () => replayMany([e.executionId]) }, 'Replay') },
  ], items, { empty: 'No dead letters.' }));
}

// ---- operations log --------------------------------------------------------------------------

/** An entry's versions: "v1 → v2" for a change, the one version an entry that made none from
 * another names (a create's first, a trigger's or a replay's), "—" without one. */
function opsVersions(o) {
  if (!o.toVersion) return '—';
  return o.fromVersion && o.fromVersion !== o.toVersion ? `v${o.fromVersion} → v${o.toVersion}` : `v${o.toVersion}`;
}

function opsTable(items) {
  return table([
    { label: 'At', cell: (o) => fmt(o.at) },
    { label: 'Action', cell: (o) => h('code', {}, o.action) },
    { label: 'Job', cell: (o) => (o.jobId ? link(jobHref(o.jobId), o.jobId) : '—') },
    { label: 'Actor', cell: (o) => o.actor, narrow: true },
    { label: 'Versions', cell: opsVersions, narrow: true },
    { label: 'Execution', cell: (o) => (o.executionId ? link(execHref(o.executionId), o.executionId) : '—') },
    { label: 'Detail', cell: (o) => (o.detail ? (typeof o.detail === 'string' ? o.detail : JSON.stringify(o.detail)) : '—'), narrow: true },
  ], items, { empty: 'No operations recorded.' });
}

export async function opsPage(root, _p, query) {
  const job = query.get('jobId') || '';
  const action = query.get('action') || '';
  const box = h('div', {}, h('p', { class: 'muted' }, 'Loading…'));
  const jobInput = h('input', { id: 'ops-job', value: job, placeholder: 'any' });
  const actInput = h('input', { id: 'ops-action', value: action, placeholder: 'any (e.g. pause)' });
  fill(root, h('h1', {}, 'Operations log'),
    h('p', { class: 'sub' }, 'Every change made through the API, newest first: who, what, which versions.'),
    h('form', { class: 'toolbar', role: 'search', onsubmit: (e) => {
      e.preventDefault();
      const q = new URLSearchParams();
      if (jobInput.value) q.set('jobId', jobInput.value);
      if (actInput.value) q.set('action', actInput.value);
      location.hash = `#/ops${q.toString() ? `?${q}` : ''}`;
    } }, h('label', { for: 'ops-job' }, 'Job', jobInput), h('label', { for: 'ops-action' }, 'Action', actInput),
    h('button', { type: 'submit', class: 'ghost' }, 'Filter')),
    box);
  try {
    const items = (await all(`/v1/operations${job ? `?jobId=${enc(job)}` : ''}`, 300)).filter((o) => !action || o.action.includes(action));
    fill(box, opsTable(items));
  } catch (e) { showError(e, box); }
}

let route = () => {};
export function setRouter(r) { route = r; }
