#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The layering test can fail: on a copy of the tree with one deliberate upward include (the
# core reaching the server), one impure include in the core, one internal name with
# another module's prefix, and two upward includes between the server's parts (the state
# reaching the autoscaler, the ledger reaching the server's face), layers_test.sh must
# fail and name all five.
set -u
root=${GP_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
tmp=$(mktemp -d /tmp/gpool-layers.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cp -r "$root/src" "$root/CMakeLists.txt" "$tmp/"
printf '#include "server/server.h"\n#include <stdio.h>\nstatic int gp__srv_borrowed;\n' >>"$tmp/src/core/plan.c"
printf '#include "server/elastic/autoscale.h"\n' >>"$tmp/src/server/state/lookup.c"
printf '#include "server/server.h"\n' >>"$tmp/src/server/accounting/ledger.c"
out=$(GP_LAYERS_ROOT=$tmp bash "$root/tests/tree/layers_test.sh" 2>&1) && { echo "layers_test passed an upward include"; exit 1; }
echo "$out" | grep -q 'src/core/plan.c:.*core may not include server/server.h' || { echo "not named: $out"; exit 1; }
echo "$out" | grep -q 'src/core/plan.c:.*the core is pure; no <stdio.h>' || { echo "not named: $out"; exit 1; }
echo "$out" | grep -q 'src/core/plan.c:.*internal name gp__srv_borrowed lacks the core prefix' || { echo "not named: $out"; exit 1; }
echo "$out" | grep -q 'src/server/state/lookup.c:.*the state part of server may not include server/elastic/autoscale.h' || { echo "not named: $out"; exit 1; }
echo "$out" | grep -q 'src/server/accounting/ledger.c:.*the accounting part may not include server/server.h' || { echo "not named: $out"; exit 1; }
echo "ok: upward includes (between modules and between a module's parts), an impure one and a foreign internal name are refused and named"
