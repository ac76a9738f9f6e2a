#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What an operator sees with a real Prometheus: a pool (server + one simulated agent) runs
# two jobs sharing one GPU, each declaring its own load; promtool accepts both /metrics
# outputs; a real Prometheus on 127.0.0.1 (temporary config and storage, ephemeral port,
# 1 s scrape interval, bounded waits) scrapes the agent and the server with the shipped
# scrape settings and alert rules, evaluates the rules without an error, and answers a query
# for each job's own GPU utilisation (35% and 20%, not the device's 55% copied to both).
# Then the shipped dashboard's queries run against it, `gpool top --once` shows the same
# pool, and after the jobs end `gpool show` keeps each job's own usage summary.
source "$(dirname "$0")/../e2e/lib.sh"
e2e_need prometheus
e2e_need promtool
e2e_init
e2e_server
e2e_agent n1 2xH100-80GB --sharing shared

a=$(as_alice "$GPOOL" submit -n share-a --gpu-fraction 0.5 -e GPOOL_SIM_UTIL=35 -e GPOOL_SIM_MEM=9G -- sleep 120) ||
  fail "submit a"
b=$(as_alice "$GPOOL" submit -n share-b --gpu-fraction 0.5 -e GPOOL_SIM_UTIL=20 -e GPOOL_SIM_MEM=3G -- sleep 120) ||
  fail "submit b"
wait_for 30 "job $a to run" job_is "$a" running
wait_for 30 "job $b to run" job_is "$b" running

AGENT_URL=$(as_alice "$GPOOL" nodes -o json | jq -r '.[] | select(.name == "n1") | .agent_url')
[ -n "$AGENT_URL" ] && [ "$AGENT_URL" != null ] || fail "node n1 has no agent_url"

# Both jobs' series appear on the agent once telemetry has sampled them.
has_job_series() { curl -fsS "$AGENT_URL/metrics" | grep -q "gpool_job_gpu_sm_util_percent{.*job=\"$1\""; }
wait_for 20 "job $a's series on the agent" has_job_series "$a"
wait_for 20 "job $b's series on the agent" has_job_series "$b"

# promtool: no format error anywhere; naming lint only on dcgm-exporter's own names.
curl -fsS "$AGENT_URL/metrics" >"$E2E_DIR/agent.prom" || fail "agent /metrics"
promtool check metrics <"$E2E_DIR/agent.prom" >"$E2E_DIR/promtool-agent.txt" 2>&1
rc=$?
[ $rc = 0 ] || [ $rc = 3 ] || fail "promtool rejects the agent's /metrics: $(cat "$E2E_DIR/promtool-agent.txt")"
if grep -v '^DCGM_FI_' "$E2E_DIR/promtool-agent.txt" | grep -q .; then
  fail "promtool lint on gpool's own agent metrics: $(grep -v '^DCGM_FI_' "$E2E_DIR/promtool-agent.txt")"
fi
curl -fsS "$SERVER_URL/metrics" >"$E2E_DIR/server.prom" || fail "server /metrics"
promtool check metrics <"$E2E_DIR/server.prom" >"$E2E_DIR/promtool-server.txt" 2>&1 ||
  fail "promtool rejects the server's /metrics: $(cat "$E2E_DIR/promtool-server.txt")"
grep -q '^gpool_queue_running_jobs{queue="default"} 2$' "$E2E_DIR/server.prom" ||
  fail "the server should count 2 running jobs in queue default: $(grep gpool_queue_running "$E2E_DIR/server.prom")"
# The cycles' CPU time is real work, and no more than their wall time.
awk '$1 == "gpool_scheduling_cycle_cpu_seconds_total" {cpu = $2} $1 == "gpool_scheduling_cycle_seconds_sum" {wall = $2}
     END {exit !(cpu > 0 && cpu <= wall * 1.01 + 0.001)}' "$E2E_DIR/server.prom" ||
  fail "the scheduling cycles' CPU time must be above 0 and at most their wall time: $(grep '^gpool_scheduling_cycle' "$E2E_DIR/server.prom")"

