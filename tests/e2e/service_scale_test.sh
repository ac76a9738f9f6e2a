#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Services' autoscaling on the replicas' own figure: each replica's /metrics carries
# gpool_test_load (the per-replica load the test writes to a file); the service wants
# ceil(sum / target) replicas. A load above target scales up after up_delay_s; no load
# scales down only after the longer down_delay_s; a load that doubled scales up at once.
# Each decision is kept with its figures; the figure from a replica is untrusted (a page of
# garbage changes nothing). Scale to zero is opt-in, and a wake call (the owner's) brings a
# replica back. GPU utilisation may be chosen instead of the replicas' figure.
source "$(dirname "$0")/lib.sh"
e2e_init
e2e_need python3
CAROL_TOKEN=car-$RANDOM$RANDOM
e2e_write_config
sed -i "s|^tokens:|tokens:\n  - {token: \"$CAROL_TOKEN\", user: carol, role: user}|" "$E2E_DIR/server.yaml"
sed -i 's|^  - {name: default, users: \["\*"\]}|  - {name: default, users: ["*"], priority_classes: [inference, batch]}|' "$E2E_DIR/server.yaml"
e2e_server
e2e_agent n1 8xH100-80GB
export GPOOL_TOKEN=$BOB_TOKEN
SRC=${GP_SOURCE_DIR:?}/tests/e2e/svc_replica.py
mkdir -p "$E2E_DIR/svc"
svc_json() { "$GPOOL" service show "$1" -o json; }
svc_field() { svc_json "$1" | jq -r "$2"; }
decisions() { svc_field auto '.decisions | length'; }
now_ms() { date +%s%3N; }

cat >auto.yaml <<YAML
name: auto
command: [python3, "$SRC"]
env: {SVC_DIR: "$E2E_DIR/svc"}
gpus: 1
replicas: {min: 1, max: 4, initial: 1}
probes:
  readiness: {path: /healthz, period_s: 1}
autoscale: {metric: gpool_test_load, target: 10, up_delay_s: 2, down_delay_s: 6, period_s: 1}
YAML
echo 0 >svc/load
"$GPOOL" service apply -f auto.yaml >/dev/null || fail "apply"
wait_for 30 "one replica ready" sh -c "[ \"\$('$GPOOL' service show auto -o json | jq .replicas.ready)\" = 1 ]"
sleep 3
expect_eq 0 "$(decisions)" "no decision at no load within min"

# ---- above target, not doubled: up after up_delay_s ----
# Another user's event stream hears each decision (a `service` event with its figures).
e2e_spawn "$E2E_DIR/events.log" curl -sN -H "Authorization: Bearer $CAROL_TOKEN" "$SERVER_URL/v1/events"
wait_for 10 "the event stream open" grep -q ': open' "$E2E_DIR/events.log"
t0=$(now_ms)
echo 15 >svc/load
wait_for 20 "a scale-up decision" sh -c "[ \"\$('$GPOOL' service show auto -o json | jq '.decisions | length')\" -ge 1 ]"
up_ms=$(($(now_ms) - t0))
d=$(svc_json auto | jq -c '.decisions[0]')
expect_eq 1 "$(echo "$d" | jq .from)" "up from 1 ($d)"
expect_eq 2 "$(echo "$d" | jq .to)" "up to ceil(15 / 10) = 2 ($d)"
expect_contains "$(echo "$d" | jq -r .reason)" "above target" "the decision says why"
expect_eq 15 "$(echo "$d" | jq .metric_sum)" "the decision carries its figures"
[ "$up_ms" -ge 2000 ] || fail "scaled up in ${up_ms} ms, before the 2 s up_delay"
wait_for 10 "the decision on the event stream" grep -q '^event: service' "$E2E_DIR/events.log"
ev=$(grep -A1 '^event: service' "$E2E_DIR/events.log" | sed -n 's/^data: //p' | head -n1)
expect_eq "auto 1 2 15" "$(echo "$ev" | jq -r '[.service, .from, .to, .metric_sum] | join(" ")')" \
  "the service event carries the decision ($ev)"
wait_for 40 "four replicas ready (each carries 15)" sh -c "[ \"\$('$GPOOL' service show auto -o json | jq .replicas.ready)\" = 4 ]"
expect_eq 4 "$(svc_field auto .replicas.desired)" "never past max"

# ---- untrusted figures: garbage in /metrics is no figure ----
n=$(decisions)
echo "nan" >svc/load
sleep 3
expect_eq "$n" "$(decisions)" "a page whose figure does not read decides nothing"

