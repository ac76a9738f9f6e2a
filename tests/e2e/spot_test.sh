#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Spot interruption notices end to end: a stand-in metadata service on 127.0.0.1
# (spot_metadata.py) answers each cloud's format. When a notice appears on a node's metadata,
# its job gets its checkpoint signal within 5 s, the node is drained, and the job is requeued
# ahead of later work and runs again elsewhere; a job that cannot be requeued fails with
# "node interrupted". A metadata service that errors, hangs, or answers garbage or a huge
# body interrupts nothing. An admin's POST /v1/nodes/{name}/interrupt takes the same path,
# and a repeated notice changes nothing.
source "$(dirname "$0")/lib.sh"
e2e_need python3
e2e_init
e2e_server
export GPOOL_TOKEN=$ADMIN_TOKEN
meta=$E2E_DIR/meta
mkdir -p "$meta"
e2e_spawn "$E2E_DIR/metadata.log" python3 "$GP_SOURCE_DIR/tests/e2e/spot_metadata.py" "$meta"
wait_for 10 "the metadata service to listen" test -s "$meta/port"
META_URL=http://127.0.0.1:$(cat "$meta/port")

# An agent watching the stand-in as PROVIDER's metadata service, polling every second.
spot_agent() {
  local name=$1 provider=$2 sim=$3
  shift 3
  printf 'spot: {provider: %s, url: "%s", interval: 1s}\n' "$provider" "$META_URL" >"$E2E_DIR/$name.yaml"
  chmod 600 "$E2E_DIR/$name.yaml"
  e2e_agent "$name" "$sim" --config "$E2E_DIR/$name.yaml" "$@"
}
now_ms() { date +%s%3N; }
# A job that notes its starts and, on USR1, its signal (with the time in ms) and exits 0;
# otherwise it runs until its gate file appears (60 s at most).
job_script() {
  local ev=$1 gate=$2
  {
    echo '#!/bin/sh'
    echo "echo \"start \$GPOOL_NODE\" >>'$ev'"
    echo "trap 'echo \"usr1 \$(date +%s%3N)\" >>\"$ev\"; exit 0' USR1"
    echo "i=0; while [ ! -e '$gate' ] && [ \$i -lt 600 ]; do sleep 0.1; i=\$((i + 1)); done"
  }
}
usr1_count() {
  local n
  n=$(grep -c '^usr1' "$1" 2>/dev/null)
  echo "${n:-0}"
}
has_usr1s() { [ "$(usr1_count "$1")" -ge "$2" ]; }
# notice_to_signal T0_MS EVENTS N: the ms from T0 to the job's Nth signal.
notice_to_signal() { echo $(($(grep '^usr1' "$2" | sed -n "${3}p" | cut -d' ' -f2) - $1)); }
node_reason() { "$GPOOL" nodes -o json | jq -r --arg n "$1" '.[] | select(.name == $n) | .reason // ""'; }
interrupted_event() { job_field "$1" '[.timeline[] | select(.event == "interrupted")] | last'; }
server_metrics() { curl -fsS "$SERVER_URL/metrics"; }
notices_sent() { grep -c 'spot interruption notice:' "$E2E_DIR/agent-$1.log"; }

# ---- AWS: the job is signalled, the node drained, the job requeued ahead of later work ----
spot_agent a aws 1xH100-80GB --capacity spot
evx=$E2E_DIR/ev-x
job_script "$evx" "$E2E_DIR/gate-x" >x.sh
x=$("$GPOOL" submit -g 1 --requeue --allow-spot --signal USR1 --grace 300s -n x x.sh)
wait_for 20 "x to start on a" grep -q "start a" "$evx"
e2e_agent b 1xH100-80GB
y=$("$GPOOL" submit -g 1 -n y -- sh -c "i=0; while [ ! -e '$E2E_DIR/gate-y' ] && [ \$i -lt 600 ]; do sleep 0.1; i=\$((i + 1)); done")
wait_for 20 "y to run on b" job_launched "$y"
z=$("$GPOOL" submit -g 1 -n z -- true) # submitted after x: it must wait behind x
grep -q 'X-aws-ec2-metadata-token=tok-123' "$meta/requests" || fail "the agent must read with an IMDSv2 token"

