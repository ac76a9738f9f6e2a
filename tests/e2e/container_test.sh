#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Jobs in container images (docs/containers.md), with a real engine and a real registry:
# an image built here from busybox-static is pushed to Debian's docker-registry on
# 127.0.0.1 (htpasswd auth) and pulled by the agent for the job. A job in it runs as its
# user, sees its GPOOL_* and CUDA_VISIBLE_DEVICES, writes to its mounted workdir as that
# user, and its exit code and logs come back; a cancel delivers the checkpoint signal to the
# container's process within the grace; a missing image, a wrong credential and a registry
# that does not answer end the job with their reason within the pull timeout.
# Needs root (the agent switches users) and the user `nobody`.
source "$(dirname "$0")/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
[ "$(id -u)" = 0 ] || { echo "(skipped: needs root: the agent switches users)"; exit 0; }
getent passwd nobody >/dev/null || { echo "(skipped: no user nobody)"; exit 0; }
for t in podman docker-registry htpasswd jq; do e2e_need "$t"; done
[ -x /bin/busybox ] || { echo "FAIL: busybox-static is not installed (run scripts/setup.sh)" >&2; exit 1; }
e2e_init
e2e_podman_works

TAG=gpool-e2e-$$-$RANDOM
# The image: busybox-static and its applets in an empty root.
root=$E2E_DIR/rootfs
e2e_image_root "$root" sh id cat echo sleep env touch ls stat nc timeout
e2e_image_import "$root" "localhost/$TAG:1"

# The registry, with a user and a password.
e2e_registry alice s3cret
good=$E2E_DIR/auth-good.json bad=$E2E_DIR/auth-bad.json
podman login --tls-verify=false --authfile "$good" -u alice -p s3cret "$REG" >/dev/null || fail "login"
printf '{"auths":{"%s":{"auth":"%s"}}}\n' "$REG" "$(printf alice:wrong | base64)" >"$bad"
IMAGE=$REG/e2e/$TAG:1
podman push -q --tls-verify=false --authfile "$good" "localhost/$TAG:1" "$IMAGE" >/dev/null || fail "push"
podman rmi -f "localhost/$TAG:1" >/dev/null 2>&1
# The node's image store is the machine's: the test's images go with the test.
# Teardown, whatever happened: the agents first, then the containers they started (by
# their names' prefix, E2E_CONTAINER_DIRS), then the images.
n3_podman() { podman --root "$E2E_DIR/store-n3" --runroot "$E2E_DIR/run-n3" --storage-driver vfs "$@"; }
teardown() {
  e2e_stop_spawned
  e2e_rm_containers "${E2E_CONTAINER_DIRS[@]}"
  [ -d "$E2E_DIR/store-n3" ] && { n3_podman rm -af -t 0; n3_podman rmi -af; } >/dev/null 2>&1
  podman rmi -f "$IMAGE" "localhost/$TAG:1" "localhost/$TAG-big:1" "127.0.0.1:$(cat "$E2E_DIR/proxy.port" 2>/dev/null)/e2e/$TAG-big:1" >/dev/null 2>&1
  e2e_cleanup
}
trap teardown EXIT

NOBODY_TOKEN=nob-$RANDOM$RANDOM
e2e_write_config
sed -i "s|^tokens:|tokens:\n  - {token: \"$NOBODY_TOKEN\", user: nobody, role: user}|" "$E2E_DIR/server.yaml"
e2e_server
# Two nodes: n1 holds the right credential, n2 a wrong one (labels pick the node).
for n in n1 n2; do
  auth=$good; [ $n = n2 ] && auth=$bad
  mkdir -p "$E2E_DIR/agent-$n"
  E2E_CONTAINER_DIRS+=("$E2E_DIR/agent-$n")
  cat >"$E2E_DIR/agent-$n.yaml" <<YML
container:
  pull_options: ["--tls-verify=false", "--authfile", "$auth"]
  pull_timeout: 20s
YML
  chmod 600 "$E2E_DIR/agent-$n.yaml"
  e2e_spawn "$E2E_DIR/agent-$n.log" "$GPOOL" agent --server "$SERVER_URL" --token "$AGENT_TOKEN" \
    --name $n --sim 1xH100-80GB --data "$E2E_DIR/agent-$n" --heartbeat-s 1 --grace 10s \
    --labels node=$n --config "$E2E_DIR/agent-$n.yaml"
  wait_for 20 "node $n to be up" node_is $n up
