// SPDX-License-Identifier: Apache-2.0
// The console's shell: hash routes to views, the login, and live updates. Each view is a
// module whose render(main, params, ctx) draws it and returns {refresh, stop}; a live event
// or a poll tick calls refresh, leaving the page where the user is.
import {api, session, saveSession, endSession, ApiError} from './api.js';
import {h, clear, note} from './dom.js';
import {live} from './live.js';
import * as jobs from './jobs.js';
import * as job from './job.js';
import * as gpus from './gpus.js';
import * as node from './node.js';
import * as queues from './queues.js';
import * as reports from './reports.js';
import * as services from './services.js';

const main = document.getElementById('main');
let current = null;
let routing = 0; // bumped per route(): a view that finishes drawing after a newer route is dropped

const routes = [
  [/^\/jobs\/([^/]+)$/, job, (m) => ({id: decodeURIComponent(m[1])})],
  [/^\/jobs$/, jobs, () => ({})],
  [/^\/gpus$/, gpus, () => ({})],
  [/^\/nodes\/([^/]+)$/, node, (m) => ({name: decodeURIComponent(m[1])})],
  [/^\/queues$/, queues, () => ({})],
  [/^\/reports$/, reports, () => ({})],
  [/^\/services$/, services, () => ({})],
];

function parseHash() {
  const raw = location.hash.replace(/^#/, '') || '/jobs';
  const q = raw.indexOf('?');
  return {path: q < 0 ? raw : raw.slice(0, q), query: new URLSearchParams(q < 0 ? '' : raw.slice(q + 1))};
}

// Moves to `path` with `query` (an object) without adding a step per keystroke.
export function go(path, query, replace = false) {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(query || {})) if (v) u.set(k, v);
  const hash = `#${path}${u.toString() ? `?${u}` : ''}`;
  if (replace) history.replaceState(null, '', hash);
  else location.hash = hash;
  if (replace) route();
}

function showShell(on) {
  document.getElementById('nav').hidden = !on;
  document.getElementById('logout').hidden = !on;
  const s = session();
  document.getElementById('who').textContent = on && s && s.user ? `as ${s.user}${s.role ? ` (${s.role})` : ''}` : '';
}

function markNav(path) {
  for (const a of document.querySelectorAll('#nav a')) {
    const here = path.startsWith(a.getAttribute('href').slice(1));
    if (here) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
}

function stopCurrent() {
  if (current && current.stop) current.stop();
  current = null;
}

function loginView(message) {
  routing++;
  stopCurrent();
  live.stop();
  showShell(false);
  clear(main);
  const token = h('input', {id: 'token', type: 'password', autocomplete: 'off', required: true, spellcheck: 'false'});
  const status = h('div', {id: 'login-status'});
  const form = h('form', {class: 'login', 'aria-labelledby': 'login-title'},
    h('h1', {id: 'login-title'}, 'Log in to gpool'),
    h('p', {}, 'Paste an API token from the server\'s configuration. It stays in this tab only; ' +
      'the server says whose it is.'),
    h('label', {for: 'token'}, 'Token'), token,
    h('button', {type: 'submit', id: 'login-submit'}, 'Log in'), status);
  if (message) status.append(note(message, 'error'));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clear(status);
    const t = token.value.trim();
    try {
      // The server proves the token and says whose it is (an agent's is refused).
      const me = await api('/v1/whoami', {token: t});
      saveSession(t, me.user, me.role);
      if (location.hash === '#/jobs') route();
      else location.hash = '#/jobs'; // hashchange routes
    } catch (e) {
      status.append(note(e instanceof ApiError ? `Token refused: ${e.describe()}` : String(e), 'error'));
    }
  });
  main.append(form);
  token.focus();
}

// A session saved without its role (before whoami): ask the server once.
async function knowWho() {
  const s = session();
  if (!s || s.role) return true;
  try {
    const me = await api('/v1/whoami');
    saveSession(s.token, me.user, me.role);
    return true;
  } catch (e) {
    if (e instanceof ApiError && (e.status === 401 || e.status === 403)) logout('The server refused the token.');
    else saveSession(s.token, s.user, 'user'); // the server is away: keep the session, assume the narrowest role
    return !(e instanceof ApiError && (e.status === 401 || e.status === 403));
  }
}

async function route() {
  if (!session()) return loginView();
  const {path, query} = parseHash();
  if (path === '/login') return loginView();
  if (!(await knowWho())) return;
  showShell(true);
  markNav(path);
  for (const [re, view, params] of routes) {
    const m = path.match(re);
    if (!m) continue;
    stopCurrent();
    clear(main);
    const seq = ++routing;
    // Each view draws into a box of its own, so one that finishes late draws nowhere visible.
    const box = h('div', {class: 'view'});
    main.append(box);
    const ctx = {go, query, session: session()};
    let drawn = null;
    try {
      drawn = await view.render(box, {...params(m), query}, ctx);
    } catch (e) {
      if (seq !== routing) return;
      if (e instanceof ApiError && e.status === 401) return logout('The server refused the token.');
      box.append(note(e instanceof ApiError ? e.describe() : String(e), 'error'));
    }
    if (seq !== routing) { // the user moved on while this view loaded
      if (drawn && drawn.stop) drawn.stop();
      return;
    }
    current = drawn;
    live.start();
    return;
  }
  routing++;
  stopCurrent();
  clear(main);
  main.append(h('h1', {}, 'Not found'), h('p', {}, 'No such page. '), h('a', {href: '#/jobs'}, 'Back to jobs'));
}

function logout(message) {
  endSession();
  history.replaceState(null, '', '#/login');
  loginView(message);
}

live.onChange = (ev) => {
  if (current && current.refresh) current.refresh(ev);
};
document.getElementById('logout').addEventListener('click', () => logout());
window.addEventListener('hashchange', route);
route();