deadline=$(($(date +%s) + 120))
t0=$(now_ms)
echo "notice $deadline" >"$meta/aws"
wait_for 5 "x's checkpoint signal within 5 s of the AWS notice" has_usr1s "$evx" 1
echo "notice to checkpoint signal (aws): $(notice_to_signal "$t0" "$evx" 1) ms"
wait_for 10 "a to be drained" node_is a drain
expect_contains "$(node_reason a)" "spot interruption (deadline $(date -u -d "@$deadline" +%H:%M:%S)" "a's drain reason"
wait_for 10 "x to be requeued" job_is "$x" pending
ie=$(interrupted_event "$x")
expect_eq aws "$(jq -r .source <<<"$ie")" "the interruption's source"
expect_eq "$deadline" "$(jq -r .deadline <<<"$ie")" "the interruption's deadline"
[ "$(jq -r .grace_s <<<"$ie")" -le 115 ] || fail "x's grace must end before the deadline: $ie"
expect_contains "$(job_field "$x" '[.timeline[].event] | join(",")')" "interrupted,requeued" "x's timeline"
expect_contains "$(job_field "$x" '[.timeline[] | select(.event == "requeued")] | last | .reason')" \
  "node interrupted" "x's requeue reason"
expect_eq pending "$(job_field "$z" .state)" "z waits"

# The agent keeps reading the same notice; an admin posts it again: nothing changes.
sleep 1.5
expect_eq 200 "$(api_status POST /v1/nodes/a/interrupt "$ADMIN_TOKEN" -d '{"notice_s": 60}')" "a second notice"
expect_eq "true,0" "$(jq -r '"\(.already_interrupted),\(.jobs_stopped)"' "$E2E_DIR/body")" "a second notice"
expect_eq 1 "$(job_field "$x" '[.timeline[] | select(.event == "interrupted")] | length')" "one interruption"
expect_eq 1 "$(notices_sent a)" "a notice read again is not sent again"
expect_eq 403 "$(api_status POST /v1/nodes/a/interrupt "$BOB_TOKEN" -d '{}')" "a user may not interrupt"
expect_eq 400 "$(api_status POST /v1/nodes/a/interrupt "$ADMIN_TOKEN" -d '{"notice_s": "soon"}')" "notice_s"
expect_contains "$(cat "$E2E_DIR/body")" "notice_s" "the error names the field"
expect_eq 400 "$(api_status POST /v1/nodes/a/interrupt "$ADMIN_TOKEN" -d '{"notice_s": -5}')" "notice_s < 0"
expect_eq 404 "$(api_status POST /v1/nodes/nope/interrupt "$ADMIN_TOKEN" -d '{}')" "an unknown node"
expect_contains "$(server_metrics)" 'gpool_spot_interruptions_total{node_capacity="spot",source="aws"} 1' "metrics"
expect_contains "$(server_metrics)" 'gpool_spot_notice_to_stop_seconds_count 1' "metrics"

# b frees up: x, older than z, runs first, there.
touch "$E2E_DIR/gate-y"
wait_for 20 "x to run again on b" grep -q "start b" "$evx"
expect_eq pending "$(job_field "$z" .state)" "z still waits behind the requeued x"
touch "$E2E_DIR/gate-x"
wait_for 20 "x to complete" job_is "$x" completed
wait_for 20 "z to complete" job_is "$z" completed

# ---- a flapping metadata service interrupts nothing ----
echo 500 >"$meta/aws"
expect_eq 200 "$(api_status POST /v1/nodes/a/resume "$ADMIN_TOKEN" -d '{}')" "resume a"
expect_eq 200 "$(api_status POST /v1/nodes/b/drain "$ADMIN_TOKEN" -d '{}')" "drain b"
evw=$E2E_DIR/ev-w
job_script "$evw" "$E2E_DIR/gate-w" >w.sh
w=$("$GPOOL" submit -g 1 --requeue --allow-spot --signal USR1 -n w w.sh)
wait_for 20 "w to start on a" grep -q "start a" "$evw"
for m in 500 hang garbage huge; do
  echo "$m" >"$meta/aws"
  sleep 2.5
