// SPDX-License-Identifier: Apache-2.0
// The GPUs view: the fleet's heatmap on a canvas, with its text alternative beside it (a
// summary, every GPU that needs attention with its reason, and a table of nodes with their
// counts per state). The canvas takes focus: arrow keys move between GPUs and the focused
// GPU is described in a live region, as hovering describes it in a tooltip.
import {api} from './api.js';
import {h, clear, table, labelList} from './dom.js';
import {flatten, counts, describe, KINDS, nodeState, resvText} from './fleet.js';
import {draw, hit} from './heatmap.js';

function legend() {
  return h('ul', {class: 'legend', 'aria-label': 'Legend'},
    h('li', {}, h('span', {class: 'sw sw-util'}), 'Utilisation 0 → 100 %'),
    h('li', {}, h('span', {class: 'sw sw-unmeasured'}), 'Allocated, use not reported'),
    h('li', {}, h('span', {class: 'sw sw-idle'}), 'Allocated but idle (orange ring)'),
    h('li', {}, h('span', {class: 'sw sw-free'}), 'Free'),
    h('li', {}, h('span', {class: 'sw sw-drained'}), 'Drained (hatched)'),
    h('li', {}, h('span', {class: 'sw sw-failed'}), 'Faulty or node down (cross)'),
    h('li', {}, h('span', {class: 'sw sw-mig'}), 'MIG slices / shared-GPU jobs (bottom strip)'));
}

function nodeRows(nodes, gpus) {
  const byNode = new Map();
  for (const g of gpus) {
    if (!byNode.has(g.node)) byNode.set(g.node, Object.fromEntries(KINDS.map(([k]) => [k, 0])));
    byNode.get(g.node)[g.kind]++;
  }
  return nodes.map((n) => {
    const c = byNode.get(n.name) || {};
    return [h('a', {href: `#/nodes/${encodeURIComponent(n.name)}`}, n.name), nodeState(n), n.model || '', String(n.gpus),
      ...KINDS.map(([k]) => String(c[k] || 0)), labelList(n.labels), [n.reason || '', resvText(n)].filter(Boolean).join('; ')];
  });
}


export async function render(main) {
  performance.mark('gpus-start');
  const canvas = h('canvas', {id: 'heatmap', tabindex: '0', role: 'img',
    'aria-describedby': 'heat-summary', 'aria-label': 'GPU heatmap: use the arrow keys to move between GPUs'});
  const tip = h('div', {id: 'heat-tip', class: 'tip', role: 'tooltip', hidden: true});
  const focusText = h('p', {id: 'heat-focus', class: 'muted', 'aria-live': 'polite'});
  const summaryEl = h('p', {id: 'heat-summary'});
  const attention = h('div', {id: 'heat-attention'});
  const nodesBox = h('div', {});
  const wrap = h('div', {class: 'heatwrap'}, canvas, tip);
  main.append(h('h1', {}, 'GPUs'), legend(), wrap, focusText,
    h('section', {'aria-labelledby': 'alt-h'}, h('h2', {id: 'alt-h'}, 'Fleet in words'), summaryEl, attention, nodesBox));

  let gpus = [], lay = null, focus = -1;
  const width = () => { // the wrapper's content box: the canvas is opaque to its edges
    const cs = getComputedStyle(wrap);
    const inner = wrap.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
    return Math.max(200, Math.floor(inner) || 800);
  };
  function paint() {
    performance.mark('heatmap-draw-start');
    lay = draw(canvas, gpus, width(), focus);
    // Reading one pixel makes the browser rasterise what was drawn now, so the measure is
    // of the heatmap drawn, not of the draw calls merely recorded.
    canvas.getContext('2d').getImageData(0, 0, 1, 1);
    performance.mark('heatmap-draw-end');
    performance.measure('heatmap-draw', 'heatmap-draw-start', 'heatmap-draw-end');
  }
  function at(ev) {
    const r = canvas.getBoundingClientRect();
    return hit(lay, gpus.length, ev.clientX - r.left, ev.clientY - r.top);
  }
  canvas.addEventListener('mousemove', (ev) => {
    const i = lay ? at(ev) : -1;
    if (i < 0) { tip.hidden = true; return; }
    tip.textContent = describe(gpus[i]);
    tip.hidden = false;
    const r = wrap.getBoundingClientRect();
    tip.style.left = `${Math.min(ev.clientX - r.left + 12, r.width - 260)}px`;
    tip.style.top = `${ev.clientY - r.top + 12}px`;
  });
  canvas.addEventListener('mouseleave', () => { tip.hidden = true; });
  canvas.addEventListener('click', (ev) => {
    const i = lay ? at(ev) : -1;
    if (i >= 0) location.hash = `#/nodes/${encodeURIComponent(gpus[i].node)}`;
  });
  canvas.addEventListener('keydown', (ev) => {
    if (!gpus.length || !lay) return;
    const step = {ArrowRight: 1, ArrowLeft: -1, ArrowDown: lay.cols, ArrowUp: -lay.cols, Home: -Infinity, End: Infinity}[ev.key];
    if (ev.key === 'Enter' && focus >= 0) { location.hash = `#/nodes/${encodeURIComponent(gpus[focus].node)}`; return; }
    if (step === undefined) return;
    ev.preventDefault();
    focus = Math.max(0, Math.min(gpus.length - 1, (focus < 0 ? 0 : focus + (isFinite(step) ? step : step > 0 ? gpus.length : -gpus.length))));
    focusText.textContent = describe(gpus[focus]);
    paint();
  });
  canvas.addEventListener('focus', () => {
    if (focus < 0 && gpus.length) { focus = 0; focusText.textContent = describe(gpus[0]); paint(); }
  });

  async function load() {
    const doc = await api('/v1/nodes');
    const nodes = doc.nodes || [];
    gpus = flatten(nodes);
    if (focus >= gpus.length) focus = -1;
    paint();
    const c = counts(gpus);
    summaryEl.textContent = `${gpus.length} GPUs on ${nodes.length} nodes: ` +
      KINDS.map(([k, label]) => `${c[k]} ${label.toLowerCase()}`).join(', ') + '.';
    const bad = gpus.filter((g) => g.kind === 'drained' || g.kind === 'failed' || g.kind === 'down' || g.kind === 'idle');
    clear(attention);
    if (bad.length) {
      const shown = bad.slice(0, 200);
      attention.append(h('h3', {}, 'GPUs that need attention'),
        h('ul', {id: 'heat-attention-list'}, shown.map((g) => h('li', {'data-node': g.node, 'data-gpu': String(g.index), 'data-kind': g.kind},
          h('a', {href: `#/nodes/${encodeURIComponent(g.node)}`}, `${g.node} GPU ${g.index}`), `: ${describe(g).split(', ').slice(1).join(', ')}`))),
        h('p', {class: 'muted'}, bad.length > shown.length ? `and ${bad.length - shown.length} more` : ''));
    }
    clear(nodesBox).append(h('details', {}, h('summary', {}, `Nodes (${nodes.length}) with their GPUs per state`),
      table('Nodes', ['Node', 'State', 'Model', 'GPUs', ...KINDS.map(([, l]) => l), 'Labels', 'Reason'], nodeRows(nodes, gpus), {id: 'nodes-table'})));
  }
  await load();
  requestAnimationFrame(() => setTimeout(() => performance.mark('gpus-painted'), 0));
  const onResize = () => paint();
  window.addEventListener('resize', onResize);
  return {refresh: () => load().catch(() => {}), stop: () => window.removeEventListener('resize', onResize)};
}
