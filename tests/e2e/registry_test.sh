#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Registry credentials per user (docs/containers.md#credentials), with a real engine and a
# real registry: Debian's docker-registry on 127.0.0.1 with htpasswd auth holds two images
# built here from busybox-static; the node has no credential of its own. User A's
# `gpool registry login` lets A's job pull; user B's job cannot pull with A's credential
# (unauthorized), nor run the image A's pulled onto the node (the agent asks the registry for
# B before it uses it, by its full name), until an admin sets a pool-wide one, with which an admin's `gpool images
# pull` pre-pulls an image through the agent, with each node's result; the password (and
# its base64) is in no API answer, job document, event, server or agent log, the store's
# SQLite file, or the agent's data directory once the pull is over.
# Needs root (the agent switches users) and the users `nobody` and `daemon`.
source "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || { echo "(skipped: needs root: the agent switches users)"; exit 0; }
getent passwd nobody >/dev/null && getent passwd daemon >/dev/null ||
  { echo "(skipped: no users nobody and daemon)"; exit 0; }
for t in podman docker-registry htpasswd jq sqlite3; do e2e_need "$t"; done
[ -x /bin/busybox ] || { echo "FAIL: busybox-static is not installed (run scripts/setup.sh)" >&2; exit 1; }
e2e_init
e2e_podman_works

TAG=gpool-reg-$$-$RANDOM
e2e_image_root "$E2E_DIR/rootfs" sh id cat echo true
e2e_image_import "$E2E_DIR/rootfs" "localhost/$TAG:1"

PW=pw-$RANDOM$RANDOM-Xq7
B64=$(printf 'carol:%s' "$PW" | base64 -w0)
e2e_registry carol "$PW"
# The test's own push credential, in a file of its own, removed before any job runs.
push=$E2E_DIR/push-auth.json
podman login --tls-verify=false --authfile "$push" -u carol -p "$PW" "$REG" >/dev/null 2>&1 || fail "login"
A_IMG=$REG/e2e/a-$TAG:1 B_IMG=$REG/e2e/b-$TAG:1 C_IMG=$REG/e2e/c-$TAG:1 D_IMG=$REG/e2e/d-$TAG:1
for i in "$A_IMG" "$B_IMG" "$C_IMG" "$D_IMG"; do
  podman push -q --tls-verify=false --authfile "$push" "localhost/$TAG:1" "$i" >/dev/null || fail "push $i"
done
rm -f "$push"
podman rmi -f "localhost/$TAG:1" >/dev/null 2>&1
# The agents and their containers first (e2e_stop_spawned, e2e_rm_containers), then the images.
trap 'e2e_stop_spawned; e2e_rm_containers "${E2E_CONTAINER_DIRS[@]}"; podman rmi -f "$A_IMG" "$B_IMG" "$C_IMG" "$D_IMG" "localhost/$TAG:1" >/dev/null 2>&1; e2e_cleanup' EXIT

A_TOKEN=a-$RANDOM$RANDOM B_TOKEN=b-$RANDOM$RANDOM
e2e_write_config
sed -i "s|^tokens:|tokens:\n  - {token: \"$A_TOKEN\", user: nobody, role: user}\n  - {token: \"$B_TOKEN\", user: daemon, role: user}|" "$E2E_DIR/server.yaml"
e2e_server
# The node has no credential for the registry: only the job's owner's can pull.
cat >"$E2E_DIR/agent.yaml" <<YML
container:
  pull_options: ["--tls-verify=false"]
  pull_timeout: 20s
YML
chmod 600 "$E2E_DIR/agent.yaml"
mkdir -p "$E2E_DIR/agent-n1"
E2E_CONTAINER_DIRS+=("$E2E_DIR/agent-n1") # its jobs' containers go with the test (lib.sh)
e2e_spawn "$E2E_DIR/agent-n1.log" "$GPOOL" agent --server "$SERVER_URL" --token "$AGENT_TOKEN" \
  --name n1 --sim 1xH100-80GB --data "$E2E_DIR/agent-n1" --heartbeat-s 1 --grace 5s \
  --config "$E2E_DIR/agent.yaml"
wait_for 20 "node n1 to be up" node_is n1 up

chmod 711 "$E2E_DIR"
for u in nobody daemon; do mkdir -p "$E2E_DIR/work-$u"; chown $u: "$E2E_DIR/work-$u"; done
as_a() { GPOOL_TOKEN=$A_TOKEN "$@"; }
as_b() { GPOOL_TOKEN=$B_TOKEN "$@"; }
submit() { # USER-TOKEN-FN IMAGE: a job id
  local who=$1 img=$2 u=nobody
  [ "$who" = as_b ] && u=daemon
  $who "$GPOOL" submit -D "$E2E_DIR/work-$u" --image "$img" -- sh -c 'echo in-image-$(id -u)'
}

