// A schedule in words: "every day at 02:00 Asia/Shanghai". Covers the common shapes and says
// "cron ‹expression›" for the rest, never a wrong sentence.

const DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
const DAY_NAMES = { SUN: 0, MON: 1, TUE: 2, WED: 3, THU: 4, FRI: 5, SAT: 6 };
const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September',
  'October', 'November', 'December'];

const num = (f) => /^\d+$/.test(f);
const pad = (n) => String(n).padStart(2, '0');
const any = (f) => f === '*' || f === '?';

function dayName(f) {
  const up = f.toUpperCase();
  if (up in DAY_NAMES) return DAYS[DAY_NAMES[up]];
  if (num(f)) return DAYS[Number(f) % 7];
  return null;
}

function dowWords(f) {
  if (/^(MON|1)-(FRI|5)$/i.test(f)) return 'every weekday';
  const list = f.split(',').map(dayName);
  if (list.every(Boolean)) return `every ${list.join(', ')}`;
  return null;
}

function at(sec, min, hour) {
  return `${pad(hour)}:${pad(min)}${Number(sec) ? `:${pad(sec)}` : ''}`;
}

/** Words for a cron (6/7 fields, or 5 Unix fields), rate(..) or at(..) in `tz`. */
export function scheduleInWords(expression, tz = 'UTC') {
  const e = (expression || '').trim();
  const zone = ` ${tz}`;
  let m = /^rate\((\d+)\s+(second|minute|hour|day)s?\)$/i.exec(e);
  if (m) return Number(m[1]) === 1 ? `every ${m[2].toLowerCase()}` : `every ${m[1]} ${m[2].toLowerCase()}s`;
  m = /^at\((.+)\)$/i.exec(e);
  if (m) return `once, at ${m[1].replace('T', ' ')}${zone}`;
  let f = e.split(/\s+/);
  if (f.length === 5) f = ['0', ...f];
  if (f.length === 7 && any(f[6])) f = f.slice(0, 6);
  if (f.length !== 6) return `cron ${e}`;
  const [sec, min, hour, dom, mon, dow] = f;
  if (num(sec) && any(min) && any(hour) && any(dom) && any(mon) && any(dow)) return 'every minute';
  m = /^(?:\*|0)\/(\d+)$/.exec(min);
  if (num(sec) && m && any(hour) && any(dom) && any(mon) && any(dow)) return `every ${m[1]} minutes`;
  m = /^(?:\*|0)\/(\d+)$/.exec(sec);
  if (m && any(min) && any(hour) && any(dom) && any(mon) && any(dow)) return `every ${m[1]} seconds`;
  if (num(sec) && num(min) && any(hour) && any(dom) && any(mon) && any(dow)) {
    return `every hour at minute ${Number(min)}${zone}`;
  }
  if (!(num(sec) && num(min) && num(hour))) return `cron ${e}${zone}`;
  const time = `at ${at(sec, min, hour)}${zone}`;
  if (any(dom) && any(mon) && any(dow)) return `every day ${time}`;
  if (any(dom) && any(mon)) {
    const d = dowWords(dow);
    if (d) return `${d} ${time}`;
  }
  if (num(dom) && any(dow)) {
    if (any(mon)) return `on day ${Number(dom)} of every month ${time}`;
    if (num(mon)) return `every year on ${MONTHS[Number(mon) - 1]} ${Number(dom)} ${time}`;
  }
  if (dom.toUpperCase() === 'L' && any(mon) && any(dow)) return `on the last day of every month ${time}`;
  return `cron ${e}${zone}`;
}
