#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Inference services end to end, with a real HTTP server as the replica (svc_replica.py):
# a service's replicas reach ready and the endpoints list exactly the ready ones; a killed
# replica is replaced; a liveness failure restarts one; another user cannot change the
# service; the service and its revisions survive a server restart; a spec error names its
# field; delete drains and stops every replica; `gpool report --by service` shows its use.
source "$(dirname "$0")/lib.sh"
e2e_init
e2e_need python3
CAROL_TOKEN=car-$RANDOM$RANDOM
e2e_write_config
# The default queue grants the inference class (a non-preemptible class is the queue's to grant).
sed -i 's|^  - {name: default, users: \["\*"\]}|  - {name: default, users: ["*"], priority_classes: [inference, training, batch]}|' "$E2E_DIR/server.yaml"
sed -i "s|^tokens:|tokens:\n  - {token: \"$CAROL_TOKEN\", user: carol, role: user}|" "$E2E_DIR/server.yaml"
e2e_server
e2e_agent n1 4xH100-80GB
e2e_agent n2 4xH100-80GB
export GPOOL_TOKEN=$BOB_TOKEN
SRC=${GP_SOURCE_DIR:?}/tests/e2e/svc_replica.py
mkdir -p "$E2E_DIR/svc"

svc_json() { "$GPOOL" service show "$1" -o json; }
svc_field() { svc_json "$1" | jq -r "$2"; }
ready_count() { [ "$(svc_field "$1" .replicas.ready)" = "$2" ]; }
eps() { "$GPOOL" service endpoints "$1" --format json | jq -r '.endpoints[] | "\(.host):\(.port)"' | sort; }

cat >web.yaml <<YAML
name: web
command: [python3, "$SRC"]
env: {SVC_DIR: "$E2E_DIR/svc", SVC_VERSION: v1}
gpus: 1
replicas: {min: 1, max: 4, initial: 2}
probes:
  readiness: {path: /healthz, period_s: 1, failure_threshold: 2}
  liveness: {path: /healthz, period_s: 1, failure_threshold: 3}
rollout: {min_healthy_s: 1, progress_deadline_s: 20, drain_s: 1}
YAML
out=$("$GPOOL" service apply -f web.yaml) || fail "apply: $out"
expect_contains "$out" "revision 1" "apply names the revision"
wait_for 30 "two replicas of web to be ready" ready_count web 2
expect_eq inference "$(svc_field web .spec.priority)" "a service's replicas default to the inference class"
expect_eq default "$(svc_field web .spec.queue)" "the spec's queue is filled in"
expect_eq "n1 n2" "$(svc_json web | jq -r '[.replica_jobs[].node] | sort | join(" ")')" \
  "the replicas spread over both nodes (the pool bin-packs)"

# ---- the endpoints are exactly the ready replicas, each answering on its port ----
list=$(eps web)
expect_eq 2 "$(echo "$list" | grep -c .)" "two endpoints"
for ep in $list; do
  body=$(curl -fsS "http://$ep/") || fail "endpoint $ep does not answer"
  expect_contains "$body" "v1 job" "endpoint $ep serves the replica"
done
want=$(svc_json web | jq -r '.replica_jobs[] | select(.ready) | .port' | sort)
expect_eq "$want" "$(echo "$list" | sed 's/.*://' | sort)" "endpoints list the ready replicas' ports"
sd=$("$GPOOL" service endpoints web --format http_sd)
expect_eq 2 "$(echo "$sd" | jq '.[0].targets | length')" "http_sd lists both targets"
expect_eq web "$(echo "$sd" | jq -r '.[0].labels.service')" "http_sd labels the service"
ng=$("$GPOOL" service endpoints web --format nginx)
expect_eq 2 "$(echo "$ng" | grep -c '    server ')" "the nginx upstream has both servers"
job1=$(svc_json web | jq -r '.replica_jobs[0].job')
expect_eq web "$(job_field "$job1" .service)" "a replica job names its service"