# 0. Without a credential the node cannot pull: the registry wants one.
j0=$(submit as_a "$A_IMG") || fail "submit: $j0"
wait_for 40 "job $j0 to fail" job_is "$j0" failed
expect_contains "$(job_field "$j0" .end_reason)" "unauthorized: $A_IMG" "no credential: unauthorized"

# 1. A logs in; A's job pulls with it.
out=$(as_a "$GPOOL" registry login "$REG" -u carol 2>&1 </dev/null) && fail "a login without a password was accepted"
expect_contains "$out" "--password-stdin" "the error says how to give the password"
printf '%s\n' "$PW" | as_a "$GPOOL" registry login "$REG" -u carol --password-stdin >/dev/null || fail "registry login"
[ "$(stat -c %a "$E2E_DIR/server/registry.key")" = 600 ] || fail "the server's key file is not 0600"
list=$(as_a "$GPOOL" registry list)
expect_contains "$list" "$REG" "registry list names the registry"
expect_contains "$list" "user" "registry list says whose"
[ -z "$(as_b "$GPOOL" registry list | grep "$REG")" ] || fail "B sees A's registry"
# The credential outlives a restart of the server (the store keeps it, sealed).
kill -TERM "$SERVER_PID"
wait "$SERVER_PID" 2>/dev/null
e2e_server
wait_for 20 "node n1 to be up again" node_is n1 up
j1=$(submit as_a "$A_IMG") || fail "submit: $j1"
wait_for 40 "job $j1 to complete" job_is "$j1" completed
expect_contains "$(GPOOL_TOKEN=$ADMIN_TOKEN "$GPOOL" logs "$j1" 2>&1)" "in-image-65534" "A's job ran in the image"
[ -z "$(find "$E2E_DIR/agent-n1" -name container.auth)" ] || fail "the auth file outlived the pull"

# 1b. A's credential brought A_IMG to the node: B's job in it still asks the registry, with
# B's own access (none here), and fails; a short name the engine would match to the image
# it holds (or its ID) does not reach it either. A's next job in it checks and runs.
podman image exists "$A_IMG" || fail "A's image is not on the node"
grep -q "registry $REG: pulled with a user's own credential" "$E2E_DIR/agent-n1.log" ||
  fail "the agent did not note the registry that a user's own credential pulled from"
j1b=$(submit as_b "$A_IMG") || fail "submit: $j1b"
wait_for 40 "job $j1b to fail" job_is "$j1b" failed
expect_contains "$(job_field "$j1b" .end_reason)" "unauthorized: $A_IMG" "B cannot use the image A's credential pulled"
a_id=$(podman image inspect --format '{{.Id}}' "$A_IMG" | cut -c1-12)
for short in "e2e/a-$TAG:1" "a-$TAG:1" "$a_id"; do
  js=$(submit as_b "$short") || fail "submit: $js"
  wait_for 40 "job $js to fail" job_is "$js" failed
  GPOOL_TOKEN=$ADMIN_TOKEN "$GPOOL" logs "$js" 2>&1 | grep -q in-image && fail "B's job ran A's image by the name $short"
done
j1d=$(submit as_a "$A_IMG") || fail "submit: $j1d"
job_over() { case "$(job_field "$1" .state)" in running|pending|stopping) return 1;; esac; }
wait_for 40 "job $j1d to end" job_over "$j1d"
job_is "$j1d" completed || fail "A's next job: $(GPOOL_TOKEN=$ADMIN_TOKEN "$GPOOL" logs --stderr "$j1d" 2>&1)"
expect_contains "$(GPOOL_TOKEN=$ADMIN_TOKEN "$GPOOL" logs --stderr "$j1d" 2>&1)" "checking that the registry lets this job read image $A_IMG" \
  "A's next job in the image it holds checks A's access"

# 2. B's job cannot pull with A's credential.
j2=$(submit as_b "$B_IMG") || fail "submit: $j2"
wait_for 40 "job $j2 to fail" job_is "$j2" failed
expect_contains "$(job_field "$j2" .end_reason)" "unauthorized: $B_IMG" "B's job does not use A's credential"

# 3. An admin's pool-wide credential serves B, who has none; a wrong own one wins over it.
out=$(printf '%s\n' "$PW" | as_b "$GPOOL" registry login "$REG" -u carol --password-stdin --pool 2>&1) &&
  fail "a user set a pool-wide credential"
expect_contains "$out" "admin" "only an admin sets a pool-wide credential"
printf '%s\n' "$PW" | GPOOL_TOKEN=$ADMIN_TOKEN "$GPOOL" registry login "$REG" -u carol --password-stdin --pool >/dev/null ||
  fail "pool login"
