# SPDX-License-Identifier: Apache-2.0
# What the client does with servers that misbehave, on real sockets: answers past the byte
# cap, an endless event line, a server that dribbles its answer (the call's time bounds it
# all), a follower's redirect to the leader (followed only to a configured server), no
# leader (503 with Retry-After), an unreachable or frozen server passed over, and a write
# that got no answer never sent to a second server. Then TLS: a real `gpool server` over
# HTTPS, verified with the pool's CA (argument, GPOOL_CA, client.json's "ca"), refused without.
import json
import os
import socket
import subprocess
import threading
import time

import pytest

import gpool


class FakeServer:
    """A TCP server on 127.0.0.1 whose handler(conn, request_bytes) answers as it likes."""

    def __init__(self, handler):
        self.handler = handler
        self.requests = []
        self.sock = socket.socket()
        self.sock.bind(('127.0.0.1', 0))
        self.sock.listen(16)
        self.url = 'http://127.0.0.1:%d' % self.sock.getsockname()[1]
        self.sent = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn):
        with conn:
            conn.settimeout(10)
            data = b''
            try:
                while b'\r\n\r\n' not in data:
                    piece = conn.recv(65536)
                    if not piece:
                        return
                    data += piece
                head, _, rest = data.partition(b'\r\n\r\n')
                length = 0
                for line in head.split(b'\r\n')[1:]:
                    k, _, v = line.partition(b':')
                    if k.strip().lower() == b'content-length':
                        length = int(v)
                while len(rest) < length:
                    rest += conn.recv(65536)
                self.requests.append(head.split(b'\r\n')[0].decode())
                self.handler(self, conn, head.split(b'\r\n')[0].decode())
            except OSError:
                pass

    def close(self):
        self.sock.close()


def answer(conn, status, body=b'', headers=()):
    doc = body if isinstance(body, bytes) else json.dumps(body).encode()
    lines = [f'HTTP/1.1 {status} X', f'Content-Length: {len(doc)}', 'Connection: close', *headers]
    conn.sendall(('\r\n'.join(lines) + '\r\n\r\n').encode() + doc)


def livez_or(fn):
    def handler(srv, conn, line):
        if line.startswith('GET /livez'):
            return answer(conn, 200, {'ok': True})
        fn(srv, conn, line)
    return handler


def test_an_answer_past_the_cap_is_refused():
    def huge(srv, conn, line):
        conn.sendall(b'HTTP/1.1 200 OK\r\nContent-Length: 1073741824\r\n\r\n')
        chunk = b' ' * 65536
        while srv.sent < (1 << 30):
            conn.sendall(chunk)
            srv.sent += len(chunk)
    srv = FakeServer(huge)
    try:
        c = gpool.Client(srv.url, 't', max_body=1 << 20)
        with pytest.raises(gpool.ProtocolError, match='larger than 1048576 bytes'):
            c.whoami()
        time.sleep(0.2)
        assert srv.sent < 64 << 20, 'the client read far past its cap'
    finally:
        srv.close()


def test_an_endless_event_line_is_refused():
    def endless(srv, conn, line):
        conn.sendall(b'HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\nid: 1\nevent: job\ndata: ')
        while srv.sent < (1 << 30):
            conn.sendall(b'x' * 65536)
            srv.sent += 65536
    srv = FakeServer(endless)
    try:
        with pytest.raises(gpool.ProtocolError, match='line longer than'):
            next(iter(gpool.Client(srv.url, 't').events()))
        assert srv.sent < 64 << 20
    finally:
        srv.close()


def test_a_dribbling_server_cannot_hold_a_call():
    def dribble(srv, conn, line):
        conn.sendall(b'HTTP/1.1 200 OK\r\n')
        for _ in range(600):
            conn.sendall(b'X-Slow: a\r\n')
            time.sleep(0.1)
    srv = FakeServer(dribble)
    try:
        c = gpool.Client(srv.url, 't', timeout=1)
        t0 = time.monotonic()
        with pytest.raises(gpool.Timeout):
            c.whoami()
        assert time.monotonic() - t0 < 3
    finally:
        srv.close()


