// The job form, driven by FIELDS: one entry per definition field (its JSON path, label, input
// kind). Adding a field to the API is one entry here (shards, broadcast members, resources, priority are). On edit,
// the form starts from the stored definition, so fields it does not show are kept as they are.
// Validation is the API's: a 400 names the field's JSON path, and the message appears beside it.

import { h, fill, enc, toast } from './ui.js';
import { call, post, ApiError } from './api.js';
import { scheduleInWords } from './schedule.js';

const ZONES = ['UTC', 'America/New_York', 'America/Los_Angeles', 'America/Sao_Paulo', 'Europe/London',
  'Europe/Berlin', 'Europe/Paris', 'Asia/Shanghai', 'Asia/Tokyo', 'Asia/Kolkata', 'Australia/Sydney'];

/** The fields, in order. `group` makes fieldsets; `show` hides a field for other target types. */
export const FIELDS = [
  { path: 'jobId', label: 'Job id', kind: 'text', createOnly: true, required: true, group: 'Job',
    help: 'Letters, digits, - and _; cannot change later.' },
  { path: 'schedule.expression', label: 'Schedule', kind: 'text', required: true, group: 'Schedule',
    help: "Cron with seconds ('0 30 2 * * *'), 5 Unix fields, rate(10 minutes) or at(2027-01-01T09:00:00)." },
  { path: 'schedule.timezone', label: 'Time zone', kind: 'text', list: ZONES, def: 'UTC', group: 'Schedule',
    help: 'An IANA zone; fires follow its wall clock, daylight saving included.' },
  { path: 'schedule.start', label: 'First fire not before', kind: 'text', group: 'Schedule',
    help: 'Optional, an RFC 3339 instant (2027-03-10T00:00:00Z); also the anchor of rate().' },
  { path: 'schedule.onGap', label: 'When the time does not exist (spring forward)', kind: 'select',
    options: ['shift', 'skip'], def: 'shift', group: 'Schedule' },
  { path: 'schedule.onOverlap', label: 'When the time happens twice (fall back)', kind: 'select',
    options: ['first', 'last', 'both'], def: 'first', group: 'Schedule' },
  { path: 'target.type', label: 'Target type', kind: 'select', options: ['http', 'lambda', 'sqs', 'eventBridge', 'sns', 'stepFunctions', 'ecs', 'inProcess'],
    def: 'http', group: 'Target' },
  { path: 'target.url', label: 'URL', kind: 'text', group: 'Target', show: (v) => v['target.type'] === 'http' },
  { path: 'target.function', label: 'Lambda function', kind: 'text', group: 'Target',
    show: (v) => v['target.type'] === 'lambda' },
  { path: 'target.queueUrl', label: 'Queue URL', kind: 'text', group: 'Target',
    show: (v) => v['target.type'] === 'sqs' },
  { path: 'target.eventBusArn', label: 'Event bus ARN', kind: 'text', group: 'Target',
    show: (v) => v['target.type'] === 'eventBridge', help: 'The tenant\u2019s bus, tagged sundial-tenant; each fire puts one event (source sundial.job).' },
  { path: 'target.detailType', label: 'Event detail-type', kind: 'text', group: 'Target',
    show: (v) => v['target.type'] === 'eventBridge', help: 'Default SundialJobFired.' },
  { path: 'target.topicArn', label: 'Topic ARN', kind: 'text', group: 'Target',
    show: (v) => v['target.type'] === 'sns', help: 'The tenant\u2019s topic, tagged sundial-tenant; each fire publishes one message.' },
  { path: 'target.subject', label: 'Message subject', kind: 'text', group: 'Target',
    show: (v) => v['target.type'] === 'sns' },
  { path: 'target.stateMachineArn', label: 'State machine ARN', kind: 'text', group: 'Target',
    show: (v) => v['target.type'] === 'stepFunctions',
    help: 'The tenant\u2019s standard workflow, tagged sundial-tenant; each fire starts one execution (named after the fire) and waits for its end.' },
  // `ecs`: an ECS task of the tenant's task definition (docs/targets.md).
  { path: 'target.clusterArn', label: 'ECS cluster ARN', kind: 'text', group: 'Target',
    show: (v) => v['target.type'] === 'ecs', help: 'arn:aws:ecs:<region>:<account>:cluster/<name>; each fire runs one task there and waits for its end.' },
  { path: 'target.taskDefinitionArn', label: 'Task definition ARN', kind: 'text', group: 'Target',
    show: (v) => v['target.type'] === 'ecs',
    help: 'The tenant\u2019s task definition with its revision (\u2026:task-definition/<family>:<revision>), tagged sundial-tenant, in the cluster\u2019s region and account.' },
  { path: 'target.containerName', label: 'Container', kind: 'text', group: 'Target',
    show: (v) => v['target.type'] === 'ecs',
    help: 'Gets the fire\u2019s SUNDIAL_* environment variables; its exit code decides the run (0 = success).' },
  { path: 'target.launchType', label: 'Launch type', kind: 'select', options: ['FARGATE', 'EC2'], def: 'FARGATE',
    omitDef: true, group: 'Target', show: (v) => v['target.type'] === 'ecs' },
  { path: 'target.subnets', label: 'Subnets', kind: 'list', group: 'Target', show: (v) => v['target.type'] === 'ecs',
    help: 'Comma-separated subnet ids (awsvpc networking), at most 16; required for FARGATE.' },
  { path: 'target.securityGroups', label: 'Security groups', kind: 'list', group: 'Target',
    show: (v) => v['target.type'] === 'ecs', help: 'Comma-separated, at most 5; only with subnets. None: the VPC\u2019s default group.' },
  // `assignPublicIp` is absent (false) or true: shown as one choice.
  { path: 'target.assignPublicIp', label: 'Public IP', kind: 'select', options: ['no', 'yes'], def: 'no', group: 'Target',
    show: (v) => v['target.type'] === 'ecs', fromDef: (b) => (b ? 'yes' : 'no'), toDef: (v) => (v === 'yes' ? true : undefined),
    help: 'Give the task\u2019s network interface a public IP (a public subnet without a NAT needs one to pull images).' },
  { path: 'target.handler', label: 'Handler', kind: 'text', group: 'Target',
    show: (v) => v['target.type'] === 'inProcess' },
  { path: 'pool', label: 'Worker pool', kind: 'text', def: 'default', group: 'Execution' },
  { path: 'concurrency', label: 'When the previous run is still going', kind: 'select',
    options: ['ALLOW', 'FORBID', 'SERIALIZE', 'REPLACE'], def: 'ALLOW', group: 'Execution' },
  { path: 'timeoutSecs', label: 'Timeout (seconds)', kind: 'number', group: 'Execution' },
  { path: 'retry.maxAttempts', label: 'Attempts at most', kind: 'number', group: 'Execution' },
  { path: 'params', label: 'Parameters (JSON)', kind: 'json', group: 'Execution',
    help: 'Sent to the target with every run.' },
  { path: 'priority', label: 'Priority', kind: 'select', options: ['normal', 'high', 'low'], def: 'normal',
    omitDef: true, group: 'Execution', help: 'Low runs after the pool\u2019s other work and is deferred first when it is busy.' },
  { path: 'resources', label: 'Resources used', kind: 'list', group: 'Execution',
    help: 'Comma-separated resource limits each run holds a unit of (an operator defines them).' },
  { path: 'shards', label: 'Shards', kind: 'number', group: 'Fan-out',
    help: 'Each fire runs as this many child executions, each handling its shard (1–100). Not with broadcast.' },
  { path: 'broadcast.members', label: 'Broadcast members', kind: 'list', group: 'Fan-out',
    help: 'Comma-separated: each fire runs once per member (regions, tenants). Not with shards.' },
  { path: 'after', label: 'Waits for (JSON)', kind: 'json', group: 'Dependencies and events',
    help: 'Runs each fire waits for: [{"job": "close", "period": "same", "status": "succeeded"}]; period same, previous or offset (with offsetSecs).' },
  { path: 'dependencyDeadlineSecs', label: 'Wait at most (seconds)', kind: 'number', group: 'Dependencies and events',
    help: 'Default: the start deadline, else the retry age limit.' },
  { path: 'onDependencyDeadline', label: 'Past that wait', kind: 'select', options: ['fail', 'skip', 'run'], def: 'fail',
    omitDef: true, group: 'Dependencies and events' },
  // `events` is absent, {} or {oncePerPeriod: true}: shown as one choice.
  { path: 'events', label: 'Fires on events', kind: 'select', options: ['no', 'each', 'oncePerPeriod'], def: 'no',
    group: 'Dependencies and events',
    fromDef: (e) => (!e ? 'no' : e.oncePerPeriod ? 'oncePerPeriod' : 'each'),
    toDef: (v) => (v === 'each' ? {} : v === 'oncePerPeriod' ? { oncePerPeriod: true } : undefined),
    help: 'Events come through the API, the tenant\u2019s queue or its bus; once per period: an event runs the next fire now, whichever comes first.' },
  { path: 'outcomeNotify.url', label: 'Also notify (HTTPS URL)', kind: 'text', group: 'Deadlines and outcomes',
    help: 'Each outcome event is also POSTed here, signed like a webhook (docs/outcomes.md); receivers deduplicate by webhook-id.' },
  { path: 'outcomeNotify.signingSecretArn', label: 'Notification signing secret ARN', kind: 'text', group: 'Deadlines and outcomes',
    show: (v) => !!v['outcomeNotify.url'], help: 'A Secrets Manager secret of the tenant (tagged sundial-tenant).' },
  { path: 'maxRuns', label: 'Ends after this many fires', kind: 'number', group: 'Deadlines and outcomes',
    help: 'The job is COMPLETED once its schedule made this many fires (manual runs and backfills do not count).' },
  { path: 'startDeadlineSecs', label: 'Must start within (seconds)', kind: 'number', group: 'Deadlines and outcomes',
    help: 'A fire not started by then is reported once (FireMissed).' },
  { path: 'finishDeadlineSecs', label: 'Must finish within (seconds)', kind: 'number', group: 'Deadlines and outcomes',
    help: 'A fire not finished by then is reported once (FinishDeadlineMissed) and runs on.' },
  { path: 'autoPauseAfterDeadFires', label: 'Pause after this many dead fires in a row', kind: 'number',
    group: 'Deadlines and outcomes', help: 'Audited and announced (JobAutoPaused); a success or a resume starts the count over.' },
  // `outcomeEvents` is absent, {} or {succeeded: true}: shown as one choice.
  { path: 'outcomeEvents', label: 'Outcome events', kind: 'select', options: ['failures', 'recoveries', 'every'],
    def: 'failures', group: 'Deadlines and outcomes',
    fromDef: (o) => (!o ? 'failures' : o.succeeded ? 'every' : 'recoveries'),
    toDef: (v) => (v === 'recoveries' ? {} : v === 'every' ? { succeeded: true } : undefined),
    help: 'To the stack\u2019s event bus (docs/outcomes.md): failures and dead fires always; recoveries also tracks dead fires in a row (JobRecovered); every adds each success.' },
];

