#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# -o files on a cluster node (a root agent running jobs as their users): the file is created
# by and for the job's user in its working directory, and a name where only root may write
# fails the job instead of being written with the agent's privileges. Needs root (the agent
# switches users) and the system user `nobody`.
source "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || { echo "(skipped: needs root: the agent switches users)"; exit 0; }
getent passwd nobody >/dev/null || { echo "(skipped: no user nobody)"; exit 0; }
e2e_init
NOBODY_TOKEN=nob-$RANDOM$RANDOM
e2e_write_config
sed -i "s|^tokens:|tokens:\n  - {token: \"$NOBODY_TOKEN\", user: nobody, role: user}|" "$E2E_DIR/server.yaml"
e2e_server
mkdir -p "$E2E_DIR/agent-n1"
e2e_spawn "$E2E_DIR/agent-n1.log" "$GPOOL" agent --server "$SERVER_URL" --token "$AGENT_TOKEN" \
  --name n1 --sim 1xH100-80GB --data "$E2E_DIR/agent-n1" --heartbeat-s 1
wait_for 20 "node n1 to be up" node_is n1 up

chmod 711 "$E2E_DIR"
work=$E2E_DIR/work
mkdir -p "$work"
chown nobody: "$work"
export GPOOL_TOKEN=$NOBODY_TOKEN
j=$("$GPOOL" submit -D "$work" -o 'out-%u-%j.txt' -- sh -c 'id -un; echo oops >&2') || fail "submit: $j"
wait_for 20 "job $j to complete" job_is "$j" completed
f=$work/out-nobody-$j.txt
[ -f "$f" ] || fail "no $f ($(ls -l "$work"))"
expect_eq "nobody" "$(stat -c %U "$f")" "the -o file belongs to the job's user"
expect_eq "nobody oops" "$(tr '\n' ' ' <"$f" | sed 's/ $//')" "the job's stdout and stderr are in it"
expect_contains "$(GPOOL_TOKEN=$ADMIN_TOKEN "$GPOOL" logs "$j" 2>/dev/null)" "nobody" "gpool logs shows it too"

# Where only root may write: the job fails, nothing is written with the agent's rights.
ln -s /root/gpool-e2e-evil.txt "$work/evil.txt"
k=$("$GPOOL" submit -D "$work" -o "/root/gpool-e2e-$$.txt" -- echo no)
l=$("$GPOOL" submit -D "$work" -o evil.txt -- echo no)
wait_for 20 "job $k to fail" job_is "$k" failed
wait_for 20 "job $l to fail" job_is "$l" failed
[ -e "/root/gpool-e2e-$$.txt" ] && { rm -f "/root/gpool-e2e-$$.txt"; fail "a root-only path was written for nobody"; }
[ -e /root/gpool-e2e-evil.txt ] && { rm -f /root/gpool-e2e-evil.txt; fail "a link was followed with the agent's rights"; }
expect_contains "$(GPOOL_TOKEN=$ADMIN_TOKEN "$GPOOL" show "$k" -o json)" "Permission denied" "the failure says why"
echo "PASS"
