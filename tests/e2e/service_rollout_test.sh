#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Rolling updates of an inference service under load, through Debian's nginx fed by
# `gpool service endpoints --format nginx --watch --exec 'nginx -s reload'`: a steady
# stream of client requests loses none while 4 replicas roll from v1 to v2 (drained out of
# the upstream before they stop); a new version that never becomes ready stops at its
# progress deadline with v2 still serving every request, and `gpool service rollback`
# returns to v2's spec without replacing its replicas.
source "$(dirname "$0")/lib.sh"
e2e_init
e2e_need python3
e2e_need nginx
e2e_write_config
sed -i 's|^  - {name: default, users: \["\*"\]}|  - {name: default, users: ["*"], priority_classes: [inference, batch]}|' "$E2E_DIR/server.yaml"
e2e_server
e2e_agent n1 4xH100-80GB
e2e_agent n2 4xH100-80GB
export GPOOL_TOKEN=$BOB_TOKEN
SRC=${GP_SOURCE_DIR:?}/tests/e2e/svc_replica.py
CLIENT=${GP_SOURCE_DIR:?}/tests/e2e/svc_client.py
mkdir -p "$E2E_DIR/svc" "$E2E_DIR/nginx/logs"

svc_json() { "$GPOOL" service show "$1" -o json; }
svc_field() { svc_json "$1" | jq -r "$2"; }
spec() { # spec VERSION [EXTRA_ARG] [DEADLINE]
  cat >chat.yaml <<YAML
name: chat
command: [python3, "$SRC"${2:+, "$2"}]
env: {SVC_DIR: "$E2E_DIR/svc", SVC_VERSION: $1}
gpus: 1
replicas: {min: 1, max: 8, initial: 4}
probes:
  readiness: {path: /healthz, period_s: 1, failure_threshold: 1}
rollout: {min_healthy_s: 1, progress_deadline_s: ${3:-30}, drain_s: 2}
YAML
}
rollout_is() { [ "$(svc_field chat .rollout.state)" = "$1" ]; }
all_at() { # all_at REV: 4 ready replicas, every one of revision REV, nothing else
  svc_json chat | jq -e --argjson r "$1" '[.replica_jobs[] | select(.ready and .revision == $r and (.draining | not))] | length == 4' &&
    [ "$(svc_field chat .replicas.total)" = 4 ]
}
upstream_servers() { grep -c '^    server 127' up.conf; }

spec v1
"$GPOOL" service apply -f chat.yaml >/dev/null || fail "apply v1"
wait_for 40 "four v1 replicas ready" all_at 1

# ---- nginx, fed by the watch ----
NGINX="nginx -p $E2E_DIR/nginx -c $E2E_DIR/nginx/nginx.conf -e $E2E_DIR/nginx/logs/error.log"
e2e_spawn "$E2E_DIR/watch.log" "$GPOOL" service endpoints chat --format nginx --out "$E2E_DIR/up.conf" --watch \
  --interval 0.2 --exec "$NGINX -s reload"
wait_for 10 "the watch to write the upstream" sh -c "[ \"\$(grep -c '^    server 127' '$E2E_DIR/up.conf')\" = 4 ]"
LB_PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$E2E_DIR/nginx/nginx.conf" <<CONF
daemon off;
worker_processes 1;
pid $E2E_DIR/nginx/nginx.pid;
error_log $E2E_DIR/nginx/logs/error.log;
events { worker_connections 256; }
http {
  access_log off;
  client_body_temp_path $E2E_DIR/nginx/body;
  proxy_temp_path $E2E_DIR/nginx/proxy;
  fastcgi_temp_path $E2E_DIR/nginx/fastcgi;
  uwsgi_temp_path $E2E_DIR/nginx/uwsgi;
  scgi_temp_path $E2E_DIR/nginx/scgi;
  include $E2E_DIR/up.conf;
  server {
    listen 127.0.0.1:$LB_PORT;
    location / {
      proxy_pass http://gpool_chat;
      # No retry on another replica: a request sent to a stopped replica must show as lost.
      proxy_next_upstream off;
    }
  }
}
CONF
e2e_spawn "$E2E_DIR/nginx.log" $NGINX
wait_for 10 "nginx to answer" curl -fsS "http://127.0.0.1:$LB_PORT/"
: >watch.log # the watch's first reload came before nginx ran; from now on each must succeed

