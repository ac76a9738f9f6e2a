# SPDX-License-Identifier: Apache-2.0
# Helpers for gpool's end-to-end tests (sourced by tests/e2e/*_test.sh): a temporary
# directory per test, a server and agents as real processes on 127.0.0.1 with their own
# SQLite files, bounded waits, and a trap that kills every child on exit, whatever happens.
#
#   source "$(dirname "$0")/lib.sh"
#   e2e_init                     # temp dir, traps, client settings isolated from ~/.config
#   e2e_server [EXTRA_YAML]      # writes server.yaml (tokens: admin alice, user bob, agent,
#                                # and those in $E2E_TOKENS (e2e_others); queue lines in
#                                # $E2E_QUEUES go under queues:)
#   e2e_agent n1 2xH100-80GB [agent flags...]
#   as_alice gpool submit -g 1 -- true
#   wait_for 10 "job $id completed" job_is "$id" completed
set -uo pipefail

GPOOL=${GPOOL_BIN:?GPOOL_BIN must point at the gpool binary}
E2E_PIDS=()
E2E_DIR=""
SERVER_URL=""
ADMIN_TOKEN=adm-$RANDOM$RANDOM
BOB_TOKEN=bob-$RANDOM$RANDOM
AGENT_TOKEN=agt-$RANDOM$RANDOM

