#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The shipped alert rules (deploy/prometheus/gpool-rules.yml): promtool accepts them, their
# unit tests (gpool-rules.test.yml) pass, the shipped Prometheus configuration loads them,
# and every gpool_* or DCGM_FI_* metric they name is one the server or the agent exports.
set -u
root=${GP_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
dir=$root/deploy/prometheus
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
command -v promtool >/dev/null || fail "promtool is not installed (run scripts/setup.sh)"

out=$(promtool check rules "$dir/gpool-rules.yml" 2>&1) || fail "promtool check rules: $out"
out=$(cd "$dir" && promtool test rules gpool-rules.test.yml 2>&1) || fail "promtool test rules: $out"
grep -Eq '^[[:space:]]+-[[:space:]]+"?gpool-rules\.yml"?[[:space:]]*$' "$dir/prometheus.yml" ||
  fail "deploy/prometheus/prometheus.yml does not load gpool-rules.yml (rule_files)"
out=$(promtool check config "$dir/prometheus.yml" 2>&1) || fail "promtool check config: $out"
echo "$out" | grep -q "gpool-rules.yml" || fail "promtool check config did not read the rules: $out"

# Every alert is tested: each name in the rules appears in an alert_rule_test.
for a in $(sed -n 's/^ *- alert: *//p' "$dir/gpool-rules.yml"); do
  grep -q "alertname: $a\$" "$dir/gpool-rules.test.yml" || fail "alert $a has no unit test"
done

# The metrics named exist in the exporters' sources (a histogram by its family name).
exporters="$root/src/server/state/metrics.c $root/src/agent/metrics.c"
names=$(grep -v '^ *#' "$dir/gpool-rules.yml" | grep -oE '\b(gpool|DCGM_FI)_[A-Za-z0-9_]+' | sort -u)
[ -n "$names" ] || fail "no metric names found in the rules"
for n in $names; do
  family=${n%_bucket}
  grep -q "\"$family\"" $exporters || fail "the rules use $n, which neither the server nor the agent exports"
done
echo "ok: alert rules pass promtool's checks and unit tests and use exported metrics only"
