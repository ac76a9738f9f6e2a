# SPDX-License-Identifier: Apache-2.0
# The failover chaos run, sourced by tests/e2e/failover_test.sh (a few rounds) and
# bench/failover.sh (many): three servers on one throw-away PostgreSQL, two agents with
# simulated GPUs, a stream of submissions through the list of servers, and in each round
# one fault on whichever server leads: kill -9 (then a restart), SIGSTOP past its lease
# (then SIGCONT), its database sessions terminated, or PostgreSQL restarted. After the
# rounds every acknowledged submission must be there, every job must end, no job may have
# started more often than it was run, and no epoch may have had two leaders.
#
#   source tests/e2e/lib.sh; source tests/e2e/failover_chaos.sh
#   chaos_setup; chaos_rounds N; chaos_check
# Figures go to $CHAOS_TSV (default $E2E_DIR/failover.tsv): fault, seconds from the fault to the first write
# acknowledged through the new leader.

CHAOS_LEASE_MS=${CHAOS_LEASE_MS:-3000}
CHAOS_RENEW_MS=${CHAOS_RENEW_MS:-500}
CHAOS_URLS=()
CHAOS_PIDS=(0 0 0)
CHAOS_PG=""
CHAOS_SUBMITTER=""

chaos_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

chaos_config() {
  local i=$1 port=$2
  mkdir -p "$E2E_DIR/s$i"
  cat >"$E2E_DIR/s$i.yaml" <<EOF
listen: 127.0.0.1:$port
data_dir: $E2E_DIR/s$i
store: $CHAOS_PG
ha: {lease_ms: $CHAOS_LEASE_MS, renew_ms: $CHAOS_RENEW_MS, id: s$i}
tokens:
  - {token: "$ADMIN_TOKEN", user: alice, role: admin}
  - {token: "$AGENT_TOKEN", user: agent, role: agent}
queues:
  - {name: default, users: ["*"]}
default_queue: default
node_timeout_s: 30
schedule_interval_ms: 200
EOF
}

chaos_start_server() {
  local i=$1
  e2e_spawn "$E2E_DIR/s$i.log" "$GPOOL" server --config "$E2E_DIR/s$i.yaml"
  CHAOS_PIDS[$i]=$LAST_PID
  wait_for 20 "server s$i to answer /livez" curl -fsS --max-time 1 "${CHAOS_URLS[$i]}/livez"
}

# What each server says of the lease, for a failure's message.
chaos_views() {
  local i
  for i in 0 1 2; do
    echo "s$i: $(curl -sS --max-time 1 -H "Authorization: Bearer $ADMIN_TOKEN" "${CHAOS_URLS[$i]}/v1/leader" 2>&1)"
  done
}

# Which server leads now (its index), by asking each; fails when none or two say so.
chaos_leader() {
  local i n=0 found=""
  for i in 0 1 2; do
    if curl -fsS --max-time 1 -H "Authorization: Bearer $ADMIN_TOKEN" "${CHAOS_URLS[$i]}/v1/leader" 2>/dev/null |
      jq -e '.role == "leader"' >/dev/null 2>&1; then
      found=$i
      n=$((n + 1))
    fi
  done
  [ "$n" = 1 ] && echo "$found"
}

