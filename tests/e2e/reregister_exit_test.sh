#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Ends during an agent's re-registration are not lost (issue: 8 one-GPU jobs stayed running
# for ever and held every GPU): eight `sleep 4` jobs run on a node, its agent is killed
# with SIGKILL, the server is frozen (SIGSTOP), the agent is restarted the documented way
# and registers into the frozen server, the jobs end while that call waits, and the server
# is thawed 6 s later. Every job must complete with its exit code and free its GPU.
source "$(dirname "$0")/lib.sh"
e2e_init
e2e_write_config
# The freeze must not mark the node down (that would end the jobs another way).
sed -i 's/^node_timeout_s: .*/node_timeout_s: 30/' "$E2E_DIR/server.yaml"
e2e_server
e2e_agent n1 8xH100-80GB
export GPOOL_TOKEN=$ADMIN_TOKEN

ids=()
for i in $(seq 1 8); do ids+=("$("$GPOOL" submit -g 1 -n "s$i" -- sleep 4)"); done
for id in "${ids[@]}"; do wait_for 30 "job $id's process to start" job_launched "$id"; done

kill -9 "$(agent_pid n1)"
kill -STOP "$SERVER_PID"
e2e_spawn "$E2E_DIR/agent-n1.log" "$GPOOL" agent --server "$SERVER_URL" --token "$AGENT_TOKEN" \
  --name n1 --sim 8xH100-80GB --data "$E2E_DIR/agent-n1" --personal --heartbeat-s 1
sleep 6
kill -CONT "$SERVER_PID"

for id in "${ids[@]}"; do wait_for 20 "job $id to complete" job_is "$id" completed; done
for id in "${ids[@]}"; do expect_eq 0 "$(job_field "$id" .exit_code)" "job $id's exit code"; done
grep -q "registered with" "$E2E_DIR/agent-n1.log" || fail "the restarted agent never registered"
# Every GPU is free again: an eight-GPU job runs at once.
all=$("$GPOOL" submit -g 8 -n all -- true)
wait_for 20 "the eight-GPU job $all to complete" job_is "$all" completed
echo "ok: reregister exit"
