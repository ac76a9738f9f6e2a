#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Slurm-style adapter of docs/providers.md (examples/providers/slurm-resume-suspend.sh)
# works as documented, driven through `gpool provider test` with stand-in resume and suspend
# programs: create resumes powered-off names, a repeated idempotency key gives the same
# names without resuming again, an exhausted pool is a capacity error, delete suspends only
# names that are on, and list reports what is on.
set -uo pipefail
GPOOL=${GPOOL_BIN:?GPOOL_BIN must point at the gpool binary}
src=${GP_SOURCE_DIR:?GP_SOURCE_DIR must point at the source tree}
dir=$(mktemp -d /tmp/gp_slurm_example.XXXXXX)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
printf '#!/bin/sh\necho "resume $1" >>%s/calls\n' "$dir" >"$dir/resume.sh"
printf '#!/bin/sh\necho "suspend $1" >>%s/calls\n' "$dir" >"$dir/suspend.sh"
chmod +x "$dir/resume.sh" "$dir/suspend.sh"
cat >"$dir/server.yaml" <<YAML
node_templates:
  - {name: rack7, provider: $src/examples/providers/slurm-resume-suspend.sh, model: H100-80GB,
     gpus: 8, capacity: on-prem, max_nodes: 3,
     env: {POOL: "gpu01,gpu02,gpu03", RESUME_PROGRAM: $dir/resume.sh,
           SUSPEND_PROGRAM: $dir/suspend.sh, STATE_DIR: $dir/state}}
YAML
chmod 600 "$dir/server.yaml"
call() { "$GPOOL" provider test -c "$dir/server.yaml" rack7 "$@" -o json; }
ids() { jq -r '(.instances // [] | map(.id)) + (.deleted // []) | join(",")'; }

[ "$(call create --count 2 --idempotency-key k1 | ids)" = gpu01,gpu02 ] || fail "first create"
[ "$(call create --count 2 --idempotency-key k1 | ids)" = gpu01,gpu02 ] || fail "a repeated key"
[ "$(call create --count 2 --idempotency-key k2 | ids)" = gpu03 ] || fail "a partial create"
out=$(call create --count 1 --idempotency-key k3)
[ "$(jq -r .error.class <<<"$out")" = capacity ] || fail "an exhausted pool: $out"
[ "$(call list | ids)" = gpu01,gpu02,gpu03 ] || fail "list"
[ "$(call delete gpu01 gpu09 | ids)" = gpu01,gpu09 ] || fail "delete"
[ "$(call list | ids)" = gpu02,gpu03 ] || fail "list after delete"
expected=$'resume gpu01,gpu02\nresume gpu03\nsuspend gpu01'
[ "$(cat "$dir/calls")" = "$expected" ] || fail "the programs' calls: $(cat "$dir/calls")"
echo "ok: slurm adapter"