chaos_setup() {
  e2e_need python3
  e2e_need bc
  e2e_need ss
  CHAOS_PG=$(bash "$GP_SOURCE_DIR/tests/e2e/failover_pg.sh" start "$E2E_DIR/pg") || fail "PostgreSQL did not start"
  trap 'bash "$GP_SOURCE_DIR/tests/e2e/failover_pg.sh" stop "$E2E_DIR/pg"; e2e_cleanup' EXIT
  local i
  for i in 0 1 2; do
    local port
    port=$(chaos_port)
    CHAOS_URLS[$i]="http://127.0.0.1:$port"
    chaos_config "$i" "$port"
  done
  export GPOOL_SERVER="${CHAOS_URLS[0]},${CHAOS_URLS[1]},${CHAOS_URLS[2]}"
  SERVER_URL=${CHAOS_URLS[0]}
  for i in 0 1 2; do chaos_start_server "$i"; done
  wait_for 20 "one server to lead" chaos_leader
  local name
  for name in n1 n2; do
    mkdir -p "$E2E_DIR/agent-$name"
    e2e_spawn "$E2E_DIR/agent-$name.log" "$GPOOL" agent --server "$GPOOL_SERVER" --token "$AGENT_TOKEN" \
      --name "$name" --sim 2xH100-80GB --data "$E2E_DIR/agent-$name" --personal --heartbeat-s 1
  done
  wait_for 30 "both nodes up" sh -c "[ \"\$(GPOOL_TOKEN=$ADMIN_TOKEN '$GPOOL' nodes -o json | jq '[.[] | select(.state == \"up\")] | length')\" = 2 ]"
  # The stream: one submission at a time, every acknowledged id recorded.
  (
    k=0
    while [ ! -e "$E2E_DIR/stop-submitting" ] && [ $k -lt 2000 ]; do
      k=$((k + 1))
      out=$(GPOOL_TOKEN=$ADMIN_TOKEN "$GPOOL" submit -g 1 -n "s$k" -- sleep 0.$((RANDOM % 9 + 1)) 2>/dev/null) &&
        echo "$out" >>"$E2E_DIR/acked"
      sleep 0.05
    done
  ) &
  CHAOS_SUBMITTER=$!
  E2E_PIDS+=("$CHAOS_SUBMITTER")
  CHAOS_TSV=${CHAOS_TSV:-$E2E_DIR/failover.tsv}
  : >"$CHAOS_TSV"
}

# Seconds (with ms) since the epoch.
chaos_now() { date +%s.%N | cut -c1-14; }

# One held submission straight to each server in turn, 1 s each (a frozen leader must not
# hold the probe for a client's whole timeout): succeeds once one of them takes it, which
# only a leader does; its id joins the acknowledged ones. A server index to skip (the one
# killed or stopped) may be given.
chaos_probe() {
  local skip=${1:--1} i u out
  for i in 0 1 2; do
    [ "$i" = "$skip" ] && continue
    u=${CHAOS_URLS[$i]}
    out=$(curl -sS --max-time 1 -X POST -H "Authorization: Bearer $ADMIN_TOKEN" -H 'Content-Type: application/json' \
      -d '{"command": ["true"], "name": "probe", "hold": true}' -w '\n%{http_code}' "$u/v1/jobs" 2>/dev/null)
    if [ "${out##*$'\n'}" = 201 ]; then
      printf '%s\n' "${out%$'\n'*}" | jq -r .job.id >>"$E2E_DIR/acked"
      return 0
    fi
  done
  return 1
}

# Time from t0 until a write goes through (not asking server $2, when given).
chaos_time_to_write() {
  local t0=$1 deadline=$((SECONDS + 60))
  until chaos_probe "${2:--1}"; do
    [ $SECONDS -ge $deadline ] && { echo "fail"; return; }
    sleep 0.05
  done
  echo "$(chaos_now) - $t0" | bc
}

