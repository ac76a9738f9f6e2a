#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The server on PostgreSQL (`store:` a postgresql:// URL): a job runs to its end, a burst of
# submissions is cut by kill -9 of the server, and the server restarted on the same URL
# finds every acknowledged submission, the ended job (read from the store through a reader:
# recent_ended_jobs 1) and its usage in a report; nothing is written to data_dir's SQLite
# file. A store URL's password never shows in the server's output. Needs the test
# PostgreSQL (fixture gpool_pg).
source "$(dirname "$0")/../e2e/lib.sh"
e2e_init
e2e_need psql
admin_url=$(cat "${GPOOL_TEST_PG_URL_FILE:?run through ctest: the fixture gpool_pg starts PostgreSQL (scripts/setup.sh installs it)}")
db=gp_e2e_$$
psql -q "$admin_url" -c "CREATE DATABASE $db" || fail "cannot create database $db"
trap 'psql -q "$admin_url" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1; e2e_cleanup' EXIT
store_url=${admin_url%/*}/$db

e2e_server "store: $store_url
recent_ended_jobs: 1"
e2e_agent n1 1xH100-80GB
export GPOOL_TOKEN=$ADMIN_TOKEN

ran=$("$GPOOL" submit -g 1 -n ran -- sleep 2)
wait_for 30 "job $ran to complete" job_is "$ran" completed
later=$("$GPOOL" submit -g 1 -n later -- true)
wait_for 30 "job $later to complete" job_is "$later" completed

burst() {
  local i out
  for i in $(seq 1 20); do
    out=$("$GPOOL" submit --hold -n "burst-$1-$i" -- true 2>/dev/null) && echo "$out" >>"$E2E_DIR/acked.$1"
  done
}
pids=()
for w in 1 2 3; do
  burst $w &
  pids+=($!)
done
wait_for 20 "the first acknowledged submission" sh -c "cat '$E2E_DIR'/acked.* 2>/dev/null | grep -q ."
sleep 0.3
kill -9 "$SERVER_PID"
wait "${pids[@]}"
acked=$(cat "$E2E_DIR"/acked.* | wc -l)
[ "$acked" -gt 0 ] || fail "no submission was acknowledged before the crash"

e2e_server
missing=0
for id in $(cat "$E2E_DIR"/acked.*); do
  job_json "$id" >/dev/null 2>&1 || { echo "lost acknowledged job $id" >&2; missing=$((missing + 1)); }
done
expect_eq 0 "$missing" "acknowledged jobs lost after kill -9 of the server ($acked acknowledged)"
expect_eq completed "$(job_field "$ran" .state)" "the ended job $ran, read from PostgreSQL"
listed=$("$GPOOL" jobs --all -o json 2>&1) || fail "listing all jobs: $listed"
expect_contains "$listed" "\"ran\"" "the job history from PostgreSQL"
report=$("$GPOOL" report usage --by user --from "$(date -u -d "-1 day" +%F)" -o csv 2>&1) || fail "report: $report"
expect_contains "$report" "alice" "a usage report from PostgreSQL's ledger"
[ ! -e "$E2E_DIR/server/gpool.db" ] || fail "the server wrote a SQLite store beside its PostgreSQL one"
rows=$(psql -qtA "$store_url" -c "SELECT count(*) FROM jobs")
[ "$rows" -ge $((acked + 2)) ] || fail "PostgreSQL holds $rows jobs, expected at least $((acked + 2))"

# A store that cannot be reached: the server says so without printing the password.
kill "$SERVER_PID"
sed -i "s|^store: .*|store: postgresql://gp:s3cret-pw@127.0.0.1:1/gpool?connect_timeout=2|" "$E2E_DIR/server.yaml"
out=$("$GPOOL" server --config "$E2E_DIR/server.yaml" 2>&1) && fail "the server started without its store"
expect_contains "$out" "127.0.0.1:1" "the unreachable store named"
case "$out" in *s3cret-pw*) fail "the store's password was printed: $out" ;; esac
echo "ok: $acked acknowledged submissions and the history survived kill -9 on PostgreSQL"
