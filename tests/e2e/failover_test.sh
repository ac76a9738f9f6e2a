#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Failover under chaos (tests/e2e/failover_chaos.sh): three servers on one PostgreSQL, two
# agents, a stream of submissions; each fault once on the leader (kill -9, SIGSTOP past
# its lease, its database sessions cut, PostgreSQL restarted), then one at random. Every
# acknowledged submission survives, no job starts twice, no epoch has two leaders, every
# job ends, and a write goes through within lease + a few renewals of each fault.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/failover_chaos.sh"
e2e_need psql
e2e_init
chaos_setup
CHAOS_FAULTS=(kill stop sessions pg "")
chaos_rounds 5
chaos_check
# Failover time: kill -9 and SIGSTOP wait for the lease (3 s) to expire, then the new
# leader loads the state; a restarted PostgreSQL first has to recover.
while IFS=$'\t' read -r fault took; do
  limit=$(echo "$CHAOS_LEASE_MS / 1000 + 4" | bc)
  [ "$fault" = pg ] && limit=$(echo "$CHAOS_LEASE_MS / 1000 + 12" | bc)
  [ "$(echo "$took < $limit" | bc)" = 1 ] || fail "a write took ${took}s after fault $fault (limit ${limit}s)"
done <"$CHAOS_TSV"
echo "ok: failover ($(paste -sd' ' "$CHAOS_TSV" | tr '\t' '='))"
