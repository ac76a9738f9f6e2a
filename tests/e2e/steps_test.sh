#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# srun steps through the agents (docs/slurm.md#steps): inside a 2 nodes x 2 tasks job whose
# nodes have addresses of their own (127.0.0.2, 127.0.0.3), task 0 runs `srun python3
# rdv.py` and the four step ranks meet at the step's MASTER_ADDR:MASTER_PORT and agree on a
# sum; -l labels lines; the highest task exit code is srun's; -K kills the others on a bad
# exit; -N 1 -n 1 runs one task; an option gpool does not offer is refused by name; steps
# show in `gpool show` and as J.N lines in sacct; the step credential is good for its own
# job only (another job's, a made-up one and another user's token are refused); srun
# outside a job says so.
source "$(dirname "$0")/lib.sh"
e2e_init
e2e_need python3
e2e_need curl
# Steps keep two agents busy: a loaded machine must not take a slow heartbeat for a lost node.
e2e_write_config
sed -i 's/^node_timeout_s: .*/node_timeout_s: 15/' "$E2E_DIR/server.yaml"
e2e_server
e2e_agent n2 4xH100-80GB --listen 127.0.0.2:0 --labels pool=rdv
e2e_agent n3 4xH100-80GB --listen 127.0.0.3:0 --labels pool=rdv
export GPOOL_TOKEN=$ADMIN_TOKEN
"$GPOOL" slurm-shims "$E2E_DIR/shims" >/dev/null || fail "gpool slurm-shims"
[ -L "$E2E_DIR/shims/srun" ] || fail "gpool slurm-shims must link srun"

cp "${GP_SOURCE_DIR:?}/tests/e2e/rdv_meet.py" .
cat >rdv.py <<'PY'
import os
from rdv_meet import meet
env = os.environ
rank, world = int(env["RANK"]), int(env["WORLD_SIZE"])
addr, port = env["MASTER_ADDR"], int(env["MASTER_PORT"])
assert env["SLURM_PROCID"] == str(rank) and env["SLURM_NTASKS"] == str(world), "step ranks"
assert env["GPOOL_MASTER_ADDR"] == addr and env["SLURM_STEP_ID"] == "0", "step env"
value = (rank + 1) * 10
print(f"rank {rank}/{world} node {env['GPOOL_NODE']} local {env['SLURM_LOCALID']} "
      f"nodeid {env['SLURM_NODEID']} master {addr}:{port} step_nodes {env['SLURM_STEP_NUM_NODES']} "
      f"gpus {env['CUDA_VISIBLE_DEVICES']} mine {env.get('MINE', '')}", flush=True)
total = meet(env, value)
print(f"sum {total}", flush=True)
PY

# Task 0 runs the steps (as Slurm's batch script would); the other tasks hold their part
# of the allocation until it is done.
cat >steps.sh <<'SH'
cd "$E2E_DIR"
if [ "$SLURM_PROCID" != 0 ]; then
  i=0; while [ ! -e steps.done ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i + 1)); done
  exit 0
