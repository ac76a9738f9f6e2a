#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A pool under a mixed load for a bounded time: a server and a few simulated agents on
# 127.0.0.1 (real processes, their own SQLite files, as tests/e2e/lib.sh starts them) take
# submissions, cancels, log reads, list reads and health checks while agents are killed
# (kill -9) and restarted, and a slow client army holds many connections open with partial
# request headers. When the load stops and the pool drains, it checks that:
#   - every job the server acknowledged (201) exists, and every one reached a final state;
#   - no request of a well-behaved client went unanswered (no timeout, no 5xx other than
#     the 502/503 of a log read whose agent is down), and /healthz kept answering in time;
#   - the server stayed up and its resident memory stayed under SOAK_MAX_RSS_MIB.
# Prints one summary line; exits non-zero naming each check that failed.
#
#   DURATION=300 scripts/soak.sh       (tests/e2e/soak_test.sh runs it for 30 s)
#
# The army connects from other loopback addresses (127.0.0.2, 127.0.0.3, ...) than the
# well-behaved clients and agents (127.0.0.1), so a per-address connection cap refuses the
# army without refusing them; the server may refuse or close the army's connections, and
# that is counted, not failed. Settings (environment):
#   GPOOL_BIN             the gpool binary (default: build/asan/gpool, else build/release/gpool)
#   DURATION              seconds of load (default 180)
#   SOAK_AGENTS           simulated agents, 4 GPUs each (default 3)
#   SOAK_SUBMITTERS       parallel submitters (default 2); SOAK_SUBMIT_GAP_S between two
#                         submissions of one submitter (default 0.2)
#   SOAK_RESTART_S        mean seconds between two agent kills (default 6); an agent stays
#                         away 0.5 to 5 s, past node_timeout_s (3) at times
#   SOAK_SLOW_CLIENTS     slow connections held open (default 300), spread over
#   SOAK_SLOW_ADDRS       source addresses 127.0.0.2 .. (default 4); each connection sends
#                         one more header line every SOAK_SLOW_INTERVAL_S (default 5)
#   SOAK_SERVER_YAML      extra server.yaml lines (limits, connection caps) for the run
#   SOAK_MAX_RSS_MIB      bound on the server's resident memory (default 512, for an ASan
#                         build, which 30 s of load take to about 70 MiB)
#   SOAK_MAX_HEALTHZ_S    bound on one /healthz answer during the load (default 5)
#   SOAK_DRAIN_S          time allowed for the pool to drain after the load (default 120)
set -uo pipefail
export LC_ALL=C # sort and join agree on the order of ids
ROOT=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "${GPOOL_BIN:-}" ]; then
  for b in "$ROOT/build/asan/gpool" "$ROOT/build/release/gpool"; do
    [ -x "$b" ] && { GPOOL_BIN=$b; break; }
  done
fi
export GPOOL_BIN=${GPOOL_BIN:?build gpool first (scripts/test.sh or scripts/run.sh) or set GPOOL_BIN}
DURATION=${DURATION:-180}
SOAK_AGENTS=${SOAK_AGENTS:-3}
SOAK_SUBMITTERS=${SOAK_SUBMITTERS:-2}
SOAK_SUBMIT_GAP_S=${SOAK_SUBMIT_GAP_S:-0.2}
SOAK_RESTART_S=${SOAK_RESTART_S:-6}
SOAK_SLOW_CLIENTS=${SOAK_SLOW_CLIENTS:-300}
SOAK_SLOW_ADDRS=${SOAK_SLOW_ADDRS:-4}
SOAK_SLOW_INTERVAL_S=${SOAK_SLOW_INTERVAL_S:-5}
SOAK_SERVER_YAML=${SOAK_SERVER_YAML:-}
SOAK_MAX_RSS_MIB=${SOAK_MAX_RSS_MIB:-512}
SOAK_MAX_HEALTHZ_S=${SOAK_MAX_HEALTHZ_S:-5}
SOAK_DRAIN_S=${SOAK_DRAIN_S:-120}

source "$ROOT/tests/e2e/lib.sh"
e2e_need python3
e2e_init
t0=$SECONDS
e2e_server "$SOAK_SERVER_YAML"
agents=()
for i in $(seq 1 "$SOAK_AGENTS"); do
  e2e_agent "s$i" 4xH100-80GB
  agents+=("s$i")
done
D=$E2E_DIR
setup_s=$((SECONDS - t0))
END=$((SECONDS + DURATION))

