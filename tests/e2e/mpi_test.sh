#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# mpirun (Debian's Open MPI 4.1) inside a gpool job, with no ssh: a #SBATCH script on two
# simulated nodes with addresses of their own (127.0.0.2, 127.0.0.3), 2 tasks each, runs
# `mpirun ./allreduce` once, on the first node; Open MPI reads the allocation from the
# SLURM_* variables (SLURM_JOBID, SLURM_NODELIST, SLURM_TASKS_PER_NODE) and starts its
# orted daemons with `srun --ntasks-per-node=1 --kill-on-bad-exit --mpi=none ... orted ...`
# through gpool's srun, whose tasks carry SLURM_NODEID and SLURMD_NODENAME. The four ranks
# all-reduce rank + 1 (sum 10), two on each node. ssh and rsh on the PATH record any call
# and fail, and OMPI_MCA_plm=slurm leaves Open MPI no other launcher.
source "$(dirname "$0")/lib.sh"
e2e_init
for tool in mpicc mpirun orted; do
  command -v "$tool" >/dev/null || fail "$tool is not installed: run scripts/setup.sh (openmpi-bin, libopenmpi-dev)"
done
e2e_server
e2e_agent n2 2xH100-80GB --listen 127.0.0.2:0
e2e_agent n3 2xH100-80GB --listen 127.0.0.3:0
export GPOOL_TOKEN=$ADMIN_TOKEN
"$GPOOL" slurm-shims "$E2E_DIR/sbin" >/dev/null || fail "gpool slurm-shims"

mpicc -O1 -o allreduce "${GP_SOURCE_DIR:?}/tests/slurm_corpus/standins/mpi_allreduce.c" || fail "mpicc"
mkdir -p nossh
for c in ssh rsh; do
  printf '#!/bin/sh\necho "%s $*" >>%s/ssh-called\nexit 255\n' "$c" "$E2E_DIR" >"nossh/$c"
  chmod +x "nossh/$c"
done
# Taken along by sbatch (--export=ALL). CI runs as root, which mpirun refuses unless told.
# Both simulated nodes are this one machine: Open MPI's shared-memory transport would mix
# the segments of ranks of the two "nodes" (same host, same job), so ranks talk over TCP.
export PATH=$E2E_DIR/nossh:$E2E_DIR/sbin:$PATH
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_plm=slurm
export OMPI_MCA_btl=self,tcp OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
export CORPUS_RESULTS=$E2E_DIR/results
: >"$CORPUS_RESULTS"

cat >mpi.sh <<'SH'
#!/bin/bash
#SBATCH -J mpi
#SBATCH -N 2
#SBATCH --ntasks-per-node=2
#SBATCH -o mpi-%j.out
echo "batch on $SLURMD_NODENAME of $SLURM_JOB_NODELIST ($SLURM_TASKS_PER_NODE)"
mpirun ./allreduce
echo "mpirun exit $?"
SH
id=$(sbatch --parsable mpi.sh) || fail "sbatch mpi.sh: $id"
wait_for 90 "job $id to end" sh -c "'$GPOOL' show $id -o json | jq -e '.state | test(\"completed|failed|cancelled|timeout\")'"
out=$(cat "mpi-$id.out" 2>&1; "$GPOOL" logs "$id" 2>&1)
[ ! -e ssh-called ] || fail "Open MPI tried ssh/rsh: $(cat ssh-called)"
expect_eq completed "$(job_field "$id" .state)" "the mpirun job completes ($out)"
expect_contains "$out" "mpirun exit 0" "mpirun succeeds"
expect_eq 1 "$(grep -c '^batch on ' "mpi-$id.out")" "the script ran once ($out)"
expect_eq 4 "$(grep -c 'how=mpi sum=10$' results)" "four ranks all-reduce to 10 ($(cat results))"
for r in 0 1 2 3; do
  expect_eq 1 "$(grep -c " rank=$r world=4 " results)" "rank $r ran once"
done
expect_eq "n2 n2 n3 n3" "$(grep -o 'node=n[0-9]*' results | cut -d= -f2 | sort | tr '\n' ' ' | sed 's/ $//')" \
  "two ranks on each node ($(cat results))"
# Ranks 0-1 on one node and 2-3 on the other (Open MPI fills a node's slots first).
n0=$(grep ' rank=0 ' results | grep -o 'node=n[0-9]*')
n1=$(grep ' rank=1 ' results | grep -o 'node=n[0-9]*')
n2=$(grep ' rank=2 ' results | grep -o 'node=n[0-9]*')
[ "$n0" = "$n1" ] && [ "$n0" != "$n2" ] || fail "ranks 0 and 1 share a node, rank 2 is on the other ($(cat results))"
echo "PASS"
