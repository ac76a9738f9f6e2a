#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `gpool up` whose supervisor dies: after a `kill -9` of `gpool up` its server and agent stop
# by themselves; a server of the pool that still runs without its `gpool up` makes a new
# `gpool up` refuse, and `gpool up --stop` finds it through its pid file and stops it; a pid
# file naming a process that is not the pool's is never acted on.
source "$(dirname "$0")/lib.sh"
e2e_init
D=$E2E_DIR/pool

# gone PID: no such process, or only its zombie (nobody may reap it in a container).
gone() { [ ! -e "/proc/$1" ] || [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" = Z ]; }
both_gone() { gone "$1" && gone "$2"; }
up_pool() {
  "$GPOOL" up --detach --data "$D" --port 0 --sim 1xH100-80GB --name box >"$E2E_DIR/up.out" 2>&1 ||
    { cat "$E2E_DIR/up.out" "$D"/*.log >&2; fail "gpool up --detach failed"; }
  UP=$(cut -d' ' -f1 "$D/up.pid")
  SERVER=$(pgrep -P "$UP" -f "gpool server") || fail "gpool up has no server child"
  AGENT=$(pgrep -P "$UP" -f "gpool agent") || fail "gpool up has no agent child"
  E2E_PIDS+=("$UP" "$SERVER" "$AGENT")
}

# 1. kill -9 of gpool up: its children notice and stop.
up_pool
kill -9 "$UP"
wait_for 30 "the server and agent to stop after their gpool up was killed" both_gone "$SERVER" "$AGENT"

# 2. A server left running without its gpool up (one started by a gpool without this
# safeguard, or one that hangs while stopping): a new gpool up refuses, and --stop finds it
# through its pid file and stops it.
rm -f "$D/server/server.url"
"$GPOOL" server --config "$D/server.yaml" >>"$E2E_DIR/orphan.log" 2>&1 &
ORPHAN=$!
E2E_PIDS+=("$ORPHAN")
wait_for 20 "the orphaned server to listen" test -s "$D/server/server.url"
echo "$ORPHAN $(awk '{print $22}' "/proc/$ORPHAN/stat")" >"$D/server.pid"
out=$("$GPOOL" up --detach --data "$D" --port 0 --sim 1xH100-80GB 2>&1) &&
  fail "gpool up must refuse while the old pool's server runs"
expect_contains "$out" "gpool up --stop" "the refusal says how to stop the old pool"
out=$("$GPOOL" up --stop --data "$D" 2>&1) || fail "gpool up --stop must stop the orphaned server: $out"
expect_contains "$out" "has stopped" "gpool up --stop reports the pool stopped"
gone "$ORPHAN" || fail "the orphaned server still runs after gpool up --stop"
out=$("$GPOOL" up --stop --data "$D" 2>&1) && fail "a second --stop has nothing to stop"
expect_contains "$out" "no pool is running" "a second --stop says so"

# 3. A pid file whose process is not the pool's (its number reused) is left alone.
sleep 60 &
stranger=$!
E2E_PIDS+=("$stranger")
echo "$stranger" >"$D/up.pid"
echo "$stranger 1" >"$D/server.pid"
out=$("$GPOOL" up --stop --data "$D" 2>&1) && fail "--stop must not take a stranger for the pool"
expect_contains "$out" "no pool is running" "--stop ignores a pid that is not the pool's"
kill -0 "$stranger" 2>/dev/null || fail "--stop signalled a process that is not the pool's"
echo "ok: gpool up leaves nothing behind"
