# SPDX-License-Identifier: Apache-2.0
"""The HTTP side of the client: one request to the pool with the way to its leader, bounded
answers and TLS verified with the pool's CA. It behaves as the C client (src/client) does.

- Each call opens its own connection (http.client, never urllib, which follows redirects
  on its own: a token must go only to the configured servers). A reused keep-alive
  connection that the server closed meanwhile cannot tell "not received" from "received,
  no answer"; a fresh one can, so a write is never sent twice.
- Among several servers, a server not yet heard from is first asked GET /livez (no token)
  within PROBE_S: a frozen one (it accepts connections but never answers) is passed over
  with nothing of the call sent. A follower's 307 goes to the leader only when the leader
  is one of the configured servers (and never from https to http). While no server leads
  (503 with Retry-After) the call waits for one, rounds 0.5 s apart, up to min(timeout,
  20 s). A call that reached a server and got no answer is asked of the next server only
  when it is a read (GET).
- An answer is untrusted: its body is read in pieces against a byte cap (max_body) and
  the call's deadline, so a server can make the client hold neither unbounded memory nor
  an unbounded time. http.client bounds the status line and headers (64 KiB a line, 100
  headers)."""
import http.client
import json
import socket
import ssl
import threading
import time
import urllib.parse

from .errors import ConnectionFailed, ProtocolError, Timeout, api_error

PROBE_S = 3.0
CONNECT_S = 3.0
NO_LEADER_WAIT_S = 20.0
CHUNK = 65536


class Watchdog:
    """Shuts `sock` down at `seconds` from now: a read of the status line, a header or the
    body then ends at once. Socket timeouts bound each read alone; this bounds them all,
    so a server that dribbles a byte now and then cannot hold a call past its time."""

    def __init__(self, sock, seconds):
        self.fired = False
        self._sock = sock
        self._timer = None
        if seconds:
            self._timer = threading.Timer(seconds, self._fire)
            self._timer.daemon = True
            self._timer.start()

    def _fire(self):
        self.fired = True
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def cancel(self):
        if self._timer:
            self._timer.cancel()


class _Unreached(Exception):
    """Nothing of the request reached the server (or a read got no answer): try the next."""

    def __init__(self, error):
        super().__init__(str(error))
        self.error = error


class _Redirected(Exception):
    def __init__(self, index):
        super().__init__(index)
        self.index = index


class _NoLeader(Exception):
    def __init__(self, error):
        super().__init__(str(error))
        self.error = error


def _ssl_context(ca):
    ctx = ssl.create_default_context(cafile=ca) if ca else ssl.create_default_context()
    ctx.check_hostname = True
    ctx.verify_mode = ssl.CERT_REQUIRED
    return ctx