done
grep -q "containers: " "$E2E_DIR/agent-n1.log" || fail "the agent logs what the node allows containers"

chmod 711 "$E2E_DIR"
work=$E2E_DIR/work
mkdir -p "$work"
chown nobody: "$work"
export GPOOL_TOKEN=$NOBODY_TOKEN

# 1. The job runs in the image as nobody, with its variables, writes to its workdir.
j=$("$GPOOL" submit -g 1 -D "$work" --node-selector node=n1 --image "$IMAGE" -e FOO=bar -- \
  sh -c 'echo "uid=$(id -u) gid=$(id -g) job=$GPOOL_JOB_ID cuda=$CUDA_VISIBLE_DEVICES foo=$FOO"; echo written >out.txt; ls /bin/busybox; echo to-stderr >&2; exit 3') \
  || fail "submit: $j"
expect_eq "$IMAGE" "$(job_field "$j" .container.image)" "the job shows its image"
wait_for 40 "job $j to end" job_is "$j" failed
logs=$(GPOOL_TOKEN=$ADMIN_TOKEN "$GPOOL" logs "$j" 2>&1)
expect_eq 3 "$(job_field "$j" .exit_code)" "the container's exit code is the job's (log: $logs)"
expect_contains "$logs" "uid=65534 gid=65534 job=$j" "the job runs as nobody, with its GPOOL_JOB_ID"
expect_contains "$logs" "foo=bar" "the job's own variables"
uuid=$(GPOOL_TOKEN=$ADMIN_TOKEN "$GPOOL" nodes -o json | jq -r '.[] | select(.name=="n1") | .gpus[0].uuid')
expect_contains "$logs" "cuda=$uuid" "CUDA_VISIBLE_DEVICES names its GPU"
expect_contains "$logs" "/bin/busybox" "the command ran inside the image"
errs=$(GPOOL_TOKEN=$ADMIN_TOKEN "$GPOOL" logs --stderr "$j" 2>&1)
expect_contains "$errs" "to-stderr" "stderr comes back"
expect_contains "$errs" "pulling image $IMAGE" "the pull is in the job's log"
expect_eq "nobody" "$(stat -c %U "$work/out.txt")" "the mounted workdir is written as the user"
podman image exists "$IMAGE" || fail "the image stays on the node after the job"
# The node reports the image it now holds.
wait_for 15 "n1 to report $IMAGE" sh -c "'$GPOOL' images --node n1 | grep -q '$IMAGE'"
expect_eq "$IMAGE" "$("$GPOOL" images -o json | jq -r --arg i "$IMAGE" '.[] | select(.node == "n1") | .images[].names[] | select(. == $i)')" "gpool images -o json"
tl=$(job_field "$j" '[.timeline[].event] | join(" ")')
expect_contains "$tl" "launched pulling_image image_pulled ended" "the pull is a phase of the timeline"
expect_contains "$(job_field "$j" '.timeline[] | select(.event == "image_pulled") | .message')" "pulled image $IMAGE in" "its time"

# The next job in it starts without a check: the node's inventory names the image.
f=$("$GPOOL" submit -D "$work" --node-selector node=n1 --image "$IMAGE" -- sh -c 'echo again') || fail "submit: $f"
wait_for 30 "job $f to complete" job_is "$f" completed
expect_contains "$(GPOOL_TOKEN=$ADMIN_TOKEN "$GPOOL" logs "$f" 2>&1)" "again" "a second job in the held image"

# 1b. A pull's progress: an image with a 32 MB layer of random bytes, behind a proxy that
# passes 8 MB/s (a registry over a slow link), pulled for a job. While it runs the job's
# timeline shows bytes so far of the manifest's total, never going back; the total is the
# registry's own (config and layers); `gpool show` says it as "(x of y MB)".
e2e_need skopeo
big=$E2E_DIR/rootfs-big
e2e_image_root "$big" sh
head -c 32000000 /dev/urandom >"$big/blob.bin"
e2e_image_import "$big" "localhost/$TAG-big:1"
podman push -q --tls-verify=false --authfile "$good" "localhost/$TAG-big:1" "$REG/e2e/$TAG-big:1" >/dev/null || fail "push"
podman rmi -f "localhost/$TAG-big:1" >/dev/null 2>&1
e2e_spawn "$E2E_DIR/proxy.log" python3 "$HERE/slow_proxy.py" "$PORT" 8000000 "$E2E_DIR/proxy.port"
wait_for 10 "the proxy to listen" test -s "$E2E_DIR/proxy.port"
PREG=127.0.0.1:$(cat "$E2E_DIR/proxy.port")
BIG=$PREG/e2e/$TAG-big:1
podman login --tls-verify=false --authfile "$good" -u alice -p s3cret "$PREG" >/dev/null || fail "login through the proxy"
total=$(curl -s -u alice:s3cret -H 'Accept: application/vnd.oci.image.manifest.v1+json' \
  -H 'Accept: application/vnd.docker.distribution.manifest.v2+json' "http://$REG/v2/e2e/$TAG-big/manifests/1" |
  jq '.config.size + ([.layers[].size] | add)')
