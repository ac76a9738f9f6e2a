#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Judges one corpus script's run (tests/e2e/slurm_corpus_test.sh): every element of the job
ended COMPLETED with exit code 0 (sacct), and in each element's last run (its highest
SLURM_RESTART_COUNT) every expected rank wrote its result line: ranks 0..W-1 once each, all
with world W and the all-reduced sum W(W+1)/2, on N distinct nodes of the pool with P ranks
each, each at its node's own address, and MASTER_ADDR resolving to rank 0's node.

usage: check_run.py RESULTS HOSTS SACCT_FILE JOB WORLD NODES PER_NODE ELEMENTS [MIN_RESTART]
Prints 'ok' or the first thing wrong; exit 0 or 1."""
import sys


def main():
    results, hosts, sacct, job = sys.argv[1:5]
    world, nodes, per_node, elements = map(int, sys.argv[5:9])
    min_restart = int(sys.argv[9]) if len(sys.argv) > 9 else 0
    addr_of = {}
    for line in open(hosts):
        w = line.split()
        if len(w) >= 2:
            addr_of[w[1]] = w[0]

    rows = [l.strip().split("|") for l in open(sacct) if l.strip()]
    rows = [r for r in rows if r[0].split("_")[0] == job and "." not in r[0]]
    if len(rows) != elements:
        return f"sacct lists {len(rows)} job(s) for {job}, expected {elements}: {rows}"
    for r in rows:
        if r[1] != "COMPLETED" or r[2] != "0:0":
            return f"job {r[0]} ended {r[1]} with exit code {r[2]}"

    lines = []
    for l in open(results):
        f = dict(kv.split("=", 1) for kv in l.split() if "=" in kv)
        if f.get("job", "").split("_")[0] == job or f.get("array_job") == job:
            lines.append(f)
    groups = {}
    for f in lines:
        groups.setdefault(f.get("array_task", "-"), []).append(f)
    if len(groups) != elements:
        return f"{len(groups)} element(s) wrote results, expected {elements} ({sorted(groups)})"
    for task, fs in sorted(groups.items()):
        last = max(int(f.get("restart", "0")) for f in fs)
        if last < min_restart:
            return f"element {task}: last run has restart count {last}, expected >= {min_restart}"
        fs = [f for f in fs if int(f.get("restart", "0")) == last]
        where = f"element {task}" if task != "-" else "the job"
        ranks = sorted(int(f["rank"]) for f in fs)
        if ranks != list(range(world)):
            return f"{where}: ranks {ranks}, expected 0..{world - 1}"
        for f in fs:
            if int(f["world"]) != world or int(f["sum"]) != world * (world + 1) // 2:
                return f"{where}: rank {f['rank']} saw world {f['world']} sum {f['sum']}"
            if f["node"] not in addr_of:
                return f"{where}: rank {f['rank']} ran on '{f['node']}', not a node of the pool"
            if "addr" in f and f["addr"] != addr_of[f["node"]]:
                return f"{where}: rank {f['rank']} on {f['node']} has address {f['addr']}"
        count = {}
        for f in fs:
            count[f["node"]] = count.get(f["node"], 0) + 1
        if len(count) != nodes or any(c != per_node for c in count.values()):
            return f"{where}: ranks per node {count}, expected {nodes} node(s) with {per_node} each"
        r0 = next(f for f in fs if int(f["rank"]) == 0)
        for f in fs:
            m = f.get("master_addr", "-")
            if m != "-" and m != addr_of[r0["node"]]:
                return f"{where}: rank {f['rank']} met at {m}, but rank 0 is on {r0['node']}"
    return None


if __name__ == "__main__":
    err = main()
    print(err or "ok")
    sys.exit(1 if err else 0)
