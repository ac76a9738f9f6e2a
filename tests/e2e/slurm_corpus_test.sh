#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# gpool's corpus of 21 Slurm scripts modelled on public ML training scripts
# (tests/slurm_corpus/README.md), each submitted unchanged with `sbatch` to a pool of three
# simulated nodes with addresses of their own (127.0.0.2-4), with stand-ins for their
# payloads (torchrun, accelerate, deepspeed, train.py, an MPI program) that do a real TCP
# rendezvous between the ranks. A script passes when every element of its job completes
# with exit code 0 and every expected rank took part in its rendezvous, on the expected
# number of nodes, at its node's own address (tests/slurm_corpus/check_run.py).
# CORPUS_ONLY=REGEX runs the scripts whose names match (a debugging aid).
source "$(dirname "$0")/lib.sh"
e2e_init
e2e_need python3
e2e_need mpicc
e2e_need mpirun
CORPUS=${GP_SOURCE_DIR:?}/tests/slurm_corpus
E2E_QUEUES='  - {name: gpu, users: ["*"]}
  - {name: debug, users: ["*"]}'
e2e_server
for i in 2 3 4; do
  e2e_agent n$i 4xH100-80GB --listen 127.0.0.$i:0 --cpus 32 --mem 256G
done
export GPOOL_TOKEN=$ADMIN_TOKEN
"$GPOOL" slurm-shims "$E2E_DIR/sbin" >/dev/null || fail "gpool slurm-shims"

# The cluster's DNS for the stand-ins, and where every rank writes its line.
printf '127.0.0.2 n2\n127.0.0.3 n3\n127.0.0.4 n4\n' >"$E2E_DIR/hosts"
export CORPUS_HOSTS=$E2E_DIR/hosts CORPUS_RESULTS=$E2E_DIR/results
: >"$CORPUS_RESULTS"
mpicc -O1 -o "$E2E_DIR/allreduce" "$CORPUS/standins/mpi_allreduce.c" || fail "mpicc"
# No ssh or rsh for Open MPI to fall back to: these record the attempt and fail.
mkdir -p "$E2E_DIR/nossh"
for c in ssh rsh; do
  printf '#!/bin/sh\necho "%s $*" >>%s/ssh-called\nexit 255\n' "$c" "$E2E_DIR" >"$E2E_DIR/nossh/$c"
  chmod +x "$E2E_DIR/nossh/$c"
done
# What sbatch's --export=ALL takes along, as a user's shell on a cluster would have it: the
# Slurm commands, the payloads' launchers (a virtual environment's bin), Open MPI's settings.
# Every simulated node is this one machine: Open MPI's shared-memory transport would mix the
# segments of two "nodes" (same host name, same job), so its ranks use TCP over loopback.
export PATH=$E2E_DIR/nossh:$E2E_DIR/sbin:$CORPUS/standins:$PATH
export PYTHONPATH=$CORPUS/standins/py
export OMPI_MCA_btl=self,tcp OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Ranks that have not met in 12 s never will (they meet in about a second on 2 busy cores):
# a broken run fails fast, and all 21 stay inside ctest's 300 s even when every one fails.
export CORPUS_RDZV_TIMEOUT=12

# name world nodes ranks-per-node elements [restarts]
EXPECT='
01_pytorch_ddp_multinode 4 2 2 1
02_torchtitan_multinode 4 2 2 1
03_lightning_multinode 4 2 2 1
04_megatron_srun_label 4 2 2 1
05_accelerate_multinode 4 2 2 1
06_bigscience_torch_distributed_run 4 2 2 1
07_deepspeed_no_ssh 4 2 2 1
08_princeton_ddp 4 2 2 1
09_array_hparam_sweep 1 1 1 4
10_torchrun_standalone 4 1 4 1
11_mpirun_openmpi 4 2 2 1
12_signal_requeue 1 1 1 1 1
13_accelerate_srun_per_node 4 2 2 1
14_one_task_per_gpu 8 2 4 1
15_nemo_srun_output 4 2 2 1
16_litgpt_fabric 4 2 2 1
17_module_guarded_single_node 2 1 2 1
18_exclusive_partition_list 8 2 4 1
19_hostname_master 2 1 2 1
20_torch_distributed_launch 4 1 4 1
21_array_torchrun_throttled 2 1 2 3'
[ "$(ls "$CORPUS"/scripts/*.sh | wc -l)" = 21 ] || fail "the corpus has $(ls "$CORPUS"/scripts/*.sh | wc -l) scripts, expected 21"

# Files the scripts' -o/-e (and srun's --output) patterns must have made, relative to the
# script's directory; @ID@ is the job's id. A pattern with * must match something.
FILES='
05_accelerate_multinode O-multinode.@ID@ E-multinode.@ID@
06_bigscience_torch_distributed_run tr-gpt-small-@ID@.out logs/main_log.txt
07_deepspeed_no_ssh logs/ds-no-ssh-@ID@.out
09_array_hparam_sweep logs/sweep-@ID@_0.out logs/sweep-@ID@_3.out logs/sweep-@ID@_2.err
11_mpirun_openmpi mpi-allreduce-@ID@.out
12_signal_requeue logs/requeue-@ID@.out
15_nemo_srun_output logs/log-nemo-@ID@_0.out logs/log-nemo-@ID@_3.out logs/error-nemo-@ID@_1.err
19_hostname_master slurm_output.txt slurm_error.txt
20_torch_distributed_launch n*_admin_test_@ID@.out
21_array_torchrun_throttled logs/@ID@_1.out logs/@ID@_3.out'

