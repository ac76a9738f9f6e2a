#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the libFuzzer harnesses of tests/fuzz (one per parser) with clang, ASan and UBSan
# in their own build directory, and runs each for SECONDS (default 300), starting from its
# seed corpus in tests/fuzz/corpus/<harness>/. The corpus each run grows and any crashing
# input are kept outside the tree, under $GPOOL_FUZZ_WORK (default ~/.cache/gpool-fuzz):
# corpus/<harness>/ and crashes/<harness>-crash-<sha1>. Prints one line per harness (execs
# run, corpus size, crashes) and exits non-zero when any harness crashed, leaked or hung.
#
#   scripts/fuzz.sh [SECONDS] [HARNESS...]        e.g. scripts/fuzz.sh 3600 job_body_fuzz
#   replay one input:  build/fuzz/fuzz/job_body_fuzz FILE
#
# GPOOL_FUZZ_BUILD (default build/fuzz) is the build directory; GPOOL_FUZZ_JOBS (default 1)
# how many harnesses run at once; GPOOL_FUZZ_SEED (default: a new one each run) fixes
# libFuzzer's random seed, so a run mutates the same inputs in the same order as the last.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH=${1:-300}
shift || true
BUILD=${GPOOL_FUZZ_BUILD:-build/fuzz}
WORK=${GPOOL_FUZZ_WORK:-${XDG_CACHE_HOME:-$HOME/.cache}/gpool-fuzz}
JOBS=${GPOOL_FUZZ_JOBS:-1}
SEED_ARG=()
[ -n "${GPOOL_FUZZ_SEED:-}" ] && SEED_ARG=(-seed="$GPOOL_FUZZ_SEED")

case "$SECONDS_EACH" in ''|*[!0-9]*) echo "fuzz: SECONDS must be a whole number, got '$SECONDS_EACH'" >&2; exit 2 ;; esac
command -v clang >/dev/null || { echo "fuzz: clang is not installed (scripts/setup.sh installs it)" >&2; exit 2; }
rt="$(clang -print-resource-dir)/lib/linux/libclang_rt.fuzzer-$(uname -m).a"
[ -f "$rt" ] || { echo "fuzz: libFuzzer's runtime ($rt) is missing (scripts/setup.sh installs it)" >&2; exit 2; }

CC=clang cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Debug -DGPOOL_FUZZ=ON >/dev/null
cmake --build "$BUILD" --target gpool_fuzz -j"${GPOOL_BUILD_JOBS:-$(nproc)}" >/dev/null

if [ $# -eq 0 ]; then
  set -- $(cd tests/fuzz && ls *_fuzz.c | sed 's/\.c$//')
fi
mkdir -p "$WORK/crashes" "$WORK/logs"

# run_one HARNESS: fuzzes it for SECONDS_EACH; its log keeps libFuzzer's final stats.
run_one() {
  local h=$1 seeds=tests/fuzz/corpus/${1%_fuzz}
  [ -x "$BUILD/fuzz/$h" ] || { echo "fuzz: no harness $h in $BUILD/fuzz" >"$WORK/logs/$h.log"; return 1; }
  mkdir -p "$WORK/corpus/$h"
  # detect_leaks: a leak is a finding like a crash. -timeout: an input that takes this long
  # is a hang. The first directory receives the inputs that grow coverage; the seeds are
  # only read.
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "$BUILD/fuzz/$h" -max_total_time="$SECONDS_EACH" "${SEED_ARG[@]}" -timeout=25 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$WORK/crashes/$h-" \
    "$WORK/corpus/$h" "$seeds" >"$WORK/logs/$h.log" 2>&1
}

pids=()
names=()
status=0
for h in "$@"; do
  run_one "$h" &
  pids+=($!)
  names+=("$h")
  if [ ${#pids[@]} -ge "$JOBS" ]; then
    wait "${pids[0]}" || true
    pids=("${pids[@]:1}")
  fi
done
wait || true

printf '%-22s %12s %8s  %s\n' harness execs corpus result
for h in "${names[@]}"; do
  log=$WORK/logs/$h.log
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n1)
  corpus=$(ls "$WORK/corpus/$h" 2>/dev/null | wc -l)
  crashes=$(ls "$WORK/crashes" | grep -c "^$h-" || true)
  if grep -qE '^==[0-9]+== ?ERROR|^SUMMARY: |runtime error|contract broken|ALARM: working on the last Unit' "$log" ||
     ! grep -q '^Done [0-9]* runs' "$log"; then
    result="FAILED ($crashes inputs kept in $WORK/crashes; log $log)"
    status=1
  else
    result=ok
  fi
  printf '%-22s %12s %8s  %s\n' "$h" "${execs:-?}" "$corpus" "$result"
done
if [ $status -ne 0 ]; then
  for h in "${names[@]}"; do
    log=$WORK/logs/$h.log
    grep -qE '^==[0-9]+== ?ERROR|^SUMMARY: |runtime error|contract broken' "$log" || continue
    echo "--- $h: $log" >&2
    grep -m1 -A40 -E '^==[0-9]+== ?ERROR|runtime error|contract broken' "$log" >&2
  done
fi
exit $status
