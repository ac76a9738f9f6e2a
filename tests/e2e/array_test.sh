#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Job arrays and Slurm's other dependency kinds, through the CLI on a simulated node:
# 1,000 short elements with %10 never run more than 10 at once and each index runs exactly
# once, with Slurm's array variables; pending elements fold into one `gpool jobs` line; one
# element or the whole array is cancelled, held and released; afterok on an array waits
# for every element and aftercorr pairs elements; afternotok and singleton; a restart
# loses nothing of an array half done.
source "$(dirname "$0")/lib.sh"
e2e_init
e2e_server
e2e_agent n1 16xH100-80GB
export GPOOL_TOKEN=$ADMIN_TOKEN

# ---- 1,000 elements, at most 10 at once ----
arr=$("$GPOOL" submit --array 0-999%10 -g 1 -n burst -- sh -c \
  'echo "start $SLURM_ARRAY_TASK_ID" >>runs.log; [ "$SLURM_ARRAY_TASK_ID" = 7 ] && env | grep ARRAY_ >env7.log; echo "end $SLURM_ARRAY_TASK_ID" >>runs.log')
[[ "$arr" =~ ^[0-9]+$ ]] || fail "submit --array: $arr"
wait_for 20 "the array's first elements to run" test -s runs.log
line=$("$GPOOL" jobs | grep "^${arr}_\[" || true)
expect_contains "$line" "%10]" "gpool jobs folds the pending elements into one line with the limit"
expect_contains "$line" "pending" "the folded line is pending"
[ "$("$GPOOL" jobs | grep -c "^${arr}_")" -le 12 ] || fail "gpool jobs lists pending elements one by one: $("$GPOOL" jobs)"
# About 25 s on an idle 2-core machine; a loaded one has been seen at ~10 elements a second.
wait_for 180 "array $arr to complete" job_is "$arr" completed
# Every interval [start, end] lies inside its element's run, so the log's overlap is a lower
# bound of the elements running at once.
awk '$1 == "start" { n++; if (n > max) max = n; seen[$2]++ } $1 == "end" { n-- }
     END { for (i = 0; i < 1000; i++) if (seen[i] != 1) { print "index " i " ran " seen[i] + 0 " times"; bad = 1 }
           if (length(seen) != 1000) { print length(seen) " indexes ran"; bad = 1 }
           if (max > 10) { print "max " max " at once"; bad = 1 }
           exit bad }' runs.log >check.out || fail "array runs: $(head -5 check.out)"
env7=$(cat env7.log)
for kv in "SLURM_ARRAY_JOB_ID=$arr" SLURM_ARRAY_TASK_ID=7 SLURM_ARRAY_TASK_COUNT=1000 SLURM_ARRAY_TASK_MIN=0 \
  SLURM_ARRAY_TASK_MAX=999 SLURM_ARRAY_TASK_STEP=1 "GPOOL_ARRAY_JOB_ID=$arr" GPOOL_ARRAY_TASK_ID=7; do
  expect_contains "$env7" "$kv" "element 7's environment"
done
expect_eq completed "$(job_field "${arr}_999" .state)" "element 999 has its own state"
expect_eq 0 "$(job_field "${arr}_999" .exit_code)" "element 999 has its own exit code"
expect_eq "${arr}_5" "$(job_field "${arr}_5" .array_id)" "an element is shown as J_I"

# ---- afterok on an array waits for every element; aftercorr pairs them ----
a=$("$GPOOL" submit --array 0-2 -g 1 -- sh -c 'sleep 0.5; touch "a_$SLURM_ARRAY_TASK_ID"; [ "$SLURM_ARRAY_TASK_ID" != 1 ]')
b=$("$GPOOL" submit --array 0-2 -g 1 --dependency "aftercorr:$a" -- sh -c 'test -f "a_$SLURM_ARRAY_TASK_ID"')
all=$("$GPOOL" submit -g 1 --dependency "afterok:$a" -- true)
any=$("$GPOOL" submit -g 1 --dependency "afterany:$a" -- sh -c 'ls a_0 a_1 a_2')
wait_for 30 "array $a to end" job_is "$a" failed
wait_for 30 "element ${b}_0 to complete" job_is "${b}_0" completed
wait_for 30 "element ${b}_2 to complete" job_is "${b}_2" completed
wait_for 30 "element ${b}_1 to end" sh -c "[ \"\$(GPOOL_TOKEN=$ADMIN_TOKEN '$GPOOL' show ${b}_1 -o json | jq -r .state)\" != pending ]"
expect_contains "$(job_field "${b}_1" .end_reason)" "DependencyNeverSatisfied" "aftercorr: element 1 follows ${a}_1's failure"
wait_for 30 "job $all to end" sh -c "[ \"\$(GPOOL_TOKEN=$ADMIN_TOKEN '$GPOOL' show $all -o json | jq -r .state)\" != pending ]"
expect_contains "$(job_field "$all" .end_reason)" "DependencyNeverSatisfied" "afterok on an array with a failed element"
wait_for 30 "job $any to complete after every element" job_is "$any" completed

