# SPDX-License-Identifier: Apache-2.0
"""The gpool Client: every call of the public API a researcher scripts or runs from a
notebook, with typed results (models.py) and errors carrying the API's field (errors.py).

    import gpool
    c = gpool.Client()                      # server and token as the gpool CLI finds them
    job = c.submit(['python', 'train.py'], gpus=1, time_limit=3600)
    for text in c.logs(job.id, follow=True):
        print(text, end='')
    print(c.wait(job.id).state)

A Client is cheap and holds no connection between calls (each call opens its own); it may
be shared by threads for plain calls, each iterator (logs, events) being used by one."""
import datetime
import os
import time
import urllib.parse

from . import config as _config
from ._http import Transport
from .errors import ConfigError, GpoolError, NotFound, ProtocolError, Timeout
from .events import EventStream
from .models import FINAL_STATES, Job, JobPage, LogChunk, Node, Queue, Report

MAX_BODY = 64 << 20  # as the C client: the largest answer read (a page of jobs is ~4 MiB)


def _q(value, keep_slash=False):
    return urllib.parse.quote(str(value), safe='/' if keep_slash else '')


def _query(params):
    """A query string of the parameters that are not None (lists joined by commas)."""
    items = []
    for k, v in params.items():
        if v is None:
            continue
        if isinstance(v, bool):
            v = '1' if v else '0'
        elif isinstance(v, (list, tuple, set, frozenset)):
            v = ','.join(str(x) for x in v)
        elif isinstance(v, datetime.datetime):
            v = str(int(v.timestamp()))
        elif isinstance(v, datetime.date):
            v = v.isoformat()
        items.append((k, str(v)))
    return '?' + urllib.parse.urlencode(items, quote_via=urllib.parse.quote) if items else ''


def _seconds(v, name):
    if v is None:
        return None
    if isinstance(v, datetime.timedelta):
        v = v.total_seconds()
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TypeError(f'{name}: expected seconds (int) or a timedelta, got {type(v).__name__}')
    if v != int(v):
        raise ValueError(f'{name}: whole seconds only, got {v}')
    return int(v)


def _epoch(v, name):
    if v is None or isinstance(v, int) and not isinstance(v, bool):
        return v
    if isinstance(v, datetime.datetime):
        if v.tzinfo is None:
            raise ValueError(f'{name}: a datetime needs its time zone (tzinfo)')
        return int(v.timestamp())
    raise TypeError(f'{name}: expected Unix seconds or an aware datetime, got {type(v).__name__}')


def _ids(v):
    if v is None:
        return None
    if isinstance(v, (str, int, Job)):
        v = [v]
    return [x.id if isinstance(x, Job) else str(x) for x in v]


def _job_id(job):
    """A job id from an id or a Job, checked so it stays one path segment."""
    jid = job.id if isinstance(job, Job) else str(job)
    if not jid or not all(c.isdigit() or c == '_' for c in jid):
        raise ValueError(f"'{jid}' is not a job id")
    return jid


