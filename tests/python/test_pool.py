# SPDX-License-Identifier: Apache-2.0
# The pool's other calls: health, whoami, leader, nodes (typed, with GPUs), drain and
# resume, queues (read, create, delete), reports (JSON and CSV), advice.
import csv
import io

import pytest

import gpool


def test_who_and_where(pool, alice, bob):
    assert alice.health() == {'ok': True}
    assert alice.whoami() == {'user': 'alice', 'role': 'admin'}
    assert bob.whoami() == {'user': 'bob', 'role': 'user'}
    lead = alice.leader()
    assert lead['role'] == 'leader' and lead['self'] == pool.url
    assert alice.server == pool.url and repr(alice) == f"gpool.Client('{pool.url}')"


def test_nodes(alice, bob):
    nodes = alice.nodes()
    assert [n.name for n in nodes] == ['n1'] and isinstance(nodes[0], gpool.Node)
    n1 = alice.node('n1')
    assert n1.state == 'up' and n1.gpus == 4 and n1.model == 'H100-80GB' and n1.gpu_backend == 'sim'
    assert len(n1.gpu_list) == 4 and isinstance(n1.gpu_list[0], gpool.Gpu) and n1.gpu_list[0].uuid.startswith('GPU-')
    assert alice.drain('n1', reason='fan', gpu=3).gpu_list[3].health != 'healthy'
    assert alice.resume('n1', gpu=3).gpu_list[3].health == 'healthy'
    cordoned = alice.cordon('n1', reason='maintenance')
    assert cordoned.state == 'cordon' and cordoned.reason == 'maintenance'
    assert alice.resume('n1').state == 'up'
    with pytest.raises(gpool.PermissionDenied):
        bob.drain('n1')


def test_queues(alice, bob):
    names = [q.name for q in alice.queues()]
    assert 'default' in names
    made = alice.put_queue('py/team', deserved=1, limit=2, users=['bob'])
    assert isinstance(made, gpool.Queue) and made.users == ['bob'] and made.limit == 2
    q = bob.queue('py/team')
    assert q.deserved == 1 and q.from_config is False and q.parent == 'py'
    assert 'py' in [x.name for x in bob.queues()]
    job = bob.submit(['true'], queue='py/team')
    assert bob.wait(job, timeout=30).queue == 'py/team'
    with pytest.raises(gpool.PermissionDenied):
        bob.put_queue('py/mine', deserved=1)
    assert alice.delete_queue('py/team') == {'queue': 'py/team', 'deleted': True}
    with pytest.raises(gpool.NotFound):
        alice.queue('py/team')


def test_reports_and_advice(alice, bob):
    job = bob.submit(['sleep', '1'], gpus=1)
    bob.wait(job, timeout=30)
    rep = alice.report('usage', by=['user'])
    assert isinstance(rep, gpool.Report) and rep.kind == 'usage' and rep.by == ['user']
    assert rep.columns[:2] == ['user', 'period'] and rep.from_ and rep.to and rep.truncated is False
    bobs = [r for r in rep.rows if r['user'] == 'bob']
    assert bobs and bobs[0]['gpu_hours'] > 0
    mine = bob.report('usage', job=job)
    assert len(mine.rows) == 1
    text = bob.report_csv('usage', by=['user'])
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0] == [c for c in bob.report('usage', by=['user']).columns] and rows[1][0] == 'bob'
    with pytest.raises(gpool.PermissionDenied) as e:
        bob.report('idle')
    assert e.value.field == 'kind'
    adv = bob.advice()
    assert isinstance(adv, dict) and isinstance(adv['items'], list) and adv['from']


def test_any_other_call_and_advice_params(alice, bob):
    templates = alice.request('GET', '/v1/templates')
    assert templates == {'templates': []}
    with pytest.raises(gpool.InvalidArgument) as e:
        alice.request('GET', '/v1/advice?colour=red')
    assert e.value.field == 'colour'
    adv = bob.advice(from_='2026-01-01', name='train')
    assert adv['from'].startswith('2026-01-01')
    with pytest.raises(ValueError):
        alice.request('GET', 'v1/whoami')