[ "$total" -gt 32000000 ] || fail "the test image's manifest: $total"
b=$("$GPOOL" submit -D "$work" --node-selector node=n1 --image "$BIG" -- sh -c 'echo big') || fail "submit: $b"
seen=$E2E_DIR/progress.txt
: >"$seen"
t_end=$((SECONDS + 60))
while [ $SECONDS -lt $t_end ]; do
  doc=$(job_json "$b")
  jq -r '.timeline[] | select(.event == "pulling_image" and .done_bytes != null) | "\(.done_bytes) \(.total_bytes) \(.message)"' <<<"$doc" >>"$seen"
  [ "$(jq -r .state <<<"$doc")" = completed ] && break
  sleep 0.3
done
job_is "$b" completed || fail "the job in the big image did not complete"
mid=$(awk -v t="$total" '$2 == t && $1 > 0 && $1 < t' "$seen" | head -1)
[ -n "$mid" ] || fail "no progress seen while the pull ran: $(sort -u "$seen")"
echo "pull progress seen: $(uniq "$seen" | cut -d" " -f1,2 | tr "\n" ";")"
expect_contains "$mid" "pulling image $BIG (" "the timeline says what is pulled, and how far"
awk 'BEGIN { m = 0 } { if ($1 < m) { print "back from " m " to " $1; exit 1 } m = $1 }' "$seen" >/dev/null ||
  fail "the progress went back: $(cat "$seen")"
awk -v t="$total" '$2 != 0 && $2 != t { exit 1 }' "$seen" || fail "a total that is not the manifest's ($total): $(sort -u "$seen")"
expect_contains "$(job_field "$b" '.timeline[] | select(.event == "image_pulled") | .message')" "pulled image $BIG in" "the pull's end"
[ -z "$(find "$E2E_DIR/agent-n1" -name pull.tmp)" ] || fail "the pull's temporary directory outlived it"
podman rmi -f "$BIG" >/dev/null 2>&1
# An admin's pre-pull of it shows the same progress in `gpool images` while it runs.
prepulled() { curl -fsS -H "Authorization: Bearer $ADMIN_TOKEN" "$SERVER_URL/v1/images/pulls" |
  jq -e --arg i "$BIG" '.pulls[] | select(.image == $i and .node == "n1" and .state == "pulled")'; }
out=$(GPOOL_TOKEN=$ADMIN_TOKEN "$GPOOL" images pull "$BIG" --nodes n1 --no-wait 2>&1) || fail "pre-pull: $out"
: >"$seen"
t_end=$((SECONDS + 60))
while [ $SECONDS -lt $t_end ]; do
  GPOOL_TOKEN=$ADMIN_TOKEN "$GPOOL" images --node n1 | grep -F "$BIG" >>"$seen"
  doc=$(GPOOL_TOKEN=$ADMIN_TOKEN "$GPOOL" images --node n1 -o json)
  jq -r --arg i "$BIG" '.[].pulling[] | select(.image == $i and .done_bytes != null) | "bytes \(.done_bytes) \(.total_bytes)"' <<<"$doc" >>"$seen"
  prepulled >/dev/null 2>&1 && break
  sleep 0.3
done
wait_for 30 "the pre-pull of $BIG to end" prepulled
grep -Eq "pulling \([0-9.]+ of $(awk -v t="$total" 'BEGIN { printf "%.1f", t / 1e6 }') MB\)" "$seen" ||
  fail "gpool images showed no pre-pull progress: $(sort -u "$seen")"
awk -v t="$total" '$1 == "bytes" && $3 == t && $2 > 0 && $2 < t { ok = 1 } END { exit !ok }' "$seen" ||
  fail "no bytes of the pre-pull seen mid-way: $(sort -u "$seen")"
