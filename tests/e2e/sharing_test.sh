#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# GPU sharing from the CLI on the simulated backend: two half-GPU jobs share one GPU and
# the job record says how the share is enforced; a MIG job sees only its instance
# (CUDA_VISIBLE_DEVICES=MIG-...); `gpool nodes -v` shows each GPU's mode, MIG instances and
# the jobs holding them.
source "$(dirname "$0")/lib.sh"
e2e_init
e2e_server
e2e_agent n1 4xH100-80GB --gpu-mode 0-1=shared --gpu-mode 2=mig:3g.40gb,2g.20gb,1g.10gb,1g.10gb
export GPOOL_TOKEN=$ADMIN_TOKEN

h1=$("$GPOOL" submit --gpu-fraction 0.5 -n half1 -- sh -c "echo \"\$CUDA_VISIBLE_DEVICES\"; $(gate_wait)")
h2=$("$GPOOL" submit --gpu-fraction 0.5 -n half2 -- sh -c "echo \"\$CUDA_VISIBLE_DEVICES\"; $(gate_wait)")
m=$("$GPOOL" submit --mig 1g.10gb -n slice -- sh -c "echo \"\$CUDA_VISIBLE_DEVICES\"; $(gate_wait)")
for j in $h1 $h2 $m; do wait_for 20 "job $j to run" job_is "$j" running; done

g1=$(job_field "$h1" '.placements[0].gpu_ids[0]')
g2=$(job_field "$h2" '.placements[0].gpu_ids[0]')
expect_eq "$g1" "$g2" "two halves pack onto one shared GPU"
expect_eq 500 "$(job_field "$h1" '.placements[0].gpu_milli')" "half a GPU is 500 milli-GPU"
enf=$(job_field "$h1" .enforcement)
case "$enf" in mps|watchdog) ;; *) fail "a fractional job must say how its share is enforced (mps or watchdog), got '$enf'" ;; esac

wait_for 10 "the MIG job to print" sh -c "[ -n \"\$(GPOOL_TOKEN=$ADMIN_TOKEN '$GPOOL' logs $m)\" ]"
expect_contains "$("$GPOOL" logs "$m")" "MIG-" "the MIG job sees only its instance"

verbose=$("$GPOOL" nodes -v)
expect_contains "$verbose" "shared" "nodes -v shows the shared mode"
expect_contains "$verbose" "mig" "nodes -v shows the MIG mode"
expect_contains "$verbose" "1g.10gb" "nodes -v lists MIG instances"
expect_contains "$verbose" "$h1:500,$h2:500" "nodes -v shows both holders of the shared GPU and their shares"
mig_line=$(grep "1g.10gb@" <<<"$verbose" | grep -w "$m") || fail "nodes -v must show job $m on its MIG instance: $verbose"
expect_eq 2 "$("$GPOOL" nodes -o json | jq '[.[0].gpu_list[] | select(.mode == "shared")] | length')" "two shared GPUs"
open_gate
for j in $h1 $h2 $m; do wait_for 20 "job $j to complete" job_is "$j" completed; done
echo "ok: sharing"
