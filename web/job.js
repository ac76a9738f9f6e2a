// SPDX-License-Identifier: Apache-2.0
// One job: what it is, why it waits or how it ended, every attempt, where it runs (nodes,
// GPU UUIDs, MIG instance or fraction), its GPUs' utilisation, memory and power over its
// life, its energy and cost, and its log with follow. Another user's job shows what the
// API shows that user: the command hidden, no buttons, no log.
import {api, qs, ApiError} from './api.js';
import {h, clear, fmtTime, fmtDur, fmtNum, fmtSentence, facts, note, table, stateBadge} from './dom.js';
import {actionButtons, mayAct, portControl} from './actions.js';
import {lineChart} from './chart.js';

const LOG_POLL_MS = 2000;
const LOG_KEEP = 1 << 20; // characters of log kept on the page

function why(j) {
  if (j.state === 'pending' || j.state === 'held') return fmtSentence(j.pending_message) || j.pending_reason || 'waiting to start';
  if (j.state === 'running') return 'running';
  if (j.state === 'stopping') return `stopping${j.stop_reason ? `: ${j.stop_reason}` : ''}`;
  return `${j.state}${j.end_reason ? `: ${j.end_reason}` : ''}${j.exit_code !== null && j.exit_code !== undefined ? ` (exit code ${j.exit_code})` : ''}`;
}

function eventDetail(e) {
  return Object.entries(e).filter(([k]) => k !== 'event' && k !== 'at')
    .map(([k, v]) => `${k}=${typeof v === 'object' ? JSON.stringify(v) : v}`).join(' ');
}

function summary(j) {
  const wait = [];
  const waiting = j.state === 'pending' || j.state === 'held';
  if (waiting && j.queue_position !== undefined) wait.push(['Place in queue', j.queue_position === null ? 'not ranked' : String(j.queue_position)]);
  if (waiting && j.estimated_start !== undefined) wait.push(['Estimated start', j.estimated_start === null ? 'not estimated' : fmtTime(j.estimated_start)]);
  return facts([
    ['State', h('span', {id: 'job-state'}, stateBadge(j.state))],
    ['Why', h('span', {id: 'job-why'}, why(j))],
    ...wait,
    ['User', j.user], ['Queue', j.queue],
    ['Command', h('code', {id: 'job-command'}, (j.command || []).join(' '))],
    ...(j.container ? [['Image', h('code', {id: 'job-image'}, j.container.image)]] : []),
    ['GPUs', j.gpu_fraction ? `${j.gpu_fraction} of a GPU × ${j.tasks}` : `${j.gpus} × ${j.tasks} task(s)${j.mig ? `, MIG ${j.mig}` : ''}`],
    ['Submitted', fmtTime(j.submitted_at)], ['Started', fmtTime(j.started_at)], ['Ended', fmtTime(j.ended_at)],
    ['Time limit', j.time_limit ? fmtDur(j.time_limit) : 'none'], ['Restarts', String(j.restarts || 0)],
  ]);
}

function placements(j) {
  const rows = [];
  for (const p of j.placements || []) {
    const share = p.mig_uuid ? `MIG ${p.mig_uuid}` : p.gpu_milli && p.gpu_milli < 1000 ? `${p.gpu_milli / 10}% of a GPU` : 'whole GPU';
    (p.gpu_ids || []).forEach((g, i) => rows.push([
      h('a', {href: `#/nodes/${encodeURIComponent(p.node)}`}, p.node), String(g),
      h('code', {}, (p.gpu_uuids || [])[i] || '—'), share, p.gpu_mem_mib ? `${fmtNum(p.gpu_mem_mib)} MiB` : '—']));
  }
  if (!rows.length) return h('p', {class: 'muted'}, 'Not placed.');
  return table(null, ['Node', 'GPU', 'UUID', 'Share', 'GPU memory cap'], rows);
}