# api METHOD PATH TOKEN [curl args]: prints the HTTP status (000: no answer within 10 s).
api() {
  local method=$1 path=$2 token=$3
  shift 3
  curl -s -m 10 -o /dev/null -w '%{http_code}' -X "$method" -H "Authorization: Bearer $token" \
    -H 'Content-Type: application/json' "$@" "$SERVER_URL$path"
}
# A well-behaved request that got no answer or a server error: a finding.
bad_answer() { echo "$1 $2" >>"$D/errors"; }
random_acked() { cat "$D"/acked.* 2>/dev/null | shuf -n 1; }

# Submissions: whole-GPU jobs, two-task gangs and requeueable jobs, a fraction of a second
# to a few seconds long, so that agent restarts catch some of them running.
submitter() {
  local w=$1 i=0 code body cmd
  while [ $SECONDS -lt $END ]; do
    i=$((i + 1))
    cmd="[\"sh\",\"-c\",\"echo soak $w-$i; sleep 0.\$((\$\$ % 9)); echo done >&2\"]"
    case $((RANDOM % 4)) in
      0) body="{\"name\":\"soak-$w-$i\",\"workdir\":\"$D\",\"command\":$cmd,\"gpus\":2}" ;;
      1) body="{\"name\":\"soak-$w-$i\",\"workdir\":\"$D\",\"command\":$cmd,\"gpus\":1,\"tasks\":2}" ;;
      2) body="{\"name\":\"soak-$w-$i\",\"workdir\":\"$D\",\"command\":$cmd,\"gpus\":1,\"requeue\":true}" ;;
      *) body="{\"name\":\"soak-$w-$i\",\"workdir\":\"$D\",\"command\":[\"sleep\",\"$((RANDOM % 3))\"],\"gpus\":1}" ;;
    esac
    code=$(curl -s -m 10 -o "$D/submit.$w" -w '%{http_code}' -X POST \
      -H "Authorization: Bearer $BOB_TOKEN" -H 'Content-Type: application/json' -d "$body" \
      "$SERVER_URL/v1/jobs")
    case $code in
      201) jq -r .job.id <"$D/submit.$w" >>"$D/acked.$w" ;;
      000 | 5*) bad_answer submit "$code" ;;
      *) echo "$code" >>"$D/refused" ;; # a limit refused it: allowed, counted
    esac
    sleep "$SOAK_SUBMIT_GAP_S"
  done
}

# Cancels of random acknowledged jobs (pending, running or already ended: 409 is fine).
canceller() {
  local id code
  while [ $SECONDS -lt $END ]; do
    sleep 0.5
    id=$(random_acked)
    [ -n "$id" ] || continue
    code=$(api POST "/v1/jobs/$id/cancel" "$BOB_TOKEN")
    echo "$code" >>"$D/cancels"
    case $code in 000 | 5*) bad_answer cancel "$code" ;; esac
  done
}

# Log reads (proxied to the job's agent: 502/503 while that agent is down), job lists and
# node lists.
reader() {
  local id code
  while [ $SECONDS -lt $END ]; do
    sleep 0.2
    id=$(random_acked)
    if [ -n "$id" ]; then
      code=$(api GET "/v1/jobs/$id/log?stream=stdout&offset=0" "$BOB_TOKEN")
      echo "$code" >>"$D/logreads"
      case $code in 000 | 500 | 504) bad_answer log "$code" ;; esac
    fi
    code=$(api GET "/v1/jobs?state=pending,running&limit=100" "$ADMIN_TOKEN")
    case $code in 000 | 5*) bad_answer list "$code" ;; esac
    code=$(api GET /v1/nodes "$ADMIN_TOKEN")
    case $code in 000 | 5*) bad_answer nodes "$code" ;; esac
  done
}

# /healthz every half second: each answer's time, and the server's resident memory.
prober() {
  local t kib
  while [ $SECONDS -lt $END ]; do
    t=$(curl -s -m 10 -o /dev/null -w '%{http_code} %{time_total}' "$SERVER_URL/healthz")
    echo "$t" >>"$D/healthz"
    kib=$(awk '/^VmRSS:/ {print $2}' "/proc/$SERVER_PID/status" 2>/dev/null)
    [ -n "$kib" ] && echo "$kib" >>"$D/rss"
    sleep 0.5
  done
}