# ---- v1 -> v2 under a steady request stream: nothing lost ----
rm -f stop1
e2e_spawn "$E2E_DIR/client1.out" python3 "$CLIENT" 127.0.0.1 "$LB_PORT" "$E2E_DIR/stop1" 4
CLIENT1=$LAST_PID
sleep 1
spec v2
"$GPOOL" service apply -f chat.yaml >/dev/null || fail "apply v2"
t0=$SECONDS
wait_for 90 "four v2 replicas ready" all_at 2
wait_for 10 "the rollout to complete" rollout_is complete
rolled=$((SECONDS - t0))
wait_for 10 "the upstream to list the 4 v2 replicas only" sh -c "[ \"\$(grep -c '^    server 127' '$E2E_DIR/up.conf')\" = 4 ]"
sleep 1
touch stop1
wait "$CLIENT1"
res=$(tail -n 1 client1.out)
echo "rolling update of 4 replicas in ${rolled}s: $res"
[ "$(echo "$res" | jq .requests)" -gt 100 ] || fail "too few requests to judge: $res"
expect_eq 0 "$(echo "$res" | jq .failures)" "requests lost during the rolling update ($res)"
[ "$(echo "$res" | jq '.versions.v1 // 0')" -gt 0 ] || fail "no answer from v1: $res"
[ "$(echo "$res" | jq '.versions.v2 // 0')" -gt 0 ] || fail "no answer from v2: $res"
expect_eq 2 "$(svc_field chat .stable_revision)" "v2 is the last complete revision"
grep -q reload watch.log && fail "the reload command failed: $(cat watch.log)"

# ---- a version that never becomes ready stops at its deadline; v2 keeps serving ----
v2_jobs=$(svc_json chat | jq -c '[.replica_jobs[].job] | sort')
rm -f stop2
e2e_spawn "$E2E_DIR/client2.out" python3 "$CLIENT" 127.0.0.1 "$LB_PORT" "$E2E_DIR/stop2" 2
CLIENT2=$LAST_PID
spec v3 --never-healthy 6
"$GPOOL" service apply -f chat.yaml >/dev/null || fail "apply v3"
wait_for 30 "the v3 rollout to fail at its deadline" rollout_is failed
expect_contains "$(svc_field chat .rollout.message)" "6s" "the failure names the deadline"
expect_eq 2 "$(svc_field chat .serving_revision)" "v2 serves after the failure"
wait_for 15 "only v2 replicas left" all_at 2
expect_eq "$v2_jobs" "$(svc_json chat | jq -c '[.replica_jobs[].job] | sort')" "v2's replicas were never stopped"
"$GPOOL" service rollback chat >/dev/null || fail "rollback"
expect_eq 4 "$(svc_field chat .revision)" "rollback made revision 4"
expect_eq "rollback to revision 2" "$(svc_field chat '.revisions[-1].note')" "the revision says what it is"
wait_for 15 "the rollback to complete" rollout_is complete
expect_eq "$v2_jobs" "$(svc_json chat | jq -c '[.replica_jobs[].job] | sort')" "a rollback to the running spec keeps its replicas"
touch stop2
wait "$CLIENT2"
res=$(tail -n 1 client2.out)
echo "failed rollout and rollback: $res"
expect_eq 0 "$(echo "$res" | jq .failures)" "requests lost during the failed rollout ($res)"
expect_eq 0 "$(echo "$res" | jq '.versions.v3 // 0')" "v3 never served ($res)"
echo "PASS"