done
echo none >"$meta/aws"
expect_eq 0 "$(usr1_count "$evw")" "w must not be signalled for metadata errors"
expect_eq running "$(job_field "$w" .state)" "w keeps running"
node_is a up || fail "a must stay up through metadata errors: $(node_reason a)"
a_url=$("$GPOOL" nodes -o json | jq -r '.[] | select(.name == "a") | .agent_url')
errors=$(curl -fsS "$a_url/metrics" | awk '/^gpool_agent_spot_errors_total/ {print $2}')
[ "${errors:-0}" -ge 4 ] || fail "the agent must count its failed metadata reads (got '${errors:-}')"
expect_contains "$(cat "$E2E_DIR/agent-a.log")" "spot metadata read failed (not a notice)" "a's log"
touch "$E2E_DIR/gate-w"
wait_for 20 "w to complete" job_is "$w" completed

# ---- GCP, then Azure: the requeued job moves on, one that cannot be requeued fails ----
expect_eq 200 "$(api_status POST /v1/nodes/a/drain "$ADMIN_TOKEN" -d '{}')" "drain a"
spot_agent g gcp 1xH100-80GB
evv=$E2E_DIR/ev-v
job_script "$evv" "$E2E_DIR/gate-v" >v.sh
v=$("$GPOOL" submit -g 1 --requeue --signal USR1 --grace 60s -n v v.sh)
wait_for 20 "v to start on g" grep -q "start g" "$evv"
t0=$(now_ms)
echo notice >"$meta/gcp"
wait_for 5 "v's checkpoint signal within 5 s of the GCP notice" has_usr1s "$evv" 1
echo "notice to checkpoint signal (gcp): $(notice_to_signal "$t0" "$evv" 1) ms"
wait_for 10 "g to be drained" node_is g drain
wait_for 10 "v to be requeued" job_is "$v" pending
[ "$(jq -r .grace_s <<<"$(interrupted_event "$v")")" -le 25 ] || fail "v's grace must fit GCP's 30 s"
sleep 1.5 # GCP says TRUE without a time: a read later is still the same notice
expect_eq 1 "$(notices_sent g)" "g's notice read again is not sent again"

spot_agent r azure 2xH100-80GB
wait_for 20 "v to start again on r" grep -q "start r" "$evv"
evu=$E2E_DIR/ev-u
job_script "$evu" "$E2E_DIR/gate-u" >u.sh
u=$("$GPOOL" submit -g 1 --no-requeue --signal USR1 -n u u.sh)
wait_for 20 "u to start on r" grep -q "start r" "$evu"
t0=$(now_ms)
echo "notice $(($(date +%s) + 60))" >"$meta/azure"
wait_for 5 "v's checkpoint signal within 5 s of the Azure notice" has_usr1s "$evv" 2
wait_for 5 "u's checkpoint signal within 5 s of the Azure notice" has_usr1s "$evu" 1
echo "notice to checkpoint signal (azure): $(notice_to_signal "$t0" "$evv" 2) ms"
wait_for 10 "v to be requeued again" job_is "$v" pending
wait_for 10 "u to fail" job_is "$u" failed
expect_eq "node interrupted" "$(job_field "$u" .end_reason)" "u's end"
expect_contains "$(server_metrics)" 'gpool_spot_interruptions_total{node_capacity="on-demand",source="azure"} 1' "metrics"

# ---- an admin's notice takes the same path ----
expect_eq 200 "$(api_status POST /v1/nodes/b/resume "$ADMIN_TOKEN" -d '{}')" "resume b"
wait_for 20 "v to start again on b" grep -q "start b" "$evv"
t0=$(now_ms)
expect_eq 200 "$(api_status POST /v1/nodes/b/interrupt "$ADMIN_TOKEN" -d '{"notice_s": 30}')" "interrupt b"
expect_eq "false,1" "$(jq -r '"\(.already_interrupted),\(.jobs_stopped)"' "$E2E_DIR/body")" "interrupt b"
wait_for 5 "v's checkpoint signal within 5 s of the admin's notice" has_usr1s "$evv" 3
wait_for 10 "v to be requeued a third time" job_is "$v" pending
expect_eq admin "$(jq -r .source <<<"$(interrupted_event "$v")")" "the admin's source"
expect_contains "$(node_reason b)" "spot interruption" "b's drain reason"
echo "ok: spot"
