#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `gpool run --pty` and `gpool exec -it` driven on a real terminal by pexpect: the prompt
# comes, a typed command sees the job's CUDA_VISIBLE_DEVICES, a window resize reaches
# `stty size`, Ctrl-C interrupts a sleep and Ctrl-Z stops one, `exit 3` makes gpool (and the
# job) end with 3; Slurm's srun --pty the same. `gpool alloc` holds an allocation for a
# local shell whose gpool exec and srun run on it. Without --pty: stdin, the exit code, and
# the pending reason shown while the job waits for GPUs.
source "$(dirname "$0")/lib.sh"
e2e_need python3
python3 -c 'import pexpect' 2>/dev/null || fail "python3-pexpect is not installed (run scripts/setup.sh)"
e2e_init
E2E_QUEUES='  - {name: lab, users: ["*"], priority_classes: [interactive, training]}' e2e_server
e2e_agent n1 2xH100-80GB
export GPOOL_TOKEN=$BOB_TOKEN

cat >"$E2E_DIR/drive_session.py" <<'PY'
import os, sys, time, pexpect
gpool, mode = sys.argv[1], sys.argv[2]
shell = ["bash", "--norc", "--noprofile", "-i"]
args = ["run", "-q", "lab", "-g", "1", "--pty", "--"] + shell if mode == "run" else \
       ["--gres=gpu:1", "-p", "lab", "--pty"] + shell if mode == "srun" else \
       ["exec", sys.argv[3], "-it", "--"] + shell
p = pexpect.spawn(gpool, args, dimensions=(24, 80), timeout=20, encoding="utf-8")
p.logfile_read = sys.stdout
p.expect(r"[$#] ")  # bash's own prompt first: typeahead before it may be flushed
p.sendline("PS1='gp''> '")
p.expect_exact("gp> ")
p.sendline("echo CVD=$CUDA_VISIBLE_DEVICES JOB=$GPOOL_JOB_ID")
p.expect(r"CVD=(GPU-[0-9a-f-]+) JOB=(\d+)")
print("\nSEEN", p.match.group(1), p.match.group(2), flush=True)
p.expect_exact("gp> ")
p.setwinsize(40, 123)
time.sleep(0.2)
p.sendline("stty size")
p.expect_exact("40 123")
p.expect_exact("gp> ")
p.sendline("echo go-$((1+1)); sleep 30; echo after-sleep")
p.expect_exact("go-2")  # the output, not the echoed line: sleep starts now
time.sleep(0.3)
t0 = time.time()
p.sendcontrol("c")
p.expect_exact("gp> ")
assert time.time() - t0 < 5, "Ctrl-C did not interrupt sleep"
assert "\nafter-sleep" not in p.before, "the line after an interrupted sleep ran"
p.sendline("echo go-$((1+2)); sleep 30")
p.expect_exact("go-3")
time.sleep(0.3)
p.sendcontrol("z")
p.expect("Stopped")
p.expect_exact("gp> ")
p.sendline("kill -9 %1")
p.expect_exact("gp> ")
p.sendline("exit 3")
# Bash may not have reaped the killed job yet and then refuses the first exit ("There are
# stopped jobs."); a second exit is what a user types too.
if p.expect([pexpect.EOF, "There are stopped jobs"]) == 1:
    p.expect_exact("gp> ")
    p.sendline("exit 3")
    p.expect(pexpect.EOF)
p.close()
print("\nEXIT", p.exitstatus, flush=True)
sys.exit(0 if p.exitstatus == 3 else 1)
PY

# gpool run --pty: a shell on the job's GPU; exit 3 is gpool's code and the job's.
out=$(cd "$E2E_DIR" && timeout 90 python3 drive_session.py "$GPOOL" run 2>&1) || fail "gpool run --pty session: $out"
expect_contains "$out" "EXIT 3" "gpool run returns the shell's exit code"
run_job=$(echo "$out" | sed -n 's/^SEEN GPU-[0-9a-f-]* \([0-9]*\).*/\1/p' | head -n1)
[ -n "$run_job" ] || fail "the shell did not see GPOOL_JOB_ID: $out"
wait_for 20 "the run's job to end" job_is "$run_job" failed
expect_eq 3 "$(job_field "$run_job" .exit_code)" "the job ends with the shell's code"
expect_eq interactive "$(job_field "$run_job" .priority)" "gpool run defaults to the interactive class"
# A queue that does not grant the class: the queue's default, with a note.
out=$(timeout 30 "$GPOOL" run -- echo in-default 2>&1) || fail "gpool run in the default queue: $out"
expect_contains "$out" "in-default" "the run in the default queue ran"
expect_contains "$out" "queue's default class" "the fallback is said"

# Slurm's srun --pty outside an allocation: the same, through gpool run.
ln -s "$GPOOL" "$E2E_DIR/srun"
out=$(cd "$E2E_DIR" && env -u SLURM_JOB_ID -u GPOOL_JOB_ID timeout 90 python3 drive_session.py "$E2E_DIR/srun" srun 2>&1) || fail "srun --pty session: $out"
expect_contains "$out" "EXIT 3" "srun --pty returns the shell's exit code"
expect_contains "$out" "SEEN GPU-" "srun --pty's shell sees its GPU"