awk '$1 == "bytes" { if ($2 < m) exit 1; m = $2 }' "$seen" || fail "the pre-pull's progress went back: $(grep bytes "$seen")"
echo "pre-pull progress seen: $(grep -o 'pulling (.*)' "$seen" | uniq | tr "\n" ";")"
[ -z "$(find "$E2E_DIR/agent-n1" -name 'pull-*')" ] || fail "the pre-pull's files outlived it: $(find "$E2E_DIR/agent-n1" -name 'pull-*')"
podman rmi -f "$BIG" >/dev/null 2>&1

# 1c. A job of two tasks in the image: each its own container (task 1's name holds no '@'),
# both in the host's IPC namespace (with its /dev/shm), each with its rank.
g=$("$GPOOL" submit -D "$work" --node-selector node=n1 -N 1 --ntasks-per-node 2 --image "$IMAGE" -- \
  sh -c 'echo "rank=$GPOOL_TASK_INDEX shm=$(stat -c %s /dev/shm >/dev/null && echo ok)"') || fail "submit: $g"
wait_for 30 "job $g to end" sh -c "'$GPOOL' show $g -o json | jq -e '.state | test(\"completed|failed\")' >/dev/null"
job_is "$g" completed || fail "the job of two tasks: $(GPOOL_TOKEN=$ADMIN_TOKEN "$GPOOL" logs --stderr "$g" --task 1 2>&1 | tail -3)"
expect_contains "$(GPOOL_TOKEN=$ADMIN_TOKEN "$GPOOL" logs "$g" --task 1 2>&1)" "rank=1 shm=ok" "task 1 ran in its container"
expect_contains "$(GPOOL_TOKEN=$ADMIN_TOKEN "$GPOOL" logs "$g" 2>&1)" "rank=0 shm=ok" "task 0 ran in its container"

