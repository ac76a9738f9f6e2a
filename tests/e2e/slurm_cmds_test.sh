#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Slurm's user commands through `gpool slurm-shims` links: sbatch submits a #SBATCH script
# ("Submitted batch job N", --parsable), squeue prints Slurm's default columns and state
# codes (an array's pending elements folded), scancel cancels a job, one array element and
# by name, sacct shows ended jobs' exit codes as code:signal, sinfo lists the queue and its
# node, scontrol show job prints Slurm's key=value layout; unknown options and fields are
# refused by name. Inside a job the same links are on PATH; squeue needs a credential there.
source "$(dirname "$0")/lib.sh"
e2e_init
e2e_server
e2e_agent n1 2xH100-80GB
export GPOOL_TOKEN=$ADMIN_TOKEN

out=$("$GPOOL" slurm-shims "$E2E_DIR/sbin") || fail "slurm-shims: $out"
for c in sbatch squeue scancel sinfo sacct scontrol; do
  [ -L "$E2E_DIR/sbin/$c" ] || fail "slurm-shims made no $c link ($out)"
done
export PATH=$E2E_DIR/sbin:$PATH

cat >long.sh <<SH
#!/bin/bash
#SBATCH -J longjob
#SBATCH --gres=gpu:2
$(gate_wait)
echo done
SH
cat >fail.sh <<'SH'
#!/bin/bash
#SBATCH -J failjob
exit 3
SH

msg=$(sbatch long.sh) || fail "sbatch long.sh: $msg"
case "$msg" in "Submitted batch job "[0-9]*) ;; *) fail "sbatch prints Slurm's line, got '$msg'" ;; esac
long=${msg##* }
wait_for 20 "job $long to run" job_is "$long" running
pend=$(sbatch --parsable -J pendjob --gres=gpu:1 long.sh) || fail "sbatch --parsable: $pend"
arr=$(sbatch --parsable --array=0-2 -J arr --gres=gpu:1 fail.sh) || fail "sbatch --array: $arr"
failid=$(sbatch --parsable fail.sh) || fail "sbatch fail.sh: $failid"
expect_eq pendjob "$(job_field "$pend" .name)" "the command line's -J wins over #SBATCH -J"

q=$(squeue)
expect_eq "             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)" \
  "$(head -n1 <<<"$q")" "squeue's default header"
line=$(grep -E "^ +$long " <<<"$q") || fail "squeue lists $long: $q"
read -r c_id c_part c_name c_user c_st c_time c_nodes c_list <<<"$line"
expect_eq "$long default longjob alice R 1 n1" "$c_id $c_part $c_name $c_user $c_st $c_nodes $c_list" \
  "squeue's columns for a running job ($line)"
case "$c_time" in [0-9]:[0-9][0-9]) ;; *) fail "squeue TIME in Slurm's M:SS form, got '$c_time'" ;; esac
pl=$(grep -E "^ +$pend " <<<"$q") || fail "squeue lists $pend: $q"
case "$pl" in *" PD "*" 1 ("*")") ;; *) fail "a pending job shows PD and (Reason): $pl" ;; esac
expect_contains "$q" "${arr}_[0-2]" "the array's pending elements fold into one line"
expect_eq "$pend PENDING pendjob" "$(squeue -h -j "$pend" -o '%i %T %j')" "squeue -h -j -o"
expect_eq "$long" "$(squeue -h -t R -o %i)" "squeue -t R"
expect_eq "" "$(squeue -h -u bob)" "squeue -u bob: none of alice's jobs"
expect_eq "$long" "$(squeue -h --me -t running -p default -o %.5i | tr -d ' ')" "squeue --me -p -t"

# Refusals name what gpool does not do.
out=$(squeue -o '%i %Z' 2>&1); rc=$?
expect_eq 2 "$rc" "an unknown squeue field is refused ($out)"
expect_contains "$out" "'%Z' is not supported" "and named"
out=$(squeue --clusters=x 2>&1); rc=$?
expect_eq 2 "$rc" "an unknown squeue option is refused ($out)"
expect_contains "$out" "clusters" "and named"
out=$(sbatch --account=proj long.sh 2>&1); rc=$?
expect_eq 2 "$rc" "sbatch refuses an option gpool ignores in scripts ($out)"
expect_contains "$out" "--account" "and names it"
out=$(sbatch --frobnicate long.sh 2>&1); rc=$?
expect_eq 2 "$rc" "sbatch refuses an unknown option ($out)"
out=$(sacct --format=JobID,Bogus 2>&1); rc=$?
expect_eq 2 "$rc" "sacct refuses an unknown field ($out)"
expect_contains "$out" "'Bogus'" "and names it"
out=$(scancel -s KILL "$long" 2>&1); rc=$?
expect_eq 2 "$rc" "scancel refuses --signal ($out)"
out=$(sinfo --summarize 2>&1); rc=$?
expect_eq 2 "$rc" "sinfo refuses what it lacks ($out)"

