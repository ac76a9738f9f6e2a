#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Each GPU sharing mode end to end, through the real server, simulated agents and the CLI
# (issue 5 §3). One node per mode, told apart by GPU model so `--gpu-type` picks the node:
#   n-wd   H100-80GB  shared, no MPS daemon  -> a quarter-GPU job that uses 60 GiB of its
#                     20 GiB share is stopped by the watchdog (limit_exceeded);
#   n-ts   A100-80GB  timeslice:4            -> four half-GPU jobs (2 GPUs' worth) run on its
#                     one GPU at once, one replica each, enforcement none (the scheduler
#                     gives replicas to fractional requests); a fifth job asks for a whole
#                     GPU (`-g 1`): with no exclusive GPU of that model it takes a replica
#                     once one is free, enforcement none, like Kubernetes time-slicing;
#   n-mig  A100-40GB  mig:7g.40gb            -> a pending 1g.5gb request makes the server order
#                     a re-partition of the idle GPU; the job then sees only its instance;
#   n-mps  H200-141GB shared, MPS control pipe present -> the job's share arrives as MPS
#                     client limits in its environment, enforcement mps.
source "$(dirname "$0")/lib.sh"
e2e_init
e2e_server
mps_dir=$E2E_DIR/mps
mkdir -p "$mps_dir" && mkfifo "$mps_dir/control" # what nvidia-cuda-mps-control -d leaves there
e2e_agent n-wd 1xH100-80GB --gpu-mode 0=shared --mps-pipe-dir "$E2E_DIR/no-mps"
e2e_agent n-ts 1xA100-80GB --gpu-mode 0=timeslice:4
e2e_agent n-mig 1xA100-40GB --gpu-mode 0=mig:7g.40gb
e2e_agent n-mps 1xH200-141GB --gpu-mode 0=shared --mps-pipe-dir "$mps_dir"
export GPOOL_TOKEN=$ADMIN_TOKEN

# Submit everything first: the four scenarios then run side by side.
greedy=$("$GPOOL" submit --gpu-type H100-80GB --gpu-fraction 0.25 -e GPOOL_SIM_MEM=60G -n greedy -- sleep 30)
ts=()
for i in 1 2 3 4; do
  ts+=("$("$GPOOL" submit --gpu-type A100-80GB --gpu-fraction 0.5 -n "slice$i" -- sh -c "echo \"\$CUDA_VISIBLE_DEVICES \$GPOOL_ENFORCEMENT\"; $(gate_wait)")")
done
# Submitted after the four slices, so they take the four replicas first.
ts_whole=$("$GPOOL" submit --gpu-type A100-80GB -g 1 -n whole-on-replica -- sh -c 'echo "$CUDA_VISIBLE_DEVICES $GPOOL_ENFORCEMENT"')
mig=$("$GPOOL" submit --gpu-type A100-40GB --mig 1g.5gb -n small-mig -- sh -c 'echo "$CUDA_VISIBLE_DEVICES"; sleep 1')
mps=$("$GPOOL" submit --gpu-type H200-141GB --gpu-fraction 0.5 -n mps-half -- \
  sh -c 'echo "$GPOOL_ENFORCEMENT $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_PINNED_DEVICE_MEM_LIMIT $CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"')

# (a) Watchdog: the job over its share is stopped, and its record says why.
wait_for 20 "job $greedy to be stopped by the watchdog" job_is "$greedy" failed
expect_eq watchdog "$(job_field "$greedy" .enforcement)" "a fraction on a shared GPU without MPS is watched"
expect_eq n-wd "$(job_field "$greedy" '.placements[0].node')" "the quarter-GPU job ran on the H100 node"
reason=$(job_field "$greedy" .end_reason)
expect_contains "$reason" "limit_exceeded" "the job ended for exceeding its share"
expect_contains "$reason" "used 61440 MiB of GPU memory" "the reason says how much it used"
expect_contains "$reason" "over its share of 20480 MiB" "the reason names its share"
expect_contains "$("$GPOOL" show "$greedy")" "limit_exceeded" "gpool show tells the user why it stopped"

