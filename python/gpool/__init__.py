# SPDX-License-Identifier: Apache-2.0
"""gpool: a Python client for the gpool GPU pool's HTTP API (docs/api.md), standard
library only. Start with `gpool.Client()`; see docs/python-client.md."""
from .client import Client
from .config import config_path
from .errors import (ApiError, ConfigError, Conflict, ConnectionFailed, GpoolError, InvalidArgument, NotFound,
                     PermissionDenied, ProtocolError, Timeout, TooLarge, TooMany, Unauthenticated, Unavailable)
from .events import EventStream
from .models import FINAL_STATES, Event, Gpu, Job, JobPage, LogChunk, Node, Placement, Queue, Report

__version__ = '0.1.0'

__all__ = ['Client', 'config_path', 'ApiError', 'ConfigError', 'Conflict', 'ConnectionFailed', 'GpoolError',
           'InvalidArgument', 'NotFound', 'PermissionDenied', 'ProtocolError', 'Timeout', 'TooLarge', 'TooMany',
           'Unauthenticated', 'Unavailable', 'EventStream', 'FINAL_STATES', 'Event', 'Gpu', 'Job', 'JobPage',
           'LogChunk', 'Node', 'Placement', 'Queue', 'Report']