# ---- cancel, hold and release: one element or the whole array ----
c=$("$GPOOL" submit --array 1-6%1 -g 1 -- sh -c "$(gate_wait)")
wait_for 20 "element ${c}_1 to run" job_is "${c}_1" running
"$GPOOL" cancel "${c}_4" >/dev/null || fail "cancel of one element not started"
expect_eq cancelled "$(job_field "${c}_4" .state)" "a cancelled element"
"$GPOOL" hold "${c}_5" >/dev/null || fail "hold of one element"
expect_eq held "$(job_field "${c}_5" .state)" "a held element"
"$GPOOL" cancel "${c}_1" >/dev/null || fail "cancel of a running element"
wait_for 20 "element ${c}_1 to be cancelled" job_is "${c}_1" cancelled
wait_for 20 "element ${c}_2 to run in its place" job_is "${c}_2" running
"$GPOOL" hold "$c" >/dev/null || fail "hold of the whole array"
"$GPOOL" release "${c}_5" >/dev/null || fail "release of one element"
open_gate
wait_for 20 "element ${c}_2 to complete" job_is "${c}_2" completed
sleep 1
expect_eq held "$(job_field "${c}_3" .state)" "a held array starts no element"
"$GPOOL" release "$c" >/dev/null || fail "release of the whole array"
wait_for 20 "element ${c}_6 to complete" job_is "${c}_6" completed
expect_eq completed "$(job_field "${c}_5" .state)" "the released element ran"
wait_for 10 "array $c to end as cancelled (one element was)" job_is "$c" cancelled
rm -f "$E2E_DIR/gate"
d=$("$GPOOL" submit --array 0-99%2 -g 1 -- sh -c "$(gate_wait)")
wait_for 20 "element ${d}_1 to run" job_is "${d}_1" running
"$GPOOL" cancel "$d" >/dev/null || fail "cancel of the whole array"
wait_for 20 "array $d to be cancelled" job_is "$d" cancelled
expect_eq cancelled "$(job_field "${d}_0" .state)" "a running element of a cancelled array"
expect_eq cancelled "$(job_field "${d}_50" .state)" "an element never started of a cancelled array"

# ---- afternotok, singleton ----
bad=$("$GPOOL" submit -g 1 -- false)
good=$("$GPOOL" submit -g 1 -- true)
wait_for 20 "job $bad to fail" job_is "$bad" failed
wait_for 20 "job $good to complete" job_is "$good" completed
nok=$("$GPOOL" submit -g 1 --dependency "afternotok:$bad" -- true)
wait_for 20 "afternotok job $nok to run after a failure" job_is "$nok" completed
out=$("$GPOOL" submit -g 1 --dependency "afternotok:$good" -- true 2>&1) && fail "afternotok on a completed job must be refused"
expect_contains "$out" "completed" "the refusal says the job completed"
rm -f "$E2E_DIR/gate"
s1=$("$GPOOL" submit -g 1 -n solo --dependency singleton -- sh -c "$(gate_wait)")
s2=$("$GPOOL" submit -g 1 -n solo --dependency singleton -- true)
wait_for 20 "singleton $s1 to run" job_is "$s1" running
sleep 1.5
expect_eq pending "$(job_field "$s2" .state)" "a second singleton of the name waits"
expect_contains "$(job_field "$s2" .pending_message)" "singleton" "it says why"
open_gate
wait_for 20 "singleton $s2 to run once $s1 ended" job_is "$s2" completed

# ---- a restart loses nothing ----
rm -f "$E2E_DIR/gate"
r=$("$GPOOL" submit --array 0-19%2 -g 1 -- sh -c "echo \$SLURM_ARRAY_TASK_ID >>restart.log; $(gate_wait)")
wait_for 20 "element ${r}_1 to run" job_is "${r}_1" running
kill -TERM "$SERVER_PID"
wait "$SERVER_PID" 2>/dev/null
e2e_server
open_gate
wait_for 60 "array $r to complete after a restart" job_is "$r" completed
expect_eq 20 "$(sort -un restart.log | wc -l)" "every element ran after the restart"
expect_eq 20 "$(wc -l <restart.log)" "and each exactly once"
echo "PASS"
