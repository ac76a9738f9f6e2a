#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Failover time (issue 21's figure, target p99 <= 10 s): the chaos run of
# tests/e2e/failover_chaos.sh with N rounds of a random fault on the leader (kill -9,
# SIGSTOP past its lease, its database sessions cut, PostgreSQL restarted) under a stream
# of submissions. The time of a round runs from the fault to the first submission
# acknowledged through the list of servers (so through the new leader, or the old one
# once its database is back). Prints p50, p99 and max per fault, then the acknowledged
# submissions lost and the jobs started twice over the whole run (both must be 0).
#
#   bench/failover.sh [N] [BUILD_DIR]   (default 100, build/rel; any build with gpool)
#   env: CHAOS_LEASE_MS=10000 CHAOS_RENEW_MS=2000 (the defaults of a real deployment),
#        CHAOS_TSV=FILE keeps each round's fault and time there as it goes,
#        BENCH_FAULTS="kill stop" takes those faults in turn instead of a random one
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
N=${1:-100}
BUILD=$(cd "${2:-$ROOT/build/rel}" 2>/dev/null && pwd) || BUILD=${2:-$ROOT/build/rel}
[ -x "$BUILD/gpool" ] || { echo "build first: cmake -S . -B build/rel -DCMAKE_BUILD_TYPE=Release && cmake --build build/rel --target gpool_bin" >&2; exit 2; }
export GPOOL_BIN=$BUILD/gpool GP_SOURCE_DIR=$ROOT
export CHAOS_LEASE_MS=${CHAOS_LEASE_MS:-10000} CHAOS_RENEW_MS=${CHAOS_RENEW_MS:-2000}
source "$ROOT/tests/e2e/lib.sh"
source "$ROOT/tests/e2e/failover_chaos.sh"
e2e_need psql
e2e_init
chaos_setup
read -ra CHAOS_FAULTS <<<"${BENCH_FAULTS:-}"
[ ${#CHAOS_FAULTS[@]} -gt 0 ] || CHAOS_FAULTS=("")
chaos_rounds "$N"
chaos_check
echo "lease ${CHAOS_LEASE_MS} ms, renew ${CHAOS_RENEW_MS} ms, $N rounds"
for fault in kill stop sessions pg; do
  awk -F'\t' -v f="$fault" '$1 == f { print $2 }' "$CHAOS_TSV" | sort -n >"$E2E_DIR/t.$fault"
  n=$(grep -c . "$E2E_DIR/t.$fault")
  [ "$n" -gt 0 ] || continue
  p() { sed -n "$(( ($1 * n + 99) / 100 ))p" "$E2E_DIR/t.$fault"; }
  printf '%-9s n=%-3d p50 %6.2f s  p99 %6.2f s  max %6.2f s\n' "$fault" "$n" "$(p 50)" "$(p 99)" "$(tail -n1 "$E2E_DIR/t.$fault")"
done
echo "acknowledged submissions: $(sort -u "$E2E_DIR/acked" | grep -c .), lost: $(cat "$E2E_DIR/lost"), jobs started twice: $(cat "$E2E_DIR/doubles")"
