// SPDX-License-Identifier: Apache-2.0
// The queue tree: for each queue its deserved GPUs, fair share, allocation, what it borrows
// beyond what it deserves, pending demand, its budget when it has one, and its per-user
// limits (docs/config.md "Per-user limits").
import {api} from './api.js';
import {h, clear, fmtNum} from './dom.js';

function budgetCell(q) {
  if (!q.budget) return '—';
  const ratio = q.budget_used_ratio;
  const total = q.budget.gpu_hours !== undefined ? q.budget.gpu_hours : q.budget.amount;
  const text = `${fmtNum(q.budget_spent)} of ${fmtNum(total)} ${q.budget_unit || ''} this ${q.budget.period || 'period'}`;
  if (ratio === undefined || ratio === null) return text;
  return h('span', {class: 'budget'}, h('meter', {min: 0, max: 1, high: 0.9, value: Math.min(1, ratio), 'aria-label': `${fmtNum(ratio * 100, 0)}% of the budget`}), ` ${text}`);
}

// "*: 8 GPUs, 200 pending, 2000 GPU-h/month; alice: 16 GPUs", or a dash.
function limitsCell(q) {
  const ul = q.user_limits;
  if (!ul || !ul.users) return '—';
  const parts = [];
  for (const [user, l] of Object.entries(ul.users)) {
    const bits = [];
    if (l.max_gpus !== null && l.max_gpus !== undefined) bits.push(`${fmtNum(l.max_gpus, 2)} GPUs`);
    if (l.max_pending_jobs !== null && l.max_pending_jobs !== undefined) bits.push(`${l.max_pending_jobs} pending`);
    if (l.max_gpu_hours !== null && l.max_gpu_hours !== undefined) bits.push(`${fmtNum(l.max_gpu_hours, 2)} GPU-h/${ul.period || 'month'}`);
    parts.push(`${user}: ${bits.join(', ') || 'no limit'}`);
  }
  return parts.length ? parts.join('; ') : '—';
}

export async function render(main) {
  const box = h('div', {});
  main.append(h('h1', {}, 'Queues'), box);
  async function load() {
    const qs = (await api('/v1/queues')).queues || [];
    const kids = new Map();
    for (const q of qs) {
      const p = q.parent || '';
      if (!kids.has(p)) kids.set(p, []);
      kids.get(p).push(q);
    }
    const rows = [];
    const walk = (parent, depth) => {
      for (const q of (kids.get(parent) || []).sort((a, b) => a.name.localeCompare(b.name))) {
        const borrowed = Math.max(0, (q.allocated || 0) - (q.deserved || 0));
        const short = depth ? q.name.slice(q.name.lastIndexOf('/') + 1) : q.name;
        rows.push(h('tr', {'data-queue': q.name, 'aria-level': String(depth + 1)},
          h('th', {scope: 'row', class: `depth-${Math.min(depth, 6)}`}, short, q.implied ? h('span', {class: 'muted'}, ' (parent)') : null),
          ...[q.deserved, q.fair_share, q.allocated, borrowed, q.pending, q.limit === null ? '—' : q.limit]
            .map((v) => h('td', {class: 'num'}, fmtNum(v, 2))),
          h('td', {class: 'num'}, `${q.running_jobs || 0} / ${q.pending_jobs || 0}`),
          h('td', {}, budgetCell(q)),
          h('td', {}, limitsCell(q))));
        walk(q.name, depth + 1);
      }
    };
    walk('', 0);
    // A queue whose parent is missing from the list still shows, at the top level.
    const seen = new Set(rows.map((r) => r.dataset.queue));
    for (const q of qs) if (!seen.has(q.name)) { kids.set(`\u0000${q.name}`, [q]); walk(`\u0000${q.name}`, 0); }
    clear(box).append(h('table', {id: 'queues-table'},
      h('caption', {class: 'sr-only'}, 'Queues as a tree; GPUs unless stated'),
      h('thead', {}, h('tr', {}, ['Queue', 'Deserved', 'Fair share', 'Allocated', 'Borrowed', 'Pending GPUs', 'Limit', 'Jobs running / pending', 'Budget', 'Per-user limits']
        .map((x) => h('th', {scope: 'col'}, x)))),
      h('tbody', {}, rows)));
  }
  await load();
  return {refresh: () => load().catch(() => {})};
}
