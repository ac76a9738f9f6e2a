// SPDX-License-Identifier: Apache-2.0
// The ledger's reports (GET /v1/reports/{kind}) as a table and a bar chart, with the same
// report as CSV (format=csv) downloaded through the user's token.
import {api, qs, ApiError} from './api.js';
import {h, clear, fmtNum, note} from './dom.js';
import {barChart} from './chart.js';

const KINDS = ['usage', 'cost', 'efficiency', 'idle'];
const BY = ['queue', 'user', 'model', 'capacity', 'node', 'job'];
const STEPS = ['none', 'day', 'week', 'month'];

function firstOfMonth() {
  const d = new Date();
  return `${d.getUTCFullYear()}-${String(d.getUTCMonth() + 1).padStart(2, '0')}-01`;
}

export async function render(main, params, ctx) {
  const q = params.query;
  const kind = KINDS.includes(q.get('kind')) ? q.get('kind') : 'usage';
  const by = (q.get('by') || 'queue').split(',').filter((b) => BY.includes(b));
  const from = q.get('from') || firstOfMonth();
  const to = q.get('to') || '';
  const step = STEPS.includes(q.get('step')) ? q.get('step') : 'none';

  const kindSel = h('select', {id: 'r-kind'}, KINDS.map((k) => h('option', {value: k, selected: k === kind}, k)));
  const stepSel = h('select', {id: 'r-step'}, STEPS.map((k) => h('option', {value: k, selected: k === step}, k)));
  const fromIn = h('input', {id: 'r-from', type: 'date', value: from});
  const toIn = h('input', {id: 'r-to', type: 'date', value: to});
  const byBoxes = BY.map((b) => h('input', {type: 'checkbox', id: `r-by-${b}`, value: b, checked: by.includes(b)}));
  const form = h('form', {class: 'filters', 'aria-label': 'Report'},
    h('label', {for: 'r-kind'}, 'Report'), kindSel,
    h('fieldset', {}, h('legend', {}, 'Group by'), BY.map((b, i) => h('span', {class: 'chk'}, byBoxes[i], h('label', {for: `r-by-${b}`}, b)))),
    h('label', {for: 'r-from'}, 'From'), fromIn, h('label', {for: 'r-to'}, 'To'), toIn,
    h('label', {for: 'r-step'}, 'Step'), stepSel,
    h('button', {type: 'submit'}, 'Show'));
  const query = () => ({kind: kindSel.value, by: byBoxes.filter((b) => b.checked).map((b) => b.value).join(','),
    from: fromIn.value, to: toIn.value, step: stepSel.value === 'none' ? '' : stepSel.value});
  form.addEventListener('submit', (ev) => { ev.preventDefault(); ctx.go('/reports', query()); });
  const out = h('div', {id: 'report'});
  const csv = h('button', {type: 'button', id: 'r-csv'}, 'Download CSV');
  main.append(h('h1', {}, 'Reports'), form, csv, out);

  const params0 = {by: by.join(','), from, to, step: step === 'none' ? '' : step};
  csv.addEventListener('click', async () => {
    try {
      const blob = await api(`/v1/reports/${kind}${qs({...params0, format: 'csv'})}`, {asBlob: true});
      const url = URL.createObjectURL(blob);
      const a = h('a', {href: url, download: `gpool-${kind}-${from}.csv`});
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10000);
    } catch (e) {
      out.prepend(note(e instanceof ApiError ? e.describe() : String(e), 'error'));
    }
  });

  async function load() {
    let r;
    try {
      r = await api(`/v1/reports/${kind}${qs(params0)}`);
    } catch (e) {
      clear(out).append(note(e instanceof ApiError ? e.describe() : String(e), 'error'));
      return;
    }
    const cols = r.columns || [];
    const keys = cols.filter((c) => BY.includes(c) || c === 'period' || c === 'kind');
    // A fraction's job may keep more of its GPU busy than its share (no compute cap
    // without MPS): say so where the table shows it, as `gpool report` does.
    const over = (r.rows || []).some((row) => typeof row.efficiency === 'number' && row.efficiency > 1.0005);
    const label = (row) => keys.filter((k) => k !== 'period' || r.step !== 'none').map((k) => row[k] === null ? '—' : row[k]).join(' · ');
    const measure = kind === 'cost' && cols.includes('cost') ? 'cost' : kind === 'efficiency' ? 'efficiency' : 'gpu_hours';
    clear(out).append(
      h('p', {class: 'muted'}, `${r.from} to ${r.to}${r.currency ? `, in ${r.currency}` : ''}${r.truncated ? ' (cut at 10,000 rows)' : ''}`),
      barChart({title: `${measure.replace('_', ' ')} by ${keys.join(', ')}`, unit: measure === 'cost' ? r.currency || '' : measure === 'efficiency' ? '' : 'GPU-h',
        bars: (r.rows || []).map((row) => ({label: label(row) || 'total', value: row[measure] || 0}))}),
      h('div', {class: 'scroll'}, h('table', {id: 'report-table'},
        h('thead', {}, h('tr', {}, cols.map((c) => h('th', {scope: 'col'}, c)))),
        h('tbody', {}, (r.rows || []).map((row) => h('tr', {}, cols.map((c) => h('td', {class: typeof row[c] === 'number' ? 'num' : ''},
          typeof row[c] === 'number' ? fmtNum(row[c], 3) : row[c] === null ? '—' : String(row[c])))))))),
      over ? h('p', {id: 'report-over', class: 'muted'}, 'Efficiency over 1: jobs holding part of a GPU (a fraction or a ' +
        'time-slice replica) kept more of its SMs busy than their part. Without MPS a fraction caps memory, not ' +
        'compute, so a job uses the SMs its neighbours leave idle.') : null);
  }
  await load();
  return {};
}
