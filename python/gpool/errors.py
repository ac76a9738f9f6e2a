# SPDX-License-Identifier: Apache-2.0
"""The exceptions of the gpool client.

Every failure is a GpoolError. The server's refusals are ApiError, carrying the HTTP status
and the API's error document: its `code`, `message` and `field` (the request field or
query parameter at fault, e.g. "gpus"), so a program can point at what to change. The
subclasses by status let a caller catch one kind: `except gpool.NotFound`."""


class GpoolError(Exception):
    """Any failure of the gpool client."""


class ConfigError(GpoolError):
    """The server address, token or CA cannot be resolved (a bad client.json, no token)."""


class ConnectionFailed(GpoolError):
    """No server could be reached, or TLS verification failed; nothing was done."""


class Timeout(GpoolError, TimeoutError):
    """A call or a wait ran past its time. For a write, it may have been carried out."""

    def __init__(self, message, job=None):
        super().__init__(message)
        self.job = job  # for Client.wait: the job as last read


class ProtocolError(GpoolError):
    """The server's answer is not what the API promises (not JSON, too large, cut short)."""


class ApiError(GpoolError):
    """The server refused or failed a request: `status` (HTTP), `code`, `message`, `field`."""

    def __init__(self, status, code, message, field=None, body=None):
        self.status = status
        self.code = code
        self.message = message
        self.field = field
        self.body = body  # the decoded error document (dict), or None
        text = f'{message} (field: {field})' if field else message
        super().__init__(f'HTTP {status} {code}: {text}')


class InvalidArgument(ApiError):
    """400: a malformed request, a wrong type or range, an unknown field."""


class Unauthenticated(ApiError):
    """401: no token, or an unknown one."""


class PermissionDenied(ApiError):
    """403: the role, the queue's users or the job's owner do not allow it."""


class NotFound(ApiError):
    """404: no such job, node, queue or route."""


class Conflict(ApiError):
    """409: the object's state forbids it (cancel an ended job, ...)."""


class TooLarge(ApiError):
    """413: a body or a job over the server's limits."""


class TooMany(ApiError):
    """429: too many pending jobs of the user or queue, too many event streams."""


class Unavailable(ApiError):
    """503: the server cannot take it now (store, shutdown, no leader): retry."""


_BY_STATUS = {400: InvalidArgument, 401: Unauthenticated, 403: PermissionDenied, 404: NotFound,
              409: Conflict, 413: TooLarge, 429: TooMany, 503: Unavailable}


def api_error(status, doc, text):
    """The ApiError for an answer of `status` whose body decoded to `doc` (or None)."""
    cls = _BY_STATUS.get(status, ApiError)
    err = doc.get('error') if isinstance(doc, dict) else None
    if isinstance(err, dict) and isinstance(err.get('message'), str):
        code = err.get('code') if isinstance(err.get('code'), str) else 'unknown'
        field = err.get('field') if isinstance(err.get('field'), str) and err.get('field') else None
        return cls(status, code, err['message'], field, doc)
    # Not the documented error object (a proxy's page, libmicrohttpd's HTML): the status says it.
    snippet = (text or '')[:200]
    return cls(status, 'http_%d' % status, f'the server answered HTTP {status}' + (f': {snippet}' if snippet else ''),
               None, None)