def _dead_url():
    s = socket.socket()
    s.bind(('127.0.0.1', 0))
    url = 'http://127.0.0.1:%d' % s.getsockname()[1]
    s.close()  # nothing listens there now
    return url


def test_redirect_to_the_leader(pool):
    def follower(srv, conn, line):
        path = line.split()[1]
        if line.startswith('GET '):  # a follower answers reads itself: here, as the pool would
            return answer(conn, 307, {'error': {'code': 'not_leader', 'message': 'x'}},
                          [f'Location: {pool.url}{path}'])
        answer(conn, 307, {'error': {'code': 'not_leader', 'message': 'not the leader'}},
               [f'Location: {pool.url}{path}'])
    srv = FakeServer(livez_or(follower))
    try:
        c = gpool.Client(f'{_dead_url()},{srv.url},{pool.url}', pool.tokens['alice'])
        before = len(c.jobs())
        job = c.submit(['true'], name='redirected')
        assert c.server == pool.url and c.job(job).name == 'redirected'
        assert len(c.jobs()) == before + 1  # made once
        # To a server that is not configured: refused, the token not sent there.
        lone = gpool.Client(srv.url, pool.tokens['alice'])
        with pytest.raises(gpool.ConnectionFailed, match='not one of the configured servers'):
            lone.submit(['true'])
        assert len(c.jobs()) == before + 1
    finally:
        srv.close()


def test_no_leader_waits_then_says_so():
    def no_leader(srv, conn, line):
        answer(conn, 503, {'error': {'code': 'no_leader', 'message': 'no leader'}}, ['Retry-After: 1'])
    a, b = FakeServer(livez_or(no_leader)), FakeServer(livez_or(no_leader))
    try:
        c = gpool.Client(f'{a.url},{b.url}', 't', timeout=2)
        t0 = time.monotonic()
        with pytest.raises(gpool.ConnectionFailed, match='no gpool server leads'):
            c.submit(['true'])
        assert 1.0 < time.monotonic() - t0 < 5
        assert any(r.startswith('POST') for r in a.requests) and any(r.startswith('POST') for r in b.requests)
    finally:
        a.close()
        b.close()


def test_a_write_without_an_answer_is_not_sent_twice(pool):
    def hang_up(srv, conn, line):
        conn.shutdown(socket.SHUT_RDWR)  # read the request, answer nothing
    srv = FakeServer(livez_or(hang_up))
    try:
        c = gpool.Client(f'{srv.url},{pool.url}', pool.tokens['alice'])
        before = len(gpool.Client(pool.url, pool.tokens['alice']).jobs())
        with pytest.raises(gpool.ConnectionFailed, match='may have been carried out'):
            c.submit(['true'])
        assert len(gpool.Client(pool.url, pool.tokens['alice']).jobs()) == before
        # A read in the same plight is asked of the next server.
        assert c.whoami()['user'] == 'alice' and c.server == pool.url
    finally:
        srv.close()


def test_a_frozen_server_is_passed_over(pool):
    frozen = socket.socket()
    frozen.bind(('127.0.0.1', 0))
    frozen.listen(4)  # accepts (the kernel does), never answers
    url = 'http://127.0.0.1:%d' % frozen.getsockname()[1]
    try:
        c = gpool.Client(f'{url},{pool.url}', pool.tokens['alice'])
        t0 = time.monotonic()
        job = c.submit(['true'])
        assert time.monotonic() - t0 < 6 and c.job(job).id == job.id
    finally:
        frozen.close()


def _openssl(*args):
    subprocess.run(['openssl', *args], check=True, capture_output=True)


