#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Slurm 22.05 from Debian's slurm-wlm packages, on this one machine with fake 8-GPU nodes, as
# the peer gpool's submission and start-up figures are put beside (bench/slurm_compare.sh).
# Everything it writes (slurm.conf, gres.conf, state, logs, spool, fake /dev/nvidia* nodes)
# lives in one throwaway directory: $SLURM_PEER_DIR, by default a fresh mktemp directory that
# `start` prints; pass the same SLURM_PEER_DIR to `bench` and `stop`.
#
#   slurm_peer.sh install            install slurmctld, slurmd, slurm-client, munge, bc (idempotent)
#   slurm_peer.sh start N [cloud]    N nodes x 8 H100; "cloud": nodes in Slurm's power-saving
#                                    CLOUD state and no slurmd, so jobs are allocated and wait in
#                                    CONFIGURING: the scheduler alone, at sizes (1,250 or 10,000
#                                    nodes) a 2-core machine cannot run one slurmd per node for
#   slurm_peer.sh bench JOBS         sbatch JOBS one-GPU jobs one after another; print the submit
#                                    rate and the seconds until sdiag counts them all started
#   slurm_peer.sh stop               stop the daemons that start started (by their PID files)
# Runs as root (slurmctld as SlurmUser=root, mknod for the fake GPUs).
set -euo pipefail

cmd=${1:-}; shift || true
if [ "$cmd" = start ] && [ -z "${SLURM_PEER_DIR:-}" ]; then
  SLURM_PEER_DIR=$(mktemp -d /tmp/gpool-slurm-peer.XXXXXX)
  echo "SLURM_PEER_DIR=$SLURM_PEER_DIR"
fi
case "$cmd" in bench|stop) [ -n "${SLURM_PEER_DIR:-}" ] || { echo "set SLURM_PEER_DIR to the directory start printed" >&2; exit 2; };; esac
D=${SLURM_PEER_DIR:-}
export SLURM_CONF=$D/etc/slurm.conf

install() {
  command -v slurmctld >/dev/null && command -v munged >/dev/null && command -v bc >/dev/null && return
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    slurmctld slurmd slurm-client munge bc >/dev/null
}

write_conf() {  # write_conf N MODE
  local n=$1 mode=$2 i g dev
  mkdir -p "$D"/etc "$D"/state "$D"/log "$D"/spool "$D"/fakegpu
  cat >"$SLURM_CONF" <<EOC
ClusterName=gpoolpeer
SlurmctldHost=localhost(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
SlurmctldPort=16817
SlurmdPort=16818
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool/%n
SlurmctldPidFile=$D/slurmctld.pid
SlurmdPidFile=$D/slurmd.%n.pid
SlurmctldLogFile=$D/log/slurmctld.log
SlurmdLogFile=$D/log/slurmd.%n.log
SlurmdParameters=config_overrides
ProctrackType=proctrack/pgid
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
MaxJobCount=200000
MinJobAge=2
SlurmdTimeout=300
MessageTimeout=30
EOC
  echo "AutoDetect=off" >"$D"/etc/gres.conf
  if [ "$mode" = cloud ]; then
    cat >>"$SLURM_CONF" <<EOC
SuspendProgram=/bin/true
ResumeProgram=/bin/true
SuspendTime=3600
ResumeTimeout=3600
NodeName=c[1-$n] State=CLOUD CPUs=64 Sockets=2 CoresPerSocket=32 ThreadsPerCore=1 RealMemory=1000000 Gres=gpu:h100:8
PartitionName=gpu Nodes=c[1-$n] Default=YES MaxTime=INFINITE State=UP
EOC
    return
  fi
  for i in $(seq 1 "$n"); do
    echo "NodeName=n$i NodeHostname=n$i NodeAddr=127.0.0.1 Port=$((17000 + i)) CPUs=64 Sockets=2 CoresPerSocket=32 ThreadsPerCore=1 RealMemory=20000 Gres=gpu:h100:8 State=UNKNOWN" >>"$SLURM_CONF"
    mkdir -p "$D"/fakegpu/n$i "$D"/spool/n$i
    for g in 0 1 2 3 4 5 6 7; do  # slurmd checks that each GRES file is a character device
      dev=$D/fakegpu/n$i/nvidia$g
      [ -e "$dev" ] || mknod "$dev" c 195 $(( ((i - 1) * 8 + g) % 256 ))
    done
    echo "NodeName=n$i Name=gpu Type=h100 File=$D/fakegpu/n$i/nvidia[0-7]" >>"$D"/etc/gres.conf
  done
  echo "PartitionName=gpu Nodes=n[1-$n] Default=YES MaxTime=INFINITE State=UP" >>"$SLURM_CONF"
}

start() {
  local n=${1:-4} mode=${2:-real} i
  install
  write_conf "$n" "$mode"
  mkdir -p /run/munge && chown munge:munge /run/munge
  if [ ! -f /etc/munge/munge.key ]; then
    dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key 2>/dev/null
    chown munge:munge /etc/munge/munge.key && chmod 400 /etc/munge/munge.key
  fi
  pgrep -x munged >/dev/null || runuser -u munge -- /usr/sbin/munged --num-threads 10
  (cd "$D" && slurmctld -f "$SLURM_CONF" -c -i)
  sleep 2
  [ "$mode" = cloud ] || for i in $(seq 1 "$n"); do slurmd -f "$SLURM_CONF" -N n$i; done
  sleep 3
  sinfo -h -o '%T %D'
}

bench() {
  local n=${1:-2000} t0 t1 started i
  sdiag -r >/dev/null
  t0=$(date +%s.%N)
  for i in $(seq 1 "$n"); do sbatch -Q --gres=gpu:1 -n1 -o /dev/null --wrap true >/dev/null; done
  t1=$(date +%s.%N)
  while :; do  # bounded: gives up after 1,200 s
    started=$(sdiag | awk '/Jobs started/ {print $3; exit}')
    [ "$started" -ge "$n" ] && break
    [ "$(echo "$(date +%s.%N) - $t0 > 1200" | bc)" = 1 ] && { echo "timed out with $started started"; break; }
    sleep 0.2
  done
  echo "slurm: $n jobs; submit $(echo "scale=1; $n / ($t1 - $t0)" | bc)/s; all started after $(echo "$(date +%s.%N) - $t0" | bc) s"
}

stop() {
  local f
  for f in "$D"/slurmd.*.pid "$D"/slurmctld.pid; do
    [ -f "$f" ] && { kill "$(cat "$f")" 2>/dev/null || true; rm -f "$f"; }
  done
  return 0
}

case "$cmd" in
  install|start|bench|stop) "$cmd" "$@" ;;
  *) sed -n '3,17p' "$0"; exit 2 ;;
esac
