// The run history strip (issue 34): a job's last fires as coloured cells, oldest on the left,
// then the fires to come; each past cell links to its execution. A mark between two cells says
// the job's zone changed its UTC offset there (a daylight-saving transition between them).

import { h, fmt } from './ui.js';

/** The cell class of one fire and what it says. `def`: the job's definition. */
export function outcome(e, def) {
  const deadline = def && def.startDeadlineSecs ? def.startDeadlineSecs * 1000 : null;
  const late = deadline !== null && typeof e.startLagMs === 'number' && e.startLagMs > deadline;
  const batch = e.missedRange
    ? `, one run for the fires missed ${fmt(e.missedRange.from)} – ${fmt(e.missedRange.to)}` : '';
  switch (e.status) {
    case 'SUCCEEDED':
      if (e.attempt > 1) return ['retried', `succeeded after ${e.attempt} attempts${batch}`];
      if (late || batch) return ['missed', `succeeded${late ? ', started past its start deadline' : ''}${batch}`];
      return ['ok', 'succeeded'];
    case 'FAILED': return ['failed', `failed${e.lastError ? ` (${e.lastError.code})` : ''}`];
    case 'DEAD': return ['dead', `dead-lettered${e.lastError ? ` (${e.lastError.code})` : ''}`];
    case 'RETRY_WAIT': return ['retrying', `attempt ${e.attempt} failed, retrying`];
    case 'RUNNING': case 'WAITING': return ['running', 'running'];
    case 'READY': return ['running', 'due, not started yet'];
    case 'SKIPPED': return ['skipped', 'skipped by its concurrency policy'];
    case 'CANCELED': return ['skipped', `canceled${e.lastError ? ` (${e.lastError.code})` : ''}`];
    default: return ['skipped', String(e.status).toLowerCase()];
  }
}

/** The zone's UTC offset at `iso` ("GMT+01:00"). */
function offsetAt(iso, tz) {
  try {
    const parts = new Intl.DateTimeFormat('en-US', { timeZone: tz, timeZoneName: 'longOffset' }).formatToParts(new Date(iso));
    return (parts.find((p) => p.type === 'timeZoneName') || {}).value || '';
  } catch { return ''; }
}

/**
 * The strip: `execs` (newest first, as the API lists them), then `upcoming` instants (ascending),
 * in the job's zone `tz`. `execHref` makes an execution's link.
 */
export function runStrip(execs, upcoming, { def, tz = 'UTC', execHref, id }) {
  const cells = [];
  let prev = null;
  const mark = (at) => {
    const off = offsetAt(at, tz);
    if (prev !== null && off && off !== prev) {
      const text = `${tz} changed from ${prev} to ${off}`;
      cells.push(h('span', { class: 'strip-dst', 'data-dst-mark': '', role: 'img', 'aria-label': text, title: text }));
    }
    prev = off || prev;
  };
  for (const e of [...execs].reverse()) {
    mark(e.scheduledAt);
    const [cls, words] = outcome(e, def);
    const label = `${fmt(e.scheduledAt, tz)}${tz === 'UTC' ? '' : ` ${tz}`}: ${words}`;
    cells.push(h('a', { class: `cell c-${cls}`, href: execHref(e.executionId), 'data-status': e.status, 'data-cell': cls, 'aria-label': label, title: label }));
  }
  if (upcoming.length) cells.push(h('span', { class: 'strip-now', role: 'img', 'aria-label': 'now', title: 'now' }));
  for (const at of upcoming) {
    mark(at);
    const label = `${fmt(at, tz)}${tz === 'UTC' ? '' : ` ${tz}`}: upcoming`;
    cells.push(h('span', { class: 'cell c-upcoming', 'data-cell': 'upcoming', role: 'img', 'aria-label': label, title: label }));
  }
  if (!cells.length) return h('span', { class: 'muted' }, 'No runs yet');
  return h('span', { class: 'strip', 'data-strip': id }, cells);
}

/** The colours' meanings. */
export function stripLegend() {
  const item = (cls, text) => h('span', {}, h('span', { class: `cell c-${cls}` }), text);
  return h('p', { class: 'legend strip-legend' },
    item('ok', 'succeeded'), item('retried', 'succeeded after retries'), item('missed', 'late or catch-up'),
    item('retrying', 'retrying'), item('failed', 'failed'), item('dead', 'dead-lettered'),
    item('running', 'running or due'), item('skipped', 'skipped or canceled'), item('upcoming', 'upcoming'),
    h('span', {}, h('span', { class: 'strip-dst' }), 'UTC offset change (DST)'));
}
