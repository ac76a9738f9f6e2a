// SPDX-License-Identifier: Apache-2.0
// Cancel, hold and release buttons for a job, shown only where they can work: the job's
// state allows the action and the token may act on it (a job whose command reads
// "(hidden)" is another user's and this token is not an admin's). A refusal shows the
// API's own message next to the buttons.
import {api, ApiError} from './api.js';
import {h, clear, note} from './dom.js';

const ACTIVE = new Set(['pending', 'held', 'running', 'stopping']);

export function mayAct(job) {
  return !(Array.isArray(job.command) && job.command.length === 1 && job.command[0] === '(hidden)');
}

export function actionsFor(job) {
  if (!mayAct(job)) return [];
  const out = [];
  if (ACTIVE.has(job.state)) out.push('cancel');
  if (job.state === 'pending') out.push('hold');
  if (job.state === 'held') out.push('release');
  return out;
}

// Buttons for `job`; `done(job)` is called with the new document after a success.
export function actionButtons(job, done) {
  const status = h('span', {class: 'action-status', 'aria-live': 'polite'});
  const buttons = actionsFor(job).map((a) => h('button', {
    type: 'button', class: `act act-${a}`, 'data-action': a, 'data-job': job.id,
    'aria-label': `${a[0].toUpperCase()}${a.slice(1)} job ${job.id}`,
    onclick: async (ev) => {
      ev.target.disabled = true;
      clear(status);
      try {
        const r = await api(`/v1/jobs/${encodeURIComponent(job.id)}/${a}`, {method: 'POST'});
        status.append(`${a} done`);
        if (done) done(r.job);
      } catch (e) {
        status.append(note(e instanceof ApiError ? e.describe() : String(e), 'error'));
        ev.target.disabled = false;
      }
    },
  }, a[0].toUpperCase() + a.slice(1)));
  return h('span', {class: 'actions'}, buttons, status);
}

// "Open port…": for a running job this token may act on, asks the server for a link to one
// of the job's HTTP ports (POST /v1/jobs/{id}/proxy) and shows it. The link's page runs
// sandboxed in an opaque origin (it cannot read this console's token); apps that need
// same-origin requests or WebSockets (Jupyter) want `gpool port-forward` instead.
export function portControl(job) {
  if (job.state !== 'running' || !mayAct(job)) return null;
  const port = h('input', {type: 'number', min: '1', max: '65535', id: 'open-port', 'aria-label': `Port of job ${job.id}`,
    placeholder: 'port'});
  const tasks = job.tasks > 1 ? h('input', {type: 'number', min: '0', max: String(job.tasks - 1), value: '0',
    id: 'open-port-task', 'aria-label': 'Task'}) : null;
  const out = h('span', {class: 'port-link', 'aria-live': 'polite'});
  const button = h('button', {type: 'button', class: 'act act-port', id: 'open-port-go',
    onclick: async () => {
      clear(out);
      const body = {port: Number(port.value)};
      if (tasks) body.task = Number(tasks.value);
      button.disabled = true;
      try {
        const r = await api(`/v1/jobs/${encodeURIComponent(job.id)}/proxy`, {method: 'POST', body});
        out.append(h('a', {href: r.url, target: '_blank', rel: 'noopener noreferrer', id: 'port-link'},
          `port ${r.port} of task ${r.task}`),
        ` (until ${new Date(r.expires_at * 1000).toLocaleString()}; anyone with the link reaches the port)`);
      } catch (e) {
        out.append(note(e instanceof ApiError ? e.describe() : String(e), 'error'));
      }
      button.disabled = false;
    },
  }, 'Open port…');
  return h('span', {class: 'actions'}, 'HTTP port: ', port, tasks ? ' task ' : '', tasks || '', ' ', button, ' ', out);
}