expect_contains "$(as_b "$GPOOL" registry list)" "pool" "B sees the pool-wide registry"
j3=$(submit as_b "$B_IMG") || fail "submit: $j3"
wait_for 40 "job $j3 to complete" job_is "$j3" completed
printf 'wrong\n' | as_b "$GPOOL" registry login "$REG" -u carol --password-stdin >/dev/null || fail "B's login"
j4=$(submit as_b "$C_IMG") || fail "submit: $j4"
wait_for 40 "job $j4 to fail" job_is "$j4" failed
expect_contains "$(job_field "$j4" .end_reason)" "unauthorized" "B's own (wrong) credential wins over the pool's"
as_b "$GPOOL" registry logout "$REG" >/dev/null || fail "logout"
[ -z "$(as_b "$GPOOL" registry list -o json | jq -r '.[] | select(.scope == "user") | .registry')" ] ||
  fail "the credential outlived its logout"

# 3b. An admin pre-pulls an image through the agents, with the pool-wide credential.
out=$(as_a "$GPOOL" images pull "$D_IMG" --nodes n1 2>&1) && fail "a user pre-pulled"
expect_contains "$out" "admin" "only an admin pre-pulls"
out=$(GPOOL_TOKEN=$ADMIN_TOKEN "$GPOOL" images pull "$D_IMG" --nodes nope 2>&1) && fail "an unknown node was accepted"
expect_contains "$out" "nope" "the error names the node"
out=$(GPOOL_TOKEN=$ADMIN_TOKEN "$GPOOL" images pull "$D_IMG" --nodes n1 --wait 40 2>&1) || fail "pre-pull: $out"
expect_contains "$out" "pulled image $D_IMG in" "the node's result"
podman image exists "$D_IMG" || fail "the pre-pulled image is not on the node"
out=$(GPOOL_TOKEN=$ADMIN_TOKEN "$GPOOL" images pull "$REG/e2e/missing-$TAG:1" --wait 40 2>&1) && fail "a missing image pre-pulled"
expect_contains "$out" "image not found: $REG/e2e/missing-$TAG:1" "a missing image's reason, per node"
wait_for 70 "n1 to report $D_IMG" sh -c "GPOOL_TOKEN=$ADMIN_TOKEN '$GPOOL' images --node n1 | grep -q 'd-$TAG'"

# 4. Bad input is refused, naming what.
out=$(printf 'x\n' | as_a "$GPOOL" registry login "bad host" -u carol --password-stdin 2>&1) && fail "a bad registry was accepted"
expect_contains "$out" "registry" "the error names the registry"
long=$(head -c 5000 /dev/zero | tr '\0' x)
out=$(printf '%s\n' "$long" | as_a "$GPOOL" registry login "$REG" -u carol --password-stdin 2>&1) && fail "a 5000-byte password was accepted"
code=$(curl -s -o "$E2E_DIR/put.json" -w '%{http_code}' -X PUT -H "Authorization: Bearer $A_TOKEN" \
  -d "{\"username\":\"carol\",\"password\":\"$long\"}" "$SERVER_URL/v1/registries/$REG")
expect_eq 400 "$code" "the server refuses a 5000-byte password"
expect_contains "$(cat "$E2E_DIR/put.json")" "password" "the error names the field"

# 5. The secret is nowhere: API answers, job documents, events, logs, store, agent files.
api=$E2E_DIR/api.txt
: >"$api"
for t in "$A_TOKEN" "$B_TOKEN" "$ADMIN_TOKEN"; do
  for p in /v1/registries /v1/nodes "/v1/jobs?state=all" /v1/whoami; do
    curl -s -H "Authorization: Bearer $t" "$SERVER_URL$p" >>"$api"
  done
  for id in $j0 $j1 $j1b $j1d $j2 $j3 $j4; do curl -s -H "Authorization: Bearer $t" "$SERVER_URL/v1/jobs/$id" >>"$api"; done
done
curl -s -m 2 -H "Authorization: Bearer $ADMIN_TOKEN" "$SERVER_URL/v1/events?since=0" >>"$api" 2>/dev/null
grep -q "$j1" "$api" || fail "the API answers were not collected"
sqlite3 "$E2E_DIR/server/gpool.db" 'PRAGMA wal_checkpoint(FULL);' >/dev/null 2>&1
grep -q "registry/nobody/$REG" "$E2E_DIR/server/gpool.db" || fail "the credential is not in the store"
for f in "$api" "$E2E_DIR"/server/gpool.db* "$E2E_DIR/server.log" "$E2E_DIR/agent-n1.log"; do
  for s in "$PW" "$B64"; do
    grep -aqF -- "$s" "$f" && fail "the credential ($s) is in $f"
  done
done
grep -raqF -- "$B64" "$E2E_DIR/agent-n1" && fail "the credential is left in the agent's data directory"
echo "registry_test: OK"
