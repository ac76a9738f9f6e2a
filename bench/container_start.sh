#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Start overhead of a job in a container image (issue 34's figures, docs/performance.md):
# a real server and sim agents, podman, an image built from busybox-static that the node
# already holds (a warm node: no pull). Each figure runs from just before its command is
# called to the moment the task's first command touches a file (its mtime, the host's
# clock, ns):
#   image   `gpool submit --image IMG -- touch F`   (submit, schedule, start order, agent,
#                                                    gpool __container-task, podman run)
#   bare    `gpool submit -- touch F`                (the same job on the host)
#   podman  `podman run` of the same command with the very options gpool gives it (read
#            from the engine's command line of a job: runtime, ulimits, network, mounts,
#            env file, user), by hand
# gpool's own part is image - podman (p50s). Then a gang: one job of 8 tasks in the image
# on 8 nodes (agents on 127.0.0.2..9), from the submit to each of the 8 containers running.
# The first WARM runs of each are left out. Prints p50, p99 and max in ms.
#
#   bench/container_start.sh [BUILD_DIR]   (default build/rel; any build with a gpool binary)
#   env: N=30 WARM=3 GANGS=5
# Needs root (the agent switches users), podman and the user nobody.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "${1:-$ROOT/build/rel}" 2>/dev/null && pwd) || BUILD=${1:-$ROOT/build/rel}
N=${N:-30} WARM=${WARM:-3} GANGS=${GANGS:-5}
[ -x "$BUILD/gpool" ] || { echo "build first: cmake -S . -B build/rel -DCMAKE_BUILD_TYPE=Release && cmake --build build/rel --target gpool_bin" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "needs root (the agent switches users)" >&2; exit 2; }
export GPOOL_BIN=$BUILD/gpool
source "$ROOT/tests/e2e/lib.sh"
for t in podman jq python3; do e2e_need "$t"; done
e2e_init

TAG=gpool-bench-$$-$RANDOM
IMG=localhost/$TAG:1
root=$E2E_DIR/rootfs
mkdir -p "$root/bin" "$root/tmp"
cp /bin/busybox "$root/bin/busybox"
for a in sh touch sleep; do ln -s busybox "$root/bin/$a"; done
tar -C "$root" -cf "$E2E_DIR/rootfs.tar" . || fail "tar"
podman import -q "$E2E_DIR/rootfs.tar" "$IMG" >/dev/null || fail "podman import"
trap 'podman rmi -f "$IMG" >/dev/null 2>&1; e2e_cleanup' EXIT

NOBODY_TOKEN=nob-$RANDOM$RANDOM
e2e_write_config
sed -i "s|^tokens:|tokens:\n  - {token: \"$NOBODY_TOKEN\", user: nobody, role: user}|" "$E2E_DIR/server.yaml"
sed -i 's/^node_timeout_s: .*/node_timeout_s: 30/' "$E2E_DIR/server.yaml"
e2e_server
agent() { # NAME ADDRESS
  mkdir -p "$E2E_DIR/agent-$1"
  e2e_spawn "$E2E_DIR/agent-$1.log" "$GPOOL" agent --server "$SERVER_URL" --token "$AGENT_TOKEN" \
    --name "$1" --sim 1xH100-80GB --data "$E2E_DIR/agent-$1" --heartbeat-s 1 --listen "$2:0" \
    --labels "role=$3"
}
agent n1 127.0.0.1 single
wait_for 20 "node n1 to be up" node_is n1 up
chmod 711 "$E2E_DIR"
work=$E2E_DIR/work
mkdir -p "$work"
chown nobody: "$work"
export GPOOL_TOKEN=$NOBODY_TOKEN
# The node's inventory names the image before the first run (a warm node).
wait_for 90 "n1 to report $IMG" sh -c "'$GPOOL' images --node n1 | grep -q '$TAG'"

