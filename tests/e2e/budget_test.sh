#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Prices and budgets through the CLI on a real pool:
#   1. `gpool prices` shows the config's catalogue; `prices set FILE` refuses a bad file
#      naming its line and key, refuses a user, and an admin's file takes over until
#      `prices reset`;
#   2. a queue that spends its budget: `gpool queues` shows it spent, a new job is held and
#      `gpool why` says why; its owner cannot release it (with or without --hold), an admin
#      can.
source "$(dirname "$0")/lib.sh"
e2e_init
E2E_QUEUES='  - {name: lab, users: ["*"], budget: {gpu_hours: 0.0002, period: month, action: hold_new}}' \
  e2e_server "prices:
  currency: EUR
  gpu_hour: [{model: H100-80GB, capacity: on-demand, price: 6.5}]"
export GPOOL_TOKEN=$ADMIN_TOKEN

# --- 1. the catalogue ----------------------------------------------------------------
out=$("$GPOOL" prices)
expect_contains "$out" "Currency EUR (set by the config file)" "gpool prices: the config's catalogue"
expect_contains "$out" "H100-80GB" "gpool prices: the model's line"
printf 'prices:\n  gpu_hour:\n    - {model: A100, capacity: cheap, price: 1}\n' >bad.yaml
err=$("$GPOOL" prices set bad.yaml 2>&1) && fail "a bad catalogue must be refused"
expect_contains "$err" "bad.yaml:3: prices.gpu_hour[0].capacity" "the bad file's line and key"
printf 'currency: USD\ngpu_hour: [{model: "*", capacity: on-demand, price: 3}]\n' >good.yaml
as_bob "$GPOOL" prices set good.yaml >/dev/null 2>&1 && fail "a user must not set prices"
expect_eq USD "$("$GPOOL" prices set good.yaml -o json | jq -r .currency)" "the admin's catalogue"
expect_eq admin "$(as_bob "$GPOOL" prices -o json | jq -r .source)" "users read the admin's catalogue"
example=$(cd "$(dirname "$0")/../.." && pwd)/examples/prices.yaml
expect_eq 16 "$("$GPOOL" prices set "$example" -o json | jq '.commitments[0].gpus')" \
  "the shipped example, its whole numbers sent as integers"
expect_eq config "$("$GPOOL" prices reset -o json | jq -r .source)" "reset returns to the config's"

# --- 2. a spent budget holds new jobs ---------------------------------------------------
e2e_agent n1 1xH100-80GB
first=$("$GPOOL" submit -q lab -g 1 -- sleep 30)
wait_for 20 "the first job to run" job_launched "$first"
spent() { [ "$("$GPOOL" queues -o json | jq '.[] | select(.name == "lab") | .budget_used_ratio >= 1')" = true ]; }
wait_for 20 "the budget to be spent" spent
expect_contains "$("$GPOOL" queues)" "0.0002 GPU-h/month" "gpool queues shows the budget"
next=$("$GPOOL" submit -q lab -g 1 -- true)
expect_eq held "$(job_field "$next" .state)" "a new job of a spent queue is held"
expect_contains "$("$GPOOL" why "$next")" \
  "is held: queue lab spent its monthly budget of 0.0002 GPU-hours (" "gpool why says why"
# Only an admin (or the next period) lifts a budget's hold: its owner's release is refused,
# whether the budget held the job alone or it was submitted --hold as well.
for flag in "" --hold; do
  mine=$(as_bob "$GPOOL" submit -q lab -g 1 $flag -- true)
  err=$(as_bob "$GPOOL" release "$mine" 2>&1) && fail "the owner must not release a budget's hold"
  expect_contains "$err" "only an admin may release it" "gpool release says who may"
  expect_eq held "$(job_field "$mine" .state)" "still held after the owner's release"
  expect_contains "$(as_bob "$GPOOL" why "$mine")" "is held: queue lab spent its monthly budget" \
    "gpool why names the budget, not gpool release"
  "$GPOOL" release "$mine" >/dev/null || fail "an admin releases a budget's hold"
  expect_eq true "$(job_field "$mine" '.state != "held"')" "released by the admin"
  "$GPOOL" cancel "$mine" >/dev/null 2>&1
done
"$GPOOL" cancel "$first" "$next" >/dev/null
echo "ok: budget"
