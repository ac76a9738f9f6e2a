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