# The leader's sessions with the database (its lease connection and its store's).
chaos_kill_sessions() {
  local pid=$1 port
  port=${CHAOS_PG##*:}
  port=${port%%/*}
  local ports
  ports=$(ss -tnp 2>/dev/null | awk -v p="pid=$pid," -v dst=":$port" '$0 ~ p && $5 ~ dst"$" { n = split($4, a, ":"); print a[n] }' | paste -sd, -)
  [ -n "$ports" ] || return 0
  psql -qtA "$CHAOS_PG" -c "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE client_port IN ($ports)" >/dev/null
}

chaos_round() {
  local leader fault t0 took
  leader=$(chaos_leader) || { wait_for 30 "a leader" chaos_leader; leader=$(chaos_leader); }
  local pid=${CHAOS_PIDS[$leader]}
  fault=${1:-$(shuf -n1 -e kill stop sessions pg)}
  t0=$(chaos_now)
  case $fault in
  kill)
    kill -9 "$pid"
    took=$(chaos_time_to_write "$t0" "$leader")
    chaos_start_server "$leader"
    ;;
  stop)
    kill -STOP "$pid"
    took=$(chaos_time_to_write "$t0" "$leader")
    # Keep it stopped past its lease, then let it run: it must find itself fenced.
    sleep "$(echo "$CHAOS_LEASE_MS / 1000 + 0.5" | bc)"
    kill -CONT "$pid"
    ;;
  sessions)
    chaos_kill_sessions "$pid"
    took=$(chaos_time_to_write "$t0")
    ;;
  pg)
    bash "$GP_SOURCE_DIR/tests/e2e/failover_pg.sh" restart "$E2E_DIR/pg" || fail "PostgreSQL did not restart"
    took=$(chaos_time_to_write "$t0")
    ;;
  esac
  [ "$took" = fail ] && fail "no write went through within 60 s after fault $fault"
  printf '%s\t%s\n' "$fault" "$took" >>"$CHAOS_TSV"
  local deadline=$((SECONDS + 30))
  until chaos_leader >/dev/null; do
    [ $SECONDS -ge $deadline ] && fail "no single leader 30 s after fault $fault: $(chaos_views)"
    sleep 0.1
  done
}

chaos_rounds() {
  local n=$1 i
  for i in $(seq 1 "$n"); do
    sleep "0.$((RANDOM % 9 + 1))"
    chaos_round "${CHAOS_FAULTS[$(((i - 1) % ${#CHAOS_FAULTS[@]}))]:-}"
  done
}

# True once no job is left; releases the held probes it finds on the way.
chaos_all_ended() {
  local held
  held=$("$GPOOL" jobs -s held -o json 2>/dev/null | jq -r '.[].id' | paste -sd' ' -)
  [ -n "$held" ] && { "$GPOOL" release $held >/dev/null 2>&1 || true; }
  [ "$("$GPOOL" jobs -o json 2>/dev/null | jq length)" = 0 ]
}

chaos_check() {
  touch "$E2E_DIR/stop-submitting"
  wait "$CHAOS_SUBMITTER" 2>/dev/null
  export GPOOL_TOKEN=$ADMIN_TOKEN
  # Every job ends. Probes were held: let them run too, releasing again on every look, as
  # a release refused on a loaded machine (a 503 while a write does not fit, a leader that
  # is still loading) would otherwise leave a probe held for good.
  wait_for 120 "every job to end" chaos_all_ended
  # Every acknowledged submission is there: one listing of every job, against the ids.
  "$GPOOL" jobs -a --limit 10000 -o json >"$E2E_DIR/all.json" || fail "cannot list the jobs"
  jq -r '.[].id' "$E2E_DIR/all.json" | sort -u >"$E2E_DIR/all.ids"
  sort -u "$E2E_DIR/acked" | grep . >"$E2E_DIR/acked.ids"
  local acked lost
  acked=$(grep -c . "$E2E_DIR/acked.ids")
  [ "$acked" -gt 0 ] || fail "nothing was acknowledged"
  lost=$(comm -23 "$E2E_DIR/acked.ids" "$E2E_DIR/all.ids" | grep -c .)
  comm -23 "$E2E_DIR/acked.ids" "$E2E_DIR/all.ids" | sed 's/^/lost acknowledged job /' >&2
  echo "$lost" >"$E2E_DIR/lost"
  # No job started more often than it ran: the starts the agents logged per job against
  # its runs (1 + restarts).
  grep -h "task 0 started" "$E2E_DIR"/agent-*.log | sed -E 's/.* job ([0-9]+) task 0 started.*/\1/' |
    sort | uniq -c | awk '{ print $2, $1 }' | sort >"$E2E_DIR/starts"
  jq -r '.[] | "\(.id) \(.restarts + 1)"' "$E2E_DIR/all.json" | sort >"$E2E_DIR/runs"
  join "$E2E_DIR/starts" "$E2E_DIR/runs" | awk '$2 > $3 { print "job " $1 " started " $2 " times in " $3 " runs" }' \
    >"$E2E_DIR/doubles.txt"
  cat "$E2E_DIR/doubles.txt" >&2
  grep -c . "$E2E_DIR/doubles.txt" >"$E2E_DIR/doubles"
  # One leader per epoch: no epoch taken by two servers (a server may lead again under its
  # own epoch after a lapse: counted once per server).
  local two
  two=$(for f in "$E2E_DIR"/s?.log; do grep -o "leading under epoch [0-9]*" "$f" | sort -u; done | sort | uniq -d | head -n1)
  [ -z "$two" ] || fail "two servers led under the same epoch ($two)"
  [ "$lost" = 0 ] || fail "$lost acknowledged submissions lost of $acked"
  [ "$(cat "$E2E_DIR/doubles")" = 0 ] || fail "$(cat "$E2E_DIR/doubles") jobs started twice"
}
