#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A clone of gpool needs nothing beside it: no file in src/, tests/, bench/, scripts/, docs/,
# the README, CMakeLists.txt or .ci/run names a path outside the repository (a relative path that climbs out of it
# from both the repository root and the file's own folder, anything under a sibling
# `shared/` folder, by a relative or an absolute path). Fails
# naming each file, line and path.
set -u
root=${GP_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
exec python3 - "$root" <<'PY'
import os, re, sys
root = os.path.realpath(sys.argv[1])
sibling = os.path.join(os.path.dirname(root), 'shared')
climb = re.compile(r'(?:\.\./)+[A-Za-z0-9_.-]*')
bad = []
def inside(p):
    p = os.path.normpath(p)
    return p == root or p.startswith(root + os.sep)
files = [os.path.join(root, n) for n in ('README.md', 'CMakeLists.txt', '.ci/run')]
for top in ('src', 'tests', 'bench', 'scripts', 'docs'):
    for d, _, names in os.walk(os.path.join(root, top)):
        files += [os.path.join(d, n) for n in names]
for f in files:
    try:
        text = open(f, encoding='utf-8').read()
    except (UnicodeDecodeError, OSError):
        continue
    rel = os.path.relpath(f, root)
    here = os.path.dirname(f)
    for no, line in enumerate(text.splitlines(), 1):
        for m in climb.finditer(line):
            p = m.group(0)
            first = p.replace('../', '').split('/')[0]
            if first == 'shared' or not (inside(os.path.join(root, p)) or inside(os.path.join(here, p))):
                bad.append(f'{rel}:{no}: {p}')
        if sibling in line:
            bad.append(f'{rel}:{no}: {sibling}')
if bad:
    print('paths outside the repository (a clone has nothing beside it):')
    print('\n'.join(bad))
    sys.exit(1)
print(f'ok: {len(files)} files name no path outside the repository')
PY