function attempts(j) {
  const rows = (j.attempts || []).map((a) => [String(a.attempt), fmtTime(a.start), a.end ? fmtTime(a.end) : 'running',
    fmtDur((a.end || Date.now() / 1000) - a.start), (a.nodes || []).join(', '), a.end_reason || '']);
  const tl = h('ol', {class: 'timeline', 'aria-label': 'Timeline'},
    (j.timeline || []).map((e) => h('li', {}, h('time', {}, fmtTime(e.at)), ' ', h('strong', {}, e.event), ' ', eventDetail(e))));
  return [rows.length ? table('Attempts', ['#', 'Start', 'End', 'Ran for', 'Nodes', 'Ended because'], rows) : h('p', {class: 'muted'}, 'No attempt yet.'),
    h('h3', {}, 'Timeline'), tl];
}

async function metrics(j, box) {
  clear(box);
  let doc;
  try {
    doc = await api(`/v1/jobs/${encodeURIComponent(j.id)}/metrics`);
  } catch (e) {
    box.append(note(e instanceof ApiError ? `No per-GPU figures: ${e.describe()}` : String(e), 'info'));
    return;
  }
  if (!doc.gpus || !doc.gpus.length) {
    box.append(h('p', {class: 'muted'}, 'No per-GPU figures yet.'));
    return;
  }
  for (const g of doc.gpus) {
    const col = (k) => (g.samples || []).map((r) => [r[0], r[k]]);
    box.append(h('figure', {class: 'gpu-graphs', 'data-uuid': g.uuid},
      h('figcaption', {}, `${g.node} GPU ${g.index} `, h('code', {}, g.uuid || '')),
      h('div', {class: 'charts'},
        lineChart({title: 'Utilisation', unit: '%', points: col(1), yMax: 100, cls: 'util'}),
        lineChart({title: 'Memory used', unit: 'MiB', points: col(2), cls: 'mem'}),
        lineChart({title: 'Power', unit: 'W', points: col(3), cls: 'power'}))));
  }
  box.append(h('p', {class: 'muted'}, `One sample every ${doc.interval_s} s.`));
}

async function energy(j, box) {
  clear(box);
  const u = j.usage || {};
  const pairs = [['Energy (this run)', u.energy_j !== undefined && u.energy_j !== null ? `${fmtNum(u.energy_j / 3.6e6, 3)} kWh` : '—'],
    ['Average SM use', u.avg_sm_util_pct !== undefined ? `${fmtNum(u.avg_sm_util_pct, 1)} %` : '—'],
    ['Peak memory', u.peak_mem_mib !== undefined ? `${fmtNum(u.peak_mem_mib)} MiB` : '—']];
  box.append(facts(pairs));
  if (!j.started_at) return;
  // The ledger's cost report for this job alone, over its life (`job=`: no fleet rows).
  const to = (j.ended_at || Math.floor(Date.now() / 1000)) + 1;
  try {
    const r = await api(`/v1/reports/cost${qs({job: j.id, from: j.submitted_at, to})}`);
    const row = (r.rows || []).find((x) => x.kind === 'jobs');
    box.append(facts([
      ['GPU-hours', row ? fmtNum(row.gpu_hours, 3) : '—'],
      ['Energy (ledger)', row && row.energy_kwh !== null && row.energy_kwh !== undefined ? `${fmtNum(row.energy_kwh, 3)} kWh` : '—'],
      ['Cost', row && row.cost !== null && row.cost !== undefined ? `${fmtNum(row.cost, 2)} ${r.currency || ''}` : 'no price'],
    ]));
  } catch (e) {
    box.append(note(e instanceof ApiError ? `Cost: ${e.describe()}` : String(e), 'info'));
  }
}

