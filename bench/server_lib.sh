# SPDX-License-Identifier: Apache-2.0
# Sourced by the benchmark scripts that drive a real `gpool server`: one fresh server with an
# empty SQLite store in a directory of their own, its tokens bench-admin and bench-agent, one
# queue open to everyone.
#   bench_server_start GPOOL DIR NODE_TIMEOUT_S   sets SERVER_PID and URL (stops a previous one)
#   bench_server_stop
# Benches that bring a store of their own (DIR/data/gpool.db) write the config and start the
# server on it without emptying DIR:
#   bench_server_config DIR NODE_TIMEOUT_S [EXTRA_YAML_LINES]
#   bench_server_run GPOOL DIR [LOAD_TIMEOUT_S]   also waits until /healthz answers 200 (the
#                                                 store loaded; default 600 s)
#   bench_get_best PATH?QUERY                     prints the best of 3 GETs as bench-admin (ms)
# The year benches (report_year.sh, advice_year.sh) share their store's making:
#   bench_year_store BUILD BENCH [WHAT]           sets TMP (see below)
SERVER_PID=""
URL=""

bench_server_stop() {
  [ -n "$SERVER_PID" ] && { kill "$SERVER_PID" 2>/dev/null; wait "$SERVER_PID" 2>/dev/null || true; }
  SERVER_PID=""
}

bench_server_config() {
  local dir=$1 timeout=$2 extra=${3:-}
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
max_pending_per_user: 10000000
max_pending_per_queue: 10000000
max_job_bytes: 262144
$extra
EOF
}

bench_server_run() {
  local gpool=$1 dir=$2 load_timeout=${3:-600}
  bench_server_stop
  rm -f "$dir/data/server.url"
  "$gpool" server --config "$dir/server.yaml" >"$dir/server.log" 2>&1 &
  SERVER_PID=$!
  for _ in $(seq 1 200); do [ -s "$dir/data/server.url" ] && break; sleep 0.05; done
  URL=$(head -n1 "$dir/data/server.url")
  local deadline=$((SECONDS + load_timeout))
  until curl -fsS -o /dev/null "$URL/healthz" 2>/dev/null; do
    [ "$SECONDS" -lt "$deadline" ] || { echo "the server did not load its store in ${load_timeout} s" >&2; return 1; }
    sleep 0.01
  done
}

bench_server_start() {
  local gpool=$1 dir=$2 timeout=$3
  bench_server_stop
  rm -rf "$dir"
  bench_server_config "$dir" "$timeout"
  bench_server_run "$gpool" "$dir"
}

# bench_get_best PATH?QUERY: GETs $URL/PATH?QUERY as bench-admin three times and prints the
# best wall time in ms; the last answer is in $TMP/answer.json. Exits on any status but 200.
bench_get_best() {
  local best="" t ms
  for _ in 1 2 3; do
    t=$(curl -s -o "$TMP/answer.json" -w '%{http_code} %{time_total}' \
          -H "Authorization: Bearer bench-admin" "$URL$1")
    [ "${t%% *}" = 200 ] || { echo "$1 answered ${t%% *}: $(head -c 300 "$TMP/answer.json")" >&2; exit 1; }
    ms=$(awk -v s="${t#* }" 'BEGIN {printf "%.1f", s * 1000}')
    best=$(awk -v a="$best" -v b="$ms" 'BEGIN {print (a == "" || b + 0 < a + 0) ? b : a}')
  done
  echo "$best"
}

# bench_year_store BUILD BENCH [WHAT]: BUILD must hold gpool and BENCH (bench_report_year,
# bench_advice_year). TMP is $KEEP (kept, its store reused) or a fresh directory removed on
# exit, with the server stopped; its data/gpool.db is written by `BENCH write` with
# $INTERVALS intervals (and WHAT, said in the progress line) when missing.
bench_year_store() {
  local build=$1 bench=$2 what=${3:-} p
  for p in gpool "$bench"; do
    [ -x "$build/$p" ] || { echo "build first: cmake -S . -B build/rel -DCMAKE_BUILD_TYPE=Release && cmake --build build/rel --target gpool_bin $bench" >&2; exit 2; }
  done
  TMP=${KEEP:-$(mktemp -d "/tmp/gpool-${bench#bench_}.XXXXXX")}
  trap bench_year_cleanup EXIT
  mkdir -p "$TMP/data"
  chmod 700 "$TMP/data"
  if [ ! -s "$TMP/data/gpool.db" ]; then
    echo "== writing $INTERVALS intervals$what"
    "$build/$bench" write "$TMP/data/gpool.db" "$INTERVALS"
  fi
}
bench_year_cleanup() {
  bench_server_stop
  [ -n "${KEEP:-}" ] || rm -rf "$TMP"
}
