# SPDX-License-Identifier: Apache-2.0
"""The rendezvous of the e2e tests' multi-node jobs and steps (tasks_test.sh, steps_test.sh).

Each writes its rdv.py next to a copy of this file: the ranks meet at MASTER_ADDR:MASTER_PORT
as a training job's would, which shows that every rank got the same, reachable address.
"""
import socket
import time


def meet(env, value):
    """Every rank's `value` summed, as each rank learns it.

    Rank 0 listens only on its own node's address (ADDR_<GPOOL_NODE>): a MASTER_ADDR naming
    another node cannot reach it. The others connect (retrying for 30 s), send their value
    and read the sum back."""
    rank, world = int(env["RANK"]), int(env["WORLD_SIZE"])
    addr, port = env["MASTER_ADDR"], int(env["MASTER_PORT"])
    if rank == 0:
        srv = socket.create_server((env["ADDR_" + env["GPOOL_NODE"]], port))
        srv.settimeout(30)
        peers, total = [], value
        while len(peers) < world - 1:
            c, _ = srv.accept()
            total += int(c.makefile().readline())
            peers.append(c)
        for c in peers:
            c.sendall(f"{total}\n".encode())
            c.close()
        return total
    deadline = time.time() + 30
    while True:
        try:
            c = socket.create_connection((addr, port), timeout=5)
            break
        except OSError:
            if time.time() > deadline:
                raise
            time.sleep(0.1)
    c.sendall(f"{value}\n".encode())
    return int(c.makefile().readline())
