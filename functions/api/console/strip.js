// The run history strip (issue 34): a job's last fires as coloured cells, oldest on the left,
// then the fires to come; each past cell links to its execution. A mark between two cells says
// the job's zone changed its UTC offset there (a daylight-saving transition between them). A
// job with a business calendar gets two more marks before a cell, both as the API states them
// (an execution's `businessCalendar`, the upcoming window's `rolled` / `skipped`), never guessed
// here: the fire was rolled off a non-business day, and instants of the schedule since the
// previous fire were removed by the calendar.

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
 * What the calendar did to each upcoming fire, from the upcoming window's `rolled` and `skipped`
 * (the instants removed before a fire go with the first fire after them). `upcoming`: ascending.
 */
function upcomingCalendar(upcoming, cal) {
  if (!cal || (!cal.rolled && !cal.skipped)) return upcoming.map(() => null);
  const rolled = new Map((cal.rolled || []).map((r) => [Date.parse(r.at), r]));
  const skipped = [...(cal.skipped || [])].sort((a, b) => Date.parse(a.at) - Date.parse(b.at));
  let i = 0;
  return upcoming.map((at) => {
    const t = Date.parse(at);
    const before = [];
    while (i < skipped.length && Date.parse(skipped[i].at) < t) { before.push(skipped[i]); i += 1; }
    const r = rolled.get(t);
    return { rolledFrom: r ? r.rolledFrom : undefined, reason: r ? r.reason : undefined, skippedBefore: before, skippedBeforeCount: before.length };
  });
}

/**
 * The strip: `execs` (newest first, as the API lists them), then `upcoming` instants (ascending),
 * in the job's zone `tz`. `execHref` makes an execution's link. `calendar`: the upcoming
 * window's answer (`rolled`, `skipped`) when the job has a business calendar.
 */
export function runStrip(execs, upcoming, { def, tz = 'UTC', execHref, id, calendar = null }) {
  const cells = [];
  let prev = null;
  const zone = tz === 'UTC' ? '' : ` ${tz}`;
  const mark = (at) => {
    const off = offsetAt(at, tz);
    if (prev !== null && off && off !== prev) {
      const text = `${tz} changed from ${prev} to ${off}`;
      cells.push(h('span', { class: 'strip-dst', 'data-dst-mark': '', role: 'img', 'aria-label': text, title: text }));
    }
    prev = off || prev;
  };
  // The calendar's marks before the cell of the fire at `at`; returns words for the cell's label.
  const calendarMarks = (at, cal) => {
    if (!cal) return '';
    const n = cal.skippedBeforeCount || 0;
    if (n > 0) {
      const listed = (cal.skippedBefore || []).map((x) => `${fmt(x.at, tz)} (${x.reason})`).join('; ');
      const more = n > (cal.skippedBefore || []).length ? `; and ${n - cal.skippedBefore.length} more` : '';
      const text = `${n === 1 ? 'One instant' : `${n} instants`} of the schedule before ${fmt(at, tz)}${zone} removed by the business calendar: ${listed}${more}`;
      cells.push(h('span', { class: 'strip-skip', 'data-skip-mark': '', 'data-skip-count': String(n), 'data-skip-before': at, role: 'img', 'aria-label': text, title: text }));
    }
    if (!cal.rolledFrom) return '';
    const back = Date.parse(cal.rolledFrom) > Date.parse(at);
    const text = `${fmt(at, tz)}${zone}: rolled ${back ? 'back' : 'forward'} by the business calendar from ${fmt(cal.rolledFrom, tz)} (${cal.reason || 'non-business day'})`;
    cells.push(h('span', { class: `strip-roll${back ? ' back' : ''}`, 'data-roll-mark': '', 'data-roll-at': at, 'data-roll-from': cal.rolledFrom, role: 'img', 'aria-label': text, title: text }));
    return `, rolled from ${fmt(cal.rolledFrom, tz)}`;
  };
  for (const e of [...execs].reverse()) {
    mark(e.scheduledAt);
    const rolled = calendarMarks(e.scheduledAt, e.businessCalendar);
    const [cls, words] = outcome(e, def);
    const label = `${fmt(e.scheduledAt, tz)}${zone}: ${words}${rolled}`;
    cells.push(h('a', { class: `cell c-${cls}`, href: execHref(e.executionId), 'data-status': e.status, 'data-cell': cls, 'aria-label': label, title: label }));
  }
  if (upcoming.length) cells.push(h('span', { class: 'strip-now', role: 'img', 'aria-label': 'now', title: 'now' }));
  const cals = upcomingCalendar(upcoming, calendar);
  upcoming.forEach((at, i) => {
    mark(at);
    const rolled = calendarMarks(at, cals[i]);
    const label = `${fmt(at, tz)}${zone}: upcoming${rolled}`;
    cells.push(h('span', { class: 'cell c-upcoming', 'data-cell': 'upcoming', role: 'img', 'aria-label': label, title: label }));
  });
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
    h('span', {}, h('span', { class: 'strip-dst' }), 'UTC offset change (DST)'),
    h('span', {}, h('span', { class: 'strip-roll' }), 'rolled by the business calendar'),
    h('span', {}, h('span', { class: 'strip-skip' }), 'instants the business calendar removed'));
}