function getPath(obj, path) {
  return path.split('.').reduce((o, k) => (o == null ? undefined : o[k]), obj);
}

function setPath(obj, path, value) {
  const keys = path.split('.');
  let o = obj;
  for (const k of keys.slice(0, -1)) {
    if (typeof o[k] !== 'object' || o[k] === null) o[k] = {};
    o = o[k];
  }
  if (value === undefined) delete o[keys.at(-1)];
  else o[keys.at(-1)] = value;
}

const idOf = (path) => `f-${path.replace(/[^a-zA-Z0-9]/g, '-')}`;

function input(f, value) {
  const id = idOf(f.path);
  const common = { id, name: f.path, 'data-path': f.path, 'aria-describedby': `${id}-help ${id}-msg` };
  if (f.kind === 'select') {
    return h('select', common, f.options.map((o) => h('option', { value: o, selected: o === value }, o)));
  }
  if (f.kind === 'list') value = Array.isArray(value) ? value.join(', ') : value;
  if (f.kind === 'json') {
    return h('textarea', { ...common, rows: 4, spellcheck: 'false' }, value === undefined ? '' : JSON.stringify(value, null, 2));
  }
  const el = h('input', { ...common, type: f.kind === 'number' ? 'number' : 'text', autocomplete: 'off',
    required: f.required, list: f.list ? `${id}-list` : undefined, spellcheck: 'false' });
  el.value = value ?? '';
  return el;
}

