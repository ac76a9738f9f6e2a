#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The README's tour, priced: a pool like `gpool up`'s (one agent, 8 simulated H100s on
# on-demand capacity), a job, then the catalogue the README's `gpool prices set` line names
# and `gpool report cost` as the tour runs it. The figures must be believable for that pool:
# the job is priced, the fleet cost is what 8 GPUs cost since the node came up, and no
# commitment the pool does not have shows as "unused commitment" (examples/prices.yaml's
# 16 reserved H100s made a newcomer's one-node pool report thousands of dollars).
source "$(dirname "$0")/lib.sh"
e2e_need jq
SRC=${GP_SOURCE_DIR:?GP_SOURCE_DIR must point at the source tree}
e2e_init
e2e_server
export GPOOL_TOKEN=$ADMIN_TOKEN
up_at=$(date +%s)
e2e_agent n1 8xH100-80GB

# The file the tour sets, read from the README itself.
file=$(sed -n 's/^gpool prices set \([^ ]*\).*/\1/p' "$SRC/README.md" | head -n1)
[ -n "$file" ] || fail "the README's tour has no 'gpool prices set FILE' line"
[ -f "$SRC/$file" ] || fail "the README's tour sets $file, which does not exist"
"$GPOOL" prices set "$SRC/$file" >/dev/null || fail "gpool prices set $file"

# Two seconds, so the job and the node's up time have a length in whole seconds.
id=$("$GPOOL" submit -g 1 -n tour -- sleep 2)
wait_for 20 "job $id to complete" job_is "$id" completed

report=$("$GPOOL" report cost --by queue,user -o json) || fail "gpool report cost"
now=$(date +%s)
expect_eq "USD" "$(jq -r .currency <<<"$report")" "the tour's catalogue prices in USD"
expect_eq "0" "$(jq '[.rows[] | select(.kind == "unused_commitment" and .gpu_hours > 0)] | length' <<<"$report")" \
  "no unused commitment on a pool that committed to nothing ($file)"
expect_eq "true" "$(jq '[.rows[] | select(.kind == "jobs")] | length > 0 and all(.cost != null)' <<<"$report")" \
  "the tour's job is priced"
# 8 GPUs at the catalogue's dearest on-demand price (8.60) for the seconds the node was up,
# and a little slack for clocks: a newcomer's pool of a minute costs cents, not thousands.
fleet=$(jq .fleet_cost <<<"$report")
bound=$(awk -v s=$((now - up_at + 5)) 'BEGIN { printf "%.4f", 8 * 8.60 * s / 3600 }')
awk -v f="$fleet" -v b="$bound" 'BEGIN { exit !(f > 0 && f <= b) }' ||
  fail "the fleet cost of one 8-GPU node up $((now - up_at)) s is $fleet (at most $bound expected)"
# The table the tour prints says the same: its fleet cost line, and every row's range.
table=$("$GPOOL" report cost --by queue,user)
expect_contains "$table" "fleet cost: " "the table ends with the fleet cost"
expect_contains "$table" "$(date -u +%Y-%m)-01 to " "the PERIOD column gives the range"
echo "ok: the README tour's prices"
