#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The systemd units in deploy/systemd start commands this gpool understands: each
# ExecStart's flags are ones the real binary documents in its --help, and systemd-analyze,
# where installed, finds nothing wrong.
set -eu
root=${GP_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
bin=$(realpath "${GPOOL_BIN:?GPOOL_BIN names the gpool binary}")
tmp=$(mktemp -d /tmp/gpool-systemd.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail=0
for unit in "$root"/deploy/systemd/*.service; do
  line=$(grep '^ExecStart=' "$unit") || { echo "FAIL $unit: no ExecStart" >&2; fail=1; continue; }
  cmd=${line#ExecStart=/usr/local/bin/gpool }
  [ "$cmd" != "$line" ] || { echo "FAIL $unit: ExecStart does not run /usr/local/bin/gpool" >&2; fail=1; continue; }
  # Every flag the unit passes is one the command documents in its --help.
  sub=${cmd%% *}
  help=$("$bin" "$sub" --help 2>&1 || true)
  for flag in $cmd; do
    case $flag in --*) echo "$help" | grep -q -- "$flag" || { echo "FAIL $unit: 'gpool $sub' has no $flag" >&2; fail=1; } ;; esac
  done
  if command -v systemd-analyze >/dev/null; then
    sed "s#/usr/local/bin/gpool#$bin#" "$unit" > "$tmp/$(basename "$unit")"
    systemd-analyze verify "$tmp/$(basename "$unit")" 2>"$tmp/verify.err" || true
    if grep -v "EnvironmentFile\|/etc/gpool" "$tmp/verify.err" | grep -q .; then
      echo "FAIL $unit: systemd-analyze: $(cat "$tmp/verify.err")" >&2; fail=1
    fi
  fi
done
[ $fail -eq 0 ] && echo "ok: deploy/systemd units"
exit $fail