/** Renders the create (job = null) or edit form into `root`. */
export function jobForm(root, job, { onSaved }) {
  const editing = !!job;
  const base = editing ? structuredClone(job.definition) : {};
  const form = h('form', { novalidate: true, 'aria-label': editing ? `Edit job ${job.jobId}` : 'New job' });
  const top = h('div', { class: 'msg error', role: 'alert' });
  const groups = new Map();
  const rows = new Map();
  for (const f of FIELDS) {
    if (f.createOnly && editing) continue;
    const value = editing ? (f.fromDef ? f.fromDef(getPath(base, f.path)) : getPath(base, f.path)) : f.def;
    const id = idOf(f.path);
    const row = h('div', { class: 'field', 'data-field': f.path },
      h('label', { for: id }, f.label, f.required ? ' *' : ''),
      input(f, value),
      f.list ? h('datalist', { id: `${id}-list` }, f.list.map((z) => h('option', { value: z }))) : null,
      h('span', { class: 'help', id: `${id}-help` }, f.help || ''),
      h('span', { class: 'msg', id: `${id}-msg` }));
    rows.set(f.path, row);
    if (!groups.has(f.group)) groups.set(f.group, h('fieldset', {}, h('legend', {}, f.group)));
    groups.get(f.group).append(row);
  }
  const words = h('p', { class: 'muted', id: 'schedule-words', 'aria-live': 'polite' });
  const preview = h('div', { id: 'schedule-preview', 'aria-live': 'polite' });
  groups.get('Schedule').append(words, preview);
  const save = h('button', { type: 'submit', id: 'save-job' }, editing ? 'Save changes' : 'Create job');
  form.append(top, ...groups.values(), h('div', { class: 'actions' }, save,
    h('a', { class: 'button ghost', href: editing ? `#/jobs/${enc(job.jobId)}` : '#/jobs' }, 'Cancel')));

  const values = () => {
    const v = {};
    for (const [path, row] of rows) v[path] = row.querySelector('[data-path]').value;
    return v;
  };
  const applyShow = () => {
    const v = values();
    for (const f of FIELDS) if (f.show && rows.has(f.path)) rows.get(f.path).hidden = !f.show(v);
  };
  const clearErrors = () => {
    top.textContent = '';
    for (const row of rows.values()) {
      row.classList.remove('invalid');
      row.querySelector('.msg').textContent = '';
      row.querySelector('[data-path]').removeAttribute('aria-invalid');
    }
  };
  /** The API names a JSON path; show the message at the closest field. */
  const showFieldError = (field, message) => {
    let best = null;
    for (const [path, row] of rows) {
      if (row.hidden) continue;
      if (field === path || field.startsWith(`${path}.`) || field.startsWith(`${path}[`)) {
        if (!best || path.length > best[0].length) best = [path, row];
      }
    }
    if (!best && field) {
      // A parent path (`target`, `schedule`): its first visible field.
      for (const [path, row] of rows) if (!row.hidden && path.startsWith(`${field}.`)) { best = [path, row]; break; }
    }
    if (!best) { top.textContent = field ? `${field}: ${message}` : message; return; }
    const [, row] = best;
    row.classList.add('invalid');
    row.querySelector('.msg').textContent = message;
    const el = row.querySelector('[data-path]');
    el.setAttribute('aria-invalid', 'true');
    el.focus();
  };

  const body = () => {
    const def = structuredClone(base);
    const v = values();
    for (const f of FIELDS) {
      if (!rows.has(f.path)) continue;
      if (f.path === 'jobId') continue;
      const raw = v[f.path];
      if (rows.get(f.path).hidden) { setPath(def, f.path, undefined); continue; }
      if (f.toDef) { setPath(def, f.path, f.toDef(raw)); continue; }
      if (raw === '' || raw === undefined) { setPath(def, f.path, undefined); continue; }
      if (f.omitDef && raw === f.def) { setPath(def, f.path, undefined); continue; }
      if (f.kind === 'list') {
        const items = raw.split(',').map((x) => x.trim()).filter(Boolean);
        setPath(def, f.path, items.length ? items : undefined);
      } else if (f.kind === 'number') {
        const n = Number(raw);
        setPath(def, f.path, Number.isFinite(n) && raw.trim() !== '' ? n : raw);
      } else if (f.kind === 'json') {
        try { setPath(def, f.path, JSON.parse(raw)); } catch { throw new ApiError(400, { error: { field: f.path, message: 'is not valid JSON' } }); }
      } else setPath(def, f.path, raw);
    }
    // A nested field left empty leaves no empty object behind (`broadcast: {}` is not a job).
    for (const f of FIELDS) {
      const parent = f.path.split('.').slice(0, -1).join('.');
      const o = parent && getPath(def, parent);
      if (o && typeof o === 'object' && !Array.isArray(o) && Object.keys(o).length === 0) setPath(def, parent, undefined);
    }
    return editing ? def : { jobId: v.jobId, ...def };
  };

  let timer = null;
  const refreshPreview = () => {
    clearTimeout(timer);
    timer = setTimeout(async () => {
      const v = values();
      words.textContent = v['schedule.expression'] ? `Fires ${scheduleInWords(v['schedule.expression'], v['schedule.timezone'] || 'UTC')}.` : '';
      if (!v['schedule.expression']) { fill(preview); return; }
      try {
        const s = { expression: v['schedule.expression'], timezone: v['schedule.timezone'] || 'UTC',
          onGap: v['schedule.onGap'], onOverlap: v['schedule.onOverlap'] };
        if (v['schedule.start']) s.start = v['schedule.start'];
        const p = await post('/v1/preview', { schedule: s, count: 5 });
        fill(preview, h('p', { class: 'muted' }, 'Next fires: ', p.fires.map((t) => t.replace('T', ' ').replace('.000Z', ' UTC')).join(' · ')));
      } catch (e) {
        fill(preview, h('p', { class: 'error' }, e.message));
      }
    }, 300);
  };
  form.addEventListener('input', (ev) => {
    applyShow();
    if (ev.target.name && ev.target.name.startsWith('schedule.')) refreshPreview();
  });
  form.addEventListener('change', applyShow);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clearErrors();
    save.disabled = true;
    try {
      const b = body();
      if (editing) {
        await call('PUT', `/v1/jobs/${enc(job.jobId)}`, b, { 'If-Match': job.etag });
        toast(`Saved ${job.jobId}`);
        onSaved(job.jobId);
      } else {
        await post('/v1/jobs', b);
        toast(`Created ${b.jobId}`);
        onSaved(b.jobId);
      }
    } catch (e) {
      if (e instanceof ApiError) showFieldError(e.field || '', e.message);
      else top.textContent = String(e);
    } finally {
      save.disabled = false;
    }
  });
  fill(root, form);
  applyShow();
  refreshPreview();
}
