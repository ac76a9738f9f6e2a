#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Slurm's batch options on real agents: -o/-e file patterns (%x %j %t %N %u %A %a %%) write
# the user's files relative to the workdir, with the right content and owner, stderr with
# stdout when -e is not given, --open-mode append/truncate, and `gpool logs` still shows the
# output; --export ALL (the #SBATCH default), NONE and a list, values hidden from others;
# --signal=USR1@2 arrives 2 s before a 5 s limit (to the whole group, or with B: to the
# batch shell alone); --begin=now+3 holds the job pending (BeginTime) that long; and
# SLURM_RESTART_COUNT counts the requeues.
source "$(dirname "$0")/lib.sh"
e2e_init
e2e_server
e2e_agent n1 2xH100-80GB
e2e_agent n2 2xH100-80GB
export GPOOL_TOKEN=$ADMIN_TOKEN
me=$(id -un)

# --- -o / -e patterns, from #SBATCH lines ------------------------------------------------
mkdir -p logs
cat >train.sh <<'EOF'
#!/bin/bash
#SBATCH -J mytrain
#SBATCH -o logs/%x-%j.out
#SBATCH -e logs/%x-%j-%t.err
echo "to stdout"
echo "to stderr" >&2
EOF
id1=$("$GPOOL" submit train.sh) || fail "submit train.sh: $id1"
wait_for 20 "job $id1 to complete" job_is "$id1" completed
[ -f "logs/mytrain-$id1.out" ] || fail "-o logs/%x-%j.out wrote no logs/mytrain-$id1.out ($(ls logs))"
expect_eq "to stdout" "$(cat "logs/mytrain-$id1.out")" "the -o file holds stdout"
expect_eq "to stderr" "$(cat "logs/mytrain-$id1-0.err")" "the -e file holds stderr"
expect_eq "$me" "$(stat -c %U "logs/mytrain-$id1.out")" "the -o file belongs to the job's user"
expect_contains "$("$GPOOL" logs "$id1" 2>/dev/null)" "to stdout" "gpool logs still shows the output"
expect_contains "$("$GPOOL" show "$id1")" "logs/%x-%j.out, stderr logs/%x-%j-%t.err (truncate)" "gpool show tells the files"

# Without -e stderr goes with stdout; %N %u %A %a %% on a job that is no array element.
id2=$("$GPOOL" submit -o 'o-%N-%u-%A-%a-%%.txt' -- sh -c 'echo out; echo err >&2')
wait_for 20 "job $id2 to complete" job_is "$id2" completed
node=$(job_field "$id2" '.placements[0].node')
f="o-$node-alice-$id2-4294967294-%.txt"
[ -f "$f" ] || fail "expected $f, have: $(ls)"
expect_eq "out err" "$(sort -r "$f" | tr '\n' ' ' | sed 's/ $//')" "stdout and stderr share the -o file"

# --open-mode: truncate by default, append on request.
for i in 1 2; do
  t=$("$GPOOL" submit -o same-t.txt -- echo "run $i")
  a=$("$GPOOL" submit -o same-a.txt --open-mode=append -- echo "run $i")
  wait_for 20 "job $t to complete" job_is "$t" completed
  wait_for 20 "job $a to complete" job_is "$a" completed
done
expect_eq "run 2" "$(cat same-t.txt)" "the default open mode truncates"
expect_eq "run 1 run 2" "$(tr '\n' ' ' <same-a.txt | sed 's/ $//')" "--open-mode=append appends"

# A file the user cannot create fails the job with a reason; bad patterns are refused.
bad=$("$GPOOL" submit -o no-such-dir/x.out -- true)
wait_for 20 "job $bad to fail" job_is "$bad" failed
expect_contains "$(job_json "$bad")" "output file" "the failure says the output file could not be opened"
out=$("$GPOOL" submit -o 'x%q' -- true 2>&1) && fail "a bad pattern must be refused"
expect_contains "$out" "-o/--output" "the refusal names the option"
expect_eq 400 "$(api_status POST /v1/jobs "$ADMIN_TOKEN" -d '{"command":["true"],"error":"a\u0000b"}')" \
  "the API refuses a NUL in a file name"