# A missing tool fails the test: scripts/setup.sh installs every one, so a quiet skip would
# hide a broken setup.
e2e_need() { command -v "$1" >/dev/null || { echo "FAIL: $1 is not installed (run scripts/setup.sh)" >&2; exit 1; }; }
fail() {
  echo "FAIL: $*" >&2
  e2e_dump_logs
  exit 1
}
e2e_dump_logs() {
  [ -n "$E2E_DIR" ] || return 0
  for f in "$E2E_DIR"/*.log; do
    [ -f "$f" ] || continue
    echo "--- $f (last 30 lines)" >&2
    tail -n 30 "$f" >&2
  done
}

# Ends every process e2e_spawn started (TERM, then KILL after 3 s).
e2e_stop_spawned() {
  local pid
  for pid in "${E2E_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null; done
  for _ in $(seq 1 30); do
    local alive=0
    for pid in "${E2E_PIDS[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [ $alive = 0 ] && break
    sleep 0.1
  done
  for pid in "${E2E_PIDS[@]}"; do kill -KILL "$pid" 2>/dev/null; done
}

# Agents' data directories whose containers go with the test (e2e_rm_containers).
E2E_CONTAINER_DIRS=()
# e2e_rm_containers DATADIR...: removes the engine's containers that the agents with these
# data directories started, running or not (a killed agent leaves its jobs' containers
# behind). agent_container.c names them "gpool-<FNV-1a of the data directory, 8 hex>-<job
# key>": only this test's agents' containers match, never another test's or a real node's.
e2e_container_prefix() {
  local d=$1 i c h=2166136261
  for ((i = 0; i < ${#d}; i++)); do
    LC_ALL=C printf -v c '%d' "'${d:i:1}"
    h=$(((h ^ (c & 255)) * 16777619 & 0xffffffff))
  done
  printf 'gpool-%08x-' "$h"
}
e2e_rm_containers() {
  command -v podman >/dev/null || return 0
  local d names
  for d in "$@"; do
    names=$(podman ps -a --format '{{.Names}}' 2>/dev/null | grep "^$(e2e_container_prefix "$d")")
    [ -n "$names" ] && podman rm -f -t 0 $names >/dev/null 2>&1
  done
  return 0
}

e2e_cleanup() {
  e2e_stop_spawned
  [ ${#E2E_CONTAINER_DIRS[@]} -gt 0 ] && e2e_rm_containers "${E2E_CONTAINER_DIRS[@]}"
  # Job processes the agents started live in their own sessions; tests submit from inside
  # the test dir, so jobs run there (their cwd) and can be found and ended too. A service's
  # replicas run in the owner's home instead: they carry this test's GPOOL_E2E_DIR (the
  # agents pass it on), which finds them.
  if [ -n "$E2E_DIR" ]; then
    local p d
    for d in /proc/[0-9]*; do
      p=${d#/proc/}
      [ "$p" = $$ ] && continue
      case "$(readlink "$d/cwd" 2>/dev/null)" in
        "$E2E_DIR"*) kill -KILL "$p" 2>/dev/null ;;
        *) grep -qzx "GPOOL_E2E_DIR=$E2E_DIR" "$d/environ" 2>/dev/null && kill -KILL "$p" 2>/dev/null ;;
      esac
    done
    cd / && { [ -n "${E2E_KEEP:-}" ] || rm -rf "$E2E_DIR"; }
  fi
}

e2e_init() {
  e2e_need jq
  e2e_need curl
  E2E_DIR=$(mktemp -d /tmp/gpool-e2e.XXXXXX)
  export GPOOL_E2E_DIR=$E2E_DIR
  export GPOOL_CONFIG_DIR=$E2E_DIR/client
  unset GPOOL_SERVER GPOOL_TOKEN
  cd "$E2E_DIR" || exit 1
  trap e2e_cleanup EXIT
  trap 'exit 130' INT TERM
}

# Starts a background process, remembering it for cleanup; prints its pid.
e2e_spawn() {
  local log=$1
  shift
  "$@" >>"$log" 2>&1 &
  E2E_PIDS+=($!)
  LAST_PID=$!
}

# wait_for SECONDS DESCRIPTION COMMAND...: retries COMMAND every 0.1 s.
wait_for() {
  local limit=$1 what=$2
  shift 2
  local deadline=$((SECONDS + limit))
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -ge $deadline ] && fail "timed out after ${limit}s waiting for: $what"
    sleep 0.1
  done
}

e2e_write_config() {
  local extra=${1:-}
  mkdir -p "$E2E_DIR/server"
  cat >"$E2E_DIR/server.yaml" <<EOF
listen: 127.0.0.1:0
data_dir: $E2E_DIR/server
tokens:
  - {token: "$ADMIN_TOKEN", user: alice, role: admin}
  - {token: "$BOB_TOKEN", user: bob, role: user}
  - {token: "$AGENT_TOKEN", user: agent, role: agent}
${E2E_TOKENS:-}
queues:
  - {name: default, users: ["*"]}
${E2E_QUEUES:-}
default_queue: default
node_timeout_s: 3
$extra
EOF
}

# For tests of who may see or enter a job: another user, carol ($CAROL_TOKEN), and a
# viewer, vic ($VIEWER_TOKEN), join the tokens e2e_write_config writes ($E2E_TOKENS).
e2e_others() {
  CAROL_TOKEN=carol-$RANDOM$RANDOM
  VIEWER_TOKEN=view-$RANDOM$RANDOM
  E2E_TOKENS="  - {token: \"$CAROL_TOKEN\", user: carol, role: user}
  - {token: \"$VIEWER_TOKEN\", user: vic, role: viewer}"
}

# Starts the server on a free port and waits for it to answer /healthz.
e2e_server() {
  [ -f "$E2E_DIR/server.yaml" ] || e2e_write_config "${1:-}"
  # A restart keeps the address agents and clients already know.
  [ -n "$SERVER_URL" ] && sed -i "s|^listen: .*|listen: ${SERVER_URL#http://}|" "$E2E_DIR/server.yaml"
  rm -f "$E2E_DIR/server/server.url"
  e2e_spawn "$E2E_DIR/server.log" "$GPOOL" server --config "$E2E_DIR/server.yaml"
  SERVER_PID=$LAST_PID
  wait_for 20 "the server to write server.url" test -s "$E2E_DIR/server/server.url"
  SERVER_URL=$(head -n1 "$E2E_DIR/server/server.url")
  wait_for 10 "the server to answer /healthz" curl -fsS "$SERVER_URL/healthz"
  export GPOOL_SERVER=$SERVER_URL
}

# e2e_agent NAME SIMSPEC [more agent flags]: starts an agent and waits until its node is up.
e2e_agent() {
  local name=$1 sim=$2
  shift 2
  mkdir -p "$E2E_DIR/agent-$name"
  e2e_spawn "$E2E_DIR/agent-$name.log" "$GPOOL" agent --server "$SERVER_URL" --token "$AGENT_TOKEN" \
    --name "$name" --sim "$sim" --data "$E2E_DIR/agent-$name" --personal --heartbeat-s 1 "$@"
  eval "AGENT_PID_${name//[^a-zA-Z0-9]/_}=$LAST_PID"
  wait_for 20 "node $name to be up" node_is "$name" up
}
agent_pid() { local v="AGENT_PID_${1//[^a-zA-Z0-9]/_}"; echo "${!v}"; }

# A job command's tail that holds the job until the test calls open_gate (60 s at most), so
# that checks of running jobs never race the jobs' own end on a slow machine:
#   "$GPOOL" submit -- sh -c "echo hi; $(gate_wait)"
gate_wait() { echo "i=0; while [ ! -e '$E2E_DIR/gate' ] && [ \$i -lt 600 ]; do sleep 0.1; i=\$((i + 1)); done"; }
open_gate() { touch "$E2E_DIR/gate"; }

as_alice() { GPOOL_TOKEN=$ADMIN_TOKEN "$@"; }
as_bob() { GPOOL_TOKEN=$BOB_TOKEN "$@"; }

job_json() { GPOOL_TOKEN=$ADMIN_TOKEN "$GPOOL" show "$1" -o json; }
job_field() { job_json "$1" | jq -r "$2"; }
job_is() { [ "$(job_field "$1" .state)" = "$2" ]; }
# job_field_is JOB FILTER VALUE: for wait_for, which must re-read the field on every try
# (`wait_for ... test "$(job_field ...)" = X` reads it once, before the first try).
job_field_is() { [ "$(job_field "$1" "$2")" = "$3" ]; }
# The agent has started the job's process (the server marks a job running when it orders
# the start; the agent's "launched" event follows once the process exists).
job_launched() { [ "$(job_field "$1" '[.timeline[] | select(.event == "launched")] | length')" -ge "${2:-1}" ]; }
node_is() {
  [ "$(GPOOL_TOKEN=$ADMIN_TOKEN "$GPOOL" nodes -o json | jq -r --arg n "$1" '.[] | select(.name == $n) | .state')" = "$2" ]
}

# Raw API calls for what the CLI would never send: prints the HTTP status, body in $E2E_DIR/body.
api_status() {
  local method=$1 path=$2 token=$3
  shift 3
  curl -sS -o "$E2E_DIR/body" -w '%{http_code}' -X "$method" -H "Authorization: Bearer $token" \
    -H 'Content-Type: application/json' "$@" "$SERVER_URL$path"
}

expect_eq() { [ "$1" = "$2" ] || fail "$3: expected '$1', got '$2'"; }
expect_contains() { case "$1" in *"$2"*) ;; *) fail "$3: expected to find '$2' in: $1" ;; esac; }

# ---- container images and a registry (container_test.sh, registry_test.sh) ----
# Ends the test (0) when podman cannot run containers on this machine at all, and says so
# loudly: only such a node skips.
e2e_podman_works() {
  local out
  if ! out=$(podman info --format '{{.Host.OCIRuntime.Name}}' 2>&1); then
    echo "SKIPPED LOUDLY: podman cannot work on this machine: $out" >&2
    exit 0
  fi
}
# e2e_image_root DIR APPLET...: an image's root in DIR: busybox-static and these applets.
e2e_image_root() {
  local d=$1 a
  shift
  mkdir -p "$d/bin" "$d/tmp"
  cp /bin/busybox "$d/bin/busybox"
  for a in "$@"; do ln -s busybox "$d/bin/$a"; done
}
# e2e_image_import DIR NAME: the root in DIR as the engine's image NAME (through DIR.tar).
e2e_image_import() {
  tar -C "$1" -cf "$1.tar" . || fail "tar $1"
  podman import -q "$1.tar" "$2" >/dev/null || fail "podman import $2"
}
# e2e_registry USER PASSWORD: Debian's docker-registry on a free port of 127.0.0.1 with
# htpasswd auth for one user; sets PORT and REG (127.0.0.1:PORT) once it answers.
e2e_registry() {
  PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  REG=127.0.0.1:$PORT
  htpasswd -Bbn "$1" "$2" >"$E2E_DIR/htpasswd" 2>/dev/null || fail "htpasswd"
  cat >"$E2E_DIR/registry.yml" <<YML
version: 0.1
log: {level: error}
storage: {filesystem: {rootdirectory: $E2E_DIR/registry}}
http: {addr: "$REG"}
auth: {htpasswd: {realm: e2e, path: $E2E_DIR/htpasswd}}
YML
  e2e_spawn "$E2E_DIR/registry.log" docker-registry serve "$E2E_DIR/registry.yml"
  wait_for 10 "the registry to answer" curl -s -o /dev/null "http://$REG/v2/"
}