# The slow client army: SOAK_SLOW_CLIENTS connections from 127.0.0.2.. each sending an
# incomplete GET and one more header line every SOAK_SLOW_INTERVAL_S, reopened (at most
# once per interval) when the server closes or refuses one. Writes its counts to army.
army() {
  python3 - "$SERVER_URL" "$SOAK_SLOW_CLIENTS" "$SOAK_SLOW_ADDRS" "$SOAK_SLOW_INTERVAL_S" \
    "$(($(date +%s) + END - SECONDS))" "$D/army" <<'PY'
import socket, sys, time
url, n, n_addrs, interval, end_epoch, out = sys.argv[1:7]
host, port = url.split('//', 1)[1].rsplit(':', 1)
n, n_addrs, interval = int(n), max(1, int(n_addrs)), float(interval)
end = time.monotonic() + (float(end_epoch) - time.time())
conns = [None] * n
opened_at = [0.0] * n
stats = {'opened': 0, 'refused': 0, 'closed': 0, 'peak_open': 0}
def open_one(i):
    opened_at[i] = time.monotonic()
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(1.0)
    try:
        s.bind(('127.0.0.%d' % (2 + i % n_addrs), 0))
        s.connect((host, int(port)))
        s.sendall(b'GET /healthz HTTP/1.1\r\nHost: soak\r\n')
        s.setblocking(False)
        conns[i] = s
        stats['opened'] += 1
    except OSError:
        s.close()
        stats['refused'] += 1
def alive(s):
    try:
        return s.recv(4096) != b''   # an answer or a close: the server gave up on it
    except BlockingIOError:
        return True
    except OSError:
        return False
tick = 0
while time.monotonic() < end:
    for i in range(n):
        now = time.monotonic()
        if now >= end:
            break
        if conns[i] is None:
            if now - opened_at[i] >= interval:
                open_one(i)
            continue
        if not alive(conns[i]):
            conns[i].close()
            conns[i] = None
            stats['closed'] += 1
    stats['peak_open'] = max(stats['peak_open'], sum(c is not None for c in conns))
    tick += 1
    for i, s in enumerate(conns):
        if s is not None:
            try:
                s.send(b'X-Slow-%d: %d\r\n' % (i, tick))
            except OSError:
                pass
    time.sleep(min(interval, max(0.0, end - time.monotonic())))
stats['late_ms'] = int(1000 * (time.monotonic() - end))
for s in conns:
    if s is not None:
        s.close()
open(out, 'w').write(' '.join('%s=%d' % kv for kv in stats.items()) + '\n')
PY
}

# worker NAME COMMAND...: runs a load worker in the background and notes how long after
# the end of the load it stopped.
load_pids=()
worker() {
  local name=$1
  shift
  { "$@"; echo "$((SECONDS - END)) $name" >>"$D/stopped"; } &
  load_pids+=($!)
}
for w in $(seq 1 "$SOAK_SUBMITTERS"); do worker "submitter$w" submitter "$w"; done
worker canceller canceller
worker reader reader
worker prober prober
[ "$SOAK_SLOW_CLIENTS" -gt 0 ] && worker army army

