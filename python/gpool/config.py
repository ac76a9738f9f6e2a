# SPDX-License-Identifier: Apache-2.0
"""Where the client finds its pool: the same sources, in the same order, as the gpool CLI
(docs/cli.md, "Where the CLI finds the pool").

Each of the server and the token is the first of: the argument given to Client, then
GPOOL_SERVER / GPOOL_TOKEN, then client.json ($GPOOL_CONFIG_DIR/client.json, else
$XDG_CONFIG_HOME/gpool/client.json, else ~/.config/gpool/client.json, written by `gpool
up`). The CA file is the argument, GPOOL_CA, then client.json's "ca" (an absolute path).
client.json is untrusted like any input: at most 64 KiB, a JSON object whose keys are
strings, and refused when other users may read or write it (it holds a token), naming the
file, never silently ignored."""
import json
import os
import re
import stat

from .errors import ConfigError

DEFAULT_SERVER = 'http://127.0.0.1:8642'
CONFIG_MAX_BYTES = 65536
URLS_MAX = 8
URL_MAX = 255
_BASE = re.compile(r'^(https?://)([A-Za-z0-9.\-:\[\]_]+)$')


def config_path():
    """The path of client.json, or None when there is no HOME to find it in."""
    d = os.environ.get('GPOOL_CONFIG_DIR')
    if d:
        return os.path.join(d, 'client.json')
    d = os.environ.get('XDG_CONFIG_HOME')
    if d:
        return os.path.join(d, 'gpool', 'client.json')
    d = os.environ.get('HOME')
    if d:
        return os.path.join(d, '.config', 'gpool', 'client.json')
    return None


def load_config(path):
    """client.json at `path` as a dict ({} when it does not exist)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return {}
    except OSError as e:
        raise ConfigError(f'{path}: cannot read: {e.strerror}') from None
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o077:
        raise ConfigError(f'{path}: mode {mode:04o} lets other users {"read" if mode & 0o044 else "write"} it, '
                          f'and it holds tokens; chmod 600 {path}')
    try:
        with open(path, 'rb') as f:
            data = f.read(CONFIG_MAX_BYTES + 1)
    except OSError as e:
        raise ConfigError(f'{path}: cannot read: {e.strerror}') from None
    if len(data) > CONFIG_MAX_BYTES:
        raise ConfigError(f'{path}: larger than {CONFIG_MAX_BYTES} bytes')
    try:
        doc = json.loads(data.decode('utf-8'))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise ConfigError(f'{path}: not valid JSON: {e}') from None
    if not isinstance(doc, dict):
        raise ConfigError(f'{path}: expected a JSON object')
    for key in ('server', 'token', 'ca'):
        if key in doc and not isinstance(doc[key], str):
            raise ConfigError(f'{path}: {key}: expected a string')
    return doc


def parse_servers(text):
    """The list of base URLs in `text` ("http://a:1,http://b:1"), as the CLI parses it."""
    out = []
    for part in text.split(','):
        part = part.strip(' ')
        if not part:
            raise ConfigError(f"server: an empty server URL in '{text[:200]}'")
        if len(out) == URLS_MAX:
            raise ConfigError(f'server: at most {URLS_MAX} server URLs')
        base = part[:-1] if part.endswith('/') else part
        if not base.startswith(('http://', 'https://')):
            raise ConfigError(f"server: server URL '{part[:200]}' must start with http:// or https://")
        if not _BASE.match(base):
            raise ConfigError(f"server: server URL '{part[:200]}' must be scheme://host[:port] without a path")
        if len(base) > URL_MAX:
            raise ConfigError(f"server: server URL '{part[:200]}' is too long")
        out.append(base)
    return out


def resolve(server=None, token=None, ca=None):
    """(servers, token, ca, where): the server list, the token (None when no source has
    one), the CA file (None: the system's store) and a note of where they came from."""
    server = server or os.environ.get('GPOOL_SERVER') or None
    token = token or os.environ.get('GPOOL_TOKEN') or None
    ca = ca or os.environ.get('GPOOL_CA') or None
    path = config_path()
    doc = {}
    if path and (not server or not token or not ca):
        doc = load_config(path)
    if not server:
        server = doc.get('server') or DEFAULT_SERVER
    if not token:
        token = doc.get('token') or None
    if not ca and doc.get('ca'):
        ca = doc['ca']
        # The file may be read from any directory: a relative path would name other files.
        if not ca.startswith('/'):
            raise ConfigError(f'{path}: ca: must be an absolute path')
    return parse_servers(server), token, ca, path
