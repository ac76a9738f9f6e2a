// SPDX-License-Identifier: Apache-2.0
// Live updates: the server's event stream (GET /v1/events, the token in the query since
// EventSource cannot set headers), and polling every 5 s whenever the stream is not open
// (a server without it, a proxy that cuts it, a reconnect in progress). Events are
// coalesced: a burst of job changes refreshes the view once, and a view is read again at
// most every 2 s however busy the pool. The stream replays nothing, so a reconnect reads
// the view again. Every token's stream carries every job's summary (what any user reads in
// GET /v1/jobs; docs/security.md), so a user's list of all jobs is as live as an admin's.
import {session} from './api.js';

const POLL_MS = 5000;
const COALESCE_MS = 300;
const MIN_GAP_MS = 2000;

export const live = {
  onChange: null,
  es: null,
  poll: null,
  timer: null,
  last: 0,
  opened: false,
  mode: '',

  start() {
    if (this.es || this.poll) return;
    const s = session();
    if (!s) return;
    if (typeof EventSource === 'undefined') return this.startPolling();
    const es = new EventSource(`/v1/events?token=${encodeURIComponent(s.token)}`);
    this.es = es;
    const kick = (e) => this.changed(e);
    for (const kind of ['job', 'node', 'queue']) es.addEventListener(kind, kick);
    es.onopen = () => {
      this.stopPolling();
      this.show('live');
      if (this.opened) this.changed(null); // a reconnect: what changed meanwhile is not replayed
      this.opened = true;
    };
    es.onerror = () => {
      // CONNECTING: the browser retries by itself; CLOSED (e.g. 404): it gave up. Poll
      // meanwhile either way, and try the stream again later when it gave up.
      this.startPolling();
      if (es.readyState === EventSource.CLOSED) {
        this.es = null;
        setTimeout(() => { if (!this.es && session() && document.visibilityState === 'visible') { this.stopPolling(); this.start(); } }, 60000);
      }
    };
  },

  startPolling() {
    if (this.poll) return;
    this.show('polling');
    this.poll = setInterval(() => this.changed(null), POLL_MS);
  },

  stopPolling() {
    if (this.poll) clearInterval(this.poll);
    this.poll = null;
  },

  stop() {
    if (this.es) this.es.close();
    this.es = null;
    this.opened = false;
    this.stopPolling();
    this.show('');
  },

  changed(ev) {
    if (this.timer) return;
    let data = null;
    try { data = ev && ev.data ? JSON.parse(ev.data) : null; } catch (e) { data = null; }
    const kind = ev ? ev.type : 'poll';
    const wait = ev ? Math.max(COALESCE_MS, MIN_GAP_MS - (Date.now() - this.last)) : 0;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.last = Date.now();
      if (this.onChange) this.onChange({kind, data});
    }, wait);
  },

  show(mode) {
    this.mode = mode;
    const el = document.getElementById('live');
    if (!el) return;
    el.textContent = mode === 'live' ? 'Live' : mode === 'polling' ? 'Updating every 5 s' : '';
    el.dataset.mode = mode;
  },
};

// A browser holds at most 6 HTTP/1.1 connections to one server, and each open stream takes
// one for as long as it lives: streams of hidden tabs, or of pages kept in the back-forward
// cache, would soon leave none for the page in front. So only a visible page listens; one
// that comes back reads its view again, since what changed meanwhile is not replayed.
function pause() {
  live.stop();
}
function resume() {
  if (document.visibilityState !== 'visible' || live.es || live.poll) return;
  live.start();
  live.changed(null);
}
window.addEventListener('pagehide', pause);
window.addEventListener('pageshow', (ev) => { if (ev.persisted) resume(); });
document.addEventListener('visibilitychange', () => (document.visibilityState === 'visible' ? resume() : pause()));