# Agent restarts, from this shell so that every agent it starts is cleaned up at exit.
restarts=0
while [ $SECONDS -lt $END ]; do
  # A gap of 0.5 to 1.5 times the mean, cut at the end of the load.
  sleep "$(awk -v m="$SOAK_RESTART_S" -v r=$RANDOM -v left=$((END - SECONDS)) \
    'BEGIN {g = m * (0.5 + r / 32768); printf "%.1f", g < left ? g : left}')"
  [ $SECONDS -lt $END ] || break
  a=${agents[$((RANDOM % ${#agents[@]}))]}
  disown "$(agent_pid "$a")" 2>/dev/null # no "Killed" line from this shell
  kill -9 "$(agent_pid "$a")" 2>/dev/null
  sleep "$(awk -v r=$RANDOM 'BEGIN {printf "%.1f", 0.5 + 4.5 * r / 32768}')"
  e2e_spawn "$D/agent-$a.log" "$GPOOL" agent --server "$SERVER_URL" --token "$AGENT_TOKEN" \
    --name "$a" --sim 4xH100-80GB --data "$D/agent-$a" --personal --heartbeat-s 1
  eval "AGENT_PID_$a=$LAST_PID"
  restarts=$((restarts + 1))
done
echo "$((SECONDS - END)) agent-restarts" >>"$D/stopped"
wait "${load_pids[@]}"
stop_s=$((SECONDS - END))
last=$(sort -n "$D/stopped" | tail -n1 | awk '{print $2}')

# The load has stopped: every agent back, then every job must reach a final state.
problems=()
kill -0 "$SERVER_PID" 2>/dev/null || fail "the server died under the load"
drain_start=$SECONDS
for a in "${agents[@]}"; do wait_for 30 "node $a to be up after the load" node_is "$a" up; done
active() {
  curl -s -m 10 -H "Authorization: Bearer $ADMIN_TOKEN" \
    "$SERVER_URL/v1/jobs?state=pending,running,stopping,held&limit=1" | jq -e '.jobs | length == 0'
}
drained=yes
until active >/dev/null 2>&1; do
  if [ $((SECONDS - drain_start)) -ge "$SOAK_DRAIN_S" ]; then drained=no; break; fi
  sleep 0.5
done
drain_s=$((SECONDS - drain_start))
[ $drained = yes ] || problems+=("jobs still active ${SOAK_DRAIN_S}s after the load stopped")

# Every acknowledged id exists and is final (one paged listing of every job).
cat "$D"/acked.* 2>/dev/null | sort -u >"$D/acked"
next=""
: >"$D/listed"
while :; do
  curl -s -m 30 -H "Authorization: Bearer $ADMIN_TOKEN" \
    "$SERVER_URL/v1/jobs?limit=1000${next:+&next=$next}" >"$D/page" || { problems+=("listing jobs failed"); break; }
  jq -r '.jobs[] | "\(.id) \(.state)"' "$D/page" >>"$D/listed"
  next=$(jq -r '.next // empty' "$D/page")
  [ -n "$next" ] || break
done
acked=$(wc -l <"$D/acked")
lost=$(join -v1 "$D/acked" <(awk '{print $1}' "$D/listed" | sort -u) | wc -l)
not_final=$(join "$D/acked" <(sort -k1,1 "$D/listed") |
  awk '$2 !~ /^(completed|failed|cancelled|preempted|timeout)$/' | wc -l)
[ "$acked" -gt 0 ] || problems+=("no submission was acknowledged")
[ "$lost" -eq 0 ] || problems+=("$lost acknowledged jobs lost: $(join -v1 "$D/acked" <(awk '{print $1}' "$D/listed" | sort -u) | head -5 | tr '\n' ' ')")
if [ "$not_final" -gt 0 ]; then
  problems+=("$not_final acknowledged jobs not in a final state")
  join "$D/acked" <(sort -k1,1 "$D/listed") |
    awk '$2 !~ /^(completed|failed|cancelled|preempted|timeout)$/ {print $1}' | head -3 |
    while read -r id; do
      echo "--- job $id, not final:" >&2
      curl -s -m 10 -H "Authorization: Bearer $ADMIN_TOKEN" "$SERVER_URL/v1/jobs/$id" |
        jq -c '.job | {id, state, tasks, restarts, stop_reason, placements, timeline}' >&2
    done
fi

# Well-behaved requests and the health probe.
errors=$(cat "$D/errors" 2>/dev/null | wc -l)
[ "$errors" -eq 0 ] || problems+=("$errors requests without an answer or with a server error: $(sort "$D/errors" | uniq -c | tr -s ' \n' ' ')")
hz_bad=$(awk -v m="$SOAK_MAX_HEALTHZ_S" '$1 != 200 || $2 > m' "$D/healthz" | wc -l)
hz_max=$(awk 'BEGIN {m = 0} $2 > m {m = $2} END {printf "%.2f", m}' "$D/healthz")
[ "$hz_bad" -eq 0 ] || problems+=("$hz_bad /healthz probes failed or took over ${SOAK_MAX_HEALTHZ_S}s (slowest ${hz_max}s)")
kill -0 "$SERVER_PID" 2>/dev/null || problems+=("the server died")

# Memory: the highest resident size sampled during the load and at the end.
awk '/^VmRSS:/ {print $2}' "/proc/$SERVER_PID/status" >>"$D/rss" 2>/dev/null
rss_max=$(sort -n "$D/rss" | tail -n1)
rss_max_mib=$(( ${rss_max:-0} / 1024 ))
rss_first_mib=$(( $(head -n1 "$D/rss" 2>/dev/null || echo 0) / 1024 ))
[ "$rss_max_mib" -le "$SOAK_MAX_RSS_MIB" ] || problems+=("server RSS reached ${rss_max_mib} MiB (bound ${SOAK_MAX_RSS_MIB} MiB)")

count() { cat "$@" 2>/dev/null | wc -l; }
echo "soak: ${DURATION}s of load (pool up in ${setup_s}s, load stopped ${stop_s}s late, last $last), $SOAK_AGENTS agents, $restarts agent restarts;" \
  "$acked jobs acknowledged, $(count "$D/refused") refused, $lost lost, drained in ${drain_s}s;" \
  "$(count "$D/cancels") cancels, $(count "$D/logreads") log reads" \
  "($(grep -c '^200' "$D/logreads" 2>/dev/null || echo 0) answered 200);" \
  "army of $SOAK_SLOW_CLIENTS: $(cat "$D/army" 2>/dev/null || echo 'no report');" \
  "healthz slowest ${hz_max}s; server RSS ${rss_first_mib} -> max ${rss_max_mib} MiB (bound $SOAK_MAX_RSS_MIB)"
if [ ${#problems[@]} -gt 0 ]; then
  printf 'soak FAILED: %s\n' "${problems[@]}" >&2
  e2e_dump_logs
  exit 1
fi
echo "soak: ok"
