#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# srun step latency (issue 31's figure, target p50 < 300 ms on a warm node): a real server
# and two sim agents with addresses of their own (127.0.0.2, 127.0.0.3), one job of 2 nodes
# x 4 tasks holding them; its task 0 runs N times `srun sh -c 'date +%s%N >>...'` (8 step
# tasks each). Two figures per step, both from the moment srun is called (the job's clock,
# the same host): "running", to the last of its 8 tasks writing its start time, and
# "returned", to srun's exit (the step's end known to the server, the output relayed).
# The first WARM steps are left out (a cold page cache, the first fork of each agent).
# Prints p50, p99 and max of each in ms.
#
#   bench/srun_latency.sh [BUILD_DIR]   (default build/rel; any build with a gpool binary)
#   env: N=60 WARM=5
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "${1:-$ROOT/build/rel}" 2>/dev/null && pwd) || BUILD=${1:-$ROOT/build/rel}
N=${N:-60} WARM=${WARM:-5}
[ -x "$BUILD/gpool" ] || { echo "build first: cmake -S . -B build/rel -DCMAKE_BUILD_TYPE=Release && cmake --build build/rel --target gpool_bin" >&2; exit 2; }
export GPOOL_BIN=$BUILD/gpool
source "$ROOT/tests/e2e/lib.sh"
e2e_need python3
e2e_init
# Steps keep two agents busy: a loaded machine must not take a slow heartbeat for a lost node.
e2e_write_config
sed -i 's/^node_timeout_s: .*/node_timeout_s: 15/' "$E2E_DIR/server.yaml"
e2e_server
e2e_agent n2 4xH100-80GB --listen 127.0.0.2:0 --labels pool=bench
e2e_agent n3 4xH100-80GB --listen 127.0.0.3:0 --labels pool=bench
export GPOOL_TOKEN=$ADMIN_TOKEN
cat >loop.sh <<'SH'
cd "$D"
if [ "$SLURM_PROCID" != 0 ]; then
  i=0; while [ ! -e done ] && [ $i -lt 6000 ]; do sleep 0.1; i=$((i + 1)); done
  exit 0
fi
i=0
while [ $i -lt "$N" ]; do
  s=$(date +%s%N)
  srun sh -c 'date +%s%N >>"$D/run.$SLURM_STEP_ID"' || echo "step $i failed" >>errors
  e=$(date +%s%N)
  echo "$i $s $e" >>calls
  i=$((i + 1))
done
touch done
SH
job=$("$GPOOL" submit -N 2 --ntasks-per-node 4 -g 1 --node-selector pool=bench -e D="$E2E_DIR" -e N="$N" \
  -n srun-bench -- sh "$E2E_DIR/loop.sh")
wait_for $((60 + N)) "the bench job to end" sh -c "'$GPOOL' show $job -o json | jq -e '.state | test(\"completed|failed\")'"
[ "$(job_field "$job" .state)" = completed ] || fail "the bench job failed: $("$GPOOL" logs "$job" 2>&1 | tail -5)"
[ -s errors ] && fail "steps failed: $(cat errors)"
python3 - "$E2E_DIR" "$WARM" <<'PY'
import os, sys
d, warm = sys.argv[1], int(sys.argv[2])
running, returned = [], []
for line in open(os.path.join(d, "calls")):
    i, s, e = (int(x) for x in line.split())
    starts = [int(x) for x in open(os.path.join(d, f"run.{i}")).read().split()]
    assert len(starts) == 8, f"step {i} ran {len(starts)} tasks"
    if i < warm:
        continue
    running.append((max(starts) - s) / 1e6)
    returned.append((e - s) / 1e6)
def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))]
for name, v in (("all 8 tasks running", running), ("srun returned", returned)):
    print(f"{name:20s} n={len(v)} p50={pct(v, 50):.1f} ms p99={pct(v, 99):.1f} ms max={max(v):.1f} ms")
PY
echo "PASS"