# ---- another user cannot change it; an admin can read it ----
st=$(api_status PUT /v1/services/web "$CAROL_TOKEN" -d '{"command":["true"]}')
expect_eq 403 "$st" "another user's apply"
st=$(api_status POST /v1/services/web/scale "$CAROL_TOKEN" -d '{"replicas":1}')
expect_eq 403 "$st" "another user's scale"
st=$(api_status DELETE /v1/services/web "$CAROL_TOKEN")
expect_eq 403 "$st" "another user's delete"
expect_eq '"(hidden)"' "$(GPOOL_TOKEN=$CAROL_TOKEN "$GPOOL" service show web -o json | jq -c .spec.command)" \
  "another user does not read the command"
as_alice "$GPOOL" service show web >/dev/null || fail "an admin reads another user's service"

# ---- a killed replica is replaced ----
victim=$(svc_json web | jq -r '.replica_jobs[0].job')
kill -9 "$(cat "$E2E_DIR/svc/started.$victim")" || fail "kill replica $victim"
wait_for 20 "replica $victim to end" sh -c "[ \"\$(GPOOL_TOKEN=$ADMIN_TOKEN '$GPOOL' show $victim -o json | jq -r .state)\" = failed ]"
wait_for 30 "a replacement to be ready" sh -c "[ \"\$('$GPOOL' service show web -o json | jq '[.replica_jobs[] | select(.ready and .job != \"$victim\")] | length')\" = 2 ]"
expect_eq 2 "$(eps web | grep -c .)" "two endpoints again after the replacement"

# ---- a liveness failure restarts one; an unready replica leaves the endpoints first ----
sick=$(svc_json web | jq -r '.replica_jobs[0].job')
sick_port=$(svc_json web | jq -r '.replica_jobs[0].port')
touch "$E2E_DIR/svc/unhealthy.$sick"
wait_for 10 "replica $sick to leave the endpoints" sh -c "! '$GPOOL' service endpoints web | grep -q '\"port\": $sick_port,'"
wait_for 20 "replica $sick to be stopped by its liveness probe" sh -c "[ \"\$(GPOOL_TOKEN=$ADMIN_TOKEN '$GPOOL' show $sick -o json | jq -r .state)\" != running ]"
wait_for 20 "replica $sick to end" sh -c "GPOOL_TOKEN=$ADMIN_TOKEN '$GPOOL' show $sick -o json | jq -e '.state == \"failed\"'"
expect_contains "$(job_field "$sick" .end_reason)" "liveness" "the replica's end names its liveness probe"
wait_for 30 "two replicas ready after the liveness restart" ready_count web 2
expect_eq 2 "$(svc_field web .replicas.total)" "no replica too many"

# ---- a replica that keeps failing is replaced with a doubling backoff ----
printf 'name: crash\ncommand: [sh, -c, "exit 3"]\nreplicas: 1\n' >crash.yaml
"$GPOOL" service apply -f crash.yaml >/dev/null || fail "apply crash"
crash_jobs() {
  curl -fsS -H "Authorization: Bearer $ADMIN_TOKEN" "$SERVER_URL/v1/jobs?all=1&limit=1000" |
    jq -c '[.jobs[] | select(.service == "crash")] | sort_by(.id | tonumber)'
}
crash_made() { [ "$(crash_jobs | jq length)" -ge "$1" ]; }
wait_for 40 "four crash replicas made" crash_made 4
gaps=$(crash_jobs | jq -c '[.[].submitted_at] | [range(1; length) as $i | .[$i] - .[$i - 1]]')
# Ends after 1, 2 and 4 s of backoff (whole seconds, and each replica's own run between).
[ "$(echo "$gaps" | jq '.[2] >= 4 and .[2] > .[0]')" = true ] || fail "the backoff does not grow: gaps $gaps"
expect_contains "$(svc_field crash .rollout.message)" "backoff" "the service says it backs off"
"$GPOOL" service delete crash >/dev/null || fail "delete crash"

# ---- scale up and down; the endpoints follow ----
"$GPOOL" service scale web 3 >/dev/null || fail "scale to 3"
wait_for 30 "three ready" ready_count web 3
expect_eq 3 "$(eps web | grep -c .)" "three endpoints"
st=$(api_status POST /v1/services/web/scale "$BOB_TOKEN" -d '{"replicas":9}')
expect_eq 400 "$st" "scale beyond max"
expect_eq replicas "$(jq -r .error.field "$E2E_DIR/body")" "the error names replicas"
"$GPOOL" service scale web 1 >/dev/null || fail "scale to 1"
wait_for 20 "one ready" ready_count web 1
wait_for 20 "one replica left" sh -c "[ \"\$('$GPOOL' service show web -o json | jq .replicas.total)\" = 1 ]"