# (b) Time-slicing: four jobs on the one GPU of n-ts at the same time, one replica each, unisolated.
for j in "${ts[@]}"; do wait_for 20 "time-sliced job $j to run" job_launched "$j"; done
for j in "${ts[@]}"; do
  expect_eq running "$(job_field "$j" .state)" "time-sliced job $j runs beside the other three"
  expect_eq n-ts "$(job_field "$j" '.placements[0].node')" "job $j is on the time-sliced node"
  expect_eq 0 "$(job_field "$j" '.placements[0].gpu_ids[0]')" "job $j shares GPU 0"
  expect_eq none "$(job_field "$j" .enforcement)" "time-slicing isolates nothing and says so"
done
wait_for 10 "the time-sliced jobs to print" sh -c "[ \"\$(GPOOL_TOKEN=$ADMIN_TOKEN '$GPOOL' logs ${ts[3]})\" ]"
ts_uuid=$("$GPOOL" nodes -o json | jq -r '.[] | select(.name == "n-ts") | .gpu_list[0].uuid')
expect_eq "$ts_uuid none" "$("$GPOOL" logs "${ts[3]}")" "a time-sliced job sees the whole GPU and no enforcement"

# (c) Dynamic MIG: the 7g.40gb layout cannot serve 1g.5gb; the idle GPU is re-partitioned.
wait_for 20 "job $mig to complete after the re-partition" job_is "$mig" completed
expect_eq mig "$(job_field "$mig" .enforcement)" "a MIG job is isolated by its instance"
grep -q "mig on GPU 0" "$E2E_DIR/agent-n-mig.log" || fail "the server must have ordered a MIG re-partition of n-mig's GPU 0"
layout=$("$GPOOL" nodes -o json | jq -r '.[] | select(.name == "n-mig") | [.gpu_list[0].mig[].profile] | join(",")')
expect_contains "$layout" "1g.5gb" "n-mig's GPU now has a 1g.5gb instance"
mig_out=$("$GPOOL" logs "$mig")
expect_contains "$mig_out" "MIG-" "the MIG job sees only its instance"
uuids=$("$GPOOL" nodes -o json | jq -r '.[] | select(.name == "n-mig") | .gpu_list[0].mig[] | select(.profile == "1g.5gb") | .uuid')
grep -qx -- "${mig_out#MIG-}" <<<"${uuids//MIG-/}" || fail "the MIG job's device $mig_out is not one of the new 1g.5gb instances: $uuids"

# (d) MPS: the share goes to the MPS daemon as client limits (70.5 GiB of 141, 50% of SMs).
wait_for 20 "job $mps to complete" job_is "$mps" completed
expect_eq mps "$(job_field "$mps" .enforcement)" "a fraction on a GPU served by MPS uses MPS"
expect_eq "mps $mps_dir 0=72192M 50" "$("$GPOOL" logs "$mps")" "the job's MPS limits"

open_gate
for j in "${ts[@]}"; do wait_for 20 "time-sliced job $j to complete" job_is "$j" completed; done
# (b, continued) The whole-GPU job got a replica of n-ts's GPU once a slice ended.
wait_for 20 "whole-GPU job $ts_whole to complete on a replica" job_is "$ts_whole" completed
expect_eq n-ts "$(job_field "$ts_whole" '.placements[0].node')" "a one-GPU job runs on a time-sliced replica"
expect_eq 0 "$(job_field "$ts_whole" '.placements[0].gpu_ids[0]')" "its replica is of GPU 0"
expect_eq none "$(job_field "$ts_whole" .enforcement)" "a whole-GPU job on a replica is not isolated either"
expect_eq "$ts_uuid none" "$("$GPOOL" logs "$ts_whole")" "it sees the time-sliced GPU and no enforcement"
echo "ok: sharing modes"