# scancel: one array element, a job, the rest of the array by name.
scancel "${arr}_1" || fail "scancel ${arr}_1"
expect_eq "${arr}_[0,2]" "$(squeue -h -j "$arr" -o %i)" "element 1 is gone from the array's line"
scancel "$pend" || fail "scancel $pend"
wait_for 10 "job $pend to be cancelled" job_is "$pend" cancelled
scancel -n arr || fail "scancel -n arr"
wait_for 10 "array $arr to be cancelled" job_is "$arr" cancelled
expect_eq "" "$(squeue -h -t PD -j "$pend,$arr")" "nothing of them is pending"

s=$(sinfo)
expect_eq "PARTITION AVAIL  TIMELIMIT NODES STATE  NODELIST" "$(head -n1 <<<"$s")" "sinfo's header"
expect_eq "default up infinite 1 alloc n1" "$(tail -n +2 <<<"$s" | tr -s ' ')" "sinfo: the queue over its busy node"

# A job inside: the links are on PATH; squeue without a credential says where one comes from.
open_gate
wait_for 20 "job $failid to end" job_is "$failid" failed
wait_for 10 "job $long to end" job_is "$long" completed
inner=$("$GPOOL" submit -- sh -c 'scontrol show hostnames; squeue -h -j $SLURM_JOB_ID -o "%i %t" 2>&1 && echo "squeue worked"; srun -l echo step-ok')
wait_for 20 "job $inner to end" job_is "$inner" completed
log=$("$GPOOL" logs "$inner" 2>&1)
expect_contains "$log" "n1" "scontrol show hostnames needs no credential"
case "$log" in *"squeue worked"*) fail "squeue without a credential fails: $log" ;; esac
expect_contains "$log" "token" "and says it lacks a token"
expect_contains "$log" "0: step-ok" "srun runs a step with the job's own credential, no token"
mkdir -p "$GPOOL_CONFIG_DIR"
printf '{"token": "%s"}\n' "$ADMIN_TOKEN" >"$GPOOL_CONFIG_DIR/client.json" # the user's own config
chmod 600 "$GPOOL_CONFIG_DIR/client.json"
inner2=$("$GPOOL" submit -- sh -c 'squeue -h -j $SLURM_JOB_ID -o "%i %t"')
wait_for 20 "job $inner2 to end" job_is "$inner2" completed
expect_eq "$inner2 R" "$("$GPOOL" logs "$inner2" 2>&1)" "squeue inside a job with the user's client.json"
# Killed by signals: the step's task by TERM, then the job's own process by KILL.
killed=$("$GPOOL" submit -- sh -c 'srun sh -c "kill -TERM \$\$"; kill -KILL $$')
wait_for 20 "job $killed to end" job_is "$killed" failed
expect_eq "$(printf '%s|FAILED|0:9\n%s.0|FAILED|0:15' "$killed" "$killed")" \
  "$(sacct -j "$killed" --format=JobID,State,ExitCode -P -n)" "sacct: the signals that killed a job and its step"
expect_eq 9 "$(job_field "$killed" .exit_signal)" "the job's document names the signal"
expect_contains "$(scontrol show job "$killed")" "ExitCode=0:9" "scontrol show job says it alike"

acct=$(sacct -j "$long,$failid,$pend" --format=JobID,JobName,State,ExitCode -P -n -X)
expect_contains "$acct" "$long|longjob|COMPLETED|0:0" "sacct: a completed job's exit code"
expect_contains "$acct" "$failid|failjob|FAILED|3:0" "sacct: a failed job's exit code as code:signal"
expect_contains "$acct" "$pend|pendjob|CANCELLED|0:0" "sacct: the cancelled one"
expect_eq "$(printf '%s_0|CANCELLED\n%s_1|CANCELLED\n%s_2|CANCELLED' "$arr" "$arr" "$arr")" \
  "$(sacct -j "$arr" --format=JobID,State -P -n)" "sacct -j ARRAY: its elements, by id"
hdr=$(sacct -j "$failid" --format=JobID,ExitCode%5 | head -n2)
expect_eq "$(printf 'JobID        ExitC\n------------ -----')" "$hdr" "sacct's header and widths"
expect_contains "$(sacct)" "$failid " "sacct without -j: today's jobs"

sc=$(scontrol show job "$failid")
expect_contains "$sc" "JobId=$failid JobName=failjob" "scontrol show job"
expect_contains "$sc" "JobState=FAILED" "scontrol show job's state"
expect_contains "$sc" "ExitCode=3:0" "scontrol show job's exit code"
expect_eq "default up infinite 1 idle n1" "$(sinfo -h | tr -s ' ')" "sinfo: the node idle again"
echo "PASS"
