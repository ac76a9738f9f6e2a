# SPDX-License-Identifier: Apache-2.0
"""Typed results: the API's objects (docs/api.md) as dataclasses.

Each class names the fields the API documents today, with their documented types; a
field the server sends that the class does not name (a newer server) is kept in `extra`,
and the document as it came is in `raw`, so nothing the server says is lost. Missing
fields are None. Times are Unix seconds, as in the API (`Job.submitted` etc. give
datetimes)."""
import dataclasses
import datetime
from typing import Any, Dict, List, Optional

FINAL_STATES = frozenset({'completed', 'failed', 'cancelled', 'preempted', 'timeout'})


def _utc(t):
    return None if t is None else datetime.datetime.fromtimestamp(t, datetime.timezone.utc)


class _Record:
    @classmethod
    def from_dict(cls, doc):
        if not isinstance(doc, dict):
            from .errors import ProtocolError
            raise ProtocolError(f'expected a JSON object for {cls.__name__}, got {type(doc).__name__}')
        names = {f.name for f in dataclasses.fields(cls)} - {'extra', 'raw'}
        known = {k: v for k, v in doc.items() if k in names}
        extra = {k: v for k, v in doc.items() if k not in names}
        obj = cls(**known, extra=extra, raw=doc)
        obj._typed()
        return obj

    def _typed(self):
        pass

    def to_dict(self):
        return dict(self.raw)


@dataclasses.dataclass
class Placement(_Record):
    """Where one task of a job runs (or last ran)."""
    node: Optional[str] = None
    gpu_ids: Optional[List[int]] = None
    gpu_uuids: Optional[List[str]] = None
    gpu_milli: Optional[int] = None
    gpu_mem_mib: Optional[int] = None
    mig_uuid: Optional[str] = None
    exited: Optional[bool] = None
    exit_code: Optional[int] = None
    extra: Dict[str, Any] = dataclasses.field(default_factory=dict, repr=False)
    raw: Dict[str, Any] = dataclasses.field(default_factory=dict, repr=False)


@dataclasses.dataclass
class Job(_Record):
    """A job (docs/api.md, "JOB"): `state`, `pending_reason`, `placements`, ..."""
    id: str = ''
    name: Optional[str] = None
    queue: Optional[str] = None
    user: Optional[str] = None
    state: Optional[str] = None
    priority: Optional[str] = None
    command: Optional[List[str]] = None
    env: Optional[Dict[str, str]] = None
    workdir: Optional[str] = None
    gpus: Optional[int] = None
    tasks: Optional[int] = None
    tasks_per_node: Optional[int] = None
    gpu_fraction: Optional[float] = None
    gpu_mem_mib: Optional[int] = None
    mig: Optional[str] = None
    gpu_types: Optional[List[str]] = None
    cpus: Optional[float] = None
    mem_mib: Optional[int] = None
    time_limit: Optional[int] = None
    requeue: Optional[bool] = None
    grace_s: Optional[int] = None
    signal: Optional[str] = None
    allow_spot: Optional[bool] = None
    exclusive: Optional[bool] = None
    node_selector: Optional[Dict[str, str]] = None
    restarts: Optional[int] = None
    after: Optional[List[str]] = None
    after_ok: Optional[List[str]] = None
    after_any: Optional[List[str]] = None
    after_not_ok: Optional[List[str]] = None
    singleton: Optional[bool] = None
    array: Optional[Dict[str, Any]] = None
    array_job_id: Optional[str] = None
    array_index: Optional[int] = None
    array_id: Optional[str] = None
    pending_reason: Optional[str] = None
    pending_message: Optional[str] = None
    queue_position: Optional[int] = None
    estimated_start: Optional[int] = None
    placements: Optional[List[Placement]] = None
    exit_code: Optional[int] = None
    end_reason: Optional[str] = None
    stop_reason: Optional[str] = None
    enforcement: Optional[str] = None
    timeline: Optional[List[Dict[str, Any]]] = None
    attempts: Optional[List[Dict[str, Any]]] = None
    submitted_at: Optional[int] = None
    started_at: Optional[int] = None
    ended_at: Optional[int] = None
    usage: Optional[Dict[str, Any]] = None
    idle: Optional[Dict[str, Any]] = None
    extra: Dict[str, Any] = dataclasses.field(default_factory=dict, repr=False)
    raw: Dict[str, Any] = dataclasses.field(default_factory=dict, repr=False)

    def _typed(self):
        if isinstance(self.placements, list):
            self.placements = [Placement.from_dict(p) if isinstance(p, dict) else p for p in self.placements]

    @property
    def ended(self):
        """Whether the job has ended (completed, failed, cancelled, preempted, timeout)."""
        return self.state in FINAL_STATES

    @property
    def nodes(self):
        return [p.node for p in self.placements or []]

    @property
    def submitted(self):
        return _utc(self.submitted_at)

    @property
    def started(self):
        return _utc(self.started_at)

    @property
    def finished(self):
        return _utc(self.ended_at)