# gpool alloc (salloc): a shell here with the allocation's id; exec and srun run on it; the
# allocation ends with the shell, whose code is gpool's.
out=$(cd "$E2E_DIR" && timeout 60 "$GPOOL" alloc -q lab -g 1 -- sh -c '
  echo "ALLOC=$GPOOL_JOB_ID SLURM=$SLURM_JOB_ID"
  "$0" exec "$GPOOL_JOB_ID" -- sh -c "echo EXEC-CVD=\$CUDA_VISIBLE_DEVICES"
  ./srun sh -c "echo SRUN-CVD=\$CUDA_VISIBLE_DEVICES"
  exit 6' "$GPOOL" 2>&1)
expect_eq 6 "$?" "gpool alloc exits with the shell's code"
alloc_job=$(echo "$out" | sed -n 's/^ALLOC=\([0-9]*\) SLURM=\1$/\1/p')
[ -n "$alloc_job" ] || fail "the shell names its allocation in GPOOL_JOB_ID and SLURM_JOB_ID: $out"
expect_contains "$out" "EXEC-CVD=GPU-" "gpool exec runs on the allocation's GPU"
expect_contains "$out" "SRUN-CVD=GPU-" "srun runs a step on the allocation's GPU"
wait_for 20 "the allocation to end" job_is "$alloc_job" cancelled

# gpool exec -it into a running job: the same terminal behaviour; the job keeps running.
id=$("$GPOOL" submit -g 1 -- sh -c "$(gate_wait)")
wait_for 20 "the job to run" job_launched "$id"
out=$(cd "$E2E_DIR" && timeout 90 python3 drive_session.py "$GPOOL" exec "$id" 2>&1) || fail "gpool exec -it session: $out"
expect_contains "$out" "EXIT 3" "gpool exec -it returns the shell's exit code"
expect_contains "$out" "SEEN GPU-" "the shell sees the job's GPU"
job_is "$id" running || fail "the job runs on after an exec session"
open_gate

# Without --pty: stdin in, the exit code out.
expect_eq hi "$(echo hi | timeout 30 "$GPOOL" run -- cat)" "gpool run forwards stdin"
timeout 30 "$GPOOL" run -- sh -c 'exit 5'
expect_eq 5 "$?" "gpool run returns the command's exit code"

# A cancelled run job takes its command along: the CLI ends, saying so, and the GPU is free.
(timeout 60 "$GPOOL" run -g 1 -- sleep 50 >/dev/null 2>"$E2E_DIR/cancel.err"; echo $? >"$E2E_DIR/cancel.rc") &
wait_for 20 "the run to start" sh -c "'$GPOOL' jobs -o json | jq -e '[.[] | select(.state == \"running\")] | length == 1'"
run2=$("$GPOOL" jobs -o json | jq -r '.[] | select(.state == "running") | .id')
"$GPOOL" cancel "$run2" >/dev/null
wait_for 20 "the cancelled run's CLI to end" test -s "$E2E_DIR/cancel.rc"
expect_eq 1 "$(cat "$E2E_DIR/cancel.rc")" "a cancelled run exits 1"
expect_contains "$(cat "$E2E_DIR/cancel.err")" "job $run2 ended; the session ends with it" "the CLI says the job ended"
pgrep -f "sleep 5[0]" >/dev/null && fail "the cancelled run's command outlived its job"

# While the job waits, the pending reason is shown; it attaches once the GPUs free.
rm -f "$E2E_DIR/gate"
blocker=$("$GPOOL" submit -g 2 -- sh -c "$(gate_wait)")
wait_for 20 "the blocker to run" job_is "$blocker" running
(timeout 60 "$GPOOL" run -g 1 -- echo attached >"$E2E_DIR/run.out" 2>"$E2E_DIR/run.err"; echo $? >"$E2E_DIR/run.rc") &
wait_for 20 "the pending reason" grep -q "pending: Resources" "$E2E_DIR/run.err"
# Ctrl-C while waiting cancels the job it submitted.
"$GPOOL" run -g 1 -- true 2>"$E2E_DIR/int.err" &
int_pid=$!
wait_for 20 "the second run to wait" grep -q "pending:" "$E2E_DIR/int.err"
int_job=$(sed -n 's/^gpool run: job \([0-9]*\) pending.*/\1/p' "$E2E_DIR/int.err" | head -n1)
kill -INT "$int_pid"
wait "$int_pid"
expect_eq 130 "$?" "Ctrl-C while waiting exits 130"
expect_contains "$(cat "$E2E_DIR/int.err")" "interrupted; job $int_job cancelled" "the CLI says it cancelled the job"
wait_for 10 "the interrupted run's job cancelled" job_is "$int_job" cancelled
"$GPOOL" cancel "$blocker" >/dev/null
wait_for 30 "the run to end" test -s "$E2E_DIR/run.rc"
expect_eq 0 "$(cat "$E2E_DIR/run.rc")" "the waiting run exits 0"
expect_eq attached "$(cat "$E2E_DIR/run.out")" "the waiting run's output"
echo "ok: pty sessions"