class Transport:
    def __init__(self, servers, token, ca, timeout, max_body):
        self.servers = servers
        self.token = token
        self.ca = ca
        self.timeout = timeout
        self.max_body = max_body
        self.cur = 0
        self.leader = None  # index of the leader a follower named
        self.answered = [False] * len(servers)
        self._ctx = None

    # -- connections --------------------------------------------------------------------
    def _context(self):
        if self._ctx is None:
            try:
                self._ctx = _ssl_context(self.ca)
            except (OSError, ssl.SSLError) as e:
                raise ConnectionFailed(f'cannot load the CA file {self.ca}: {e}') from None
        return self._ctx

    def connect(self, base, timeout):
        """An open connection to `base` (connect bounded by CONNECT_S and `timeout`)."""
        u = urllib.parse.urlsplit(base)
        ct = min(CONNECT_S, timeout) if timeout else CONNECT_S
        if u.scheme == 'https':
            conn = http.client.HTTPSConnection(u.hostname, u.port or 443, timeout=ct, context=self._context())
        else:
            conn = http.client.HTTPConnection(u.hostname, u.port or 80, timeout=ct)
        try:
            conn.connect()
        except ssl.SSLError as e:
            conn.close()
            raise ConnectionFailed(
                f'cannot verify the server at {base} over TLS ({e}); give the CA that signed its certificate '
                f'with ca=, GPOOL_CA or client.json\'s "ca"' + ('' if self.ca else ' (none is set: the system\'s '
                                                                 'CA store was used)')) from None
        except (OSError, socket.timeout) as e:
            conn.close()
            raise _Unreached(ConnectionFailed(
                f'cannot reach the gpool server at {base} ({e}); is it running? '
                "(start a local pool with 'gpool up')")) from None
        conn.sock.settimeout(timeout)
        return conn

    def headers(self, accept='application/json'):
        h = {'Accept': accept}
        if self.token:
            h['Authorization'] = f'Bearer {self.token}'
        return h

    def read_body(self, resp, sock, deadline, limit=None):
        """The whole body of `resp` (read from `sock`), at most `limit` bytes, before
        `deadline`: a server that sends a byte now and then cannot hold the call forever."""
        limit = self.max_body if limit is None else limit
        parts, n = [], 0
        while True:
            if resp.isclosed():  # all of it read: http.client has closed the socket
                return b''.join(parts)
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise socket.timeout('the answer took too long')
                sock.settimeout(left)
            piece = resp.read(min(CHUNK, limit + 1 - n))
            if not piece:
                return b''.join(parts)
            parts.append(piece)
            n += len(piece)
            if n > limit:
                raise ProtocolError(f'the server\'s answer is larger than {limit} bytes')

    # -- one attempt --------------------------------------------------------------------
    def _probe(self, base):
        try:
            conn = self.connect(base, PROBE_S)
        except _Unreached:
            return False
        try:
            conn.request('GET', '/livez', headers={'Accept': 'application/json'})
            resp = conn.getresponse()
            resp.read(4096)
            return True
        except (OSError, http.client.HTTPException):
            return False
        finally:
            conn.close()

    def _once(self, index, method, path, payload, accept, raw):
        base = self.servers[index]
        if len(self.servers) > 1 and not self.answered[index]:
            if not self._probe(base):
                raise _Unreached(ConnectionFailed(
                    f'the gpool server at {base} did not answer within {PROBE_S:g} s (stopped or overloaded?)'))
            self.answered[index] = True
        deadline = time.monotonic() + self.timeout if self.timeout else None
        conn = self.connect(base, self.timeout)
        headers = self.headers(accept)
        if payload is not None:
            headers['Content-Type'] = 'application/json'
            headers['Content-Length'] = str(len(payload))
        sock = conn.sock  # the response keeps reading it after http.client lets go of it
        dog = Watchdog(sock, self.timeout)
        sent = False
        try:
            conn.putrequest(method, path, skip_accept_encoding=True)
            for k, v in headers.items():
                conn.putheader(k, v)
            sent = True  # from here on the server may have read it
            conn.endheaders(payload)
            resp = conn.getresponse()
            status = resp.status
            location = resp.getheader('Location')
            retry_after = resp.getheader('Retry-After')
            body = self.read_body(resp, sock, deadline)
        except (OSError, http.client.HTTPException) as e:
            timed_out = dog.fired or isinstance(e, (socket.timeout, TimeoutError))
            why = f'no whole answer within {self.timeout:g} s' if dog.fired else str(e)
            if not sent or method == 'GET':
                # A read changes nothing: another server may answer it; this one is asked
                # whether it lives before the next call.
                self.answered[index] = False
                err = Timeout(f'the server at {base} did not answer in time ({why})') if timed_out else \
                    ConnectionFailed(f'request to {base} failed: {why}')
                raise _Unreached(err) from None
            cls = Timeout if timed_out else ConnectionFailed
            raise cls(f'the server at {base} did not answer ({why}); the request may have been carried out: '
                      'check before sending it again') from None
        finally:
            dog.cancel()
            conn.close()
        if status in (307, 308):
            self._redirect(base, location)
        text = body.decode('utf-8', errors='replace')
        if status < 200 or status >= 300:
            try:
                doc = json.loads(text) if text else None
            except (ValueError, RecursionError):  # RecursionError: nesting too deep
                doc = None
            err = api_error(status, doc, text)
            if status == 503 and retry_after:
                raise _NoLeader(err)
            raise err
        if raw:
            return text
        try:
            doc = json.loads(text)
        except (ValueError, RecursionError):  # RecursionError: nesting too deep
            doc = None
        if not isinstance(doc, dict):
            raise ProtocolError(f'the server at {base} answered HTTP {status} with something that is not a JSON object')
        return doc

    def _redirect(self, base, location):
        if not location:
            raise ConnectionFailed(f'the server at {base} redirected without a Location')
        u = urllib.parse.urlsplit(location)
        if u.scheme not in ('http', 'https') or not u.netloc or (base.startswith('https:') and u.scheme == 'http'):
            raise ConnectionFailed(f"the server at {base} redirected to '{location[:200]}', which is not an "
                                   'http(s) URL it may send a token to')
        target = f'{u.scheme}://{u.netloc}'.lower()
        for i, s in enumerate(self.servers):
            if s.lower() == target:
                raise _Redirected(i)
        # The token goes only to the servers it was given for.
        raise ConnectionFailed(f'the server at {base} redirected to {target}, which is not one of the configured '
                               f'servers ({",".join(self.servers)}): the token is sent only to those')

    # -- a call -------------------------------------------------------------------------
    def call(self, method, path, body=None, accept='application/json', raw=False):
        """The decoded JSON object of a 2xx answer (its text with raw), else raises."""
        payload = json.dumps(body, separators=(',', ':')).encode() if body is not None else \
            (b'' if method in ('POST', 'PUT') else None)
        wait = self.timeout if self.timeout and self.timeout < NO_LEADER_WAIT_S else NO_LEADER_WAIT_S
        t0 = time.monotonic()
        redirects = tried = 0
        saw_no_leader = False
        n = len(self.servers)
        while True:
            index = self.leader if self.leader is not None else self.cur
            try:
                return self._once(index, method, path, payload, accept, raw)
            except _Redirected as r:
                self.leader = r.index
                redirects += 1
                if redirects > n + 1:
                    raise ConnectionFailed(f'the servers redirected {redirects - 1} times without a leader '
                                           'answering') from None
                continue
            except (_Unreached, _NoLeader) as e:
                last = e.error
                leader_gone = self.leader is not None
                saw_no_leader = saw_no_leader or isinstance(e, _NoLeader) or leader_gone
                if leader_gone:
                    redirects = 0
                else:
                    self.cur = (self.cur + 1) % n
                self.leader = None
                tried += 1
                if tried % n != 0:
                    continue
                if not saw_no_leader or time.monotonic() - t0 + 0.5 > wait:
                    if isinstance(e, _NoLeader):
                        raise ConnectionFailed(f'no gpool server leads the pool ({",".join(self.servers)}): a '
                                               'failover is under way or the servers cannot reach their '
                                               'database') from None
                    raise last from None
                time.sleep(0.5)

    # -- a stream (the events) ----------------------------------------------------------
    def open_stream(self, path, accept, idle_timeout):
        """(conn, resp) of a GET whose answer is read as it comes (text/event-stream).
        Each read waits at most `idle_timeout`: the server pings every 15 s, so a longer
        silence means the server or the network is gone. The connection goes to the server
        calls go to; an unreachable one passes to the next, as for any read."""
        n = len(self.servers)
        for attempt in range(n):
            index = self.leader if self.leader is not None else self.cur
            base = self.servers[index]
            try:
                conn = self.connect(base, self.timeout)
            except _Unreached as e:
                self.leader = None
                self.cur = (self.cur + 1) % n
                if attempt == n - 1:
                    raise e.error from None
                continue
            sock = conn.sock
            dog = Watchdog(sock, self.timeout)  # until the headers are in
            try:
                conn.request('GET', path, headers=self.headers(accept))
                resp = conn.getresponse()
                if resp.status != 200:
                    body = self.read_body(resp, sock, time.monotonic() + (self.timeout or 30))
                    text = body.decode('utf-8', errors='replace')
                    try:
                        doc = json.loads(text) if text else None
                    except (ValueError, RecursionError):  # RecursionError: nesting too deep
                        doc = None
                    conn.close()
                    raise api_error(resp.status, doc, text)
            except (OSError, http.client.HTTPException) as e:
                conn.close()
                raise ConnectionFailed(f'the event stream of {base} failed: {e}') from None
            finally:
                dog.cancel()
            sock.settimeout(idle_timeout)
            return conn, resp
