# SPDX-License-Identifier: Apache-2.0
# The event stream as an iterator: a submitted job's events arrive in order (pending,
# running, completed), typed, with growing ids; `types` filters; node and queue events
# arrive too; close() ends the connection; a viewer may follow, an unknown token may not.
import threading

import pytest

import gpool


def _collect(stream, until, out):
    for ev in stream:
        out.append(ev)
        if until(ev):
            return


def test_job_events_in_order(pool, alice):
    with alice.events() as stream:
        assert isinstance(stream, gpool.EventStream)
        job = alice.submit(['true'], gpus=1, name='evented')
        got = []
        t = threading.Thread(target=_collect, args=(stream, lambda e: e.type == 'job' and e.data['id'] == job.id
                                                    and e.data['state'] == 'completed', got))
        t.start()
        t.join(30)
        assert not t.is_alive(), f'no completed event; got {got}'
    mine = [e for e in got if e.type == 'job' and e.data['id'] == job.id]
    states = [e.data['state'] for e in mine]
    assert states[0] == 'pending' and states[-1] == 'completed' and 'running' in states
    assert all(isinstance(e, gpool.Event) for e in got)
    ids = [e.id for e in got]
    assert ids == sorted(ids) and all(isinstance(i, int) for i in ids)
    assert mine[-1].job.name == 'evented' and mine[-1].job.ended
    assert stream.closed


def test_types_filter_and_node_and_queue_events(pool, alice):
    stream = alice.events(types={'node', 'queue'})
    try:
        alice.put_queue('py/events', deserved=0, users=['*'])
        alice.drain('n1', reason='py events test')
        got = []
        t = threading.Thread(target=_collect, args=(stream, lambda e: e.type == 'node', got))
        t.start()
        t.join(20)
        assert not t.is_alive()
        assert {e.type for e in got} <= {'node', 'queue'}
        assert any(e.type == 'queue' and e.data['name'] == 'py/events' for e in got)
        assert got[-1].data['name'] == 'n1' and got[-1].data['state'] == 'drain'
    finally:
        stream.close()
        alice.resume('n1')
        alice.delete_queue('py/events')


def test_who_may_follow(pool):
    with pool.client('vic').events() as s:
        assert not s.closed
    with pytest.raises(gpool.Unauthenticated):
        gpool.Client(pool.url, 'nobody-at-all').events()
