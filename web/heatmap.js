// SPDX-License-Identifier: Apache-2.0
// Draws the fleet's GPUs on a canvas, one cell each, node after node: fill by utilisation
// (a dark-to-bright scale readable by colour-blind viewers), an orange ring on GPUs that
// are allocated but idle, a hatch on drained GPUs, a cross on faulty ones and on down
// nodes, MIG instances as slices across the cell and shared GPUs split by their jobs.
// Drawing is one pass of fillRect/strokeRect per cell (10,000 GPUs draw in a few ms).

export const GAP = 3;

// Cells as large as the fleet allows: a small pool reads at a glance, 10,000 GPUs still fit.
function cellFor(count) {
  return count <= 64 ? 36 : count <= 1024 ? 20 : 12;
}

// Utilisation 0..100 to a colour on a blue-to-yellow ramp; null (unmeasured) is grey.
function utilColour(u) {
  if (u === null) return '#5d6670';
  const t = Math.max(0, Math.min(100, u)) / 100;
  const r = Math.round(40 + t * 213), g = Math.round(60 + t * 171), b = Math.round(140 - t * 100);
  return `rgb(${r},${g},${b})`;
}

const FILL = {free: '#2b3440', drained: '#3a3f45', failed: '#40282a', down: '#1a1d21'};

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

export function draw(canvas, gpus, width, focus) {
  const lay = layout(gpus.length, width);
  const CELL = lay.cell;
  const dpr = window.devicePixelRatio || 1;
  const hgt = Math.max(CELL, lay.rows * (CELL + GAP));
  canvas.width = Math.round(width * dpr);
  canvas.height = Math.round(hgt * dpr);
  canvas.style.width = `${width}px`;
  canvas.style.height = `${hgt}px`;
  const ctx = canvas.getContext('2d');
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, width, hgt);
  ctx.lineWidth = 1.5;
  for (let i = 0; i < gpus.length; i++) {
    const g = gpus[i];
    const x = (i % lay.cols) * (CELL + GAP), y = Math.floor(i / lay.cols) * (CELL + GAP);
    ctx.fillStyle = g.kind === 'busy' || g.kind === 'idle' ? utilColour(g.util) : FILL[g.kind];
    ctx.fillRect(x, y, CELL, CELL);
    if (g.mig.length) { // MIG: a slice per instance over the GPU's 7 compute slots
      ctx.fillStyle = '#9fd3ff';
      for (const m of g.mig) {
        const sx = x + 1 + (m.start_slot || 0) * (CELL - 2) / 7;
        ctx.fillRect(sx, y + CELL - 4, Math.max(1, migSlots(m.profile) * (CELL - 2) / 7 - 0.6), 3);
      }
    } else if (g.jobs.length > 1 || (g.mode !== 'exclusive' && g.jobs.length)) { // shared: a tick per job
      ctx.fillStyle = '#ffffff';
      const n = Math.max(g.jobs.length, g.replicas || 0);
      for (let k = 0; k < g.jobs.length; k++) ctx.fillRect(x + 1 + k * (CELL - 2) / n, y + CELL - 3, Math.max(1, (CELL - 2) / n - 1), 2);
    }
    if (g.kind === 'idle') {
      ctx.strokeStyle = '#ff8c1a';
      ctx.strokeRect(x + 0.75, y + 0.75, CELL - 1.5, CELL - 1.5);
    } else if (g.kind === 'drained') {
      ctx.strokeStyle = '#e0b000';
      ctx.beginPath();
      for (let d = 4; d < CELL * 2; d += 5) { ctx.moveTo(x + Math.max(0, d - CELL), y + Math.min(CELL, d)); ctx.lineTo(x + Math.min(CELL, d), y + Math.max(0, d - CELL)); }
      ctx.stroke();
    } else if (g.kind === 'failed' || g.kind === 'down') {
      ctx.strokeStyle = g.kind === 'failed' ? '#ff4d4d' : '#8a939c';
      ctx.beginPath();
      ctx.moveTo(x + 2, y + 2); ctx.lineTo(x + CELL - 2, y + CELL - 2);
      ctx.moveTo(x + CELL - 2, y + 2); ctx.lineTo(x + 2, y + CELL - 2);
      ctx.stroke();
    }
  }
  if (focus >= 0 && focus < gpus.length) {
    ctx.strokeStyle = '#ffffff';
    ctx.lineWidth = 2;
    ctx.strokeRect((focus % lay.cols) * (CELL + GAP) - 1, Math.floor(focus / lay.cols) * (CELL + GAP) - 1, CELL + 2, CELL + 2);
  }
  return lay;
}
