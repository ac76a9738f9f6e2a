#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `gpool plan` as a newcomer meets it: the README's first command on the example cluster,
# JSON for scripts, the same bytes every time, one clear line for a broken snapshot, and
# exit statuses a script can rely on (0 plan, 1 bad snapshot, 2 usage).
set -u
GPOOL_BIN=${GPOOL_BIN:?GPOOL_BIN must point at the gpool binary}
GP_SOURCE_DIR=${GP_SOURCE_DIR:?}
cd "$GP_SOURCE_DIR" || exit 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
section_failures=0
# Reports a section: ok when it added no failure since the last report.
ok() {
  if [ "$failures" -eq "$section_failures" ]; then echo "ok    $*"; else echo "not ok $*"; fi
  section_failures=$failures
}

# 1. The README's first command prints a table with every kind of decision.
if "$GPOOL_BIN" plan examples/cluster.yaml >"$tmp/table" 2>"$tmp/err"; then
  for want in "Plan at t=36000" "START" "PENDING" "QUEUE" "org/research/nlp" "pretrain-gang"; do
    grep -qF "$want" "$tmp/table" || fail "table lacks '$want'"
  done
  [ -s "$tmp/err" ] && fail "stderr not empty: $(cat "$tmp/err")"
  ok "gpool plan examples/cluster.yaml prints a table"
else
  fail "gpool plan examples/cluster.yaml exited $?: $(cat "$tmp/err")"
fi

# 2. -o json gives the documented keys, and the same bytes on every run.
"$GPOOL_BIN" plan examples/cluster.yaml -o json >"$tmp/a.json" || fail "-o json exited $?"
"$GPOOL_BIN" plan examples/cluster.yaml --output=json >"$tmp/b.json" || fail "--output=json exited $?"
cmp -s "$tmp/a.json" "$tmp/b.json" || fail "two runs printed different JSON"
for key in '"now"' '"starts"' '"preemptions"' '"reservations"' '"pending"' '"ended"' '"queues"' \
           '"fair_share"' '"reason"'; do
  grep -qF "$key" "$tmp/a.json" || fail "JSON lacks $key"
done
head -c1 "$tmp/a.json" | grep -q '{' || fail "JSON does not start with {"
ok "-o json is complete and deterministic"

# 3. The example's stories show in the plan: the failed dependency ends a job, the
#    unknown GPU model ends another, the held job says Held.
grep -q 'nlp-report' "$tmp/a.json" && grep -q 'DependencyNeverSatisfied' "$tmp/a.json" ||
  fail "nlp-report should end: its afterok job failed"
grep -q 'GpuModelUnknown' "$tmp/a.json" || fail "nlp-b200-try should end: no B200 in the fleet"
grep -q '"Held"' "$tmp/a.json" || fail "vision-debug should be pending with reason Held"
ok "the example's dependency, model and hold stories show"

# 4. JSON snapshots are accepted too.
cat >"$tmp/snap.json" <<'JSON'
{"now": 10, "queues": [{"name": "t/x", "deserved": 1}],
 "nodes": [{"name": "n1", "model": "H100-80GB", "gpus": 1}],
 "jobs": [{"id": "j1", "queue": "t/x", "gpus": 1}]}
JSON
"$GPOOL_BIN" plan "$tmp/snap.json" -o json >"$tmp/snap.out" 2>&1 || fail "JSON snapshot exited $?: $(cat "$tmp/snap.out")"
grep -q '"job": "j1"' "$tmp/snap.out" || fail "JSON snapshot: j1 should start"
ok "a JSON snapshot works"

# 4b. "-" reads the snapshot from stdin; errors then name <stdin>.
"$GPOOL_BIN" plan - -o json <"$tmp/snap.json" >"$tmp/stdin.out" 2>&1 || fail "stdin exited $?: $(cat "$tmp/stdin.out")"
cmp -s "$tmp/snap.out" "$tmp/stdin.out" || fail "stdin: the plan differs from the file's"
printf 'now: x\nqueues: []\n' | "$GPOOL_BIN" plan - >/dev/null 2>"$tmp/err"
[ "$(cat "$tmp/err")" = "<stdin>:1: now: expected an integer, got 'x'" ] || fail "stdin error: $(cat "$tmp/err")"
ok "FILE - reads stdin"

# 5. A broken snapshot: exit 1, one line "FILE:LINE: key: problem", nothing on stdout.
printf 'now: 1\nqueues: [{name: t/x}]\njobs:\n  - {id: j1, queue: t/x, gpus: 1, colour: red}\n' >"$tmp/bad.yaml"
"$GPOOL_BIN" plan "$tmp/bad.yaml" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 1 ] || fail "bad snapshot: exit $rc, want 1"
[ -s "$tmp/out" ] && fail "bad snapshot: stdout should be empty"
[ "$(cat "$tmp/err")" = "$tmp/bad.yaml:4: jobs[0].colour: unknown key" ] ||
  fail "bad snapshot message: $(cat "$tmp/err")"
"$GPOOL_BIN" plan "$tmp/missing.yaml" 2>"$tmp/err" >/dev/null
rc=$?
[ "$rc" -eq 1 ] || fail "missing file: exit $rc, want 1"
grep -q "missing.yaml" "$tmp/err" || fail "missing file: message does not name it"
# Garbage bytes and an empty file never crash it.
head -c 4096 /dev/urandom >"$tmp/noise.yaml"
"$GPOOL_BIN" plan "$tmp/noise.yaml" >/dev/null 2>&1
rc=$?
[ "$rc" -eq 1 ] || fail "random bytes: exit $rc, want 1"
: >"$tmp/empty.yaml"
"$GPOOL_BIN" plan "$tmp/empty.yaml" >/dev/null 2>&1
rc=$?
[ "$rc" -eq 1 ] || fail "empty file: exit $rc, want 1"
ok "bad snapshots exit 1 with file:line: key: problem"

# 6. Usage: --help exits 0; no file, unknown option or format exit 2.
"$GPOOL_BIN" plan --help | grep -q "Usage: gpool plan FILE" || fail "--help"
"$GPOOL_BIN" plan >/dev/null 2>&1; rc=$?; [ "$rc" -eq 2 ] || fail "no file: exit $rc, want 2"
"$GPOOL_BIN" plan examples/cluster.yaml --frobnicate >/dev/null 2>&1; rc=$?
[ "$rc" -eq 2 ] || fail "unknown option: exit $rc, want 2"
"$GPOOL_BIN" plan examples/cluster.yaml -o xml >/dev/null 2>"$tmp/err"; rc=$?
[ "$rc" -eq 2 ] || fail "-o xml: exit $rc, want 2"
grep -q "table or json" "$tmp/err" || fail "-o xml: message should list the formats"
"$GPOOL_BIN" plan examples/cluster.yaml -o >/dev/null 2>&1; rc=$?
[ "$rc" -eq 2 ] || fail "-o without a value: exit $rc, want 2"
ok "usage errors exit 2, --help exits 0"

# 7. Every snapshot in examples/ (the files with a top-level `now:`; others there are
#    configs for other commands) plans cleanly.
n=0
for f in examples/*.yaml; do
  grep -q '^now:' "$f" || continue
  n=$((n + 1))
  "$GPOOL_BIN" plan "$f" -o json >/dev/null 2>"$tmp/err" || fail "$f: $(cat "$tmp/err")"
done
[ "$n" -ge 2 ] || fail "expected at least examples/cluster.yaml and examples/sharing.yaml"
ok "every example snapshot plans"

[ "$failures" -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "plan_test: all passed"
