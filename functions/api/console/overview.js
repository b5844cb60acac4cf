// The overview (issue 34): the console's first page answers "is everything firing on time right
// now?" from the API alone: the tenant's fires of the last hour and day (count, per minute, start
// lag p50/p99, outcomes), what needs attention now, the pools as this tenant's fires load them, and
// the resource limits. Every figure opens the list of what it counts. It refreshes by itself.

import { h, fill, fmt, dur, badge, table, showError, link, enc, jobHref, execHref } from './ui.js';
import { get, all } from './api.js';
import { outcome } from './strip.js';

const MINUTE = 60e3;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
/** The page re-reads the API this often while it is shown. */
export const REFRESH_MS = 30e3;
/** Per job, at most this many pages of 100 fires are read for the last day. */
const MAX_PAGES = 5;


/** The `p`th percentile (nearest rank) of `xs`, or null. */
export function percentile(xs, p) {
  if (!xs.length) return null;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
}

/** A job's fires (no children) scheduled in (since, now], newest first, and whether all were read. */
async function firesSince(job, since, now) {
  const base = `/v1/jobs/${enc(job.jobId)}/executions?limit=100&until=${enc(new Date(now).toISOString())}`;
  const fires = [];
  let cursor = null;
  for (let i = 0; i < MAX_PAGES; i += 1) {
    const page = await get(cursor ? `${base}&cursor=${enc(cursor)}` : base);
    for (const e of page.items) {
      if (Date.parse(e.scheduledAt) <= since) return { fires, complete: true };
      fires.push({ ...e, def: job.definition });
    }
    if (!page.nextCursor) return { fires, complete: true };
    cursor = page.nextCursor;
  }
  return { fires, complete: false };
}

/** Outcome classes in the order the page shows them, with their words. */
const OUTCOMES = [
  ['ok', 'succeeded'], ['retried', 'succeeded after retries'], ['missed', 'late or catch-up'],
  ['running', 'running or due'], ['retrying', 'retrying'], ['failed', 'failed'], ['dead', 'dead-lettered'],
  ['skipped', 'skipped or canceled'],
];

/** The figures of `fires` scheduled after `since`. Pure. */
export function figures(fires, since, minutes) {
  const inWindow = fires.filter((e) => Date.parse(e.scheduledAt) > since);
  const lags = inWindow.filter((e) => typeof e.startLagMs === 'number').map((e) => e.startLagMs);
  const by = Object.fromEntries(OUTCOMES.map(([c]) => [c, []]));
  for (const e of inWindow) by[outcome(e, e.def)[0]].push(e);
  return {
    count: inWindow.length,
    perMinute: inWindow.length / minutes,
    p50: percentile(lags, 50),
    p99: percentile(lags, 99),
    started: lags.length,
    by,
    fires: inWindow,
  };
}

/** A figure; with `rows`, it opens the list of the executions it counts. */
function figure(id, label, value, rows, ms) {
  const parts = [h('span', { class: 'fig-label' }, label), ' ', h('strong', { 'data-figure': id, 'data-ms': ms ?? undefined }, value)];
  if (!rows || !rows.length) return h('div', { class: 'fig' }, parts);
  return h('details', { class: 'fig' }, h('summary', {}, parts), execList(rows));
}

function execList(rows) {
  return table([
    { label: 'Execution', cell: (e) => link(execHref(e.executionId), e.executionId) },
    { label: 'Status', cell: (e) => badge(e.status) },
    { label: 'Scheduled', cell: (e) => fmt(e.scheduledAt) },
    { label: 'Start lag', cell: (e) => dur(e.startLagMs), num: true, narrow: true },
  ], rows.slice(0, 50), { empty: 'None.' });
}

function windowBox(id, title, f) {
  return h('section', { class: 'panel', 'aria-labelledby': `${id}-h`, 'data-window': id },
    h('h2', { id: `${id}-h` }, title),
    h('div', { class: 'figs' },
      figure(`${id}-count`, 'Fires', String(f.count), f.fires),
      figure(`${id}-rate`, 'Per minute', f.perMinute > 0 && f.perMinute < 0.01 ? '< 0.01' : f.perMinute.toFixed(2)),
      figure(`${id}-p50`, 'Start lag p50', dur(f.p50), null, f.p50),
      figure(`${id}-p99`, 'Start lag p99', dur(f.p99), null, f.p99)),
    h('div', { class: 'figs outcomes' },
      OUTCOMES.map(([c, words]) => figure(`${id}-${c}`, h('span', {}, h('span', { class: `cell c-${c}` }), ` ${words}`),
        String(f.by[c].length), f.by[c]))));
}

