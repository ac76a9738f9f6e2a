# SPDX-License-Identifier: Apache-2.0
"""The server's event stream (GET /v1/events, Server-Sent Events) as an iterator of Event.

The stream is read line by line with every line and every event bounded (MAX_LINE,
MAX_EVENT): a server that sends an endless line or event makes the iterator raise
ProtocolError, never grow without end. A silence longer than `idle_timeout` (the server
pings every 15 s) raises Timeout. The stream ends when the server ends it (its shutdown,
a client too far behind); there is no replay, so a client that opens a new one reads the
lists again (docs/api.md, "Events")."""
import http.client
import json
import socket

from .errors import ConnectionFailed, ProtocolError, Timeout
from .models import Event

MAX_LINE = 1 << 20
MAX_EVENT = 4 << 20


class EventStream:
    """Iterate for Event objects; close() (or a `with` block) ends the connection."""

    def __init__(self, conn, resp, types=None, idle_timeout=60.0):
        self._conn = conn
        self._resp = resp
        self._types = set(types) if types else None
        self.idle_timeout = idle_timeout
        self.last_id = None
        self.closed = False

    def __iter__(self):
        return self

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def close(self):
        if not self.closed:
            self.closed = True
            try:
                self._resp.close()
            finally:
                self._conn.close()

    def _line(self):
        try:
            line = self._resp.readline(MAX_LINE + 1)
        except (socket.timeout, TimeoutError):
            self.close()
            raise Timeout(f'the event stream was silent for {self.idle_timeout:g} s (the server pings every '
                          '15 s): the server or the network is gone') from None
        except (OSError, http.client.HTTPException) as e:
            self.close()
            raise ConnectionFailed(f'the event stream failed: {e}') from None
        if len(line) > MAX_LINE:
            self.close()
            raise ProtocolError(f'an event stream line longer than {MAX_LINE} bytes')
        return line

    def __next__(self):
        if self.closed:
            raise StopIteration
        ev_type, ev_id, data, size = 'message', None, [], 0
        while True:
            raw = self._line()
            if not raw:  # the server ended the stream
                self.close()
                raise StopIteration
            line = raw.decode('utf-8', errors='replace').rstrip('\r\n')
            if line == '':
                if not data:
                    ev_type, ev_id = 'message', None
                    continue
                if ev_id is not None:
                    try:
                        self.last_id = int(ev_id)
                    except ValueError:
                        self.last_id = ev_id
                text = '\n'.join(data)
                try:
                    doc = json.loads(text)
                except (ValueError, RecursionError):  # RecursionError: nesting too deep
                    self.close()
                    raise ProtocolError(f'an event whose data is not JSON: {text[:200]!r}') from None
                if not isinstance(doc, dict):
                    self.close()
                    raise ProtocolError(f'an event whose data is not a JSON object: {text[:200]!r}')
                event = Event(self.last_id if ev_id is not None else None, ev_type, doc)
                ev_type, ev_id, data, size = 'message', None, [], 0
                if self._types is None or event.type in self._types:
                    return event
                continue
            if line.startswith(':'):
                continue  # a comment: ": open", ": ping"
            name, _, value = line.partition(':')
            if value.startswith(' '):
                value = value[1:]
            if name == 'data':
                size += len(value) + 1
                if size > MAX_EVENT:
                    self.close()
                    raise ProtocolError(f'an event larger than {MAX_EVENT} bytes')
                data.append(value)
            elif name == 'event':
                ev_type = value
            elif name == 'id':
                ev_id = value
            # `retry` and unknown fields: nothing to do for this client.
