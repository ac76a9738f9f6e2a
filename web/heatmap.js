// SPDX-License-Identifier: Apache-2.0
// Draws the fleet's GPUs on a canvas, one cell each, node after node: fill by utilisation
// (a dark-to-bright scale readable by colour-blind viewers), an orange ring on GPUs that
// are allocated but idle, a hatch on drained GPUs, a cross on faulty ones and on down
// nodes, MIG instances as slices across the cell and shared GPUs split by their jobs.
// Cells are drawn grouped by style (see draw), so 10,000 GPUs take one pass of fillRect
// and a handful of style changes.

export const GAP = 3;

// Cells as large as the fleet allows: a small pool reads at a glance, 10,000 GPUs still fit.
function cellFor(count) {
  return count <= 64 ? 36 : count <= 1024 ? 20 : 12;
}

// Utilisation 0..100 to one of 21 colours on a blue-to-yellow ramp (5% steps). Few colours
// let the draw set each fill style once.
const RAMP = Array.from({length: 21}, (_, i) => {
  const t = i / 20;
  return `rgb(${Math.round(40 + t * 213)},${Math.round(60 + t * 171)},${Math.round(140 - t * 100)})`;
});
function utilLevel(u) {
  return Math.round(Math.max(0, Math.min(100, u)) / 5);
}

const BACKGROUND = '#0f1419'; // the .heatwrap behind the canvas (style.css)
const FILL = {free: '#2b3440', drained: '#3a3f45', failed: '#40282a', down: '#1a1d21', unmeasured: '#5d6670'};

export function layout(count, width) {
  const cell = cellFor(count);
  const cols = Math.max(1, Math.floor((width + GAP) / (cell + GAP)));
  return {cols, rows: Math.ceil(count / cols), cell};
}

// Which cell is at canvas point (x, y), or -1.
export function hit(lay, count, x, y) {
  const c = Math.floor(x / (lay.cell + GAP)), r = Math.floor(y / (lay.cell + GAP));
  if (c < 0 || c >= lay.cols || r < 0) return -1;
  const i = r * lay.cols + c;
  return i < count ? i : -1;
}

function migSlots(profile) {
  const m = /^(\d+)g/.exec(profile || '');
  return m ? Number(m[1]) : 1;
}

// Draws every GPU, grouped by what it is drawn with, so each fill and stroke style is set
// once per frame rather than once per cell.
export function draw(canvas, gpus, width, focus) {
  const lay = layout(gpus.length, width);
  const CELL = lay.cell, STEP = CELL + GAP;
  const dpr = window.devicePixelRatio || 1;
  const hgt = Math.max(CELL, lay.rows * STEP);
  canvas.width = Math.round(width * dpr);
  canvas.height = Math.round(hgt * dpr);
  canvas.style.width = `${width}px`;
  canvas.style.height = `${hgt}px`;
  // A CPU-backed, opaque canvas: thousands of small rectangles draw faster in software than
  // through a (possibly emulated) GPU, and an opaque one needs no blending with the page.
  const ctx = canvas.getContext('2d', {alpha: false, willReadFrequently: true});
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.fillStyle = BACKGROUND;
  ctx.fillRect(0, 0, width, hgt);
  const fills = new Map(); // style -> [cell index...]
  const add = (style, i) => { let l = fills.get(style); if (!l) fills.set(style, l = []); l.push(i); };
  for (let i = 0; i < gpus.length; i++) {
    const g = gpus[i];
    if (g.kind === 'busy' || g.kind === 'idle') {
      add(RAMP[utilLevel(g.util)], i);
    } else {
      add(FILL[g.kind], i);
    }
  }
  const X = (i) => (i % lay.cols) * STEP, Y = (i) => Math.floor(i / lay.cols) * STEP;
  for (const [style, cells] of fills) {
    ctx.fillStyle = style;
    for (const i of cells) ctx.fillRect(X(i), Y(i), CELL, CELL);
  }
  // Inside the cell: MIG instances as slices over the GPU's 7 compute slots, and a tick per
  // job on a shared GPU, along the bottom edge.
  ctx.fillStyle = '#9fd3ff';
  for (let i = 0; i < gpus.length; i++) {
    const g = gpus[i];
    if (!g.mig.length) continue;
    for (const m of g.mig) {
      const sx = X(i) + 1 + (m.start_slot || 0) * (CELL - 2) / 7;
      ctx.fillRect(sx, Y(i) + CELL - 4, Math.max(1, migSlots(m.profile) * (CELL - 2) / 7 - 0.6), 3);
    }
  }
  ctx.fillStyle = '#ffffff';
  for (let i = 0; i < gpus.length; i++) {
    const g = gpus[i];
    if (g.mig.length || !g.jobs.length || (g.jobs.length === 1 && g.mode === 'exclusive')) continue;
    const n = Math.max(g.jobs.length, g.replicas || 0);
    for (let k = 0; k < g.jobs.length; k++) ctx.fillRect(X(i) + 1 + k * (CELL - 2) / n, Y(i) + CELL - 3, Math.max(1, (CELL - 2) / n - 1), 2);
  }
  // Marks, one path per kind: an orange ring (allocated but idle), a hatch (drained), a
  // cross (faulty: red; node down: grey).
  ctx.lineWidth = 1.5;
  const stroke = (kind, style, shape) => {
    ctx.strokeStyle = style;
    ctx.beginPath();
    for (let i = 0; i < gpus.length; i++) if (gpus[i].kind === kind) shape(X(i), Y(i));
    ctx.stroke();
  };
  stroke('idle', '#ff8c1a', (x, y) => ctx.rect(x + 0.75, y + 0.75, CELL - 1.5, CELL - 1.5));
  stroke('drained', '#e0b000', (x, y) => {
    for (let d = 4; d < CELL * 2; d += 5) {
      ctx.moveTo(x + Math.max(0, d - CELL), y + Math.min(CELL, d));
      ctx.lineTo(x + Math.min(CELL, d), y + Math.max(0, d - CELL));
    }
  });
  const cross = (x, y) => {
    ctx.moveTo(x + 2, y + 2); ctx.lineTo(x + CELL - 2, y + CELL - 2);
    ctx.moveTo(x + CELL - 2, y + 2); ctx.lineTo(x + 2, y + CELL - 2);
  };
  stroke('failed', '#ff4d4d', cross);
  stroke('down', '#8a939c', cross);
  if (focus >= 0 && focus < gpus.length) {
    ctx.strokeStyle = '#ffffff';
    ctx.lineWidth = 2;
    ctx.strokeRect(X(focus) - 1, Y(focus) - 1, CELL + 2, CELL + 2);
  }
  return lay;
}