function logPanel(j) {
  const pre = h('pre', {id: 'job-log', class: 'log', tabindex: '0', 'aria-label': 'Job log'});
  const stream = h('select', {id: 'log-stream'}, h('option', {value: 'stdout'}, 'stdout'), h('option', {value: 'stderr'}, 'stderr'));
  const follow = h('input', {id: 'log-follow', type: 'checkbox', checked: j.state === 'running'});
  const status = h('span', {class: 'muted', role: 'status'});
  let offset = 0, timer = null, busy = false;
  async function pull() {
    if (busy) return;
    busy = true;
    try {
      for (let i = 0; i < 16; i++) { // at most 16 chunks per tick: a huge log never blocks the page
        const r = await api(`/v1/jobs/${encodeURIComponent(j.id)}/log${qs({stream: stream.value, offset})}`);
        if (r.data) {
          pre.append(r.data);
          if (pre.textContent.length > LOG_KEEP) pre.textContent = pre.textContent.slice(-LOG_KEEP);
          if (follow.checked) pre.scrollTop = pre.scrollHeight;
        }
        offset = r.offset;
        if (r.eof || !r.data) break;
      }
      status.textContent = '';
    } catch (e) {
      status.textContent = e instanceof ApiError ? e.describe() : String(e);
    } finally {
      busy = false;
    }
  }
  function arm() {
    if (timer) clearInterval(timer);
    timer = follow.checked ? setInterval(pull, LOG_POLL_MS) : null;
  }
  stream.addEventListener('change', () => { offset = 0; clear(pre); pull(); });
  follow.addEventListener('change', arm);
  const el = h('section', {'aria-labelledby': 'log-h'}, h('h2', {id: 'log-h'}, 'Log'),
    h('div', {class: 'filters'}, h('label', {for: 'log-stream'}, 'Stream'), stream,
      follow, h('label', {for: 'log-follow'}, 'Follow'),
      h('button', {type: 'button', onclick: pull}, 'Read more'), status), pre);
  if (j.started_at) { pull(); arm(); }
  else status.textContent = 'The job has not run yet.';
  return {el, stop: () => timer && clearInterval(timer)};
}

export async function render(main, params, ctx) {
  const id = params.id;
  const head = h('div', {});
  const sum = h('div', {});
  const acts = h('div', {});
  const ports = h('div', {id: 'job-ports'});
  const graphs = h('div', {id: 'job-graphs'});
  const money = h('div', {});
  const place = h('div', {});
  const hist = h('div', {});
  main.append(head, acts, ports, sum,
    h('section', {'aria-labelledby': 'pl-h'}, h('h2', {id: 'pl-h'}, 'Placement'), place),
    h('section', {'aria-labelledby': 'gr-h'}, h('h2', {id: 'gr-h'}, 'GPU utilisation, memory and power'), graphs),
    h('section', {'aria-labelledby': 'en-h'}, h('h2', {id: 'en-h'}, 'Energy and cost'), money),
    h('section', {'aria-labelledby': 'at-h'}, h('h2', {id: 'at-h'}, 'Attempts'), hist));
  let log = null;
  let lastState = null;

  async function draw() {
    let j;
    try {
      j = (await api(`/v1/jobs/${encodeURIComponent(id)}`)).job;
    } catch (e) {
      clear(head).append(h('h1', {}, `Job ${id}`), note(e instanceof ApiError ? e.describe() : String(e), 'error'));
      return;
    }
    clear(head).append(h('h1', {}, `Job ${j.id}${j.name ? ` · ${j.name}` : ''}`));
    clear(acts).append(actionButtons(j, () => draw()));
    /* Made once while the job runs, so a link shown survives the page's refreshes. */
    if (j.state !== 'running') clear(ports);
    else if (!ports.firstChild) {
      const pc = portControl(j);
      if (pc) ports.append(pc);
    }
    clear(sum).append(summary(j));
    clear(place).append(placements(j));
    clear(hist).append(...attempts(j));
    if (lastState !== j.state || j.state === 'running') {
      metrics(j, graphs);
      energy(j, money);
    }
    if (!log && mayAct(j)) {
      log = logPanel(j);
      main.append(log.el);
    } else if (!log && !mayAct(j)) {
      log = {stop() {}};
      main.append(note('The command, environment and log are its owner\'s.', 'info'));
    }
    lastState = j.state;
  }
  await draw();
  return {refresh: (ev) => { if (!ev || !ev.data || ev.kind !== 'job' || ev.data.id === String(id)) draw(); },
    stop: () => log && log.stop()};
}
