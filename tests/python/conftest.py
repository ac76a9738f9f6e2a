# SPDX-License-Identifier: Apache-2.0
# The pool the Python client's tests run against: a real `gpool up` (server and a simulated
# agent, 4 H100 GPUs, node n1) on a free port in a temporary directory, with its own
# tokens: alice (admin), bob and carol (users), vic (viewer). The client imports from
# python/ of this source tree; test_install.py checks that `pip install ./python` works.
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pytest

SRC = os.environ.get('GP_SOURCE_DIR') or os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
sys.path.insert(0, os.path.join(SRC, 'python'))

import gpool  # noqa: E402


def _gpool_bin():
    b = os.environ.get('GPOOL_BIN')
    if not b or not os.path.exists(b):
        pytest.exit('GPOOL_BIN must point at the built gpool binary', returncode=2)
    return b


class Pool:
    def __init__(self, root):
        self.root = root
        self.data = os.path.join(root, 'pool')
        self.client_dir = os.path.join(root, 'client')
        self.work = os.path.join(root, 'work')  # the jobs' working directory
        self.tokens = {u: secrets.token_hex(16) for u in ('alice', 'bob', 'carol', 'vic', 'agent')}
        self.url = None

    def start(self):
        os.makedirs(self.data)
        os.makedirs(self.work)
        t = self.tokens
        path = os.path.join(self.data, 'tokens.yaml')
        with open(path, 'w') as f:
            f.write('tokens:\n'
                    f'  - {{token: "{t["alice"]}", user: alice, role: admin}}\n'
                    f'  - {{token: "{t["bob"]}", user: bob, role: user}}\n'
                    f'  - {{token: "{t["carol"]}", user: carol, role: user}}\n'
                    f'  - {{token: "{t["vic"]}", user: vic, role: viewer}}\n'
                    f'  - {{token: "{t["agent"]}", user: agent, role: agent}}\n')
        os.chmod(path, 0o600)
        env = dict(os.environ, GPOOL_CONFIG_DIR=self.client_dir)
        r = subprocess.run([_gpool_bin(), 'up', '--detach', '--data', self.data, '--port', '0',
                            '--sim', '4xH100-80GB', '--name', 'n1'],
                           env=env, capture_output=True, text=True, timeout=60)
        if r.returncode:
            raise RuntimeError(f'gpool up failed: {r.stdout}{r.stderr}{self.logs()}')
        with open(os.path.join(self.client_dir, 'client.json')) as f:
            self.url = json.load(f)['server']
        c = self.client('alice')
        deadline = time.monotonic() + 30
        while True:
            try:
                if c.node('n1').state == 'up':
                    break
            except gpool.GpoolError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError('node n1 did not come up' + self.logs())
            time.sleep(0.1)

    def client(self, user='alice', **kw):
        return gpool.Client(self.url, self.tokens[user], **kw)

    def logs(self):
        out = ''
        for name in ('up.log', 'server.log', 'agent.log'):
            p = os.path.join(self.data, name)
            if os.path.exists(p):
                with open(p, errors='replace') as f:
                    out += f'\n--- {name} (last 20 lines)\n' + ''.join(f.readlines()[-20:])
        return out

    def stop(self):
        subprocess.run([_gpool_bin(), 'up', '--stop', '--data', self.data], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=60,
                       env=dict(os.environ, GPOOL_CONFIG_DIR=self.client_dir))
        # Jobs run in sessions of their own with their cwd in the pool's directory: end what is left.
        for p in os.listdir('/proc'):
            if p.isdigit() and int(p) != os.getpid():
                try:
                    if os.readlink(f'/proc/{p}/cwd').startswith(self.root):
                        os.kill(int(p), signal.SIGKILL)
                except OSError:
                    pass


@pytest.fixture(scope='session')
def pool():
    root = tempfile.mkdtemp(prefix='gpool-py.')
    p = Pool(root)
    try:
        p.start()
        yield p
    finally:
        p.stop()
        if not os.environ.get('GPOOL_KEEP'):
            shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def alice(pool):
    return pool.client('alice')


@pytest.fixture
def bob(pool):
    return pool.client('bob')


@pytest.fixture(autouse=True)
def _in_work_dir(pool, monkeypatch):
    # submit() sends the current directory as the job's workdir, as `gpool submit` does.
    monkeypatch.chdir(pool.work)
    # Nothing of the developer's own pool leaks in.
    for k in ('GPOOL_SERVER', 'GPOOL_TOKEN', 'GPOOL_CA'):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv('GPOOL_CONFIG_DIR', pool.client_dir)


def gate(pool, name):
    """A shell fragment that waits (60 s at most) until open_gate(pool, name)."""
    path = os.path.join(pool.work, 'gate-' + name)
    return f"i=0; while [ ! -e '{path}' ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done"


def open_gate(pool, name):
    open(os.path.join(pool.work, 'gate-' + name), 'w').close()
