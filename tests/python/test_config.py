# SPDX-License-Identifier: Apache-2.0
# Where the client finds the pool, as the CLI does: arguments, then GPOOL_SERVER /
# GPOOL_TOKEN / GPOOL_CA, then client.json (GPOOL_CONFIG_DIR, XDG_CONFIG_HOME, HOME), each
# value on its own; a broken or open client.json is an error naming it, never ignored.
import json
import os

import pytest

import gpool


def _write(path, doc, mode=0o600):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as f:
        f.write(doc if isinstance(doc, str) else json.dumps(doc))
    os.chmod(path, mode)


def test_client_json_of_gpool_up(pool):
    # The conftest points GPOOL_CONFIG_DIR at the client.json `gpool up` wrote.
    c = gpool.Client()
    assert c.servers == [pool.url] and c.whoami()['role'] == 'admin'
    assert gpool.config_path() == os.path.join(pool.client_dir, 'client.json')


def test_order_of_sources(pool, monkeypatch, tmp_path):
    monkeypatch.setenv('GPOOL_TOKEN', pool.tokens['bob'])
    assert gpool.Client().whoami()['user'] == 'bob'  # the environment before the file
    assert gpool.Client(token=pool.tokens['carol']).whoami()['user'] == 'carol'  # the argument first
    monkeypatch.setenv('GPOOL_SERVER', 'http://127.0.0.1:9')  # nothing listens there
    assert gpool.Client(server=pool.url).whoami()['user'] == 'bob'
    with pytest.raises(gpool.ConnectionFailed) as e:
        gpool.Client().whoami()
    assert 'cannot reach the gpool server at http://127.0.0.1:9' in str(e.value)
    # XDG_CONFIG_HOME, then HOME, when GPOOL_CONFIG_DIR is not set.
    monkeypatch.delenv('GPOOL_CONFIG_DIR')
    monkeypatch.delenv('GPOOL_SERVER')
    monkeypatch.delenv('GPOOL_TOKEN')
    monkeypatch.setenv('XDG_CONFIG_HOME', str(tmp_path / 'xdg'))
    _write(str(tmp_path / 'xdg' / 'gpool' / 'client.json'), {'server': pool.url, 'token': pool.tokens['carol']})
    assert gpool.Client().whoami()['user'] == 'carol'
    monkeypatch.delenv('XDG_CONFIG_HOME')
    monkeypatch.setenv('HOME', str(tmp_path / 'home'))
    _write(str(tmp_path / 'home' / '.config' / 'gpool' / 'client.json'), {'server': pool.url,
                                                                           'token': pool.tokens['vic']})
    assert gpool.Client().whoami()['user'] == 'vic'


def test_bad_client_json(pool, monkeypatch, tmp_path):
    monkeypatch.setenv('GPOOL_CONFIG_DIR', str(tmp_path))
    path = str(tmp_path / 'client.json')
    _write(path, {'server': pool.url, 'token': pool.tokens['bob']}, mode=0o644)
    with pytest.raises(gpool.ConfigError) as e:
        gpool.Client()
    assert path in str(e.value) and 'chmod 600' in str(e.value)
    _write(path, '{"server": ')
    with pytest.raises(gpool.ConfigError, match='not valid JSON'):
        gpool.Client()
    _write(path, {'server': pool.url, 'token': 42})
    with pytest.raises(gpool.ConfigError, match='token: expected a string'):
        gpool.Client()
    _write(path, {'server': pool.url, 'token': 'x', 'ca': 'relative/ca.pem'})
    with pytest.raises(gpool.ConfigError, match='ca: must be an absolute path'):
        gpool.Client()
    _write(path, 'x' * 70000)
    with pytest.raises(gpool.ConfigError, match='larger than 65536 bytes'):
        gpool.Client()
    _write(path, {'server': pool.url})
    with pytest.raises(gpool.ConfigError, match='no token'):
        gpool.Client()
    for bad in ('ftp://h:1', 'http://h:1/path', 'http://a:1,,http://b:1', ','.join(['http://h:1'] * 9)):
        with pytest.raises(gpool.ConfigError):
            gpool.Client(server=bad, token='t')
    assert gpool.Client(server='http://a:1/, http://b:2', token='t').servers == ['http://a:1', 'http://b:2']