# ---- spec errors name their field ----
st=$(api_status PUT /v1/services/bad "$BOB_TOKEN" -d '{"command":["x"],"replicas":{"min":3,"max":2}}')
expect_eq 400 "$st" "min above max"
expect_eq replicas.min "$(jq -r .error.field "$E2E_DIR/body")" "the error names replicas.min"
st=$(api_status PUT /v1/services/bad "$BOB_TOKEN" -d '{"command":["x"],"probes":{"readiness":{"path":"no slash"}}}')
expect_eq probes.readiness.path "$(jq -r .error.field "$E2E_DIR/body")" "a bad probe path"
st=$(api_status PUT /v1/services/bad "$BOB_TOKEN" -d '{"command":["x"],"colour":"red"}')
expect_eq colour "$(jq -r .error.field "$E2E_DIR/body")" "an unknown field"
st=$(api_status PUT /v1/services/bad "$BOB_TOKEN" -d '{"command":["x"],"gpus":"two"}')
expect_eq gpus "$(jq -r .error.field "$E2E_DIR/body")" "a bad request field"
st=$(api_status PUT /v1/services/Bad_Name "$BOB_TOKEN" -d '{"command":["x"]}')
expect_eq 400 "$st" "a bad service name"
printf 'name: bad\ncommand: [x]\nautoscale: {metric: m, target: nan}\n' >bad.yaml
out=$("$GPOOL" service apply -f bad.yaml 2>&1) && fail "a target that is no number was taken: $out"
expect_contains "$out" "autoscale.target" "the CLI's error names the field"
printf 'name: bad\ncommand: [x\n' >bad2.yaml
out=$("$GPOOL" service apply -f bad2.yaml 2>&1) && fail "broken YAML was taken: $out"
expect_contains "$out" "bad2.yaml" "a YAML error names the file"
st=$(api_status GET /v1/services/bad "$BOB_TOKEN")
expect_eq 404 "$st" "nothing was kept of a refused spec"

# ---- the service and its revisions survive a server restart ----
"$GPOOL" service restart web >/dev/null || fail "restart"
wait_for 30 "the restart to complete" sh -c "[ \"\$('$GPOOL' service show web -o json | jq -r .rollout.state)\" = complete ]"
expect_eq 2 "$(svc_field web '.revision')" "restart made revision 2"
wait_for 10 "the old replica to drain and stop" sh -c "[ \"\$('$GPOOL' service show web -o json | jq .replicas.total)\" = 1 ]"
kept=$(svc_json web | jq -r '.replica_jobs[0].job')
kill -TERM "$SERVER_PID"
wait "$SERVER_PID" 2>/dev/null
e2e_server
wait_for 20 "node n1 up again" node_is n1 up
expect_eq 2 "$(svc_field web '.revisions | length')" "both revisions after the restart"
expect_eq bob "$(svc_field web .owner)" "the owner after the restart"
wait_for 20 "the replica ready again after the restart" ready_count web 1
expect_eq 1 "$(svc_field web .replicas.total)" "the running replica was kept, not doubled"
expect_eq "$kept" "$(svc_json web | jq -r '.replica_jobs[0].job')" "the same replica serves after the restart"

# ---- delete drains and stops every replica ----
last=$(svc_json web | jq -r '.replica_jobs[0].job')
"$GPOOL" service delete web >/dev/null || fail "delete"
wait_for 20 "service web to be gone" sh -c "! '$GPOOL' service show web >/dev/null 2>&1"
expect_eq cancelled "$(job_field "$last" .state)" "the last replica was stopped"
expect_eq "" "$("$GPOOL" service list | tail -n +2)" "no service left"

# ---- the ledger records the replicas' use under their service ----
rep=$("$GPOOL" report usage --by service --from $(( $(date +%s) - 86400 )) -o json) || fail "report: $rep"
expect_eq web "$(echo "$rep" | jq -r '[.rows[] | select(.service == "web")][0].service')" "a row for service web"
echo "$rep" | jq -e '[.rows[] | select(.service == "web")][0].gpu_hours > 0' >/dev/null ||
  fail "service web has no GPU-hours: $rep"
echo "PASS"
