#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# No module is a knot: read from the build's objects which file of a module calls which
# (nm: the names one object defines, the names another leaves undefined), and fail when a
# circle of files calling each other, inside one module, is larger than the module's
# ceiling: 8 files (issue 33), except where CEILINGS below still allows more. A ceiling
# there is a ratchet: lower it as a circle is broken, never raise it.
# Run by hand on any build: GP_BINARY_DIR=build/asan bash tests/tree/circles_test.sh [MODULE]
# prints every circle of MODULE (or of every module) with its files.
set -u
build=${GP_BINARY_DIR:?set GP_BINARY_DIR to a build directory}
exec python3 - "$build" "${1:-}" <<'PY'
import os, subprocess, sys, collections
build, show = sys.argv[1], sys.argv[2]
LIMIT = 8
CEILINGS = {}
objs = collections.defaultdict(list)
for d, _, names in os.walk(os.path.join(build, 'CMakeFiles')):
    for n in names:
        if n.endswith('.c.o') and '/src/' in d + '/':
            path = os.path.join(d, n)
            rel = path.split('/src/', 1)[1][:-2]
            objs[rel.split('/')[0]].append((rel, path))
if not objs:
    sys.exit(f'no objects of src/ under {build}/CMakeFiles: build first')
sys.setrecursionlimit(100000)
bad = []
for mod, files in sorted(objs.items()):
    defined, undefined = {}, {}
    for rel, path in files:
        out = subprocess.run(['nm', path], capture_output=True, text=True, check=True).stdout
        undefined[rel] = set()
        for line in out.splitlines():
            f = line.split()
            if len(f) == 2 and f[0] == 'U':
                undefined[rel].add(f[1])
            elif len(f) == 3 and f[1] in 'TDBRVW':
                defined.setdefault(f[2], rel)
    calls = {f: sorted({defined[s] for s in u if s in defined and defined[s] != f})
             for f, u in undefined.items()}
    # Tarjan's strongly connected components: each one of more than one file is a circle.
    index, low, stack, on, circles = {}, {}, [], set(), []
    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v); on.add(v)
        for w in calls[v]:
            if w not in index:
                visit(w); low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop(); on.discard(w); comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                circles.append(sorted(comp))
    for v in sorted(calls):
        if v not in index:
            visit(v)
    circles.sort(key=len, reverse=True)
    ceiling = CEILINGS.get(mod, LIMIT)
    sizes = [len(c) for c in circles]
    print(f'{mod}: {len(files)} files, circles {sizes or "none"} (ceiling {ceiling})')
    if show == mod:
        for c in circles:
            print('  ', len(c), ' '.join(c))
    for c in circles:
        if len(c) > ceiling:
            bad.append(f'{mod}: a circle of {len(c)} files (ceiling {ceiling}): {" ".join(c)}')
    if mod in CEILINGS and (not sizes or sizes[0] < ceiling):
        print(f'  {mod}: its largest circle is now {sizes[0] if sizes else 0}: lower its ceiling')
if bad:
    print('\n'.join(bad))
    sys.exit(1)
print('ok: circles')
PY
