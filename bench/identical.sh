#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Do two builds decide the same? Runs both on the same inputs and compares the outputs
# byte for byte: `gpool plan -o json` on every example and every core scenario, the core
# benchmark's plans digest, `gpool sim frag` on the four openb traces, and deterministic
# `gpool sim compare` replays of the whole Philly trace (four policies, at the trace's own
# load and at 4x) and of the openb default pods (wall-time fields masked). Prints each input's verdict and exits 1
# on any difference. A refactoring that claims "nothing a user sees changes" runs this
# against a build of the tree before it.
#
#   bench/identical.sh OLD_BUILD_DIR NEW_BUILD_DIR     (each holding gpool and bench_sched_bench)
#   env: QUICK=1 leaves out the whole-Philly replays and uses a smaller core benchmark
set -uo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 2 ] && [ -x "$1/gpool" ] && [ -x "$2/gpool" ] || { sed -n '9,10p' "$0"; exit 2; }
OLD=$1 NEW=$2
out=$(mktemp -d /tmp/gpool-identical.XXXXXX)
trap 'rm -rf "$out"' EXIT
fails=0 n=0
same() {  # same NAME CMD...: run CMD with each build's gpool as $G (and bench dir as $B)
  local name=$1; shift
  local a b
  a=$(G=$OLD/gpool B=$OLD bash -c "$*" 2>&1; echo "exit $?")
  b=$(G=$NEW/gpool B=$NEW bash -c "$*" 2>&1; echo "exit $?")
  n=$((n + 1))
  if [ "$a" == "$b" ]; then echo "same      $name"; else
    fails=$((fails + 1)); echo "DIFFERENT $name"
    diff <(printf '%s\n' "$a") <(printf '%s\n' "$b") | head -n 10
  fi
}
for f in examples/*.yaml tests/core/scenarios/*.yaml; do
  same "plan $f" '"$G" plan '"$f"' -o json'
done
if [ -n "${QUICK:-}" ]; then sizes="1000 10000 20"; else sizes="10000 100000 30"; fi
same "core benchmark digest ($sizes)" '"$B"/bench_sched_bench '"$sizes"' | grep "plans digest"'
for t in default gpushare100 multigpu50 gpuspec33; do
  same "sim frag openb $t" '"$G" sim frag --nodes traces/openb/openb_node_list_gpu_node.csv --pods traces/openb/openb_pod_list_'$t'.csv --seeds 42-44 -o json | sed -E "s/\"seconds_per_run\": ?[0-9.e-]+/\"seconds_per_run\":T/"'
done
same "sim replay openb default" '"$G" sim replay --trace traces/openb/openb_pod_list_default.csv --fleet traces/openb/openb_node_list_gpu_node.csv --deterministic -o json'
if [ -z "${QUICK:-}" ]; then
  for s in 1 4; do
    same "sim compare philly x$s" '"$G" sim compare --trace traces/philly/philly.csv --queues-from traces/philly/philly_vc_nodes.csv --policies fifo,backfill,gpool,sjf --time-scale '$s' --deterministic -o json'
  done
fi
echo "$((n - fails)) same, $fails different"
[ "$fails" -eq 0 ]
