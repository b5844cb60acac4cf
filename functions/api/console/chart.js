// A small SVG line chart (no library): several series over time, one y axis in milliseconds.

const NS = 'http://www.w3.org/2000/svg';
const s = (tag, attrs) => {
  const el = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  return el;
};

/** series: [{label, cls, points: [[timeMs, valueMs], ...]}] */
export function lineChart(series, { title }) {
  const W = 720; const H = 220; const L = 56; const B = 24; const T = 10; const R = 10;
  const pts = series.flatMap((x) => x.points);
  const svg = s('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': title });
  const t = s('title', {}); t.textContent = title; svg.append(t);
  if (!pts.length) return svg;
  const xs = pts.map((p) => p[0]); const ys = pts.map((p) => p[1]);
  const x0 = Math.min(...xs); const x1 = Math.max(...xs, x0 + 1);
  const y1 = Math.max(...ys, 1); const y0 = Math.min(0, ...ys);
  const X = (v) => L + ((v - x0) / (x1 - x0)) * (W - L - R);
  const Y = (v) => T + (1 - (v - y0) / (y1 - y0)) * (H - T - B);
  svg.append(s('line', { x1: L, y1: Y(y0), x2: W - R, y2: Y(y0), class: 'axis' }));
  svg.append(s('line', { x1: L, y1: T, x2: L, y2: H - B, class: 'axis' }));
  for (const v of [y0, (y0 + y1) / 2, y1]) {
    const lab = s('text', { x: L - 6, y: Y(v) + 4, 'text-anchor': 'end' });
    lab.textContent = v >= 1000 ? `${(v / 1000).toFixed(1)} s` : `${Math.round(v)} ms`;
    svg.append(lab);
  }
  for (const [v, anchor] of [[x0, 'start'], [x1, 'end']]) {
    const lab = s('text', { x: X(v), y: H - 6, 'text-anchor': anchor });
    lab.textContent = new Date(v).toISOString().slice(5, 16).replace('T', ' ');
    svg.append(lab);
  }
  for (const ser of series) {
    if (!ser.points.length) continue;
    const d = ser.points.map((p, i) => `${i ? 'L' : 'M'}${X(p[0]).toFixed(1)},${Y(p[1]).toFixed(1)}`).join(' ');
    svg.append(s('path', { d, fill: 'none', 'stroke-width': 2, class: ser.cls }));
    for (const p of ser.points) svg.append(s('circle', { cx: X(p[0]), cy: Y(p[1]), r: 2.5, class: `dot ${ser.cls}` }));
  }
  return svg;
}
