# SPDX-License-Identifier: Apache-2.0
"""The launchers' stand-ins (torchrun, python -m torch.distributed.run/launch, accelerate
launch, deepspeed --no_ssh: tests/slurm_corpus/README.md), one agent per node as the real
ones: the agents of the nnodes nodes meet over TCP (c10d: at the rendezvous endpoint, hosted
by the agent on the endpoint's node; static: at MASTER_ADDR:MASTER_PORT, hosted by node rank
0), agree on each node's first global rank, and each starts nproc_per_node workers with
torch's variables (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR,
MASTER_PORT, ...). The workers then meet again at MASTER_ADDR:MASTER_PORT (the agent's store
in torch; here the same port, reused once the agents are done). Exit code: the highest of
the workers'. Options a script may pass that change nothing here (--tee, --max_restarts,
--mixed_precision, ...) are read and left; an option these stand-ins do not know fails."""
import os
import subprocess
import sys

import corpus_rdzv as rdzv


def parse(argv, spec, prog):
    """A small getopt: spec maps each accepted option (both '-' and '_' spellings are
    accepted) to True (takes a value) or False (a flag). Stops at the first word that is not
    an option (the script). Returns (options, rest)."""
    opts, i = {}, 0
    norm = {k.replace("_", "-"): (k, v) for k, v in spec.items()}
    while i < len(argv):
        a = argv[i]
        if not a.startswith("-") or a == "-":
            break
        if a == "--":
            i += 1
            break
        name, eq, val = a.partition("=")
        key = name.lstrip("-").replace("_", "-")
        if key not in norm:
            rdzv.die(f"{prog}: option '{name}' is not known to this stand-in")
        canon, takes = norm[key]
        if takes:
            if not eq:
                i += 1
                if i >= len(argv):
                    rdzv.die(f"{prog}: option '{name}' needs a value")
                val = argv[i]
            opts[canon] = val
        else:
            opts[canon] = True
        i += 1
    return opts, argv[i:]


def nproc_of(v):
    if v in ("gpu", "auto"):
        n = len(rdzv.visible_gpus())
        if n == 0 and v == "gpu":
            rdzv.die("--nproc-per-node=gpu: no GPU visible (CUDA_VISIBLE_DEVICES)")
        return n or os.cpu_count()
    if v == "cpu":
        return os.cpu_count()
    return int(v)


def nnodes_of(v):
    lo, _, hi = str(v).partition(":")
    if hi and hi != lo:
        rdzv.die(f"--nnodes={v}: this stand-in takes a fixed node count")
    return int(lo)


def agents_meet(nnodes, nproc, backend, host, port, node_rank):
    """Returns (this node's group rank, first global rank of this node, world size)."""
    if nnodes == 1:
        return 0, 0, nproc
    if backend == "c10d":
        # The agent on the endpoint's node hosts the store (torch: the machine whose name
        # or address is the endpoint's); the others join. Node ranks in order of arrival.
        key = 0 if rdzv.resolve(host) == rdzv.my_addr() else 1
        hello = f"{key} {rdzv.my_node()} {nproc}"
        lines = rdzv.rendezvous(key, nnodes, key, host, port, hello)
        me = [l for l in lines if l.split()[1] == rdzv.my_node()]
        if len(me) != 1:
            rdzv.die(f"rendezvous: {len(me)} agents on node {rdzv.my_node()} (one per node expected)")
        group = lines.index(me[0])
    else:
        if node_rank is None:
            rdzv.die("static rendezvous with several nodes needs --node-rank")
        hello = f"{node_rank} {rdzv.my_node()} {nproc}"
        lines = rdzv.rendezvous(node_rank, nnodes, node_rank, host, port, hello)
        group = node_rank
    counts = [int(l.split()[2]) for l in lines]
    return group, sum(counts[:group]), sum(counts)


def run_workers(cmd, nproc, first, world, group, master, port, extra_env, local_rank_arg):
    procs = []
    for local in range(nproc):
        env = dict(os.environ)
        env.update(extra_env)
        env.update({"RANK": str(first + local), "LOCAL_RANK": str(local), "WORLD_SIZE": str(world),
                    "LOCAL_WORLD_SIZE": str(nproc), "GROUP_RANK": str(group),
                    "ROLE_RANK": str(first + local), "ROLE_WORLD_SIZE": str(world),
                    "MASTER_ADDR": master, "MASTER_PORT": str(port),
                    "TORCHELASTIC_RESTART_COUNT": "0", "TORCHELASTIC_MAX_RESTARTS": "0",
                    "TORCHELASTIC_RUN_ID": env.get("TORCHELASTIC_RUN_ID", "none")})
        argv = list(cmd)
        if local_rank_arg:
            argv.insert(2 if argv[0] == sys.executable else 1, f"--local_rank={local}")
        procs.append(subprocess.Popen(argv, env=env))
    return max((p.wait() for p in procs), default=0)


def script_cmd(rest, no_python=False, module=False):
    if not rest:
        rdzv.die("no training script given")
    if no_python:
        return rest
    if module:
        return [sys.executable, "-m"] + rest
    return [sys.executable] + rest


