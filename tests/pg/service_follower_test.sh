#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A service's ready endpoints from an HA follower: two servers on one PostgreSQL store, the
# first leads; a service's replica (a real HTTP server, svc_replica.py) turns ready on the
# leader, and the follower answers GET /v1/services/NAME/endpoints itself (200, no
# redirect) with the same endpoint, from its copy of the store; once the service is
# deleted the follower no longer lists it. Needs the test PostgreSQL (fixture gpool_pg).
source "$(dirname "$0")/../e2e/lib.sh"
e2e_init
e2e_need psql
e2e_need python3
admin_url=$(cat "${GPOOL_TEST_PG_URL_FILE:?run through ctest: the fixture gpool_pg starts PostgreSQL (scripts/setup.sh installs it)}")
db=gp_svcha_$$
psql -q "$admin_url" -c "CREATE DATABASE $db" || fail "cannot create database $db"
trap 'psql -q "$admin_url" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1; e2e_cleanup' EXIT
store_url=${admin_url%/*}/$db
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# A server's id is its URL, so each listens on a port known before it starts.
e2e_write_config "store: $store_url
ha: {}"
sed -i "s|^listen: .*|listen: 127.0.0.1:$(free_port)|" "$E2E_DIR/server.yaml"
# The default queue grants the inference class (a non-preemptible class is the queue's to grant).
sed -i 's|^  - {name: default, users: \["\*"\]}|  - {name: default, users: ["*"], priority_classes: [inference, training, batch]}|' "$E2E_DIR/server.yaml"
e2e_server
url1=$SERVER_URL
leader_of() { curl -fsS "$1/v1/leader" -H "Authorization: Bearer $ADMIN_TOKEN" | jq -r "$2"; }
wait_for 20 "the first server to lead" sh -c "[ \"\$(curl -fsS '$url1/v1/leader' -H 'Authorization: Bearer $ADMIN_TOKEN' | jq -r .role)\" = leader ]"
port2=$(free_port)
url2=http://127.0.0.1:$port2
mkdir -p "$E2E_DIR/server2"
sed -e "s/^listen: .*/listen: 127.0.0.1:$port2/" -e "s#^data_dir: .*#data_dir: $E2E_DIR/server2#" \
  "$E2E_DIR/server.yaml" >"$E2E_DIR/server2.yaml"
e2e_spawn "$E2E_DIR/server2.log" "$GPOOL" server --config "$E2E_DIR/server2.yaml"
follows() { [ "$(leader_of "$url2" .role 2>/dev/null)" = follower ]; }
wait_for 20 "the second server to follow the first" follows

e2e_agent n1 2xH100-80GB
export GPOOL_TOKEN=$BOB_TOKEN
mkdir -p "$E2E_DIR/svc"
cat >web.yaml <<YAML
name: web
command: [python3, "${GP_SOURCE_DIR:?}/tests/e2e/svc_replica.py"]
env: {SVC_DIR: "$E2E_DIR/svc", SVC_VERSION: v1}
gpus: 1
replicas: {min: 1, max: 2, initial: 1}
probes:
  readiness: {path: /healthz, period_s: 1, failure_threshold: 2}
YAML
out=$("$GPOOL" service apply -f web.yaml) || fail "apply: $out"
eps() { curl -sS "$1/v1/services/web/endpoints" -H "Authorization: Bearer $BOB_TOKEN" |
  jq -r '.endpoints[] | "\(.host):\(.port)"' | sort; }
wait_for 40 "a ready endpoint on the leader" sh -c "[ -n \"\$(curl -sS '$url1/v1/services/web/endpoints' -H 'Authorization: Bearer $BOB_TOKEN' | jq -r '.endpoints[]?.port')\" ]"
want=$(eps "$url1")
[ "$(echo "$want" | wc -l)" = 1 ] || fail "the leader lists $want, not one endpoint"
curl -fsS "http://$want/healthz" >/dev/null || fail "the listed endpoint $want does not answer"
same() { [ "$(eps "$url2")" = "$want" ]; }
wait_for 10 "the follower to list the ready endpoint $want" same
st=$(curl -sS -o "$E2E_DIR/follower.json" -w '%{http_code}' "$url2/v1/services/web/endpoints" -H "Authorization: Bearer $BOB_TOKEN")
expect_eq 200 "$st" "the follower answers the endpoints itself"
expect_eq 1 "$(jq '.endpoints | length' "$E2E_DIR/follower.json")" "the follower lists exactly the ready replica"

"$GPOOL" service delete web >/dev/null || fail "delete"
gone() { [ "$(curl -sS -o /dev/null -w '%{http_code}' "$url2/v1/services/web/endpoints" -H "Authorization: Bearer $BOB_TOKEN")" = 404 ]; }
wait_for 20 "the follower to drop the deleted service" gone
echo "PASS"