fi
export MINE=caller-env
srun -l python3 rdv.py >rdv.out 2>rdv.err; echo $? >rdv.code
srun sh -c 'exit $((SLURM_PROCID + 2))' 2>codes.err; echo $? >codes.code
start=$(date +%s)
srun -K sh -c 'if [ "$SLURM_PROCID" = 1 ]; then exit 7; fi; exec sleep 60' 2>kill.err; echo $? >kill.code
echo $(( $(date +%s) - start )) >kill.secs
srun -N 1 -n 1 sh -c 'echo "$SLURM_PROCID/$SLURM_NTASKS $SLURM_STEP_NUM_NODES $SLURM_STEP_NODELIST $SLURMD_NODENAME"' >one.out 2>one.err
echo $? >one.code
srun --ntasks-per-node=1 sh -c 'echo "node $SLURM_NODEID of $SLURM_NNODES job nodes $SLURM_JOB_NUM_NODES gpus $CUDA_VISIBLE_DEVICES step_gpus $SLURM_STEP_GPUS on $SLURM_GPUS_ON_NODE"' >pernode.out
srun sleep 167 2>cancel.err &
sp=$!
i=0; while [ "$(pgrep -c -f '^sleep 16[7]')" -lt 4 ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
kill -TERM $sp
wait $sp; echo $? >cancel.code
i=0; while pgrep -f '^sleep 16[7]' >/dev/null && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
pgrep -c -f '^sleep 16[7]' >cancel.left
srun -l -o 'step-%J-%t.out' sh -c 'echo "out $SLURM_PROCID"; echo "err $SLURM_PROCID" >&2' >files.stdout
echo $? >files.code
srun -n 1 seq 1 200000 >big.out
# Task farming: 6 one-task --exclusive steps over the 4 job tasks, 4 at a time.
for i in 0 1 2 3 4 5; do
  srun --exclusive -n 1 sh -c 'echo "$CUDA_VISIBLE_DEVICES $SLURMD_NODENAME $(date +%s%N)"; sleep 1.5; date +%s%N' \
    >farm.$i 2>farm.err.$i &
done
wait
srun --no-such-option true 2>refused.err; echo $? >refused.code
srun -n 9 true 2>toomany.err; echo $? >toomany.code
# A step on srun's own node: its caller's PATH names this node's shims first already.
echo "$PATH" >path.job
srun -N 1 -n 1 -w "$GPOOL_NODE" sh -c 'echo "$GPOOL_NODE $PATH"' >path.step
env | grep -c '^GPOOL_JOB_KEY=' >key.count
touch steps.done
SH
job=$("$GPOOL" submit -N 2 --ntasks-per-node 2 -g 1 --node-selector pool=rdv -e ADDR_n2=127.0.0.2 \
  -e ADDR_n3=127.0.0.3 -e E2E_DIR="$E2E_DIR" -- sh "$E2E_DIR/steps.sh")
wait_for 90 "job $job to end" sh -c "'$GPOOL' show $job -o json | jq -e '.state | test(\"completed|failed\")'"
expect_eq completed "$(job_field "$job" .state)" "the job completes (task 0: $("$GPOOL" logs "$job" 2>&1))"
expect_eq 1 "$(cat key.count)" "the job's tasks hold their step credential"
wait_for 15 "the steps' output to go with the job's tasks" sh -c \
  "[ -z \"\$(find '$E2E_DIR/agent-n2/steps' '$E2E_DIR/agent-n3/steps' -mindepth 1)\" ]"

# ---- the rendezvous step ----
expect_eq 0 "$(cat rdv.code)" "srun python3 rdv.py succeeds ($(cat rdv.out rdv.err))"
expect_eq 4 "$(grep -c '^[0-3]: sum 100$' rdv.out)" "all four step ranks agree on the sum, with -l labels ($(cat rdv.out))"
for r in 0 1 2 3; do
  expect_eq 1 "$(grep -c "^$r: rank $r/4 " rdv.out)" "step rank $r ran once, labelled $r"
done
expect_eq 2 "$(grep -c 'node n2 ' rdv.out)" "two step ranks on n2"
expect_eq 2 "$(grep -c 'node n3 ' rdv.out)" "two step ranks on n3"
expect_eq 1 "$(grep -o 'master [0-9.]*:[0-9]*' rdv.out | sort -u | wc -l)" "one MASTER_ADDR:MASTER_PORT for the step"
expect_eq 4 "$(grep -c 'master 127.0.0.[23]:' rdv.out)" "MASTER_ADDR is a node address"
expect_eq 4 "$(grep -c 'mine caller-env' rdv.out)" "srun passes its caller's environment"
expect_eq 4 "$(grep -o 'gpus [^ ]*' rdv.out | sort -u | wc -l)" "each step task sees its own job task's GPU"

# ---- exit codes, -K, a subset, refusals ----
expect_eq 5 "$(cat codes.code)" "srun exits with the highest task exit code"
expect_contains "$(cat codes.err)" "task 3: Exited with exit code 5" "srun names the failed tasks"
[ "$(cat kill.code)" -ne 0 ] || fail "srun -K fails when a task fails"
[ "$(cat kill.secs)" -lt 20 ] || fail "srun -K kills the other tasks at once (took $(cat kill.secs) s)"
expect_contains "$(cat kill.err)" "task 1: Exited with exit code 7" "the bad exit is reported"
expect_eq 0 "$(cat one.code)" "srun -N 1 -n 1 ($(cat one.err))"
one=$(cat one.out)
expect_eq 1 "$(wc -l <one.out)" "-N 1 -n 1 runs one task"
case "$one" in "0/1 1 n2 n2" | "0/1 1 n3 n3") ;; *) fail "a one-task step's variables: $one" ;; esac
expect_eq 2 "$(grep -c 'job nodes 2' pernode.out)" "--ntasks-per-node=1: one task per node ($(cat pernode.out))"
expect_eq 1 "$(grep -c 'node 0 of 2' pernode.out)" "step node ids count the step's nodes"
expect_eq 2 "$(grep -o 'gpus GPU[^ ]*' pernode.out | grep -c ',')" "a node's only step task sees all the job's GPUs there"
expect_eq 2 "$(grep -c 'step_gpus [0-9],[0-9] on 2' pernode.out)" "SLURM_STEP_GPUS and SLURM_GPUS_ON_NODE name them ($(cat pernode.out))"
expect_eq 0 "$(cat files.code)" "srun -o"
expect_eq "200000 200000" "$(wc -l <big.out) $(tail -n 1 big.out)" "srun relays a large output whole, in order"
expect_eq "" "$(cat files.stdout)" "srun -o writes nothing to srun's own stdout"
for t in 0 1 2 3; do
  expect_eq "$t: err $t/$t: out $t" "$(sort step-"$job".6-$t.out | tr '\n' / | sed 's|/$||')" \
    "task $t's file by -o's pattern holds its stdout and stderr, labelled"