# A free port for Prometheus: bind port 0 once and reuse the number.
PROM_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
agent_hostport=${AGENT_URL#http://}
server_hostport=${SERVER_URL#http://}
mkdir -p "$E2E_DIR/prom"
# The same settings as deploy/prometheus/prometheus.yml, pointed at this pool.
sed -e "s#gpu-node-1:9400#$agent_hostport#; s#gpool-server:8642#$server_hostport#" \
  -e "s#^  scrape_interval: .*#  scrape_interval: 1s#; s#^  evaluation_interval: .*#  evaluation_interval: 1s#" \
  "$GP_SOURCE_DIR/deploy/prometheus/prometheus.yml" >"$E2E_DIR/prom/prometheus.yml"
cp "$GP_SOURCE_DIR/deploy/prometheus/gpool-rules.yml" "$E2E_DIR/prom/"
grep -q "$agent_hostport" "$E2E_DIR/prom/prometheus.yml" || fail "could not point the scrape config at the agent"
promtool check config "$E2E_DIR/prom/prometheus.yml" >/dev/null 2>&1 ||
  fail "promtool rejects the scrape config: $(promtool check config "$E2E_DIR/prom/prometheus.yml" 2>&1)"
e2e_spawn "$E2E_DIR/prometheus.log" prometheus --config.file="$E2E_DIR/prom/prometheus.yml" \
  --storage.tsdb.path="$E2E_DIR/prom/data" --web.listen-address="127.0.0.1:$PROM_PORT" \
  --storage.tsdb.retention.time=1h
PROM=http://127.0.0.1:$PROM_PORT
wait_for 30 "Prometheus to be ready" curl -fsS "$PROM/-/ready"

# query PROMQL: prints the first result's value ("" when none).
query() { curl -fsS --get "$PROM/api/v1/query" --data-urlencode "query=$1" | jq -r '.data.result[0].value[1] // empty'; }
answers() { [ "$(query "$1")" = "$2" ]; }

wait_for 40 "Prometheus to answer job $a's GPU utilisation" answers "gpool_job_gpu_sm_util_percent{job=\"$a\"}" 35
expect_eq 20 "$(query "gpool_job_gpu_sm_util_percent{job=\"$b\"}")" "job $b's own utilisation"
expect_eq 55 "$(query 'DCGM_FI_DEV_GPU_UTIL{gpu="0",hostname="n1"}')" "the shared GPU's device utilisation"
expect_eq 9437184 "$(query "sum(gpool_job_gpu_memory_used_bytes{job=\"$a\"}) / 1024")" "job $a's memory in KiB"
q=$(curl -fsS --get "$PROM/api/v1/query" --data-urlencode "query=gpool_job_gpu_sm_util_percent{job=\"$a\"}" |
  jq -r '.data.result[0].metric.queue')
expect_eq default "$q" "the job's queue label"
wait_for 20 "the server's queue metrics in Prometheus" answers 'gpool_queue_running_jobs{queue="default"}' 2

# The shipped alert rules load and evaluate against the live pool without an error.
rules_ok() {
  curl -fsS "$PROM/api/v1/rules" | jq -e '[.data.groups[].rules[]] | length > 0 and
    all(.health == "ok")' >/dev/null
}
wait_for 20 "Prometheus to evaluate the shipped alert rules" rules_ok

# Every query of the shipped Grafana dashboard parses and runs (template variables filled).
jq -r '.. | objects | select(has("expr")) | .expr' "$GP_SOURCE_DIR/deploy/grafana/gpool-dashboard.json" |
  sed -e 's/\$hostname/n1/g; s/\$queue/default/g; s/\$job/'"$a"'/g; s/\$__rate_interval/1m/g' >"$E2E_DIR/exprs.txt"
[ -s "$E2E_DIR/exprs.txt" ] || fail "the dashboard has no queries"
while IFS= read -r expr; do
  status=$(curl -sS --get "$PROM/api/v1/query" --data-urlencode "query=$expr" | jq -r .status)
  [ "$status" = success ] || fail "dashboard query does not run: $expr"
done <"$E2E_DIR/exprs.txt"

# The same pool in gpool top.
out=$(as_alice "$GPOOL" top --once) || fail "gpool top --once"
expect_contains "$out" "n1" "top shows the node"
expect_contains "$out" "55%" "top shows the shared GPU's utilisation"
expect_contains "$out" "share-a" "top lists the running job"
expect_contains "$out" "default" "top shows the queue"

as_alice "$GPOOL" cancel "$a" "$b" >/dev/null
wait_for 30 "job $a's series to vanish" bash -c "! curl -fsS '$AGENT_URL/metrics' | grep -q 'job=\"$a\"'"

# The job's usage summary outlives it: gpool show reports its own figures, not the device's.
ended() { case "$(job_field "$1" .state)" in running | pending | stopping) return 1 ;; esac; }
wait_for 30 "job $a to end" ended "$a"
usage=$(job_field "$a" .usage)
expect_eq 9216 "$(echo "$usage" | jq -r .peak_mem_mib)" "job $a's peak memory (MiB) after it ended"
expect_eq 35 "$(echo "$usage" | jq -r .peak_sm_util_pct)" "job $a's peak SM utilisation after it ended"
echo "$usage" | jq -e '.avg_sm_util_pct > 30 and .avg_sm_util_pct <= 35 and .energy_j > 0' >/dev/null ||
  fail "job $a's usage summary: $usage"
out=$(as_alice "$GPOOL" show "$a") || fail "gpool show"
expect_contains "$out" "peak SM 35%" "gpool show prints the job's peak utilisation"
expect_contains "$out" "peak GPU memory 9G" "gpool show prints the job's peak memory"
echo "ok: Prometheus scrapes the pool and answers per-job GPU utilisation"
