#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Tasks are first class: two tasks of a gang on one node both run, each in its own
# directory with its own log; an agent restart re-adopts both; the job completes only when
# every task exited 0 (a task that exits 3 fails the job with code 3, one that cannot start
# fails it with the reason). Rendezvous wiring: each simulated node has an address of its
# own (127.0.0.2, 127.0.0.3) that its agent advertises, and the four ranks of a 2 nodes x 2
# tasks job meet over TCP at MASTER_ADDR:MASTER_PORT (rank 0 listens on its own node's
# address only, so a wrong MASTER_ADDR fails) and agree on a sum.
source "$(dirname "$0")/lib.sh"
e2e_init
e2e_need python3
e2e_server
e2e_agent n1 2xH100-80GB
export GPOOL_TOKEN=$ADMIN_TOKEN

# ---- two tasks on one node ----
both=$("$GPOOL" submit -N 2 -g 1 -n pair -- sh -c \
  'echo "task $GPOOL_TASK_INDEX of $GPOOL_TASKS rank $RANK local $LOCAL_RANK/$LOCAL_WORLD_SIZE gpus $CUDA_VISIBLE_DEVICES"; echo "$GPOOL_TASK_INDEX" >"out-$GPOOL_TASK_INDEX"')
wait_for 30 "job $both to end" sh -c "'$GPOOL' show $both -o json | jq -e '.state | test(\"completed|failed\")'"
expect_eq completed "$(job_field "$both" .state)" "a 2-task job on one node completes"
expect_eq "n1,n1" "$(job_field "$both" '[.placements[].node] | join(",")')" "both tasks were placed on n1"
[ -f out-0 ] && [ -f out-1 ] || fail "both tasks must run (out-0: $(cat out-0 2>&1), out-1: $(cat out-1 2>&1))"
log0=$("$GPOOL" logs "$both" --task 0 2>/dev/null)
log1=$("$GPOOL" logs "$both" --task 1 2>/dev/null)
expect_contains "$log0" "task 0 of 2 rank 0 local 0/2" "task 0's log is its own"
expect_contains "$log1" "task 1 of 2 rank 1 local 1/2" "task 1's log is its own"
[ "$log0" != "$log1" ] || fail "the two tasks' logs must differ"
gpus0=${log0##*gpus }
gpus1=${log1##*gpus }
[ -n "$gpus0" ] && [ "$gpus0" != "$gpus1" ] || fail "each task gets its own GPU ($gpus0 / $gpus1)"
expect_eq 2 "$(job_field "$both" '[.timeline[] | select(.event == "launched")] | length')" "both tasks launched"

# ---- kill -9 of the agent: a restart re-adopts both tasks, each from its own directory ----
rm -f "$E2E_DIR/gate"
held=$("$GPOOL" submit -N 2 -g 1 -- sh -c "$(gate_wait); echo \"done \$GPOOL_TASK_INDEX\" >held-\$GPOOL_TASK_INDEX")
wait_for 30 "both tasks of $held to launch" job_launched "$held" 2
kill -9 "$(agent_pid n1)"
e2e_agent n1 2xH100-80GB
# The node may still count as up from before the kill, so e2e_agent can return before the
# new agent has looked at its directories: wait for what it says it found.
wait_for 20 "the restarted agent to re-adopt both tasks" grep -q "found 2 running job(s)" "$E2E_DIR/agent-n1.log"
job_is "$held" running || fail "job $held must still run after the agent restart ($(job_field "$held" .state))"
open_gate
wait_for 30 "job $held to complete" job_is "$held" completed
expect_eq "done 0/done 1" "$(cat held-0)/$(cat held-1)" "both re-adopted tasks ran to their end"

# ---- one task fails: the job fails with its code, the other task is stopped ----
bad=$("$GPOOL" submit -N 2 -g 1 -- sh -c 'if [ "$GPOOL_TASK_INDEX" = 1 ]; then exit 3; fi; exec sleep 301')
wait_for 30 "job $bad to fail" job_is "$bad" failed
expect_eq 3 "$(job_field "$bad" .exit_code)" "the job's exit code is the failing task's"
expect_contains "$(job_field "$bad" .end_reason)" "task 1" "the end reason names the task that failed"
wait_for 10 "the other task's process to end" sh -c '! pgrep -f "sleep 30[1]"'

# Codes 0 and 2: failed with 2 (completed needs every task at 0).
two=$("$GPOOL" submit -N 2 -g 1 -- sh -c 'exit $((GPOOL_TASK_INDEX * 2))')
wait_for 30 "job $two to fail" job_is "$two" failed
expect_eq 2 "$(job_field "$two" .exit_code)" "the highest task exit code"
expect_eq "0,2" "$(job_field "$two" '[.placements[].exit_code | tostring] | join(",")')" "each task's exit code"

# A task that cannot start fails the job, with the reason.
nostart=$("$GPOOL" submit -N 2 -g 1 -- /nonexistent/gpool-no-such-command)
wait_for 30 "job $nostart to fail" job_is "$nostart" failed
reason=$(job_field "$nostart" .end_reason)
expect_contains "$reason" "task " "the end reason names a task ($reason)"
expect_contains "$reason" "start_failed" "the end reason says the task could not start ($reason)"

# ---- rendezvous across two nodes with addresses of their own ----
e2e_agent n2 4xH100-80GB --listen 127.0.0.2:0 --labels pool=rdv
e2e_agent n3 4xH100-80GB --listen 127.0.0.3:0 --labels pool=rdv
cp "${GP_SOURCE_DIR:?}/tests/e2e/rdv_meet.py" .
cat >rdv.py <<'PY'
import os
from rdv_meet import meet
env = os.environ
rank, world = int(env["RANK"]), int(env["WORLD_SIZE"])
addr, port = env["MASTER_ADDR"], int(env["MASTER_PORT"])
assert env["GPOOL_MASTER_ADDR"] == addr and env["GPOOL_RANK"] == str(rank)
value = (rank + 1) * 10
print(f"rank {rank}/{world} node {env['GPOOL_NODE']} node_rank {env['NODE_RANK']} "
      f"local {env['LOCAL_RANK']}/{env['LOCAL_WORLD_SIZE']} master {addr}:{port}", flush=True)
if rank == 0:
    print(open(env["GPOOL_HOSTFILE"]).read(), end="")
    print(open(env["GPOOL_HOSTFILE_MPICH"]).read(), end="")
total = meet(env, value)
print(f"sum {total}", flush=True)
PY
# -N 2 --ntasks-per-node 2: bin-packing alone would put all four 1-GPU tasks on one node.
rdv=$("$GPOOL" submit -N 2 --ntasks-per-node 2 -g 1 --node-selector pool=rdv -e ADDR_n2=127.0.0.2 -e ADDR_n3=127.0.0.3 \
  -- python3 "$E2E_DIR/rdv.py")
wait_for 60 "job $rdv to end" sh -c "'$GPOOL' show $rdv -o json | jq -e '.state | test(\"completed|failed\")'"
for t in 0 1 2 3; do echo "--- task $t"; "$GPOOL" logs "$rdv" --task $t 2>&1; done >rdv.out
expect_eq completed "$(job_field "$rdv" .state)" "the rendezvous job completes ($(cat rdv.out))"
expect_eq "n2,n2,n3,n3" "$(job_field "$rdv" '[.placements[].node] | sort | join(",")')" "two tasks on each node"
expect_eq 4 "$(grep -c '^sum 100$' rdv.out)" "all four ranks agree on the sum ($(cat rdv.out))"
node0=$(job_field "$rdv" '.placements[0].node')
addr0=127.0.0.${node0#n}
expect_eq 4 "$(grep -c "master $addr0:" rdv.out)" "MASTER_ADDR is task 0's node address"
expect_eq 1 "$(grep -o 'master [0-9.]*:[0-9]*' rdv.out | sort -u | wc -l)" "one MASTER_ADDR:MASTER_PORT for all"
expect_contains "$(cat rdv.out)" "127.0.0.2 slots=2" "the OpenMPI host file lists n2 with its 2 tasks"
expect_contains "$(cat rdv.out)" "127.0.0.3 slots=2" "the OpenMPI host file lists n3 with its 2 tasks"
expect_contains "$(cat rdv.out)" "127.0.0.2:2" "the MPICH host file lists n2"
for r in 0 1 2 3; do
  expect_eq 1 "$(grep -c "^rank $r/4 " rdv.out)" "rank $r ran once"
done
expect_eq 2 "$(grep -c 'node_rank 0 local [01]/2' rdv.out)" "two ranks on node rank 0"
expect_eq 2 "$(grep -c 'node_rank 1 local [01]/2' rdv.out)" "two ranks on node rank 1"
echo "PASS"
