#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What a user sees from the gpool CLI before any server is involved: help texts, usage
# errors with exit code 2 and a pointer to --help, a missing token explained, and an
# unreachable server reported plainly with exit code 3.
set -uo pipefail
GPOOL=${GPOOL_BIN:?}
TMP=$(mktemp -d /tmp/gpool-cli.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
export GPOOL_CONFIG_DIR=$TMP HOME=$TMP
unset GPOOL_SERVER GPOOL_TOKEN
fail() { echo "FAIL: $*" >&2; exit 1; }
expect() {  # expect CODE NEEDLE -- command...
  local code=$1 needle=$2
  shift 3
  local out rc
  out=$("$@" 2>&1)
  rc=$?
  [ "$rc" = "$code" ] || fail "'$*' exited $rc, expected $code: $out"
  case "$out" in *"$needle"*) ;; *) fail "'$*' should say '$needle', said: $out" ;; esac
}

for cmd in submit jobs show why logs cancel hold release nodes drain cordon resume queues up; do
  expect 0 "Usage: gpool $cmd" -- "$GPOOL" "$cmd" --help
done
expect 2 "unknown option '--frobnicate'" -- "$GPOOL" submit --frobnicate -- true
expect 2 "see 'gpool submit --help'" -- "$GPOOL" submit --gpus many -- true
expect 2 "nothing to run" -- "$GPOOL" submit -g 1
expect 2 "choose one of --gpu-fraction, --gpu-mem and --mig" -- "$GPOOL" submit --gpu-fraction 0.5 --mig 1g.10gb -- true
expect 2 "-o takes 'json' or 'table'" -- "$GPOOL" jobs -o yaml
expect 2 "is not a job id" -- "$GPOOL" cancel ../etc
expect 2 "which job?" -- "$GPOOL" show
# After "--" the words are ids too; a bare "--" ends the list (bounded: it once looped).
expect 2 "which job?" -- timeout 10 "$GPOOL" show --
expect 2 "is not a job id" -- timeout 10 "$GPOOL" why -- 1 -x
expect 2 "say why with --reason" -- "$GPOOL" drain n1
expect 2 "cordon applies to whole nodes" -- "$GPOOL" cordon n1:3 --reason x
expect 2 "no token" -- "$GPOOL" jobs

# A script with a bad #GPOOL line is refused with its file and line.
printf '#!/bin/sh\n#GPOOL -g 1\n#GPOOL --time soon\necho hi\n' >"$TMP/job.sh"
expect 1 "job.sh:3" -- "$GPOOL" submit "$TMP/job.sh"

# Nothing listens on port 1.
export GPOOL_SERVER=http://127.0.0.1:1 GPOOL_TOKEN=t
expect 3 "cannot reach the gpool server at http://127.0.0.1:1" -- "$GPOOL" jobs
expect 3 "gpool up" -- "$GPOOL" submit -g 1 -- true
# A broken client.json is named, not ignored.
unset GPOOL_SERVER GPOOL_TOKEN
echo '{"server": 5}' >"$TMP/client.json"
chmod 600 "$TMP/client.json"
expect 1 "client.json: server: expected a string" -- "$GPOOL" nodes
# One that others may read is refused: it holds a token.
chmod 644 "$TMP/client.json"
expect 1 "mode 0644 lets other users read it" -- "$GPOOL" nodes
echo "ok: cli without a server"
