# SPDX-License-Identifier: Apache-2.0
# The server's refusals reach the caller as ApiError subclasses carrying the HTTP status,
# the API's code, its sentence and the field at fault; a second user's token is refused on
# another user's job (cancel, hold, log) and sees its command hidden; a viewer writes nothing.
import pytest

import gpool
from conftest import gate, open_gate


def test_a_bad_field_names_it(alice):
    with pytest.raises(gpool.InvalidArgument) as e:
        alice.submit(['true'], gpu=1)  # misspelt: sent as it is, refused by name
    err = e.value
    assert err.status == 400 and err.code == 'invalid_argument' and err.field == 'gpu'
    assert err.message == 'unknown field' and 'field: gpu' in str(err)
    assert isinstance(err, gpool.ApiError) and isinstance(err, gpool.GpoolError)
    assert err.body['error']['field'] == 'gpu'
    with pytest.raises(gpool.InvalidArgument) as e:
        alice.submit(['true'], gpus=99)
    assert e.value.field == 'gpus'
    with pytest.raises(gpool.InvalidArgument) as e:
        alice.submit(['true'], signal='NOPE')
    assert e.value.field == 'signal'
    with pytest.raises(gpool.InvalidArgument) as e:
        alice.jobs(state='bogus')
    assert e.value.field == 'state'
    with pytest.raises(gpool.InvalidArgument) as e:
        alice.report('usage', by=['colour'])
    assert e.value.field == 'by'
    with pytest.raises(gpool.InvalidArgument) as e:
        alice.put_queue('py/bad', weight=-1)
    assert e.value.field == 'weight'


def test_not_found_and_local_checks(alice):
    with pytest.raises(gpool.NotFound) as e:
        alice.job('999999')
    assert e.value.status == 404 and e.value.code == 'not_found'
    with pytest.raises(gpool.NotFound):
        alice.node('no-such-node')
    with pytest.raises(gpool.NotFound):
        alice.queue('no/such/queue')
    # An id that is not one never becomes a path of another route.
    with pytest.raises(ValueError):
        alice.job('1/../../nodes')
    with pytest.raises(TypeError):
        alice.submit(['true'], time_limit='1h')


def test_unknown_token(pool):
    c = gpool.Client(pool.url, 'not-a-token-of-this-pool')
    with pytest.raises(gpool.Unauthenticated) as e:
        c.whoami()
    assert e.value.status == 401


def test_another_users_job(pool, bob):
    carol = pool.client('carol')
    vic = pool.client('vic')
    job = bob.submit(['sh', '-c', f'echo secret-output; {gate(pool, "bobs")}'], env={'API_KEY': 's3cret'}, gpus=1)
    bob.wait(job, timeout=20, states={'running'})
    for act in (carol.cancel, carol.hold, carol.release):
        with pytest.raises(gpool.PermissionDenied) as e:
            act(job)
        assert e.value.status == 403 and e.value.code == 'permission_denied'
    with pytest.raises(gpool.PermissionDenied):
        carol.read_log(job)
    seen = carol.job(job)
    assert seen.command == ['(hidden)'] and seen.env == {'API_KEY': '(hidden)'}
    # A viewer reads every job but writes nothing and reads no log.
    assert vic.job(job).state == 'running'
    with pytest.raises(gpool.PermissionDenied):
        vic.cancel(job)
    with pytest.raises(gpool.PermissionDenied):
        vic.submit(['true'])
    with pytest.raises(gpool.PermissionDenied):
        vic.read_log(job)
    assert bob.job(job).state == 'running'
    open_gate(pool, 'bobs')
    assert bob.wait(job, timeout=30).state == 'completed'
    assert bob.read_log(job) == 'secret-output\n'
    # A user's history is their own: naming another user is refused by field.
    with pytest.raises(gpool.PermissionDenied) as e:
        carol.history(user='bob')
    assert e.value.field == 'user'