TORCHRUN = {"nnodes": True, "nproc-per-node": True, "node-rank": True, "rdzv-backend": True,
            "rdzv-endpoint": True, "rdzv-id": True, "rdzv-conf": True, "standalone": False,
            "master-addr": True, "master-port": True, "max-restarts": True, "monitor-interval": True,
            "tee": True, "redirects": True, "log-dir": True, "role": True, "module": False,
            "m": False, "no-python": False, "run-path": False, "local-ranks-filter": True,
            "start-method": True, "local-addr": True, "use-env": False, "logs-specs": True}


def torchrun(argv, prog="torchrun", legacy=False):
    """torchrun; legacy=True: python -m torch.distributed.launch (passes --local_rank to the
    script unless --use-env; static rendezvous; one process per node by default)."""
    o, rest = parse(argv, TORCHRUN, prog)
    nproc = nproc_of(o.get("nproc-per-node", "1"))
    if o.get("standalone"):  # torch: a store on a free port of this node
        nnodes, backend, host, port = 1, "c10d", rdzv.my_node(), rdzv.free_port()
    else:
        nnodes = nnodes_of(o.get("nnodes", "1"))
        backend = o.get("rdzv-backend", "static")
        if backend == "c10d" or "rdzv-endpoint" in o and backend != "static":
            host, port = rdzv.host_port(o.get("rdzv-endpoint", "localhost"), 29400)
        else:
            host = o.get("master-addr", "127.0.0.1")
            port = int(o.get("master-port", "29500"))
            if "rdzv-endpoint" in o:
                host, port = rdzv.host_port(o["rdzv-endpoint"], port)
    if nnodes == 1 and host in ("localhost", "127.0.0.1"):
        host = rdzv.my_node()  # one node: torch's store on this machine
    node_rank = int(o["node-rank"]) if "node-rank" in o else (0 if nnodes == 1 else None)
    group, first, world = agents_meet(nnodes, nproc, backend, host, port, node_rank)
    cmd = script_cmd(rest, o.get("no-python", False), o.get("module", False) or o.get("m", False))
    return run_workers(cmd, nproc, first, world, group, host, port, {},
                       legacy and not o.get("use-env", False))


ACCELERATE = {"num-processes": True, "num-machines": True, "machine-rank": True,
              "main-process-ip": True, "main-process-port": True, "rdzv-backend": True,
              "multi-gpu": False, "mixed-precision": True, "dynamo-backend": True,
              "config-file": True, "same-network": False, "gpu-ids": True, "num-cpu-threads-per-process": True,
              "deepspeed-config-file": True, "use-deepspeed": False, "max-restarts": True,
              "monitor-interval": True, "main-training-function": True, "m": False, "module": False,
              "no-python": False, "tee": True, "role": True}


def accelerate(argv):
    if not argv or argv[0] != "launch":
        rdzv.die("accelerate: this stand-in does 'accelerate launch' only")
    o, rest = parse(argv[1:], ACCELERATE, "accelerate launch")
    machines = int(o.get("num-machines", "1"))
    total = int(o.get("num-processes", str(len(rdzv.visible_gpus()) or 1)))
    if total % machines:
        rdzv.die(f"accelerate: --num_processes {total} is not a multiple of --num_machines {machines}")
    nproc = total // machines
    host = o.get("main-process-ip", rdzv.my_node())
    port = int(o.get("main-process-port", "29500"))
    backend = o.get("rdzv-backend", "static")
    node_rank = int(o.get("machine-rank", "0"))
    group, first, world = agents_meet(machines, nproc, backend, host, port,
                                      None if backend == "c10d" else node_rank)
    cmd = script_cmd(rest, o.get("no-python", False), o.get("module", False) or o.get("m", False))
    return run_workers(cmd, nproc, first, world, group, host, port, {}, False)


DEEPSPEED = {"hostfile": True, "num-nodes": True, "num-gpus": True, "master-addr": True,
             "master-port": True, "no-ssh": False, "node-rank": True, "include": True,
             "exclude": True, "launcher": True, "module": False, "no-python": False,
             "no-local-rank": False, "force-multi": False, "elastic-training": False,
             "bind-cores-to-rank": False}


def deepspeed(argv):
    o, rest = parse(argv, DEEPSPEED, "deepspeed")
    hosts = []
    if "hostfile" in o:
        with open(o["hostfile"]) as f:
            for line in f:
                words = line.split("#")[0].split()
                if words:
                    slots = [w.split("=", 1)[1] for w in words[1:] if w.startswith("slots=")]
                    hosts.append((words[0], int(slots[0]) if slots else len(rdzv.visible_gpus())))
    nnodes = int(o.get("num-nodes", len(hosts) or 1))
    nproc = int(o.get("num-gpus", hosts[0][1] if hosts else len(rdzv.visible_gpus()) or 1))
    if nnodes > 1 and not o.get("no-ssh"):
        rdzv.die("deepspeed: several nodes without --no_ssh start the others through pdsh/ssh, "
                 "which this stand-in (and gpool) does not do")
    host = o.get("master-addr", hosts[0][0] if hosts else rdzv.my_node())
    port = int(o.get("master-port", "29500"))
    node_rank = int(o.get("node-rank", "0"))
    group, first, world = agents_meet(nnodes, nproc, "static", host, port, node_rank)
    cmd = script_cmd(rest, o.get("no-python", False), o.get("module", False))
    return run_workers(cmd, nproc, first, world, group, host, port, {},
                       not o.get("no-local-rank", False))
