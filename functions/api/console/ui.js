// Small DOM helpers: every element is built with h(), never from HTML strings, so API data
// is always text (no injection) and the CSP needs no 'unsafe-inline'.

/** h('a', {href: '#/x', class: 'c', onclick: f}, 'text', child) */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else if (k === 'text') el.textContent = v;
    else if (v === true) el.setAttribute(k, '');
    else el.setAttribute(k, String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

/**
 * Replaces `el`'s children, skipping absent ones (`null`, `undefined`, `false`) as `h` does:
 * the DOM's own `replaceChildren` would print them as the text "null".
 */
export function fill(el, ...children) {
  el.replaceChildren(...children.flat(Infinity)
    .filter((c) => c !== undefined && c !== null && c !== false)
    .map((c) => (c instanceof Node ? c : document.createTextNode(String(c)))));
}

/** An instant as "2026-12-01 10:04:05 UTC" (or in `tz`). */
export function fmt(iso, tz = 'UTC') {
  if (!iso) return '—';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  const parts = new Intl.DateTimeFormat('en-CA', {
    timeZone: tz, year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit',
    second: '2-digit', hourCycle: 'h23',
  }).formatToParts(d);
  const p = Object.fromEntries(parts.map((x) => [x.type, x.value]));
  return `${p.year}-${p.month}-${p.day} ${p.hour}:${p.minute}:${p.second}${tz === 'UTC' ? ' UTC' : ''}`;
}

/** Milliseconds as "850 ms", "12.3 s", "4 min". */
export function dur(ms) {
  if (ms === null || ms === undefined || Number.isNaN(ms)) return '—';
  const a = Math.abs(ms);
  if (a < 1000) return `${Math.round(ms)} ms`;
  if (a < 120000) return `${(ms / 1000).toFixed(1)} s`;
  if (a < 7200000) return `${Math.round(ms / 60000)} min`;
  return `${(ms / 3600000).toFixed(1)} h`;
}

export function badge(status) {
  return h('span', { class: `badge s-${status}` }, status);
}

/** A table: columns [{label, cell: row => node|string, num?, narrow?}] */
export function table(columns, rows, { caption, empty = 'Nothing here.' } = {}) {
  if (!rows.length) return h('p', { class: 'muted' }, empty);
  const cls = (c) => [c.num ? 'num' : '', c.narrow ? 'hide-narrow' : ''].join(' ').trim() || undefined;
  return h('div', { class: 'scroll' }, h('table', {},
    caption ? h('caption', { class: 'muted' }, caption) : null,
    h('thead', {}, h('tr', {}, columns.map((c) => h('th', { scope: 'col', class: cls(c) }, c.label)))),
    h('tbody', {}, rows.map((r) => h('tr', {}, columns.map((c) => h('td', { class: cls(c), 'data-label': c.label }, c.cell(r))))))));
}

/** Definition list of label → value. */
export function facts(pairs) {
  return h('dl', { class: 'grid' }, pairs.filter(Boolean).map(([k, v]) =>
    h('div', { class: 'kv' }, h('dt', {}, k), h('dd', {}, v ?? '—'))));
}

export function toast(msg) {
  const box = document.getElementById('toast');
  const m = h('div', {}, msg);
  box.append(m);
  setTimeout(() => m.remove(), 6000);
}

/**
 * Asks before acting. Resolves to {ok, reason}. With `reason`, a reason is required.
 */
export function confirmAction(text, { action = 'Confirm', reason = false, choice = null } = {}) {
  const dlg = document.getElementById('confirm');
  const input = document.getElementById('confirm-reason');
  const select = document.getElementById('confirm-choice');
  document.getElementById('confirm-text').textContent = text;
  document.getElementById('confirm-ok').textContent = action;
  document.getElementById('confirm-reason-row').hidden = !reason;
  // An optional choice (`{ label, options: [[value, text], ...] }`, the first the default).
  document.getElementById('confirm-choice-row').hidden = !choice;
  select.replaceChildren(...(choice ? choice.options.map(([v, t]) => h('option', { value: v }, t)) : []));
  if (choice) document.getElementById('confirm-choice-label').textContent = choice.label;
  input.value = '';
  input.required = reason;
  return new Promise((resolve) => {
    dlg.addEventListener('close', () => {
      resolve({ ok: dlg.returnValue === 'ok', reason: input.value.trim(), choice: choice ? select.value : null });
    }, { once: true });
    dlg.returnValue = '';
    dlg.showModal();
    (reason ? input : document.getElementById('confirm-ok')).focus();
  });
}

/** Shows an API error in `where` (or as a toast). */
export function showError(e, where) {
  const msg = e && e.message ? e.message : String(e);
  if (where) fill(where, h('p', { class: 'error', role: 'alert' }, msg));
  else toast(msg);
}

export function link(href, text) {
  return h('a', { href }, text);
}

/** A job's page and an execution's page. */
export const jobHref = (id) => `#/jobs/${enc(id)}`;
export const execHref = (id) => `#/executions/${enc(id)}`;

export function enc(s) {
  return encodeURIComponent(s);
}