class Client:
    """A client of one gpool pool.

    server: a URL or a comma-separated list of the pool's servers (a leader and followers);
    token: the bearer token; ca: the CA file that verifies an https:// server. Each left out
    is found as the gpool CLI finds it: GPOOL_SERVER / GPOOL_TOKEN / GPOOL_CA, then
    client.json (written by `gpool up`). timeout: seconds a call may take in all (connect,
    request, whole answer); max_body: the largest answer read, in bytes."""

    def __init__(self, server=None, token=None, ca=None, timeout=30.0, max_body=MAX_BODY):
        servers, token, ca, path = _config.resolve(server, token, ca)
        if not token:
            raise ConfigError('no token: pass token=, set GPOOL_TOKEN, or run `gpool up`, which writes one to '
                              f'{path or "client.json"}; an admin gives tokens in the server config')
        self.servers = servers
        self.ca = ca
        self._t = Transport(servers, token, ca, timeout, max_body)

    def __repr__(self):
        return f'gpool.Client({",".join(self.servers)!r})'

    @property
    def server(self):
        """The server calls go to now (the leader once a follower named it)."""
        t = self._t
        return t.servers[t.leader if t.leader is not None else t.cur]

    # -- plumbing -----------------------------------------------------------------------
    def request(self, method, path, body=None):
        """Any API call: the decoded JSON object of a 2xx answer; ApiError otherwise."""
        if not path.startswith('/'):
            raise ValueError('path must start with /')
        return self._t.call(method, path, body)

    @staticmethod
    def _field(doc, key, cls=None):
        if key not in doc:
            raise ProtocolError(f'the answer has no "{key}"')
        v = doc[key]
        if cls is None:
            return v
        if isinstance(v, list):
            return [cls.from_dict(x) for x in v]
        return cls.from_dict(v)

    # -- who and where ------------------------------------------------------------------
    def health(self):
        """GET /healthz: {"ok": true} while the server accepts requests (needs no token)."""
        return self._t.call('GET', '/healthz')

    def whoami(self):
        """The user and role of this client's token: {"user": ..., "role": ...}."""
        return self.request('GET', '/v1/whoami')

    def leader(self):
        """GET /v1/leader: which server leads the pool (docs/ha.md)."""
        return self.request('GET', '/v1/leader')

    # -- jobs ---------------------------------------------------------------------------
    def submit(self, command, *, queue=None, name=None, gpus=None, tasks=None, tasks_per_node=None,
               gpu_fraction=None, gpu_mem_mib=None, mig=None, gpu_types=None, cpus=None, mem_mib=None,
               time_limit=None, priority=None, requeue=None, grace_s=None, signal=None, env=None,
               workdir=None, after=None, after_ok=None, after_any=None, after_not_ok=None, after_corr=None,
               singleton=None, array=None, hold=None, node_selector=None, allow_spot=None, partitions=None,
               exclusive=None, user=None, output=None, error=None, open_mode=None, begin_at=None,
               warn_signal=None, warn_before_s=None, warn_batch=None, mail_type=None, mail_user=None,
               **fields):
        """Submits a job (POST /v1/jobs) and returns it as the server acknowledged it: durable.

        command: the argv list, or a string run by /bin/sh -c. Keyword arguments are the
        request's fields (docs/api.md, "Submit"); time_limit and grace_s take seconds or a
        timedelta, begin_at Unix seconds or an aware datetime, after* job ids or Jobs.
        workdir defaults to the current directory, as for `gpool submit`. Any other keyword
        is sent as a field as it is, so a field this client does not name yet still
        works and a misspelt one is refused by the server (InvalidArgument, .field)."""
        if isinstance(command, str):
            command = ['/bin/sh', '-c', command]
        body = {'command': list(command)}
        named = dict(queue=queue, name=name, gpus=gpus, tasks=tasks, tasks_per_node=tasks_per_node,
                     gpu_fraction=gpu_fraction, gpu_mem_mib=gpu_mem_mib, mig=mig, gpu_types=gpu_types, cpus=cpus,
                     mem_mib=mem_mib, time_limit=_seconds(time_limit, 'time_limit'), priority=priority,
                     requeue=requeue, grace_s=_seconds(grace_s, 'grace_s'), signal=signal, env=env,
                     workdir=workdir if workdir is not None else os.getcwd(), after=_ids(after),
                     after_ok=_ids(after_ok), after_any=_ids(after_any), after_not_ok=_ids(after_not_ok),
                     after_corr=_ids(after_corr), singleton=singleton, array=array, hold=hold,
                     node_selector=node_selector, allow_spot=allow_spot, partitions=partitions,
                     exclusive=exclusive, user=user, output=output, error=error, open_mode=open_mode,
                     begin_at=_epoch(begin_at, 'begin_at'), warn_signal=warn_signal,
                     warn_before_s=_seconds(warn_before_s, 'warn_before_s'), warn_batch=warn_batch,
                     mail_type=mail_type, mail_user=mail_user)
        if isinstance(named['gpu_types'], str):
            named['gpu_types'] = [named['gpu_types']]
        if isinstance(named['partitions'], str):
            named['partitions'] = [named['partitions']]
        body.update({k: v for k, v in named.items() if v is not None})
        body.update(fields)
        return self._field(self.request('POST', '/v1/jobs', body), 'job', Job)

    def job(self, job):
        """One job, active or ended (GET /v1/jobs/{id}); NotFound when there is none."""
        return self._field(self.request('GET', f'/v1/jobs/{_job_id(job)}'), 'job', Job)

    def jobs_page(self, *, state=None, queue=None, user=None, limit=None, next=None):
        """One page of the live job list (GET /v1/jobs): a JobPage with .jobs and .next."""
        doc = self.request('GET', '/v1/jobs' + _query({'state': state, 'queue': queue, 'user': user,
                                                       'limit': limit, 'next': next}))
        return JobPage(self._field(doc, 'jobs', Job), doc.get('next'))

    def jobs(self, *, state=None, queue=None, user=None, limit=None, max_pages=None):
        """The live jobs (active and recently ended), every page followed: state may be a
        list of states, queue a queue or a parent; limit is the page size."""
        out, cursor, pages = [], None, 0
        while True:
            page = self.jobs_page(state=state, queue=queue, user=user, limit=limit, next=cursor)
            out.extend(page.jobs)
            pages += 1
            cursor = page.next
            if cursor is None or (max_pages is not None and pages >= max_pages):
                return out

    def history_page(self, *, from_=None, to=None, user=None, queue=None, limit=None, cursor=None):
        """One page of every ended job the store holds, last ended first (GET /v1/jobs?all=1)."""
        doc = self.request('GET', '/v1/jobs' + _query({'all': 1, 'from': from_, 'to': to, 'user': user,
                                                       'queue': queue, 'limit': limit, 'cursor': cursor}))
        return JobPage(self._field(doc, 'jobs', Job), doc.get('next'))

    def history(self, *, from_=None, to=None, user=None, queue=None, limit=None, max_pages=None):
        """Ended jobs from the store, every page followed (from_/to: RFC 3339, a date,
        Unix seconds, or a date/datetime)."""
        out, cursor, pages = [], None, 0
        while True:
            page = self.history_page(from_=from_, to=to, user=user, queue=queue, limit=limit, cursor=cursor)
            out.extend(page.jobs)
            pages += 1
            cursor = page.next
            if cursor is None or (max_pages is not None and pages >= max_pages):
                return out

    def _act(self, job, action):
        return self._field(self.request('POST', f'/v1/jobs/{_job_id(job)}/{action}'), 'job', Job)

    def cancel(self, job):
        """Cancels a job (a running one stops with its signal and grace); Conflict once ended."""
        return self._act(job, 'cancel')

    def hold(self, job):
        """Holds a pending job."""
        return self._act(job, 'hold')

    def release(self, job):
        """Releases a held job."""
        return self._act(job, 'release')

    def wait(self, job, timeout=None, states=None, poll=0.5):
        """Waits until the job is in one of `states` (default: any end state) and returns
        it. timeout: seconds (None: no bound); past it, gpool.Timeout with .job, the job as
        last read."""
        wanted = set(states) if states else FINAL_STATES
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            j = self.job(job)
            if j.state in wanted:
                return j
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise Timeout(f'job {j.id} is still {j.state} after {timeout:g} s'
                                  + (f' ({j.pending_reason}: {j.pending_message})' if j.pending_reason else ''), j)
                time.sleep(min(poll, left))
            else:
                time.sleep(poll)

    def log_chunk(self, job, *, stream='stdout', offset=0, task=None):
        """One read of a job's log (GET /v1/jobs/{id}/log): a LogChunk."""
        doc = self.request('GET', f'/v1/jobs/{_job_id(job)}/log'
                           + _query({'stream': stream, 'offset': offset, 'task': task}))
        return LogChunk.from_dict(doc)

    def logs(self, job, *, stream='stdout', task=None, follow=False, offset=0, poll=0.3):
        """The job's log as an iterator of text pieces (stream 'stdout' or 'stderr', task
        of a gang). With follow, waits for a job that has not started yet, then keeps
        reading until the job has ended and everything it wrote has come, as `gpool logs
        -f` does. Without follow, a job that never ran is NotFound."""
        jid = _job_id(job)
        idle = 0
        while True:
            try:
                c = self.log_chunk(jid, stream=stream, offset=offset, task=task)
            except NotFound:
                # Following a job that has not started yet (or whose agent has not made
                # its log yet) waits for it; one that ended without running has no log.
                if not follow:
                    raise
                j = self.job(jid)
                if j.ended:
                    if j.started_at is None:
                        return
                    raise
                time.sleep(poll)
                continue
            n = len(c.data.encode('utf-8'))
            nxt = c.offset if isinstance(c.offset, int) and not isinstance(c.offset, bool) else offset + n
            offset = max(nxt, offset + (n if nxt < offset else 0))  # never back on a bad answer
            if c.data:
                yield c.data
            if c.data and not c.eof:
                continue  # more is there now
            if not follow:
                return
            if self.job(jid).ended:
                idle += 1
                if c.eof or idle > 2:
                    # One more read catches what was written between the two calls.
                    last = self.log_chunk(jid, stream=stream, offset=offset, task=task)
                    if last.data:
                        yield last.data
                    return
            time.sleep(poll)

    def read_log(self, job, *, stream='stdout', task=None):
        """The job's whole log so far, as one string."""
        return ''.join(self.logs(job, stream=stream, task=task))

    def metrics(self, job):
        """A job's GPU samples (GET /v1/jobs/{id}/metrics), as the API's object."""
        return self.request('GET', f'/v1/jobs/{_job_id(job)}/metrics')

    # -- events -------------------------------------------------------------------------
    def events(self, types=None, idle_timeout=60.0):
        """The server's event stream: iterate it for Event objects (`job`, `node`,
        `queue`; `types` keeps only those). Close it (or use `with`) when done. Only
        events after it opens arrive; a silence of idle_timeout seconds raises Timeout."""
        conn, resp = self._t.open_stream('/v1/events', 'text/event-stream', idle_timeout)
        return EventStream(conn, resp, types, idle_timeout)

    # -- nodes --------------------------------------------------------------------------
    def nodes(self):
        return self._field(self.request('GET', '/v1/nodes'), 'nodes', Node)

    def node(self, name):
        return self._field(self.request('GET', f'/v1/nodes/{_q(name)}'), 'node', Node)

    def _node_act(self, name, action, reason, gpu):
        body = {k: v for k, v in (('reason', reason), ('gpu', gpu)) if v is not None}
        return self._field(self.request('POST', f'/v1/nodes/{_q(name)}/{action}', body), 'node', Node)

    def drain(self, name, reason=None, gpu=None):
        """Drains a node, or one of its GPUs (admin)."""
        return self._node_act(name, 'drain', reason, gpu)

    def cordon(self, name, reason=None):
        """Cordons a node (admin)."""
        return self._node_act(name, 'cordon', reason, None)

    def resume(self, name, gpu=None):
        """Returns a drained or cordoned node, or GPU, to service (admin)."""
        return self._node_act(name, 'resume', None, gpu)

    # -- queues -------------------------------------------------------------------------
    def queues(self):
        return self._field(self.request('GET', '/v1/queues'), 'queues', Queue)

    def queue(self, name):
        return self._field(self.request('GET', f'/v1/queues/{_q(name, keep_slash=True)}'), 'queue', Queue)

    def put_queue(self, name, **fields):
        """Creates or changes a queue (admin): deserved=, limit=, weight=, users=, ..."""
        return self._field(self.request('PUT', f'/v1/queues/{_q(name, keep_slash=True)}', fields), 'queue', Queue)

    def delete_queue(self, name):
        """Deletes a queue with no unfinished job (admin)."""
        return self.request('DELETE', f'/v1/queues/{_q(name, keep_slash=True)}')

    # -- reports ------------------------------------------------------------------------
    def report(self, kind='usage', *, by=None, from_=None, to=None, step=None, share_idle=None, job=None):
        """A report from the usage ledger (docs/api-reports.md): kind usage, cost, idle or
        efficiency; by a list of queue/user/model/capacity/node/job."""
        params = {'by': by, 'from': from_, 'to': to, 'step': step, 'share_idle': share_idle,
                  'job': _job_id(job) if job is not None else None}
        return Report.from_dict(self.request('GET', f'/v1/reports/{_q(kind)}' + _query(params)))

    def report_csv(self, kind='usage', **params):
        """The same report as CSV text (RFC 4180)."""
        q = {'by': params.pop('by', None), 'from': params.pop('from_', None), 'to': params.pop('to', None),
             'step': params.pop('step', None), 'share_idle': params.pop('share_idle', None),
             'job': params.pop('job', None), 'format': 'csv'}
        if params:
            raise TypeError(f'report_csv: unknown arguments {sorted(params)}')
        return self._t.call('GET', f'/v1/reports/{_q(kind)}' + _query(q), accept='text/csv', raw=True)

    def advice(self, **params):
        """Where GPU-hours went unused and what to change (GET /v1/advice), as the API's
        object; params as in docs/api-reports.md (queue, user, name, from_, to, ...)."""
        if 'from_' in params:
            params['from'] = params.pop('from_')
        return self.request('GET', '/v1/advice' + _query(params))


__all__ = ['Client', 'GpoolError']
