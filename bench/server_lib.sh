# SPDX-License-Identifier: Apache-2.0
# Sourced by the benchmark scripts that drive a real `gpool server`: one fresh server with an
# empty SQLite store in a directory of their own, its tokens bench-admin and bench-agent, one
# queue open to everyone.
#   bench_server_start GPOOL DIR NODE_TIMEOUT_S   sets SERVER_PID and URL (stops a previous one)
#   bench_server_stop
SERVER_PID=""
URL=""

bench_server_stop() {
  [ -n "$SERVER_PID" ] && { kill "$SERVER_PID" 2>/dev/null; wait "$SERVER_PID" 2>/dev/null || true; }
  SERVER_PID=""
}

bench_server_start() {
  local gpool=$1 dir=$2 timeout=$3
  bench_server_stop
  rm -rf "$dir"
  mkdir -p "$dir/data"
  cat >"$dir/server.yaml" <<EOF
listen: 127.0.0.1:0
data_dir: $dir/data
tokens:
  - {token: bench-admin, user: bench, role: admin}
  - {token: bench-agent, user: agent, role: agent}
queues:
  - {name: default, users: ["*"]}
default_queue: default
node_timeout_s: $timeout
# A bench measures capacity, not policy: the submission limits are out of its way.
max_pending_per_user: 10000000
max_pending_per_queue: 10000000
max_job_bytes: 262144
EOF
  "$gpool" server --config "$dir/server.yaml" >"$dir/server.log" 2>&1 &
  SERVER_PID=$!
  for _ in $(seq 1 200); do [ -s "$dir/data/server.url" ] && break; sleep 0.05; done
  URL=$(head -n1 "$dir/data/server.url")
}