# ---- no load: down only after down_delay_s, to min ----
t0=$(now_ms)
echo 0 >svc/load
wait_for 30 "a scale-down decision" sh -c "[ \"\$('$GPOOL' service show auto -o json | jq '.decisions[-1].to')\" = 1 ]"
down_ms=$(($(now_ms) - t0))
[ "$down_ms" -ge 6000 ] || fail "scaled down in ${down_ms} ms, before the 6 s down_delay"
expect_contains "$(svc_field auto '.decisions[-1].reason')" "below target" "the down decision says why"
wait_for 30 "one replica left" sh -c "[ \"\$('$GPOOL' service show auto -o json | jq .replicas.total)\" = 1 ]"

# ---- the load doubled: up at once ----
sleep 1
n=$(decisions)
t0=$(now_ms)
echo 25 >svc/load
wait_for 30 "the fast scale-up" sh -c "[ \"\$('$GPOOL' service show auto -o json | jq '.decisions | length')\" -gt $n ]"
fast_ms=$(($(now_ms) - t0))
d=$(svc_json auto | jq -c '.decisions[-1]')
expect_contains "$(echo "$d" | jq -r .reason)" "load doubled" "the fast path ($d)"
expect_eq 3 "$(echo "$d" | jq .to)" "straight to ceil(25 / 10) = 3 ($d)"
[ "$fast_ms" -lt 10000 ] || fail "load step to decision took ${fast_ms} ms (target 10 s)"
metrics=$(curl -fsS "$SERVER_URL/metrics")
expect_contains "$metrics" 'gpool_service_scale_ups_total{service="auto"}' "scaling decisions in the metrics"

# ---- scale to zero is opt-in; a wake call brings a replica back ----
"$GPOOL" service delete auto >/dev/null || fail "delete auto"
sed -e 's/^name: auto/name: zero/' -e 's/min: 1, max: 4, initial: 1/min: 0, max: 2, initial: 1/' \
  -e 's/down_delay_s: 6, period_s: 1}/down_delay_s: 2, period_s: 1}/' auto.yaml >zero.yaml
sed -i 's/^autoscale: {\(.*\)}$/autoscale: {\1, scale_to_zero: true}/' zero.yaml
grep -q 'scale_to_zero: true' zero.yaml || fail "zero.yaml: $(cat zero.yaml)"
echo 0 >svc/load
"$GPOOL" service apply -f zero.yaml >/dev/null || fail "apply zero"
wait_for 30 "zero's replica ready" sh -c "[ \"\$('$GPOOL' service show zero -o json | jq .replicas.ready)\" = 1 ]"
wait_for 30 "zero to scale to zero" sh -c "[ \"\$('$GPOOL' service show zero -o json | jq .replicas.total)\" = 0 ]"
expect_eq 0 "$(svc_field zero .replicas.desired)" "scaled to zero"
expect_eq 0 "$("$GPOOL" service endpoints zero | jq '.endpoints | length')" "no endpoint at zero"
out=$(GPOOL_TOKEN=$CAROL_TOKEN "$GPOOL" service wake zero 2>&1) && fail "another user woke the service: $out"
"$GPOOL" service wake zero >/dev/null || fail "wake"
expect_contains "$(svc_field zero '.decisions[-1].reason')" "wake call by bob" "the wake is a decision"
wait_for 30 "a replica ready after the wake" sh -c "[ \"\$('$GPOOL' service show zero -o json | jq .replicas.ready)\" = 1 ]"
# ---- GPU utilisation, when chosen: the replicas' GPUs' telemetry (simulated at 90%) ----
"$GPOOL" service delete zero >/dev/null || fail "delete zero"
cat >gpu.yaml <<YAML
name: gpuauto
command: [python3, "$SRC"]
env: {SVC_DIR: "$E2E_DIR/svc", GPOOL_SIM_UTIL: "90"}
gpus: 1
replicas: {min: 1, max: 3, initial: 1}
probes:
  readiness: {path: /healthz, period_s: 1}
autoscale: {source: gpu_utilization, target: 50, up_delay_s: 1, down_delay_s: 60, period_s: 1}
YAML
sed 's/source: gpu_utilization,/source: gpu_utilization, metric: gpool_test_load,/' gpu.yaml >gpu_bad.yaml
out=$("$GPOOL" service apply -f gpu_bad.yaml 2>&1) && fail "a metric with source gpu_utilization must be refused"
expect_contains "$out" "autoscale.metric" "the refusal names the field"
"$GPOOL" service apply -f gpu.yaml >/dev/null || fail "apply gpuauto"
wait_for 40 "a decision on GPU utilisation" sh -c "[ \"\$('$GPOOL' service show gpuauto -o json | jq '.decisions | length')\" -ge 1 ]"
d=$(svc_json gpuauto | jq -c '.decisions[0]')
expect_eq "1 2 90" "$(echo "$d" | jq -r '[.from, .to, .metric_sum] | join(" ")')" "ceil(90 / 50) = 2 replicas ($d)"
echo "figures: up (delay 2 s) ${up_ms} ms, down (delay 6 s) ${down_ms} ms, doubled ${fast_ms} ms"
echo "PASS"
