# SPDX-License-Identifier: Apache-2.0
# The client's job calls against a real pool: submit with the request's fields, job, jobs
# (filters, pages), history, wait (and its timeout), logs (whole, stderr, follow), cancel,
# hold, release, arrays and dependencies, metrics; typed results keep unknown fields.
import datetime
import threading
import time

import pytest

import gpool
from conftest import gate, open_gate


def test_submit_wait_and_logs(pool, alice):
    job = alice.submit(['sh', '-c', 'echo "out $GREETING $CUDA_VISIBLE_DEVICES"; echo oops >&2; exit 0'],
                       name='hello', gpus=1, env={'GREETING': 'hi'}, time_limit=datetime.timedelta(minutes=10),
                       grace_s=5, signal='USR1', requeue=True, node_selector={}, gpu_types=['h100-80gb'])
    assert isinstance(job, gpool.Job)
    assert job.id.isdigit() and job.name == 'hello' and job.user == 'alice' and job.queue == 'default'
    assert job.gpus == 1 and job.time_limit == 600 and job.grace_s == 5 and job.signal == 'USR1'
    assert job.requeue is True and job.env == {'GREETING': 'hi'} and job.workdir == pool.work
    assert job.gpu_types == ['H100-80GB']
    done = alice.wait(job.id, timeout=30)
    assert done.state == 'completed' and done.ended and done.exit_code == 0
    assert isinstance(done.placements[0], gpool.Placement) and done.nodes == ['n1']
    uuid = done.placements[0].gpu_uuids[0]
    assert alice.read_log(job) == f'out hi {uuid}\n'
    assert alice.read_log(job, stream='stderr') == 'oops\n'
    chunk = alice.log_chunk(job, offset=4)
    assert isinstance(chunk, gpool.LogChunk) and chunk.data == f'hi {uuid}\n' and chunk.eof
    assert done.submitted.tzinfo is not None and done.finished >= done.started


def test_command_string_runs_in_a_shell(alice):
    job = alice.submit('echo $((6 * 7))')
    assert job.command == ['/bin/sh', '-c', 'echo $((6 * 7))'] and job.gpus == 0
    alice.wait(job, timeout=30)
    assert alice.read_log(job) == '42\n'


def test_logs_follow_streams_until_the_end(pool, alice):
    job = alice.submit(['sh', '-c', f'echo first; {gate(pool, "follow")}; echo second; sleep 0.5; echo third'],
                       gpus=1)
    seen = []
    got_first = threading.Event()

    def follow():
        for piece in alice.logs(job.id, follow=True, poll=0.1):
            seen.append(piece)
            if 'first' in ''.join(seen):
                got_first.set()

    t = threading.Thread(target=follow)
    t.start()
    # The first line arrives while the job still runs: logs(follow=True) streams.
    assert got_first.wait(20), 'the first line never came'
    assert alice.job(job).state == 'running'
    open_gate(pool, 'follow')
    t.join(30)
    assert not t.is_alive(), 'follow did not end after the job ended'
    assert ''.join(seen) == 'first\nsecond\nthird\n'
    assert alice.job(job).state == 'completed'


def test_wait_timeout_carries_the_job(alice):
    job = alice.submit(['true'], hold=True)
    assert job.state == 'held'
    t0 = time.monotonic()
    with pytest.raises(gpool.Timeout) as e:
        alice.wait(job, timeout=0.6, poll=0.1)
    assert 0.5 < time.monotonic() - t0 < 5
    assert isinstance(e.value, TimeoutError) and e.value.job.state == 'held'
    assert 'Held' in str(e.value)
    alice.cancel(job)


def test_hold_release_cancel(pool, alice):
    later = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=1)
    waiting = alice.submit(['true'], begin_at=later)
    assert waiting.state == 'pending' and waiting.raw['begin_at'] == int(later.timestamp())
    held = alice.hold(waiting)
    assert held.state == 'held' and held.pending_reason == 'Held'
    released = alice.release(waiting)
    assert released.state == 'pending'
    assert alice.cancel(waiting).state == 'cancelled'
    # A running job stops with its signal and ends cancelled.
    job = alice.submit(['sh', '-c', gate(pool, 'never')], gpus=1)
    alice.wait(job, timeout=20, states={'running'})
    stopping = alice.cancel(job)
    assert stopping.state in ('stopping', 'cancelled')
    assert alice.wait(job, timeout=30).state == 'cancelled'
    with pytest.raises(gpool.Conflict) as e:
        alice.cancel(job)
    assert e.value.status == 409 and e.value.code == 'conflict'
    with pytest.raises(gpool.Conflict):
        alice.hold(job)


