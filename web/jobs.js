// SPDX-License-Identifier: Apache-2.0
// The jobs view: mine or all, filtered by state, queue and user (the API's own filters, so
// a page never carries jobs it then hides), pages of 250 with "Load more". A pending job
// shows why it waits, its place in the queue and its estimated start.
import {api, qs} from './api.js';
import {h, clear, fmtTime, fmtDur, fmtSentence, note, stateBadge} from './dom.js';
import {actionButtons} from './actions.js';

const PAGE = 250;
const STATES = [
  ['active', 'Active (pending, held, running, stopping)', 'pending,held,running,stopping'],
  ['pending', 'Pending', 'pending'],
  ['held', 'Held', 'held'],
  ['running', 'Running', 'running,stopping'],
  ['ended', 'Ended', 'completed,failed,cancelled,preempted,timeout'],
  ['any', 'Any state', ''],
];

function waitCell(j) {
  if (j.state !== 'pending' && j.state !== 'held') {
    if (j.state === 'running' || j.state === 'stopping') return `running for ${fmtDur(Date.now() / 1000 - j.started_at)}`;
    return j.end_reason || '';
  }
  const parts = [h('span', {class: 'why'}, fmtSentence(j.pending_message) || j.pending_reason || 'waiting')];
  const pos = j.queue_position;
  const est = j.estimated_start;
  const extra = [];
  if (pos !== undefined && pos !== null) extra.push(`#${pos} in queue`);
  if (est !== undefined && est !== null) extra.push(`starts about ${fmtTime(est)}`);
  else if (j.state === 'pending' && est === null) extra.push('start not estimated yet');
  if (extra.length) parts.push(h('span', {class: 'wait-meta'}, extra.join(' · ')));
  return h('span', {class: 'wait'}, parts);
}

function row(j, onChange) {
  return h('tr', {'data-job': j.id, 'data-state': j.state},
    h('td', {}, h('a', {href: `#/jobs/${encodeURIComponent(j.id)}`}, j.id)),
    h('td', {}, j.name || ''),
    h('td', {}, j.user),
    h('td', {}, j.queue),
    h('td', {}, stateBadge(j.state)),
    h('td', {class: 'num'}, j.gpu_fraction ? `${j.gpu_fraction}×${j.tasks}` : String(j.gpus * (j.tasks || 1))),
    h('td', {}, fmtTime(j.submitted_at)),
    h('td', {}, waitCell(j)),
    h('td', {}, actionButtons(j, onChange)));
}

export async function render(main, params, ctx) {
  performance.mark('jobs-start');
  const q = params.query;
  const me = ctx.session.user;
  const scope = q.get('scope') || (me ? 'mine' : 'all');
  const stateKey = q.get('state') || 'active';
  const queue = q.get('queue') || '';
  const user = scope === 'mine' ? me : q.get('user') || '';

  const stateSel = h('select', {id: 'f-state', name: 'state'},
    STATES.map(([k, label]) => h('option', {value: k, selected: k === stateKey}, label)));
  const queueIn = h('input', {id: 'f-queue', name: 'queue', value: queue, placeholder: 'e.g. org/a'});
  const userIn = h('input', {id: 'f-user', name: 'user', value: scope === 'mine' ? '' : user,
    disabled: scope === 'mine'});
  const scopeBtn = (k, label) => h('button', {type: 'button', class: 'seg', 'aria-pressed': String(scope === k),
    disabled: k === 'mine' && !me, title: k === 'mine' && !me ? 'The server named no user for this token' : null,
    onclick: () => ctx.go('/jobs', {scope: k, state: stateKey, queue: queueIn.value, user: k === 'all' ? userIn.value : ''})}, label);
  const form = h('form', {class: 'filters', 'aria-label': 'Filter jobs'},
    h('span', {class: 'segs', role: 'group', 'aria-label': 'Whose jobs'}, scopeBtn('mine', 'Mine'), scopeBtn('all', 'All')),
    h('label', {for: 'f-state'}, 'State'), stateSel,
    h('label', {for: 'f-queue'}, 'Queue'), queueIn,
    h('label', {for: 'f-user'}, 'User'), userIn,
    h('button', {type: 'submit'}, 'Apply'));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    ctx.go('/jobs', {scope, state: stateSel.value, queue: queueIn.value.trim(), user: userIn.value.trim()});
  });

  const status = h('p', {id: 'jobs-count', class: 'muted', role: 'status'});
  const tbody = h('tbody', {id: 'jobs-body'});
  const more = h('button', {type: 'button', id: 'jobs-more', hidden: true}, 'Load more');
  const tbl = h('table', {id: 'jobs-table', class: 'jobs'},
    h('caption', {class: 'sr-only'}, 'Jobs'),
    h('thead', {}, h('tr', {}, ['ID', 'Name', 'User', 'Queue', 'State', 'GPUs', 'Submitted', 'Waiting / running', 'Actions']
      .map((x) => h('th', {scope: 'col'}, x)))),
    tbody);
  const err = h('div', {});
  main.append(h('h1', {}, 'Jobs'), form, err, status, h('div', {class: 'scroll'}, tbl), more);

  const states = STATES.find(([k]) => k === stateKey) || STATES[0];
  const base = {state: states[2], queue, user, limit: PAGE};
  let shown = 0;
  let next = null;
  let loaded = [];

  const refreshAll = () => load(true);
  async function load(reset) {
    // A refresh reloads as many jobs as are shown, so the list does not shrink under the user.
    const want = reset ? Math.max(PAGE, shown) : PAGE;
    const page = await api(`/v1/jobs${qs({...base, limit: Math.min(want, 10000), next: reset ? null : next})}`);
    clear(err);
    if (reset) {
      loaded = [];
      clear(tbody);
    }
    const frag = document.createDocumentFragment();
    for (const j of page.jobs) frag.append(row(j, refreshAll));
    tbody.append(frag);
    loaded = loaded.concat(page.jobs);
    shown = loaded.length;
    next = page.next;
    more.hidden = !next;
    status.textContent = shown ? `${shown} job${shown === 1 ? '' : 's'}${next ? ' (more below)' : ''}` : 'No jobs match.';
  }
  more.addEventListener('click', () => load(false).catch((e) => err.append(note(e.message, 'error'))));
  await load(true);
  // The first page is in the DOM; the mark after the next frame is what the user sees.
  performance.mark('jobs-painted-dom');
  requestAnimationFrame(() => setTimeout(() => performance.mark('jobs-painted'), 0));
  return {
    refresh: () => load(true).catch((e) => { clear(err); err.append(note(e.message, 'error')); }),
  };
}