def test_tls_with_the_pools_ca(tmp_path, monkeypatch):
    gpool_bin = os.environ['GPOOL_BIN']
    pki = tmp_path / 'pki'
    pki.mkdir()
    _openssl('req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '2',
             '-subj', '/CN=py test CA', '-keyout', str(pki / 'ca.key'), '-out', str(pki / 'ca.pem'))
    _openssl('req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-subj', '/CN=server',
             '-keyout', str(pki / 'server.key'), '-out', str(pki / 'server.csr'))
    (pki / 'server.ext').write_text('subjectAltName=IP:127.0.0.1\n')
    _openssl('x509', '-req', '-in', str(pki / 'server.csr'), '-CA', str(pki / 'ca.pem'), '-CAkey',
             str(pki / 'ca.key'), '-CAcreateserial', '-days', '2', '-extfile', str(pki / 'server.ext'),
             '-out', str(pki / 'server.pem'))
    os.chmod(pki / 'server.key', 0o600)
    (tmp_path / 'data').mkdir()
    (tmp_path / 'server.yaml').write_text(
        f'listen: 127.0.0.1:0\ndata_dir: {tmp_path}/data\n'
        'tokens:\n  - {token: "tls-admin-token", user: alice, role: admin}\n'
        'queues:\n  - {name: default, users: ["*"]}\ndefault_queue: default\n'
        f'tls: {{cert: {pki}/server.pem, key: {pki}/server.key}}\n')
    log = open(tmp_path / 'server.log', 'w')
    proc = subprocess.Popen([gpool_bin, 'server', '--config', str(tmp_path / 'server.yaml')], stdout=log,
                            stderr=subprocess.STDOUT)
    try:
        url_file = tmp_path / 'data' / 'server.url'
        deadline = time.monotonic() + 20
        while not (url_file.exists() and url_file.read_text().strip()):
            assert time.monotonic() < deadline, 'the TLS server did not start: ' + (tmp_path / 'server.log').read_text()
            time.sleep(0.1)
        url = url_file.read_text().split()[0]
        assert url.startswith('https://127.0.0.1:')
        ca = str(pki / 'ca.pem')
        deadline = time.monotonic() + 20
        while True:
            try:
                assert gpool.Client(url, 'tls-admin-token', ca=ca).whoami()['user'] == 'alice'
                break
            except gpool.Unavailable:
                assert time.monotonic() < deadline
                time.sleep(0.1)
        with pytest.raises(gpool.ConnectionFailed, match='cannot verify the server') as e:
            gpool.Client(url, 'tls-admin-token').whoami()
        assert 'none is set' in str(e.value)
        monkeypatch.setenv('GPOOL_CA', ca)
        assert gpool.Client(url, 'tls-admin-token').queue('default').name == 'default'
        monkeypatch.delenv('GPOOL_CA')
        cfg = tmp_path / 'cfg'
        cfg.mkdir()
        (cfg / 'client.json').write_text(json.dumps({'server': url, 'token': 'tls-admin-token', 'ca': ca}))
        os.chmod(cfg / 'client.json', 0o600)
        monkeypatch.setenv('GPOOL_CONFIG_DIR', str(cfg))
        c = gpool.Client()
        assert c.ca == ca and c.whoami()['role'] == 'admin'
        with c.events() as s:
            assert not s.closed
        # Another CA's certificate is not this pool's.
        _openssl('req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '2',
                 '-subj', '/CN=other CA', '-keyout', str(pki / 'other.key'), '-out', str(pki / 'other.pem'))
        with pytest.raises(gpool.ConnectionFailed, match='cannot verify'):
            gpool.Client(url, 'tls-admin-token', ca=str(pki / 'other.pem')).whoami()
    finally:
        proc.terminate()
        proc.wait(20)
        log.close()


def test_a_nesting_bomb_is_a_protocol_error():
    def bomb(srv, conn, line):
        answer(conn, 200, b'[' * 200000 + b']' * 200000)
    srv = FakeServer(bomb)
    try:
        with pytest.raises(gpool.ProtocolError, match='not a JSON object'):
            gpool.Client(srv.url, 't').whoami()
    finally:
        srv.close()
