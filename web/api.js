// SPDX-License-Identifier: Apache-2.0
// The console's only way to the server: /v1 with the user's token. The token lives in
// sessionStorage (gone when the tab closes, never sent anywhere but this server), with the
// user and role the server says it stands for (GET /v1/whoami), so "Mine" knows whose jobs
// are mine and a view knows which jobs' events the stream carries to this token.

const KEY = 'gpool.session';

export class ApiError extends Error {
  constructor(status, code, message, field) {
    super(message);
    this.status = status;
    this.code = code;
    this.field = field;
  }
  // The sentence a view shows: the API's own message, with the field it names.
  describe() {
    return `${this.message}${this.field ? ` (${this.field})` : ''} [${this.status} ${this.code}]`;
  }
}

export function session() {
  try {
    const s = JSON.parse(sessionStorage.getItem(KEY) || 'null');
    return s && typeof s.token === 'string' ? s : null;
  } catch (e) {
    return null;
  }
}

export function saveSession(token, user, role) {
  sessionStorage.setItem(KEY, JSON.stringify({token, user: user || '', role: role || ''}));
}

export function endSession() {
  sessionStorage.removeItem(KEY);
}

// Calls the API: resolves to the parsed JSON (or a Blob when asBlob), rejects with an
// ApiError carrying the server's message.
export async function api(path, {method = 'GET', body, token, asBlob = false, signal} = {}) {
  const s = session();
  const t = token || (s && s.token);
  const headers = {};
  if (t) headers.Authorization = `Bearer ${t}`;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  let resp;
  try {
    resp = await fetch(path, {method, headers, signal, cache: 'no-store',
      body: body === undefined ? undefined : JSON.stringify(body)});
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    throw new ApiError(0, 'unreachable', `the server did not answer: ${e.message}`, null);
  }
  if (resp.ok) return asBlob ? resp.blob() : resp.json();
  let err = {code: 'error', message: resp.statusText || 'request failed', field: null};
  try {
    const doc = await resp.json();
    if (doc && doc.error) err = doc.error;
  } catch (e) { /* a body that is not the API's error document: keep the status line */ }
  throw new ApiError(resp.status, err.code, err.message, err.field);
}

// A query string from an object, leaving out empty values.
export function qs(params) {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') u.set(k, v);
  const s = u.toString();
  return s ? `?${s}` : '';
}