# --- --export --------------------------------------------------------------------------
export GP_EXPORTED=from-submitter
cat >env.sh <<'EOF'
#!/bin/sh
#SBATCH -o env-%j.out
echo "v=${GP_EXPORTED:-unset}"
EOF
e_all=$("$GPOOL" submit env.sh)
e_none=$("$GPOOL" submit -o 'env-%j.out' -- sh -c 'echo "v=${GP_EXPORTED:-unset}"')
e_list=$("$GPOOL" submit -o 'env-%j.out' --export=GP_EXPORTED,OTHER=x -- sh -c 'echo "v=${GP_EXPORTED:-unset} $OTHER ${HOSTNAME_X:-}"')
e_sbnone=$("$GPOOL" submit --export=NONE env.sh)
for j in $e_all $e_none $e_list $e_sbnone; do wait_for 20 "job $j to complete" job_is "$j" completed; done
expect_eq "v=from-submitter" "$(cat "env-$e_all.out")" "#SBATCH scripts take the environment along (ALL)"
expect_eq "v=unset" "$(cat "env-$e_none.out")" "gpool submit without #SBATCH exports nothing (NONE)"
expect_eq "v=from-submitter x " "$(cat "env-$e_list.out")" "--export=VAR,VAR=value"
expect_eq "v=unset" "$(cat "env-$e_sbnone.out")" "--export=NONE overrides the #SBATCH default"
expect_eq "(hidden)" "$(GPOOL_TOKEN=$BOB_TOKEN "$GPOOL" show "$e_all" -o json | jq -r .env.GP_EXPORTED)" \
  "another user does not see exported values"
[ "$(job_field "$e_all" '.env.GPOOL_TOKEN // "absent"')" = absent ] || fail "the token must never be exported"

# --- --signal=SIG@T: T seconds before the limit ------------------------------------------
cat >sig.sh <<'EOF'
#!/bin/bash
date +%s.%N >"sig-$GPOOL_JOB_ID.start"
trap 'date +%s.%N >"sig-$GPOOL_JOB_ID.main"' USR1
bash -c 'trap "date +%s.%N >sig-$GPOOL_JOB_ID.child" USR1; while :; do sleep 0.05; done' &
while :; do sleep 0.05; done
EOF
chmod +x sig.sh
s_all=$("$GPOOL" submit -t 5s --signal USR1@2 -- ./sig.sh)
s_batch=$("$GPOOL" submit -t 5s --signal B:USR1@2 -- ./sig.sh)
wait_for 20 "job $s_all to time out" job_is "$s_all" timeout
wait_for 20 "job $s_batch to time out" job_is "$s_batch" timeout
for j in $s_all $s_batch; do
  [ -f "sig-$j.main" ] || fail "job $j: the batch shell got no USR1 before its limit"
  lead=$(echo "$(cat "sig-$j.start") $(cat "sig-$j.main")" | awk '{printf "%.2f", $2 - $1}')
  echo "job $j: USR1 ${lead}s after its start (expected 3s: 5s limit, @2)"
  awk -v l="$lead" 'BEGIN { exit !(l >= 2 && l <= 4) }' ||
    fail "job $j: USR1 came ${lead}s after the start, not 3s (5s limit, 2s before it)"
done
[ -f "sig-$s_all.child" ] || fail "--signal without B: reaches every process of the job"
expect_contains "$("$GPOOL" show "$s_batch")" "SIGUSR1 2s before the limit, to the batch shell" "gpool show tells the warning"
[ -f "sig-$s_batch.child" ] && fail "--signal=B: reaches the batch shell only"

# --- --begin ---------------------------------------------------------------------------
t0=$(date +%s)
b=$("$GPOOL" submit --begin now+3 -- true)
wait_for 10 "job $b to wait for its begin time" sh -c "[ \"\$(GPOOL_TOKEN=$ADMIN_TOKEN '$GPOOL' show $b -o json | jq -r .pending_reason)\" = BeginTime ]"
expect_contains "$("$GPOOL" show "$b")" "not before" "gpool show tells the begin time"
wait_for 20 "job $b to complete" job_is "$b" completed
started=$(job_field "$b" .started_at)
[ "$started" -ge $((t0 + 3)) ] || fail "--begin=now+3 started at $started, submitted at $t0"
out=$("$GPOOL" submit --begin 'next week' -- true 2>&1) && fail "a bad --begin must be refused"
expect_contains "$out" "--begin" "the refusal names --begin"

# --- SLURM_RESTART_COUNT on requeue ------------------------------------------------------
r=$("$GPOOL" submit --requeue -o 'r-%j.txt' -- sh -c \
  'echo "count=$SLURM_RESTART_COUNT gpool=$GPOOL_RESTART_COUNT"; [ "$SLURM_RESTART_COUNT" = 0 ] && exec sleep 301; true')
wait_for 20 "job $r to run" job_is "$r" running
wait_for 10 "job $r to print" test -s "r-$r.txt"
first=$(job_field "$r" '.placements[0].node')
kill -9 "$(agent_pid "$first")"
wait_for 30 "job $r to complete after its requeue" job_is "$r" completed
expect_eq "count=0 gpool=0 count=1 gpool=1" "$(tr '\n' ' ' <"r-$r.txt" | sed 's/ $//')" \
  "SLURM_RESTART_COUNT and GPOOL_RESTART_COUNT count the requeues (a requeued run appends to -o)"
echo "PASS"
