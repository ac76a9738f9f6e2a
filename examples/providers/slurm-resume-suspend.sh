#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# A gpool provider (docs/providers.md) over a site's Slurm power-saving scripts: the
# ResumeProgram and SuspendProgram that already power machines of a fixed pool on and off
# (IPMI, a private cloud, Slurm CLOUD nodes). gpool's verbs map onto them:
#
#   create N  ->  picks N powered-off names of the pool, runs  $RESUME_PROGRAM  name,name,...
#   delete    ->  runs  $SUSPEND_PROGRAM  id,id,...  for the ids gpool names
#   list      ->  the names this adapter has resumed and not yet suspended
#
# Both programs get one argument, a Slurm host list (a comma-separated list is one), as
# Slurm gives them; they return once the machines are on their way, and each machine's
# `gpool agent --name NAME` registers when it is up (gpool waits for that). The names are
# the instance ids and the node names. Configure it per node template:
#
#   node_templates:
#     - name: rack7
#       provider: /etc/gpool/providers/slurm-resume-suspend.sh
#       model: H100-80GB
#       gpus: 8
#       capacity: on-prem
#       max_nodes: 16
#       env: {POOL: "gpu[01-16]", RESUME_PROGRAM: /etc/slurm/resume.sh,
#             SUSPEND_PROGRAM: /etc/slurm/suspend.sh, STATE_DIR: /var/lib/gpool/rack7}
#
# POOL may be a Slurm host list when `scontrol` works here, else names separated by
# commas. The state (which names are on) is a file in STATE_DIR, changed under a lock, so
# two calls at once never resume one name twice; a create repeated with the same
# idempotency key answers the names it gave the first time.
set -u
verb=${1:-}
req=$(cat)
field() { printf '%s' "$req" | jq -r "$1"; }
fail() { jq -nc --arg c "$1" --arg m "$2" '{error: {class: $c, message: $m}}'; exit 1; }

[ -n "${POOL:-}" ] && [ -x "${RESUME_PROGRAM:-}" ] && [ -x "${SUSPEND_PROGRAM:-}" ] &&
  [ -n "${STATE_DIR:-}" ] || fail invalid "set POOL, RESUME_PROGRAM, SUSPEND_PROGRAM and STATE_DIR in the template's env"
mkdir -p "$STATE_DIR/keys" || fail invalid "cannot make $STATE_DIR"
on=$STATE_DIR/on # one resumed name per line
touch "$on"

names() {
  scontrol show hostnames "$POOL" 2>/dev/null || printf '%s\n' "$POOL" | tr ',' '\n'
}
as_list() { paste -sd, -; }
as_ids() { jq -R . | jq -sc .; }

exec 9>"$STATE_DIR/lock"
flock -w 10 9 || fail transient "another call holds $STATE_DIR/lock"

case "$verb" in
create)
  count=$(field .count)
  key=$(field .idempotency_key | sha256sum | cut -c1-32)
  if [ -s "$STATE_DIR/keys/$key" ]; then
    picked=$(cat "$STATE_DIR/keys/$key") # the same call again: the same answer
  else
    picked=$(names | grep -vxF -f "$on" | head -n "$count")
    [ -n "$picked" ] || fail capacity "every machine of $POOL is on"
    "$RESUME_PROGRAM" "$(printf '%s\n' "$picked" | as_list)" >&2 ||
      fail transient "$RESUME_PROGRAM failed with status $?"
    printf '%s\n' "$picked" >>"$on"
    printf '%s\n' "$picked" >"$STATE_DIR/keys/$key"
  fi
  printf '%s\n' "$picked" | jq -R '{id: ., node: .}' | jq -sc '{instances: .}'
  ;;
delete)
  ids=$(field '.instances[]' | grep -xF -f "$on")
  if [ -n "$ids" ]; then
    "$SUSPEND_PROGRAM" "$(printf '%s\n' "$ids" | as_list)" >&2 ||
      fail transient "$SUSPEND_PROGRAM failed with status $?"
    grep -vxF -f /dev/stdin "$on" >"$on.new" <<EOF
$ids
EOF
    mv "$on.new" "$on"
  fi
  # Names that were not on are already deleted: say so, so gpool stops asking.
  field '.instances[]' | as_ids | jq -c '{deleted: .}'
  ;;
list)
  jq -R '{id: ., node: .}' <"$on" | jq -sc '{instances: .}'
  ;;
*) fail invalid "unknown verb '$verb' (create, delete or list)" ;;
esac