def test_jobs_filters_and_pages(pool, alice, bob):
    mine = [bob.submit(['true'], name=f'page{i}', hold=True) for i in range(5)]
    page = bob.jobs_page(user='bob', state='held', limit=2)
    assert isinstance(page, gpool.JobPage) and len(page.jobs) == 2 and page.next is not None
    rest = bob.jobs_page(user='bob', state='held', limit=2, next=page.next)
    assert rest.jobs[0].id != page.jobs[0].id
    every = bob.jobs(user='bob', state=['held'], limit=2)
    assert [j.id for j in mine] == [j.id for j in every if j.name.startswith('page')]
    assert all(j.user == 'bob' for j in alice.jobs(user='bob', queue='default'))
    assert len(bob.jobs(user='bob', state='held', limit=2, max_pages=1)) == 2
    for j in mine:
        bob.cancel(j)
    # The history: ended jobs from the store, the last ended first, the user's own.
    hist = bob.history(from_=datetime.date.today() - datetime.timedelta(days=1), limit=2)
    ids = [j.id for j in hist]
    assert set(j.id for j in mine) <= set(ids) and all(j.user == 'bob' for j in hist)
    assert ids.index(mine[4].id) < ids.index(mine[0].id)
    first = bob.history_page(limit=1)
    assert len(first.jobs) == 1 and first.next


def test_array_and_dependencies(alice):
    arr = alice.submit(['sh', '-c', 'echo $GPOOL_ARRAY_TASK_ID'], array='0-2', gpus=1)
    assert alice.job(arr).array['count'] == 3
    dep = alice.submit(['echo', 'after'], after_ok=arr, name='dep')
    assert dep.after_ok == [arr.id]
    assert alice.wait(arr, timeout=40).state == 'completed'
    assert alice.read_log(f'{arr.id}_2') == '2\n'
    assert alice.job(f'{arr.id}_1').array_index == 1
    assert alice.wait(dep, timeout=30).state == 'completed'


def test_metrics(alice):
    job = alice.submit(['sleep', '1.5'], gpus=1)
    alice.wait(job, timeout=30)
    m = alice.metrics(job)
    assert m['job'] == job.id and isinstance(m['gpus'], list)


def test_unknown_fields_are_kept(alice):
    j = gpool.Job.from_dict({'id': '7', 'state': 'running', 'brand_new': {'x': 1}})
    assert j.id == '7' and j.extra == {'brand_new': {'x': 1}} and j.raw['brand_new'] == {'x': 1}
    job = alice.job(alice.submit(['true'], hold=True))
    assert job.raw['id'] == job.id and 'id' not in job.extra
    alice.cancel(job)


def test_a_gangs_task_logs(alice):
    gang = alice.submit(['sh', '-c', 'echo "task $GPOOL_TASK_INDEX of $GPOOL_TASKS"'], tasks=2, gpus=1,
                        tasks_per_node=2)
    assert gang.tasks == 2 and gang.tasks_per_node == 2
    assert alice.wait(gang, timeout=30).state == 'completed'
    assert alice.read_log(gang) == 'task 0 of 2\n'
    assert ''.join(alice.logs(gang, task=1, follow=True)) == 'task 1 of 2\n'
    with pytest.raises(gpool.InvalidArgument) as e:
        alice.read_log(gang, task=5)
    assert e.value.field == 'task'


def test_follow_of_a_job_that_never_ran_ends(alice):
    job = alice.submit(['true'], hold=True)
    with pytest.raises(gpool.NotFound):
        alice.read_log(job)
    alice.cancel(job)
    assert list(alice.logs(job, follow=True)) == []