declare -A JOB
# Each script runs in a directory of its own, as a user's project: the script as it is, its
# payload's file names (all the stand-in train.py), a logs/ directory made beforehand.
submit() {
  local name=$1 dir=$E2E_DIR/run/$1 out
  mkdir -p "$dir/logs"
  cp "$CORPUS/scripts/$name.sh" "$dir/"
  for p in train.py pretrain_gpt.py pretrain.py complete_nlp_example.py simple_ddp.py main.py; do
    ln -s "$CORPUS/standins/train.py" "$dir/$p"
  done
  cp "$E2E_DIR/allreduce" "$dir/"
  out=$(cd "$dir" && sbatch "$name.sh" 2>"$dir/sbatch.err")
  case "$out" in
    "Submitted batch job "[0-9]*) JOB[$name]=${out##* } ;;
    *) JOB[$name]=""; echo "$name: sbatch refused it: $out $(cat "$dir/sbatch.err")" >>"$E2E_DIR/verdicts" ;;
  esac
}
ended() { [ -z "$(squeue -h -j "$1" -t all -o %T 2>/dev/null | grep -v -E 'COMPLETED|FAILED|CANCELLED|TIMEOUT|PREEMPTED')" ]; }
judge() {
  local name=$1 id=${JOB[$1]:-} world nodes per elements restarts verdict
  [ -n "$id" ] || return 1
  read -r world nodes per elements restarts <<<"$(awk -v n="$name" '$1 == n { print $2, $3, $4, $5, $6 }' <<<"$EXPECT")"
  sacct -j "$id" -n -P -o JobID,State,ExitCode >"$E2E_DIR/run/$name/sacct" 2>&1
  verdict=$(python3 "$CORPUS/check_run.py" "$CORPUS_RESULTS" "$CORPUS_HOSTS" "$E2E_DIR/run/$name/sacct" \
    "$id" "$world" "$nodes" "$per" "$elements" "${restarts:-0}")
  if [ "$verdict" = ok ]; then
    local f
    for f in $(awk -v n="$name" '$1 == n { $1 = ""; print }' <<<"$FILES"); do
      f=${f//@ID@/$id}
      compgen -G "$E2E_DIR/run/$name/$f" >/dev/null || { verdict="no file $f"; break; }
    done
  fi
  echo "$name (job $id): $verdict" >>"$E2E_DIR/verdicts"
  [ "$verdict" = ok ]
}
wait_end() { # NAME SECONDS
  local id=${JOB[$1]:-} deadline=$((SECONDS + $2))
  [ -n "$id" ] || return 0
  until ended "$id"; do
    if [ $SECONDS -ge $deadline ]; then scancel "$id" >/dev/null 2>&1; echo "$1: still running after $2 s, cancelled" >>"$E2E_DIR/verdicts"; return 0; fi
    sleep 0.2
  done
}

names=$(awk 'NF { print $1 }' <<<"$EXPECT" | grep -E "${CORPUS_ONLY:-.}")
start=$SECONDS
# The requeue script waits 5 s for its signal: it runs beside the others. The rest run one
# at a time, as many fix their rendezvous port (29500) and a real cluster would not put two
# such jobs on one node.
if grep -q 12_signal_requeue <<<"$names"; then submit 12_signal_requeue; fi
for name in $names; do
  [ "$name" = 12_signal_requeue ] && continue
  if [ $((SECONDS - start)) -gt 200 ]; then
    echo "$name: not run: the corpus used up its 200 s" >>"$E2E_DIR/verdicts"
    continue
  fi
  submit "$name"
  wait_end "$name" 40
done
grep -q 12_signal_requeue <<<"$names" && wait_end 12_signal_requeue 60
passed=0 total=0 failed=""
for name in $names; do
  total=$((total + 1))
  if judge "$name"; then passed=$((passed + 1)); else failed="$failed $name"; fi
done
echo "--- verdicts"
cat "$E2E_DIR/verdicts"
echo "corpus: $passed of $total scripts ran correctly in $((SECONDS - start)) s"
[ ! -e "$E2E_DIR/ssh-called" ] || fail "Open MPI tried ssh/rsh: $(cat "$E2E_DIR/ssh-called")"
for name in $failed; do
  echo "--- $name: files"
  (cd "$E2E_DIR/run/$name" && for f in $(find . -name '*.out' -o -name '*.err' -o -name '*.txt' -o -name '*.log' | sort); do echo "# $f"; tail -n 15 "$f"; done)
  id=${JOB[$name]:-}
  if [ -n "$id" ]; then
    echo "# gpool logs $id"; "$GPOOL" logs "$id" 2>/dev/null | tail -n 15
    echo "# gpool logs $id --stderr"; "$GPOOL" logs "$id" --stderr 2>/dev/null | tail -n 15
  fi
done
[ "$passed" = "$total" ] || fail "$((total - passed)) of $total corpus scripts failed:$failed"
echo "PASS"
