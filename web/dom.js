// SPDX-License-Identifier: Apache-2.0
// Building DOM without innerHTML: every string from the API becomes a text node, so no job
// name, reason or log line can ever become markup. Also the few formatters every view uses.

const SVG_NS = 'http://www.w3.org/2000/svg';

function fill(el, attrs, children) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'text') el.textContent = String(v);
    else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

// h('a', {href: '#/jobs', class: 'x'}, 'text', child...): an HTML element.
export function h(tag, attrs, ...children) {
  return fill(document.createElement(tag), attrs, children);
}

// s('rect', {x: 0}): an SVG element.
export function s(tag, attrs, ...children) {
  return fill(document.createElementNS(SVG_NS, tag), attrs, children);
}

export function clear(el) {
  while (el.firstChild) el.firstChild.remove();
  return el;
}

// A time as the user's local date and time; '—' for none. One formatter for the page:
// building one per call costs about a millisecond, which a 500-row list would pay 500 times.
const TIME_FMT = new Intl.DateTimeFormat(undefined, {year: 'numeric', month: '2-digit', day: '2-digit',
  hour: '2-digit', minute: '2-digit', second: '2-digit'});
export function fmtTime(unix) {
  if (unix === null || unix === undefined) return '—';
  return TIME_FMT.format(new Date(unix * 1000));
}

// A scheduler sentence with its raw clock values ("reserved for it from t=1796572218")
// given as the user's local date and time, as `gpool why` gives them.
export function fmtSentence(text) {
  if (text === null || text === undefined) return '';
  return String(text).replace(/(^|[\s(])t=(\d{1,12})\b/g, (m, lead, t) => `${lead}${fmtTime(Number(t))}`);
}

// A node's labels as "key=value" items, or '—' for none.
export function labelList(labels, attrs) {
  const entries = Object.entries(labels || {});
  if (!entries.length) return '—';
  return h('ul', {class: 'labels', ...(attrs || {})}, entries.map(([k, v]) => h('li', {'data-label': k}, h('code', {}, `${k}=${v}`))));
}

// Seconds as "3h 05m", "4m 10s", "12s".
export function fmtDur(sec) {
  if (sec === null || sec === undefined || !isFinite(sec)) return '—';
  sec = Math.max(0, Math.round(sec));
  const d = Math.floor(sec / 86400), hh = Math.floor(sec % 86400 / 3600);
  const m = Math.floor(sec % 3600 / 60), ss = sec % 60;
  if (d) return `${d}d ${hh}h`;
  if (hh) return `${hh}h ${String(m).padStart(2, '0')}m`;
  if (m) return `${m}m ${String(ss).padStart(2, '0')}s`;
  return `${ss}s`;
}

const NUM_FMT = new Map();
export function fmtNum(v, digits = 2) {
  if (v === null || v === undefined) return '—';
  if (typeof v !== 'number') return String(v);
  const d = Number.isInteger(v) ? 0 : digits;
  if (!NUM_FMT.has(d)) NUM_FMT.set(d, new Intl.NumberFormat(undefined, {maximumFractionDigits: d}));
  return NUM_FMT.get(d).format(v);
}

// A table from column labels and rows of cells (strings or nodes).
export function table(caption, headers, rows, attrs) {
  return h('table', attrs || {},
    caption ? h('caption', {}, caption) : null,
    h('thead', {}, h('tr', {}, headers.map((x) => h('th', {scope: 'col'}, x)))),
    h('tbody', {}, rows.map((r) => h('tr', {}, r.map((c) => h('td', {}, c))))));
}

// A definition list from [label, value] pairs.
export function facts(pairs) {
  return h('dl', {class: 'facts'}, pairs.map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]));
}

// A message box for an error or a notice; role=alert for errors so they are announced.
export function note(text, kind = 'info') {
  return h('p', {class: `note ${kind}`, role: kind === 'error' ? 'alert' : 'status'}, text);
}

export function stateBadge(state) {
  return h('span', {class: `badge st-${String(state).replace(/[^a-z]/g, '')}`}, state);
}
