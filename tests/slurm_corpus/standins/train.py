#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Stand-in for a training script (train.py, pretrain_gpt.py, ...: tests/slurm_corpus/README.md).

It does what torch.distributed.init_process_group("env://") needs and checks: RANK,
WORLD_SIZE and MASTER_ADDR:MASTER_PORT from the environment; when RANK is not set but the
task runs under Slurm (SLURM_NTASKS), Lightning's SLURMEnvironment rules, which Lightning,
Fabric, NeMo and lit-gpt scripts rely on: rank SLURM_PROCID, world SLURM_NTASKS, local rank
SLURM_LOCALID, MASTER_ADDR the first host of SLURM_NODELIST and MASTER_PORT 15000 plus the
job id's last four digits, unless set. With more than one rank, a real TCP
rendezvous of all ranks at MASTER_ADDR:MASTER_PORT (rank 0 listens on its own node's
address) and an all-reduce of rank + 1; then one result line per rank.

--ckpt PATH stands for a long training that checkpoints as it goes: without PATH it writes
PATH after its first "epoch" (a second) and runs on (up to 5 minutes) until SIGTERM or
SIGUSR1; with PATH it resumes and ends at once. --local_rank/--local-rank (torch.distributed.launch, deepspeed) is read."""
import argparse
import os
import re
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), "py"))
import corpus_rdzv as rdzv  # noqa: E402


def first_host(nodelist):
    """The first host of a Slurm hostlist: 'n[02-04,7],m1' -> 'n02'."""
    m = re.match(r"([^,\[]*)(?:\[([^\]]*)\])?", nodelist)
    prefix, ranges = m.group(1), m.group(2)
    if ranges is None:
        return prefix
    return prefix + ranges.split(",")[0].split("-")[0]


def main():
    ap = argparse.ArgumentParser(add_help=False)
    ap.add_argument("--local_rank", "--local-rank", type=int, default=None)
    ap.add_argument("--ckpt", default=None)
    args, _ = ap.parse_known_args()
    env = os.environ
    if "RANK" in env:
        rank, world = int(env["RANK"]), int(env.get("WORLD_SIZE", "1"))
        local = int(env.get("LOCAL_RANK", args.local_rank if args.local_rank is not None else 0))
        how = "env"
    elif "SLURM_NTASKS" in env and "SLURM_PROCID" in env:
        rank, world = int(env["SLURM_PROCID"]), int(env["SLURM_NTASKS"])
        local = int(env.get("SLURM_LOCALID", "0"))
        how = "slurm"
    else:
        rank, world, local, how = 0, 1, 0, "single"
    if world > 1:  # one process alone makes no process group (torch, Lightning)
        addr = env.get("MASTER_ADDR")
        port = env.get("MASTER_PORT")
        if how == "slurm":
            addr = addr or first_host(env.get("SLURM_NODELIST", ""))
            port = port or str(15000 + int(env["SLURM_JOB_ID"][-4:]))  # Lightning's rule
        if not addr or not port:
            rdzv.die("MASTER_ADDR and MASTER_PORT must be set (env:// initialisation)")
        lines = rdzv.rendezvous(rank, world, rank, addr, int(port), f"{rank} {rdzv.my_node()}")
        total = sum(int(l.split()[0]) + 1 for l in lines)
        master = f"{addr}:{port}"
    else:
        total, master = 1, "-"
    rdzv.write_result(rank=rank, world=world, local=local, how=how, master=master,
                      master_addr=rdzv.resolve(master.rsplit(":", 1)[0]) if master != "-" else "-",
                      sum=total, argv="|".join(sys.argv[1:]) or "-")
    if args.ckpt and rank == 0:
        if os.path.exists(args.ckpt):
            print(f"resumed from {args.ckpt}", flush=True)
            return 0
        stop = []
        signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
        signal.signal(signal.SIGUSR1, lambda *_: stop.append(1))
        time.sleep(1)
        with open(args.ckpt + ".tmp", "w") as f:
            f.write("epoch 1\n")
        os.replace(args.ckpt + ".tmp", args.ckpt)
        print(f"epoch 1: checkpoint written to {args.ckpt}", flush=True)
        end = time.time() + 300
        while not stop and time.time() < end:
            time.sleep(0.1)
        return 0 if stop else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
