#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A session silent both ways for session_idle_timeout_s is closed by the server with a
# sentence the CLI prints, the command it ran is ended, the job runs on, and the close is
# counted in /metrics; a session that keeps talking is not closed.
source "$(dirname "$0")/lib.sh"
e2e_init
e2e_server "session_idle_timeout_s: 2"
e2e_agent n1 1xH100-80GB
export GPOOL_TOKEN=$BOB_TOKEN
id=$("$GPOOL" submit -g 1 -- sh -c "$(gate_wait)")
wait_for 20 "the job to run" job_launched "$id"

start=$SECONDS
out=$(timeout 30 "$GPOOL" exec "$id" -- sh -c 'sleep 20; echo never' 2>&1)
expect_eq 1 "$?" "an idle-closed session exits 1"
[ $((SECONDS - start)) -lt 15 ] || fail "the idle session was not closed at its timeout"
expect_contains "$out" "closed after 2 s without input or output" "the CLI says why"
case "$out" in *never*) fail "the idle session's command went on" ;; esac
wait_for 10 "the idle session's command to end" sh -c "! pgrep -f 'sleep 2[0]; echo never' >/dev/null"
curl -fsS "$SERVER_URL/metrics" | grep -q '^gpool_sessions_idle_closed_total 1' || fail "the idle close is counted"
# Output every second keeps a session open past the timeout.
out=$(timeout 30 "$GPOOL" exec "$id" -- sh -c 'for i in 1 2 3 4 5; do echo t$i; sleep 1; done')
expect_eq 0 "$?" "a talking session is not idle"
expect_eq t5 "$(echo "$out" | tail -n1)" "the talking session ran to its end"
job_is "$id" running || fail "the job runs on"
open_gate
echo "ok: idle sessions closed"
