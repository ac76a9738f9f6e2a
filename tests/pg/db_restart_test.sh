#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The server rides through a PostgreSQL restart: PostgreSQL of its own (tests/pg/pg_start.sh,
# so the shared one is not disturbed), jobs submitted before, PostgreSQL restarted (fast
# shutdown: every session ended), then: every submission is either acknowledged and kept or
# refused with 503 (never acknowledged and lost), /healthz is 200 again within seconds, and
# a job submitted after runs. Then PostgreSQL stopped for good: the server answers 503 naming
# the store, and recovers once it is started again.
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../e2e/lib.sh"
e2e_init
chmod 755 "$E2E_DIR" # PostgreSQL runs as its own user when this runs as root
pg_dir=$E2E_DIR/pg
trap 'bash "$here/pg_stop.sh" "$pg_dir"; e2e_cleanup' EXIT
url=$(bash "$here/pg_start.sh" "$pg_dir") || fail "cannot start PostgreSQL (scripts/setup.sh installs it)"
pg_ctl() { bash "$here/pg_ctl.sh" "$pg_dir" "$@" >/dev/null; }

e2e_server "store: $url"
e2e_agent n1 1xH100-80GB
export GPOOL_TOKEN=$ADMIN_TOKEN
before=$("$GPOOL" submit --hold -n before -- true)

# Submissions go on while PostgreSQL restarts; each is acknowledged or refused.
submitter() {
  local i out
  for i in $(seq 1 15); do
    if out=$("$GPOOL" submit --hold -n "during-$i" -- true 2>&1); then
      echo "$out" >>"$E2E_DIR/acked"
    else
      echo "$out" >>"$E2E_DIR/refused"
    fi
    sleep 0.05
  done
}
submitter &
sub=$!
sleep 0.3
pg_ctl restart -m fast
wait "$sub"
wait_for 20 "/healthz to answer 200 after the restart" curl -fsS "$SERVER_URL/healthz"
for id in $before $(cat "$E2E_DIR/acked" 2>/dev/null); do
  job_json "$id" >/dev/null || fail "acknowledged job $id lost across the PostgreSQL restart"
done
if [ -s "$E2E_DIR/refused" ]; then
  grep -qv "503\|unavailable\|store" "$E2E_DIR/refused" &&
    fail "a submission failed otherwise than with 503: $(head -n 3 "$E2E_DIR/refused")"
fi
after=$("$GPOOL" submit -g 1 -n after -- true)
wait_for 30 "job $after to complete after the restart" job_is "$after" completed

# PostgreSQL gone: writes are refused naming the store; back: the server recovers.
pg_ctl stop -m fast
out=$("$GPOOL" submit --hold -n gone -- true 2>&1) && fail "a submission was acknowledged with PostgreSQL stopped: $out"
expect_contains "$out" "connection lost" "the refusal names the cause"
pg_ctl start
wait_for 30 "/healthz to answer 200 once PostgreSQL is back" curl -fsS "$SERVER_URL/healthz"
back=$("$GPOOL" submit --hold -n back -- true) || fail "no submission after PostgreSQL came back"
job_json "$back" >/dev/null || fail "job $back missing"
echo "ok: $(wc -l <"$E2E_DIR/acked" 2>/dev/null || echo 0) acknowledged, $(wc -l <"$E2E_DIR/refused" 2>/dev/null || echo 0) refused during the restart, none lost"
