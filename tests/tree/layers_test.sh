#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The layers hold, file by file. Each module under src/ may include only its own headers and
# those of the modules its library links in CMakeLists.txt (the gpool_module(...) lines,
# the one place the allowed edges are written); the scheduler core stays pure: no I/O,
# socket, thread, clock, database or HTTP header (DESIGN.md §6); a module built of parts
# (gpool_part(...) lines: src/<module>/<part>/) keeps them in layers the same way: a part
# includes only its own headers and those of the parts its line names, directly or through
# them, and only the top parts (those no part names) include the module's face (the
# headers at src/<module>/ itself); and every internal name
# (gp__...) carries its module's prefix, so no internal name means two things. Fails naming
# each file, line and include or name. GP_LAYERS_ROOT checks another tree (the test's own test uses it).
set -u
root=${GP_LAYERS_ROOT:-${GP_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}}
exec python3 - "$root" <<'PY'
import os, re, sys
root = sys.argv[1]
cmake = open(os.path.join(root, 'CMakeLists.txt')).read()
# A list the file names once (set(GPOOL_SERVER_USES ...)) stands for its words wherever used.
for m in re.finditer(r'^set\((\w+)([^)]*)\)', cmake, re.M):
    cmake = cmake.replace('${' + m.group(1) + '}', m.group(2))
allowed = {}
for m in re.finditer(r'^gpool_module\((\w+)([^)]*)\)', cmake, re.M):
    allowed[m.group(1)] = {m.group(1)} | set(re.findall(r'\bgpool_(\w+)', m.group(2)))
if not allowed:
    sys.exit('no gpool_module(...) lines in CMakeLists.txt')
# Parts: below[module][part] = the parts it may use (itself and, transitively, those named).
below = {}
for m in re.finditer(r'^gpool_part\((\w+)\s+(\w+)([^)]*)\)', cmake, re.M):
    mod, part, rest = m.groups()
    below.setdefault(mod, {})[part] = {part} | set(re.findall(r'\bgpool_' + mod + r'_(\w+)', rest))
for mod, parts in below.items():
    changed = True
    while changed:
        changed = False
        for part, uses in parts.items():
            more = set().union(*(parts.get(q, set()) for q in uses)) - uses
            if more:
                uses |= more
                changed = True
tops = {mod: {p for p in parts if not any(p in u for q, u in parts.items() if q != p)}
        for mod, parts in below.items()}
pure_forbidden = re.compile(r'(stdio\.h|unistd\.h|fcntl\.h|time\.h|sys/|pthread\.h|threads\.h|signal\.h|'
                            r'dirent\.h|dlfcn\.h|netinet/|arpa/|netdb\.h|poll\.h|sqlite3\.h|libpq|'
                            r'microhttpd\.h|curl/|jansson\.h|yaml\.h|setjmp\.h)')
inc = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
# A module's internal names: gp__<prefix>_... (modules not listed have none).
prefixes = {'core': 'core', 'snapshot': 'snap', 'sim': 'sim', 'agent': 'agent', 'server': 'srv',
            'protocol': 'proto', 'ledger': 'ledger', 'provider': 'prov'}
internal = re.compile(r'\bgp__[A-Za-z0-9_]+')
bad, n = [], 0
src = os.path.join(root, 'src')
for mod in sorted(os.listdir(src)):
    if not os.path.isdir(os.path.join(src, mod)):
        continue
    if mod not in allowed:
        bad.append(f'src/{mod}: a folder with no gpool_module({mod} ...) in CMakeLists.txt')
        continue
    for d, _, names in os.walk(os.path.join(src, mod)):
        for name in names:
            if not name.endswith(('.c', '.h')):
                continue
            f = os.path.join(d, name)
            rel = os.path.relpath(f, root)
            n += 1
            inner = os.path.relpath(f, os.path.join(src, mod)).split(os.sep)
            part = inner[0] if len(inner) > 1 and mod in below else None
            if part is not None and part not in below[mod]:
                bad.append(f'{rel}: a folder of {mod} with no gpool_part({mod} {part} ...) in CMakeLists.txt')
                part = None
            want = 'gp__' + prefixes[mod] + '_' if mod in prefixes else None
            for no, line in enumerate(open(f, encoding='utf-8'), 1):
                for name in internal.findall(line):
                    if not want or not name.startswith(want):
                        bad.append(f'{rel}:{no}: internal name {name} lacks the {mod} prefix '
                                   f'{want or "(this module has no internal names)"}')
                m = inc.match(line)
                if not m:
                    continue
                kind, path = m.groups()
                if kind == '"':
                    target = path.split('/')[0] if '/' in path else mod
                    if target in allowed and target not in allowed[mod]:
                        bad.append(f'{rel}:{no}: {mod} may not include {path} ({target} is not below it)')
                    elif target == mod and part is not None and '/' in path:
                        seg = path.split('/')
                        into = seg[1] if len(seg) > 2 else None
                        if into is None and part not in tops[mod]:
                            bad.append(f'{rel}:{no}: the {part} part may not include {path} '
                                       f'(the face of {mod}: only its top parts {sorted(tops[mod])} do)')
                        elif into is not None and into not in below[mod][part]:
                            bad.append(f'{rel}:{no}: the {part} part of {mod} may not include {path} '
                                       f'({into} is not below it)')
                elif mod in ('core', 'ledger') and pure_forbidden.match(path):
                    bad.append(f'{rel}:{no}: the {mod} is pure; no <{path}>')
if bad:
    print('layering violations:')
    print('\n'.join(bad))
    sys.exit(1)
print(f'ok: {n} files in {len(allowed)} modules include only what their layer may use '
      f'({sum(len(p) for p in below.values())} parts in layers), with internal names under their module prefix')
PY