done
[ "$(cat cancel.code)" -ne 0 ] || fail "srun stopped by SIGTERM fails"
expect_eq 0 "$(cat cancel.left)" "SIGTERM to srun stops the step's tasks on both nodes"
expect_eq 2 "$(cat refused.code)" "an srun option gpool does not offer exits 2"
expect_contains "$(cat refused.err)" "--no-such-option" "the refusal names the option"
expect_eq 1 "$(cat toomany.code)" "more tasks than the allocation holds is refused"
expect_contains "$(cat toomany.err)" "-n/--ntasks" "the refusal names -n"
read -r pnode ppath <path.step
expect_eq "$(cat path.job)" "$ppath" "a step on srun's node has its caller's PATH, the node's shims first and once"
expect_eq "$E2E_DIR/agent-$pnode/bin" "$(cut -d: -f1 path.job)" "the job's PATH starts with its node's shims"

# ---- the steps in gpool show, the API and sacct ----
expect_eq 15 "$(job_field "$job" '.steps | length')" "the job keeps its 15 steps (the refused ones never started)"
expect_eq "completed,failed,failed,completed,completed,cancelled,completed,completed" \
  "$(job_field "$job" '[.steps[] | .state] | .[0:8] | join(",")')" "the steps' states"
expect_eq 6 "$(job_field "$job" '[.steps[] | select(.exclusive and .state == "completed")] | length')" \
  "the 6 --exclusive steps completed"
expect_eq 4 "$(cat farm.[0-5] | awk 'NF == 3 { print $1 }' | sort -u | wc -l)" \
  "--exclusive steps took each job task's own GPU ($(cat farm.[0-5]))"
grep -q "temporarily disabled, retrying" farm.err.* || fail "srun --exclusive waits for a job task to be free"
# No two steps at once in one job task: in each GPU's runs, each starts after the last ended.
cat farm.[0-5] | paste - - | sort -k1,1 -k3,3n | awk '$1 == g && $3 < end { bad = 1 } { g = $1; end = $4 } END { exit bad }' ||
  fail "two --exclusive steps ran in one job task at once: $(cat farm.[0-5] | paste - -)"
expect_eq "0,5" "$(job_field "$job" '[.steps[0,1] | .exit_code | tostring] | join(",")')" "the steps' exit codes"
show=$("$GPOOL" show "$job")
expect_contains "$show" "  steps" "gpool show has a steps section"
expect_contains "$show" "1    4 tasks on n2,n3  failed exit 5" "gpool show lists a step's tasks, state and exit code"
expect_contains "$show" "python3 rdv.py" "gpool show lists a step's command"
expect_eq "(hidden)" "$(as_bob "$GPOOL" show "$job" -o json | jq -r '.steps[0].command[0]')" \
  "another user sees no step's command"
sacct=$(PATH="$E2E_DIR/shims:$PATH" sacct -j "$job" -n -P -o JobID,State,ExitCode)
expect_contains "$sacct" "$job.0|COMPLETED|0:0" "sacct shows step 0"
expect_contains "$sacct" "$job.1|FAILED|5:0" "sacct shows step 1 with its exit code"
sacctx=$(PATH="$E2E_DIR/shims:$PATH" sacct -X -j "$job" -n -P -o JobID)
expect_eq "$job" "$sacctx" "sacct -X hides the steps"