now_ns() { date +%s%N; }
mtime_ns() { stat -c %.9Y "$1" | tr -d .; }
ended() { case "$(job_field "$1" .state)" in completed|failed|cancelled) return 0;; esac; return 1; }
# one KIND I: a line "KIND I START_NS RUNNING_NS"
one() {
  local kind=$1 i=$2 f=$work/m.$1.$2 t0 j
  rm -f "$f"
  t0=$(now_ns)
  case $kind in
    image) j=$("$GPOOL" submit -D "$work" --node-selector role=single --image "$IMG" -- touch "$f") ;;
    bare) j=$("$GPOOL" submit -D "$work" --node-selector role=single -- touch "$f") ;;
    podman) "${PODMAN[@]}" touch "$f" || fail "podman run" ;;
  esac
  if [ "$kind" != podman ]; then
    [ -n "$j" ] || fail "submit"
    wait_for 60 "job $j to end" ended "$j"
    job_is "$j" completed || fail "job $j: $("$GPOOL" show "$j" 2>&1 | tail -5)"
  fi
  [ -e "$f" ] || fail "$kind $i wrote no file"
  echo "$kind $i $t0 $(mtime_ns "$f")" >>"$E2E_DIR/times"
}
# The plain run: the very command line gpool's agent gives a job's container (read from the
# engine's process while a job holds it: same options, env file, mounts, user), with a name
# of its own each time and this run's command.
j=$("$GPOOL" submit -D "$work" --node-selector role=single --image "$IMG" -- sleep 4) || fail "submit"
wait_for 20 "the engine to run job $j" sh -c "pgrep -f 'podman.* --name gpool-[0-9a-f]*-$j ' >/dev/null"
pid=$(pgrep -f "podman.* --name gpool-[0-9a-f]*-$j " | head -1)
mapfile -d '' -t argv <"/proc/$pid/cmdline"
PODMAN=()
for ((k = 0; k < ${#argv[@]}; k++)); do
  a=${argv[$k]}
  case $a in
    --env-file) cp "${argv[$((k + 1))]}" "$E2E_DIR/plain.env"; PODMAN+=(--env-file "$E2E_DIR/plain.env"); k=$((k + 1)) ;;
    --name) PODMAN+=(--name "plain-$$"); k=$((k + 1)) ;;
    --volume=$E2E_DIR/agent-n1/*) # the job's directory, gone with the job: one of its own
      v=${a#--volume=}; mkdir -p "$E2E_DIR/plainjob"; PODMAN+=("--volume=$E2E_DIR/plainjob:${v#*:}") ;;
    "$IMG") PODMAN+=("$IMG"); break ;;
    *) PODMAN+=("$a") ;;
  esac
done
wait_for 20 "job $j to end" ended "$j"
echo "plain run: ${PODMAN[*]}" >&2
: >"$E2E_DIR/times"
for i in $(seq 1 "$N"); do
  for kind in image bare podman; do one "$kind" "$i"; done
done

# The gang: 8 nodes, one task each, all in the image.
for k in 2 3 4 5 6 7 8 9; do agent "g$k" "127.0.0.$k" gang; done
for k in 2 3 4 5 6 7 8 9; do wait_for 30 "node g$k to be up" node_is "g$k" up; done
for k in 2 3 4 5 6 7 8 9; do wait_for 90 "g$k to report $IMG" sh -c "'$GPOOL' images --node g$k | grep -q '$TAG'"; done
: >"$E2E_DIR/gang"
for g in $(seq 1 "$GANGS"); do
  rm -f "$work"/g.*
  t0=$(now_ns)
  j=$("$GPOOL" submit -D "$work" -N 8 --ntasks-per-node 1 -g 1 --node-selector role=gang --image "$IMG" \
    -- sh -c "touch $work/g.\$GPOOL_TASK_INDEX") || fail "gang submit"
  wait_for 60 "gang $j to end" ended "$j"
  job_is "$j" completed || fail "gang $j: $("$GPOOL" show "$j" 2>&1 | tail -3) $(GPOOL_TOKEN=$ADMIN_TOKEN "$GPOOL" logs --stderr "$j" --task 4 2>&1 | tail -5)"
  [ "$(ls "$work"/g.* | wc -l)" = 8 ] || fail "gang $j: $(ls "$work"/g.* | wc -l) of 8 tasks ran"
  echo "$g $t0 $(for f in "$work"/g.*; do mtime_ns "$f"; done | tr '\n' ' ')" >>"$E2E_DIR/gang"
done

python3 - "$E2E_DIR" "$WARM" <<'PY'
import os, sys
d, warm = sys.argv[1], int(sys.argv[2])
def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))]
def show(name, v):
    print(f"{name:<34} n={len(v):3d}  p50 {pct(v, 50):7.1f}  p99 {pct(v, 99):7.1f}  max {max(v):7.1f} ms")
    return pct(v, 50)
runs = {}
for line in open(os.path.join(d, "times")):
    kind, i, t0, t1 = line.split()
    if int(i) > warm:
        runs.setdefault(kind, []).append((int(t1) - int(t0)) / 1e6)
p = {k: show(f"{k}: call to task running", runs[k]) for k in ("image", "bare", "podman")}
print(f"{'image - bare (the container)':<34} p50 {p['image'] - p['bare']:7.1f} ms")
print(f"{'image - podman (gpool own part)':<34} p50 {p['image'] - p['podman']:7.1f} ms")
last, first = [], []
for line in open(os.path.join(d, "gang")):
    g, t0, *ts = line.split()
    ts = [int(t) for t in ts]
    first.append((min(ts) - int(t0)) / 1e6)
    last.append((max(ts) - int(t0)) / 1e6)
show("gang of 8: submit to first running", first)
show("gang of 8: submit to all 8 running", last)
PY