@dataclasses.dataclass
class JobPage:
    """One page of a job list: `jobs`, and `next`, the cursor of the rest (None: the end)."""
    jobs: List[Job]
    next: Optional[str]


@dataclasses.dataclass
class LogChunk(_Record):
    """A piece of a job's log: `data` from the asked offset, `offset` where to go on,
    `eof` when there is nothing more there now."""
    data: str = ''
    offset: int = 0
    eof: bool = False
    size: Optional[int] = None
    extra: Dict[str, Any] = dataclasses.field(default_factory=dict, repr=False)
    raw: Dict[str, Any] = dataclasses.field(default_factory=dict, repr=False)


@dataclasses.dataclass
class Gpu(_Record):
    index: Optional[int] = None
    uuid: Optional[str] = None
    health: Optional[str] = None
    reason: Optional[str] = None
    mode: Optional[str] = None
    replicas: Optional[int] = None
    mem_mib: Optional[int] = None
    mig: Optional[List[Any]] = None
    jobs: Optional[List[str]] = None
    telemetry: Optional[Dict[str, Any]] = None
    extra: Dict[str, Any] = dataclasses.field(default_factory=dict, repr=False)
    raw: Dict[str, Any] = dataclasses.field(default_factory=dict, repr=False)


@dataclasses.dataclass
class Node(_Record):
    """A node (docs/api.md, "Nodes")."""
    name: str = ''
    state: Optional[str] = None
    reason: Optional[str] = None
    conditions: Optional[List[str]] = None
    model: Optional[str] = None
    gpus: Optional[int] = None
    cpus: Optional[float] = None
    mem_mib: Optional[int] = None
    labels: Optional[Dict[str, str]] = None
    capacity: Optional[str] = None
    nvlink_domains: Optional[List[List[int]]] = None
    last_heartbeat: Optional[int] = None
    agent_url: Optional[str] = None
    gpu_backend: Optional[str] = None
    provider: Optional[Dict[str, Any]] = None
    gpu_list: Optional[List[Gpu]] = None
    extra: Dict[str, Any] = dataclasses.field(default_factory=dict, repr=False)
    raw: Dict[str, Any] = dataclasses.field(default_factory=dict, repr=False)

    def _typed(self):
        if isinstance(self.gpu_list, list):
            self.gpu_list = [Gpu.from_dict(g) if isinstance(g, dict) else g for g in self.gpu_list]


@dataclasses.dataclass
class Queue(_Record):
    """A queue (docs/api.md, "Queues")."""
    name: str = ''
    parent: Optional[str] = None
    deserved: Optional[float] = None
    limit: Optional[float] = None
    weight: Optional[float] = None
    users: Optional[List[str]] = None
    default_priority: Optional[str] = None
    default_time_limit: Optional[int] = None
    priority_classes: Optional[List[str]] = None
    implied: Optional[bool] = None
    from_config: Optional[bool] = None
    spot: Optional[Dict[str, Any]] = None
    budget: Optional[Dict[str, Any]] = None
    idle_policy: Optional[Dict[str, Any]] = None
    fair_share: Optional[float] = None
    allocated: Optional[float] = None
    pending: Optional[float] = None
    running_jobs: Optional[int] = None
    pending_jobs: Optional[int] = None
    extra: Dict[str, Any] = dataclasses.field(default_factory=dict, repr=False)
    raw: Dict[str, Any] = dataclasses.field(default_factory=dict, repr=False)


@dataclasses.dataclass
class Event:
    """One event of the server's stream (docs/api.md, "Events"): `id`, `type` (`job`,
    `node`, `queue`) and `data`, the decoded JSON object."""
    id: Optional[int]
    type: str
    data: Dict[str, Any]

    @property
    def job(self):
        """For a `job` event: its summary as a Job (only the fields an event carries)."""
        return Job.from_dict(self.data) if self.type == 'job' else None


@dataclasses.dataclass
class Report(_Record):
    """A report (docs/api-reports.md): `columns` and `rows` (dicts by column)."""
    kind: str = ''
    from_: Optional[str] = None
    to: Optional[str] = None
    step: Optional[str] = None
    share_idle: Optional[str] = None
    by: Optional[List[str]] = None
    currency: Optional[str] = None
    columns: Optional[List[str]] = None
    rows: Optional[List[Dict[str, Any]]] = None
    truncated: Optional[bool] = None
    fleet_cost: Optional[float] = None
    extra: Dict[str, Any] = dataclasses.field(default_factory=dict, repr=False)
    raw: Dict[str, Any] = dataclasses.field(default_factory=dict, repr=False)

    @classmethod
    def from_dict(cls, doc):
        # `from` is a Python keyword: the field is `from_`.
        if isinstance(doc, dict) and 'from' in doc:
            renamed = {('from_' if k == 'from' else k): v for k, v in doc.items()}
            obj = super().from_dict(renamed)
            obj.raw = doc
            return obj
        return super().from_dict(doc)