# 1d. A gang of 2 nodes in the image does the rendezvous of bare jobs: one task on each of
# g1 (127.0.0.2) and g2 (127.0.0.3), each in its container, with its RANK, WORLD_SIZE,
# LOCAL_RANK, NODE_RANK and SLURM_* variables; rank 1 reaches rank 0 over TCP at
# MASTER_ADDR:MASTER_PORT (the node's own network: a container with a network of its own
# would find nothing there) and both check what the other said; the job completes only if
# they met.
for n in g1 g2; do
  mkdir -p "$E2E_DIR/agent-$n"
  E2E_CONTAINER_DIRS+=("$E2E_DIR/agent-$n")
  e2e_spawn "$E2E_DIR/agent-$n.log" "$GPOOL" agent --server "$SERVER_URL" --token "$AGENT_TOKEN" \
    --name $n --sim 1xH100-80GB --data "$E2E_DIR/agent-$n" --heartbeat-s 1 --grace 10s \
    --labels pool=rdv --config "$E2E_DIR/agent-n1.yaml" --listen 127.0.0.$((${n#g} + 1)):0
done
for n in g1 g2; do wait_for 20 "node $n to be up" node_is $n up; done
cat >"$work/rdv.sh" <<'SH'
echo "rank=$RANK world=$WORLD_SIZE local=$LOCAL_RANK/$LOCAL_WORLD_SIZE node_rank=$NODE_RANK slurm=$SLURM_PROCID/$SLURM_NTASKS nnodes=$SLURM_NNODES nodeid=$SLURM_NODEID localid=$SLURM_LOCALID master=$MASTER_ADDR:$MASTER_PORT"
if [ "$RANK" = 0 ]; then
  timeout 30 nc -l -p "$MASTER_PORT" -e sh -c 'read m; echo "ack $m"; echo "$m" >"met-$GPOOL_JOB_ID"' </dev/null
  m=$(cat "met-$GPOOL_JOB_ID" 2>/dev/null)
  echo "met: $m"
  [ "$m" = "rank=1 world=2 node_rank=1" ]
else
  i=0
  until r=$(echo "rank=$RANK world=$WORLD_SIZE node_rank=$NODE_RANK" | nc -w 2 "$MASTER_ADDR" "$MASTER_PORT" 2>/dev/null) && [ -n "$r" ]; do
    i=$((i + 1))
    [ $i -lt 150 ] || { echo "never met rank 0 at $MASTER_ADDR:$MASTER_PORT"; exit 1; }
    sleep 0.2
  done
  echo "met: $r"
  [ "$r" = "ack rank=1 world=2 node_rank=1" ]
fi
SH
chmod 644 "$work/rdv.sh"
r=$("$GPOOL" submit -D "$work" -N 2 --ntasks-per-node 1 -g 1 --node-selector pool=rdv --image "$IMAGE" -- \
  sh "$work/rdv.sh") || fail "submit: $r"
wait_for 60 "job $r to end" sh -c "'$GPOOL' show $r -o json | jq -e '.state | test(\"completed|failed\")' >/dev/null"
for t in 0 1; do echo "--- task $t"; GPOOL_TOKEN=$ADMIN_TOKEN "$GPOOL" logs "$r" --task $t 2>&1; done >"$E2E_DIR/rdv.out"
rdv=$(cat "$E2E_DIR/rdv.out")
expect_eq completed "$(job_field "$r" .state)" "the gang's two containers met ($rdv)"
expect_eq "g1,g2" "$(job_field "$r" '[.placements[].node] | sort | join(",")')" "one task on each node"
node0=$(job_field "$r" '.placements[0].node')
port=$(grep -o 'master=[0-9.]*:[0-9]*' "$E2E_DIR/rdv.out" | sort -u)
expect_eq "master=127.0.0.$((${node0#g} + 1))" "${port%:*}" "one MASTER_ADDR for both, task 0's node address ($rdv)"
[ -n "${port#*:}" ] || fail "no MASTER_PORT ($rdv)"
for t in 0 1; do
  expect_contains "$(GPOOL_TOKEN=$ADMIN_TOKEN "$GPOOL" logs "$r" --task $t 2>&1)" \
    "rank=$t world=2 local=0/1 node_rank=$t slurm=$t/2 nnodes=2 nodeid=$t localid=0" "task $t's variables"
done
expect_contains "$rdv" "met: rank=1 world=2 node_rank=1" "rank 0 heard rank 1"
expect_contains "$rdv" "met: ack rank=1" "rank 1 heard rank 0"

# 2. A cancel sends the checkpoint signal to the container's process, which ends in its grace.
k=$("$GPOOL" submit -D "$work" --node-selector node=n1 --image "$IMAGE" --grace 10s -- \
  sh -c 'trap "echo got-term; exit 0" TERM; echo ready; while :; do sleep 0.2; done') || fail "submit: $k"
wait_for 30 "job $k to print ready" sh -c "GPOOL_TOKEN=$ADMIN_TOKEN '$GPOOL' logs $k 2>/dev/null | grep -q ready"
# gpool exec enters the container (podman exec) as the job's user, not the node: the
# image's root has no /usr, the node's has.
# The teardown finds the job's container by the agent's prefix (e2e_rm_containers).
podman ps --format '{{.Names}}' | grep -qx "$(e2e_container_prefix "$E2E_DIR/agent-n1")$k" ||
  fail "job $k's container is not named by its agent's prefix: $(podman ps --format '{{.Names}}' | grep gpool-)"
out=$(timeout 60 "$GPOOL" exec "$k" -- sh -c 'test ! -e /usr && echo in-container; id -u' 2>&1) || fail "exec into a container job: $out"
expect_eq "in-container $(id -u nobody)" "$(echo $out)" "gpool exec runs inside the job's container, as its user"
t0=$(date +%s)
"$GPOOL" cancel "$k" >/dev/null || fail "cancel"
wait_for 15 "job $k to be cancelled" job_is "$k" cancelled
[ $(( $(date +%s) - t0 )) -lt 8 ] || fail "the job ended only at the end of its grace: the signal did not reach it"
expect_contains "$(GPOOL_TOKEN=$ADMIN_TOKEN "$GPOOL" logs "$k" 2>&1)" "got-term" "the container's process got SIGTERM"
[ -z "$(podman ps -aq --filter "name=gpool-$k")" ] || fail "the cancelled job's container is left behind"

# 3. A missing image, a wrong credential, a registry that does not answer: their reasons.
m=$("$GPOOL" submit -D "$work" --node-selector node=n1 --image "$REG/e2e/missing:1" -- true)
u=$("$GPOOL" submit -D "$work" --node-selector node=n2 --image "$REG/e2e/other-$TAG:1" -- true)
x=$("$GPOOL" submit -D "$work" --node-selector node=n1 --image "127.0.0.1:1/e2e/none:1" -- true)
for id in $m $u $x; do wait_for 30 "job $id to fail" job_is "$id" failed; done
expect_contains "$(job_field "$m" .end_reason)" "image not found: $REG/e2e/missing:1" "a missing image"
expect_contains "$(job_field "$m" '.timeline[] | select(.event == "image_pulled") | .message')" "image not found" "the failed pull in the timeline"
expect_contains "$(job_field "$u" .end_reason)" "unauthorized" "a wrong credential"
expect_contains "$(job_field "$x" .end_reason)" "registry unreachable" "no registry"

# 4. Bad submissions are refused with the field named.
out=$("$GPOOL" submit --image "-v/:/host" -- true 2>&1) && fail "an option as an image was accepted"
expect_contains "$out" "image" "the error names the image"
out=$("$GPOOL" submit --image "$IMAGE" --container-mounts "relative:/x" -- true 2>&1) && fail "a relative mount was accepted"
expect_contains "$out" "absolute" "the error says why"
# 5. A node with its own image store, capped (container.image_store_max): an image it
# holds draws the next job in it there, and past the cap the least recently used images
# that nothing uses go, never one a running job uses.
mk_image() {  # mk_image NAME: an image of its own (a marker file), pushed to the registry
  echo "$1" >"$root/marker"
  e2e_image_import "$root" "localhost/$TAG-$1:1"
  podman push -q --tls-verify=false --authfile "$good" "localhost/$TAG-$1:1" "$REG/e2e/$TAG-$1:1" >/dev/null || fail "push $1"
  podman rmi -f "localhost/$TAG-$1:1" >/dev/null 2>&1
}
for i in a b c; do mk_image $i; done
IA=$REG/e2e/$TAG-a:1 IB=$REG/e2e/$TAG-b:1 IC=$REG/e2e/$TAG-c:1
cat >"$E2E_DIR/agent-n3.yaml" <<YML
container:
  options: ["--root", "$E2E_DIR/store-n3", "--runroot", "$E2E_DIR/run-n3", "--storage-driver", "vfs"]
  pull_options: ["--tls-verify=false", "--authfile", "$good"]
  pull_timeout: 20s
  image_store_max: 5m
YML
mkdir -p "$E2E_DIR/agent-n3"
E2E_CONTAINER_DIRS+=("$E2E_DIR/agent-n3")
e2e_spawn "$E2E_DIR/agent-n3.log" "$GPOOL" agent --server "$SERVER_URL" --token "$AGENT_TOKEN" \
  --name n3 --sim 1xH100-80GB --data "$E2E_DIR/agent-n3" --heartbeat-s 1 --grace 10s \
  --labels node=n3 --config "$E2E_DIR/agent-n3.yaml"
wait_for 20 "node n3 to be up" node_is n3 up
n3_holds() { "$GPOOL" images --node n3 -o json | jq -r '.[] | select(.node == "n3") | .images[].names[]' | grep -qx "$1"; }
out=$(GPOOL_TOKEN=$ADMIN_TOKEN "$GPOOL" images pull "$IB" --nodes n3 --wait 40 2>&1) || fail "pre-pull: $out"
wait_for 15 "n3 to report $IB" n3_holds "$IB"
# n1, n2 and n3 are equal but for the image: the job goes where it is (n1 comes first else).
p=$("$GPOOL" submit -D "$work" --image "$IB" --grace 5s -- \
  sh -c 'trap "exit 0" TERM; echo in-b; while :; do sleep 0.2; done') || fail "submit: $p"
wait_for 30 "job $p to run" job_is "$p" running
expect_eq n3 "$(job_field "$p" '.placements[0].node')" "the node holding the image draws the job"
# B is now the least recently used but in use; A and C (2 MB each) pass the 5 MiB cap.
for i in "$IA" "$IC"; do
  out=$(GPOOL_TOKEN=$ADMIN_TOKEN "$GPOOL" images pull "$i" --nodes n3 --wait 40 2>&1) || fail "pre-pull $i: $out"
done
wait_for 20 "n3 to report $IC" n3_holds "$IC"
wait_for 20 "the cap to remove $IA" sh -c "! '$GPOOL' images --node n3 -o json | jq -r '.[] | select(.node == \"n3\") | .images[].names[]' | grep -qx '$IA'"
n3_holds "$IB" || fail "the cap removed the image a running job uses"
n3_holds "$IC" || fail "the cap removed the image just pulled"
grep -q "image store over 5242880 bytes: removed image" "$E2E_DIR/agent-n3.log" || fail "the agent logs what the cap removed"
out=$("$GPOOL" cancel "$p" 2>&1) || fail "cancel: $out"
wait_for 20 "job $p to be cancelled (is $(job_field "$p" .state))" job_is "$p" cancelled
n3_podman rmi -af >/dev/null 2>&1
echo "container_test: OK"