# ---- the step credential: its own job's running steps only ----
rm -f "$E2E_DIR/gate"
other=$("$GPOOL" submit -g 1 --node-selector pool=rdv -- sh -c "echo \"\$GPOOL_JOB_KEY\" >'$E2E_DIR/other.key'; $(gate_wait)")
wait_for 30 "job $other to run" test -s "$E2E_DIR/other.key"
held=$("$GPOOL" submit -g 1 --node-selector pool=rdv -- sh -c "$(gate_wait)")
wait_for 30 "job $held to run" job_is "$held" running
key=$(cat other.key)
case "$key" in gpjob.*) ;; *) fail "a job's credential is in GPOOL_JOB_KEY ($key)" ;; esac
body='{"command":["true"]}'
expect_eq 403 "$(api_status POST "/v1/jobs/$held/steps" "$key" -d "$body")" "another job's credential is refused"
expect_eq 403 "$(api_status POST "/v1/jobs/$held/steps" "gpjob.0123456789abcdef" -d "$body")" "a made-up credential is refused"
expect_eq 401 "$(api_status POST "/v1/jobs/$held/steps" "nope" -d "$body")" "no credential at all is refused"
expect_eq 403 "$(api_status POST "/v1/jobs/$held/steps" "$BOB_TOKEN" -d "$body")" "another user's token is refused"
expect_eq 401 "$(api_status GET "/v1/jobs/$other" "$key")" "the credential reads nothing but steps"
expect_eq 201 "$(api_status POST "/v1/jobs/$other/steps" "$key" -d "$body")" "its own job's credential runs a step"
expect_eq 400 "$(api_status POST "/v1/jobs/$other/steps" "$key" -d '{"command":["true"],"ntasks":0}')" "a bad field is refused"
expect_contains "$(cat "$E2E_DIR/body")" "ntasks" "the refusal names the field"
expect_eq 400 "$(api_status GET "/v1/jobs/$other/steps?wait=1" "$key")" "an unknown parameter is refused"
open_gate
wait_for 30 "job $other to complete" job_is "$other" completed
expect_eq 403 "$(api_status POST "/v1/jobs/$other/steps" "$key" -d "$body")" "the credential dies with the run"
"$GPOOL" show "$other" -o json | grep -q "$key" && fail "the job document must not hold the credential"

# ---- a job task that ended holds no step ----
cat >ended.sh <<'SH'
cd "$E2E_DIR"
[ "$SLURM_PROCID" != 0 ] && exit 0
i=0; while [ ! -e ended.go ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
srun true 2>ended.err; echo $? >ended.code
srun -n 1 true; echo $? >ended1.code
SH
ej=$("$GPOOL" submit -N 2 --ntasks-per-node 1 -g 1 --node-selector pool=rdv -e E2E_DIR="$E2E_DIR" -- sh "$E2E_DIR/ended.sh")
wait_for 30 "task 1 of job $ej to end" sh -c "[ \"\$('$GPOOL' show $ej -o json | jq -r '.placements[1].exit_code')\" = 0 ]"
touch ended.go
wait_for 30 "job $ej to complete" job_is "$ej" completed
expect_eq 1 "$(cat ended.code)" "a step over an ended task is refused"
expect_contains "$(cat ended.err)" "task 1 of job $ej has ended" "the refusal names the task"
expect_eq 0 "$(cat ended1.code)" "a step in the running task still runs"

# ---- an agent restart: step tasks are not re-adopted; the step ends, srun says why ----
cat >lost.sh <<'SH'
cd "$E2E_DIR"
if [ "$SLURM_PROCID" != 0 ]; then
  i=0; while [ ! -e lost.done ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i + 1)); done
  exit 0
fi
srun sleep 173 2>lost.err; echo $? >lost.code
touch lost.done
SH
lj=$("$GPOOL" submit -N 2 --ntasks-per-node 1 -g 1 --node-selector pool=rdv -e E2E_DIR="$E2E_DIR" -- sh "$E2E_DIR/lost.sh")
wait_for 30 "the step's two tasks to run" sh -c '[ "$(pgrep -c -f "^sleep 17[3]")" -ge 2 ]'
kill -9 "$(agent_pid n3)"
e2e_agent n3 4xH100-80GB --listen 127.0.0.3:0 --labels pool=rdv
wait_for 30 "srun to end after the agent restart" test -s lost.code
[ "$(cat lost.code)" -ne 0 ] || fail "a step that lost a task fails"
expect_contains "$(cat lost.err)" "lost" "srun says a task was lost ($(cat lost.err))"
wait_for 15 "the step's other task to be stopped" sh -c '! pgrep -f "^sleep 17[3]"'
wait_for 30 "job $lj to complete" job_is "$lj" completed
expect_eq failed "$(job_field "$lj" '.steps[0].state')" "the step failed"

# ---- srun outside a job ----
out=$(env -u SLURM_JOB_ID -u GPOOL_JOB_ID "$E2E_DIR/shims/srun" true 2>&1)
code=$?
expect_eq 1 "$code" "srun outside a job fails"
expect_contains "$out" "srun outside an allocation" "srun outside a job says why"
out=$(SLURM_JOB_ID=1 "$E2E_DIR/shims/srun" --pty bash 2>&1)
expect_contains "$out" "--pty" "srun --pty is refused by name"
echo "PASS"
