// SPDX-License-Identifier: Apache-2.0
// Small SVG charts drawn by hand (no library): a line chart of a time series and a bar
// chart. Each carries a <title> and a <desc> with the figures a screen reader needs.
import {s, fmtNum} from './dom.js';

const W = 320, H = 120, PAD_L = 40, PAD_B = 18, PAD_T = 8, PAD_R = 8;

// points: [[unix_s, value], ...]; yMax: the axis top (null: from the data).
export function lineChart({title, unit, points, yMax = null, cls = ''}) {
  const pts = points.filter((p) => p[1] !== null && p[1] !== undefined && isFinite(p[1]));
  const vals = pts.map((p) => p[1]);
  const top = yMax || Math.max(1, ...vals) * 1.1;
  const t0 = pts.length ? pts[0][0] : 0, t1 = pts.length ? pts[pts.length - 1][0] : 1;
  const x = (t) => PAD_L + (t1 > t0 ? (t - t0) / (t1 - t0) : 0.5) * (W - PAD_L - PAD_R);
  const y = (v) => PAD_T + (1 - Math.min(v, top) / top) * (H - PAD_T - PAD_B);
  const last = vals.length ? vals[vals.length - 1] : null;
  const desc = vals.length
    ? `${vals.length} samples; last ${fmtNum(last)} ${unit}, min ${fmtNum(Math.min(...vals))}, max ${fmtNum(Math.max(...vals))}`
    : 'no samples yet';
  const svg = s('svg', {viewBox: `0 0 ${W} ${H}`, class: `chart line ${cls}`, role: 'img', 'aria-label': `${title}: ${desc}`},
    s('title', {}, title), s('desc', {}, desc),
    s('line', {x1: PAD_L, y1: H - PAD_B, x2: W - PAD_R, y2: H - PAD_B, class: 'axis'}),
    s('line', {x1: PAD_L, y1: PAD_T, x2: PAD_L, y2: H - PAD_B, class: 'axis'}),
    s('text', {x: PAD_L - 4, y: PAD_T + 8, class: 'tick', 'text-anchor': 'end'}, fmtNum(top, 0)),
    s('text', {x: PAD_L - 4, y: H - PAD_B, class: 'tick', 'text-anchor': 'end'}, '0'),
    s('text', {x: W - PAD_R, y: H - 4, class: 'tick', 'text-anchor': 'end'}, `${title} (${unit})`));
  if (pts.length === 1) {
    svg.append(s('circle', {cx: x(pts[0][0]), cy: y(pts[0][1]), r: 3, class: 'series'}));
  } else if (pts.length > 1) {
    svg.append(s('polyline', {class: 'series', fill: 'none',
      points: pts.map((p) => `${x(p[0]).toFixed(1)},${y(p[1]).toFixed(1)}`).join(' ')}));
  }
  return svg;
}

// bars: [{label, value}], drawn horizontally so long labels stay readable.
export function barChart({title, unit, bars}) {
  const shown = bars.slice(0, 30);
  const rowH = 18, labelW = 150, w = 520;
  const max = Math.max(1e-9, ...shown.map((b) => b.value || 0));
  const hgt = Math.max(1, shown.length) * rowH + 20;
  const svg = s('svg', {viewBox: `0 0 ${w} ${hgt}`, class: 'chart bars', role: 'img',
    'aria-label': `${title}: ${shown.map((b) => `${b.label} ${fmtNum(b.value, 3)}`).join(', ')}`},
  s('title', {}, title));
  shown.forEach((b, i) => {
    const bw = ((b.value || 0) / max) * (w - labelW - 70);
    const yy = i * rowH + 4;
    svg.append(
      s('text', {x: labelW - 6, y: yy + 12, class: 'tick', 'text-anchor': 'end'}, b.label.length > 24 ? `${b.label.slice(0, 23)}…` : b.label),
      s('rect', {x: labelW, y: yy, width: Math.max(bw, 0).toFixed(1), height: rowH - 6, class: 'bar'}),
      s('text', {x: labelW + bw + 4, y: yy + 12, class: 'tick'}, `${fmtNum(b.value, 3)} ${unit}`));
  });
  svg.append(s('text', {x: w - 4, y: hgt - 4, class: 'tick', 'text-anchor': 'end'},
    bars.length > shown.length ? `first ${shown.length} of ${bars.length}` : ''));
  return svg;
}
