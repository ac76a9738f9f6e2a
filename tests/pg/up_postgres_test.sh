#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `gpool up --postgres URL` and docs/ha.md's "trying it on one machine": the pool's server
# runs on PostgreSQL under the lease and leads; a second server made from its server.yaml
# follows (its /v1/leader names the first), and `gpool up` gives its agent and client.json
# both servers, so that with the first frozen (SIGSTOP) the node heartbeats to the second
# once it leads and the CLI answers through it; `gpool up --stop` hands over, and a
# submission through the list of both servers is taken by the new leader. The URL is remembered for
# the next start. Needs the test PostgreSQL (fixture gpool_pg).
source "$(dirname "$0")/../e2e/lib.sh"
e2e_init
e2e_need psql
admin_url=$(cat "${GPOOL_TEST_PG_URL_FILE:?run through ctest: the fixture gpool_pg starts PostgreSQL (scripts/setup.sh installs it)}")
db=gp_up_$$
psql -q "$admin_url" -c "CREATE DATABASE $db" || fail "cannot create database $db"
D=$E2E_DIR/pool
trap '"$GPOOL" up --stop --data "$D" >/dev/null 2>&1; psql -q "$admin_url" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1; e2e_cleanup' EXIT
store_url=${admin_url%/*}/$db

"$GPOOL" up --detach --data "$D" --port 0 --sim 1xH100-80GB --name box --postgres "$store_url" >"$E2E_DIR/up.out" 2>&1 ||
  { cat "$E2E_DIR/up.out" "$D"/*.log >&2; fail "gpool up --postgres failed"; }
grep -q "^store: \"$store_url\"" "$D/server.yaml" || fail "server.yaml has no store: line"
grep -q "^ha: {}" "$D/server.yaml" || fail "server.yaml has no ha: block"
[ ! -e "$D/server/gpool.db" ] || fail "a SQLite file was written beside the PostgreSQL store"
grep -q "Web console: http://127.0.0.1:" "$E2E_DIR/up.out" || fail "gpool up does not say where the console is"
token=$(jq -r .token "$GPOOL_CONFIG_DIR/client.json")
url1=$(jq -r .server "$GPOOL_CONFIG_DIR/client.json")
leader_of() { curl -fsS "$1/v1/leader" -H "Authorization: Bearer $token" | jq -r "$2"; }
[ "$(leader_of "$url1" .role)" = leader ] || fail "the pool's server does not lead"

port2=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
url2=http://127.0.0.1:$port2
sed -e "s/^listen: .*/listen: 127.0.0.1:$port2/" -e "s#^data_dir: .*#data_dir: $E2E_DIR/server2#" \
  "$D/server.yaml" >"$E2E_DIR/server2.yaml"
e2e_spawn "$E2E_DIR/server2.log" "$GPOOL" server --config "$E2E_DIR/server2.yaml" >/dev/null
follows() { [ "$(leader_of "$url2" .role 2>/dev/null)" = follower ] && [ "$(leader_of "$url2" .leader)" = "$url1" ]; }
wait_for 20 "the second server to follow the first" follows

# gpool up learns the second server from the store: client.json and its agent get both.
agent_args() { tr '\0' ' ' <"/proc/$(awk '{print $1}' "$D/agent.pid")/cmdline" 2>/dev/null; }
knows_both() { jq -r .server "$GPOOL_CONFIG_DIR/client.json" | grep -q "$url2" && agent_args | grep -q "$url2"; }
wait_for 20 "gpool up to give client.json and its agent the second server" knows_both
node_up() { curl -fsS "$1/v1/nodes" -H "Authorization: Bearer $token" |
  jq -e '.nodes[] | select(.name == "box" and .state != "down" and .state != "lost")' >/dev/null; }
wait_for 20 "the node to be up again after the agent's restart" node_up "$url1"
job=$(env -u GPOOL_SERVER "$GPOOL" submit -g 1 -- sleep 300) || fail "no submission through client.json"
job_state() { curl -fsS "$1/v1/jobs/$job" -H "Authorization: Bearer $token" | jq -r .job.state; }
running() { [ "$(job_state "$url1")" = running ]; }
wait_for 20 "job $job to run" running
# The first server freezes: the second leads once the lease runs out, the agent heartbeats
# to it, and the CLI (client.json only) answers through it within seconds.
spid=$(awk '{print $1}' "$D/server.pid")
kill -STOP "$spid"
trap 'kill -CONT '"$spid"' 2>/dev/null; "$GPOOL" up --stop --data "$D" >/dev/null 2>&1; psql -q "$admin_url" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1; e2e_cleanup' EXIT
leads() { [ "$(leader_of "$url2" .role 2>/dev/null)" = leader ]; }
wait_for 25 "the second server to lead while the first is frozen" leads
took=$(date +%s)
heartbeats() { [ "$(curl -fsS "$url2/v1/nodes" -H "Authorization: Bearer $token" |
  jq -r '.nodes[] | select(.name == "box") | .last_heartbeat')" -ge "$took" ] 2>/dev/null; }
wait_for 15 "the agent to heartbeat to the second server" heartbeats
t0=$SECONDS
out=$(timeout 20 env -u GPOOL_SERVER "$GPOOL" jobs 2>&1) || fail "gpool jobs through client.json failed with the first server frozen: $out"
[ $((SECONDS - t0)) -le 8 ] || fail "gpool jobs took $((SECONDS - t0)) s with the first server frozen"
[ "$(job_state "$url2")" = running ] || fail "job $job is $(job_state "$url2") after the takeover, not running"
node_up "$url2" || fail "the node is not up on the second server"
kill -CONT "$spid"
env -u GPOOL_SERVER "$GPOOL" cancel "$job" >/dev/null || fail "cannot cancel job $job"

export GPOOL_SERVER=$url1,$url2 GPOOL_TOKEN=$token
first=$("$GPOOL" submit --hold -- true) || fail "a submission through the list failed"
"$GPOOL" up --stop --data "$D" >/dev/null 2>&1 || fail "gpool up --stop failed"
wait_for 10 "the second server to lead once the pool stopped" leads
second=$("$GPOOL" submit --hold -- true) || fail "no submission after the hand-over"
"$GPOOL" show "$first" >/dev/null || fail "job $first, acknowledged before the hand-over, is gone"
[ "$second" -gt "$first" ] || fail "job ids went backwards: $first then $second"

# The URL is remembered: a plain `gpool up` starts on PostgreSQL again.
grep -qx "$store_url" "$D/store.url" || fail "store.url does not hold the URL"
echo "ok: gpool up --postgres leads, a second server follows and takes over"