/** Fires per minute of the last hour as bars (the newest on the right). */
function perMinuteBars(fires, now) {
  const counts = new Array(60).fill(0);
  for (const e of fires) {
    const i = 59 - Math.floor((now - Date.parse(e.scheduledAt)) / MINUTE);
    if (i >= 0 && i < 60) counts[i] += 1;
  }
  const max = Math.max(1, ...counts);
  const title = `Fires per minute over the last hour (most: ${max})`;
  return h('figure', { class: 'bars', id: 'fires-per-minute' },
    h('div', { class: 'bar-row', role: 'img', 'aria-label': title, title },
      counts.map((c) => h('span', { class: 'bar', 'data-count': c, 'data-h': Math.round((c / max) * 100) }))),
    h('figcaption', { class: 'muted' }, `${title}; ${fmt(new Date(now - HOUR).toISOString())} → now`));
}

/** The overview page. */
export async function overviewPage(root) {
  const started = Date.now();
  fill(root, h('h1', {}, 'Overview'), h('p', { class: 'muted' }, 'Loading…'));
  let jobs;
  let dead;
  let resources;
  let queues;
  try {
    [jobs, dead, resources, queues] = await Promise.all([
      all('/v1/jobs'),
      get('/v1/dlq?limit=100'),
      get('/v1/resources').catch(() => ({ items: [] })),
      // Operators only (403 for a tenant): every tenant's fires are in a pool's queue.
      get('/v1/pools').catch(() => null),
    ]);
    // Holders are in each resource's own read (operators only; a tenant sees the limits).
    resources = await Promise.all((resources.items || []).slice(0, 20).map((r) =>
      get(`/v1/resources/${enc(r.resource)}`).catch(() => r)));
  } catch (e) { showError(e, root); return; }
  const now = Date.now();
  const read = await Promise.all(jobs.map((j) => firesSince(j, now - DAY, now).then(
    (r) => ({ job: j, ...r }), () => ({ job: j, fires: [], complete: false }))));
  const fires = read.flatMap((r) => r.fires);
  const hour = figures(fires, now - HOUR, 60);
  const day = figures(fires, now - DAY, 24 * 60);
  const partial = read.filter((r) => !r.complete).map((r) => r.job.jobId);

  // Needs attention now: the jobs whose last fire due failed or died, the fires late past their
  // start deadline today, the dead letters.
  const lastBad = read.filter((r) => r.fires[0] && ['FAILED', 'DEAD'].includes(r.fires[0].status));
  const late = day.by.missed.filter((e) => !e.missedRange);
  const deadItems = dead.items || [];
  const attention = h('section', { class: 'panel', 'aria-labelledby': 'att-h' },
    h('h2', { id: 'att-h' }, 'Needs attention now'),
    h('ul', { class: 'attention' },
      h('li', {}, link('#/dlq', `${deadItems.length}${dead.nextCursor ? '+' : ''} dead-lettered`), ' ',
        h('span', { 'data-figure': 'dead-letters', hidden: true }, String(deadItems.length))),
      h('li', {}, figure('failing-jobs', 'Jobs whose last fire failed or died:', String(lastBad.length),
        lastBad.map((r) => r.fires[0]))),
      h('li', {}, figure('late-fires', 'Fires started past their start deadline today:', String(late.length), late))));

  // Pools: this tenant's jobs per pool and what their fires are doing now.
  const pools = new Map();
  for (const r of read) {
    const p = r.job.definition.pool;
    const x = pools.get(p) || { pool: p, jobs: 0, running: 0, due: 0, oldest: null };
    x.jobs += 1;
    for (const e of r.fires) {
      if (e.status === 'RUNNING' || e.status === 'WAITING') x.running += 1;
      if (e.status === 'READY' || e.status === 'RETRY_WAIT') {
        x.due += 1;
        const waited = now - Date.parse(e.scheduledAt);
        x.oldest = Math.max(x.oldest ?? 0, waited);
      }
    }
    pools.set(p, x);
  }
  const poolBox = h('section', { class: 'panel', 'aria-labelledby': 'pool-h' },
    h('h2', { id: 'pool-h' }, 'Pools'),
    h('p', { class: 'muted' }, 'As this tenant\'s fires load them: running now, due and not started, and the longest such wait.'),
    table([
      { label: 'Pool', cell: (x) => link(`#/jobs?pool=${enc(x.pool)}`, x.pool) },
      { label: 'Jobs', cell: (x) => x.jobs, num: true, narrow: true },
      { label: 'Running', cell: (x) => h('span', { 'data-pool-running': x.pool }, String(x.running)), num: true, narrow: true },
      { label: 'Due, not started', cell: (x) => h('span', { 'data-pool-due': x.pool }, String(x.due)), num: true, narrow: true },
      { label: 'Longest wait', cell: (x) => dur(x.oldest), num: true, narrow: true },
    ], [...pools.values()], { empty: 'No jobs yet.' }));

  const resBox = h('section', { class: 'panel', 'aria-labelledby': 'res-h' },
    h('h2', { id: 'res-h' }, 'Resource limits'),
    table([
      { label: 'Resource', cell: (r) => r.resource },
      { label: 'Limit', cell: (r) => r.limit, num: true, narrow: true },
      { label: 'Held now', cell: (r) => (typeof r.holding === 'number' ? String(r.holding) : 'operators only'), num: true, narrow: true },
      { label: 'Holders', cell: (r) => (r.holders && r.holders.length
        ? r.holders.map((x) => `${x.executionId} (lease until ${fmt(x.leaseUntil)})`).join(', ') : '—') },
    ], resources, { empty: 'No resource limits.' }));

  // Operators: each pool's queues as SQS counts them, and saturation against its capacity.
  const lanes = (q) => `${q.visible} waiting, ${q.inFlight} in flight, ${q.delayed} delayed`;
  const satCell = (x) => {
    if (typeof x.saturation !== 'number') return 'capacity unknown';
    const pct = Math.round(x.saturation * 100);
    const text = `${pct} % of ${x.capacity}`;
    return h('span', { class: 'sat', 'data-pool-saturation': x.pool },
      h('meter', { min: 0, max: 1, high: 0.8, value: Math.min(1, x.saturation), 'aria-label': `${x.pool}: ${text}` }), ` ${text}`);
  };
  const queueBox = queues ? h('section', { class: 'panel', 'aria-labelledby': 'queue-h' },
    h('h2', { id: 'queue-h' }, 'Pool queues'),
    h('p', { class: 'muted' }, `Every tenant's fires, as SQS counted them at ${fmt(queues.observedAt)}; saturation is in flight over what the pool's workers can run at once.`),
    table([
      { label: 'Pool', cell: (x) => x.pool },
      { label: 'Main lane', cell: (x) => h('span', { 'data-pool-main': x.pool, 'data-waiting': x.main.visible }, lanes(x.main)) },
      { label: 'Low lane', cell: (x) => lanes(x.low) },
      { label: 'Dead letters', cell: (x) => h('span', { 'data-pool-dead': x.pool }, String(x.deadLetters.visible)), num: true, narrow: true },
      { label: 'Saturation', cell: satCell },
    ], queues.pools, { empty: 'No pools.' })) : null;

  const took = Date.now() - started;
  fill(root,
    h('h1', {}, 'Overview'),
    h('p', { class: 'sub', id: 'overview-updated', 'data-now': now },
      `Updated ${fmt(new Date(now).toISOString())} from ${jobs.length} jobs and ${fires.length} fires of the last day (${dur(took)}); refreshes every ${REFRESH_MS / 1000} s.`),
    partial.length ? h('p', { class: 'note' }, `Only the newest ${MAX_PAGES * 100} fires of ${partial.join(', ')} were read: the day's figures leave older ones out.`) : null,
    attention,
    h('div', { class: 'cols' }, windowBox('hour', 'Last hour', hour), windowBox('day', 'Last 24 hours', day)),
    perMinuteBars(hour.fires, now),
    h('div', { class: 'cols' }, poolBox, resBox),
    queueBox);
  for (const bar of root.querySelectorAll('.bar')) bar.style.height = `${Math.max(2, Number(bar.dataset.h))}%`;
  // Only while shown: the router gives each visit its own element, detached when another page opens.
  setTimeout(() => { if (root.isConnected) overviewPage(root); }, REFRESH_MS);
}
