# SPDX-License-Identifier: Apache-2.0
"""What the corpus' stand-ins share (tests/slurm_corpus/README.md): where this process runs,
how a host name resolves on the simulated cluster, a real TCP rendezvous, and the result line.

Each simulated node has an address of its own (127.0.0.2, ...). A process learns its node from
the job's environment (SLURMD_NODENAME, else GPOOL_NODE) and resolves node names through the
file $CORPUS_HOSTS ("name address" lines), which stands in for the cluster's DNS. The process
that hosts a rendezvous listens on its own node's address only, so a MASTER_ADDR or endpoint
naming another node is never reached, as on a real cluster."""
import ipaddress
import os
import socket
import sys
import time

DEADLINE_S = float(os.environ.get("CORPUS_RDZV_TIMEOUT", "40"))


def die(msg):
    print(f"{os.path.basename(sys.argv[0])}: {msg}", file=sys.stderr, flush=True)
    sys.exit(1)


def hosts_map():
    path = os.environ.get("CORPUS_HOSTS")
    table = {}
    if path:
        with open(path) as f:
            for line in f:
                words = line.split()
                if len(words) >= 2 and not words[0].startswith("#"):
                    for name in words[1:]:
                        table[name] = words[0]
    return table


def resolve(host):
    """The address of host: a literal, a simulated node's name, else the system's resolver."""
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        pass
    table = hosts_map()
    if host in table:
        return table[host]
    try:
        return socket.gethostbyname(host)
    except OSError as e:
        die(f"cannot resolve host '{host}': {e}")


def my_node():
    node = os.environ.get("SLURMD_NODENAME") or os.environ.get("GPOOL_NODE")
    if not node:
        die("no SLURMD_NODENAME or GPOOL_NODE: not started by gpool on a node")
    return node


def my_addr():
    return resolve(my_node())


def host_port(spec, default_port):
    host, sep, port = spec.rpartition(":")
    if not sep or "]" in port:
        return spec, default_port
    return host.strip("[]"), int(port)


def free_port():
    with socket.socket() as s:
        s.bind((my_addr(), 0))
        return s.getsockname()[1]


def _recv_line(sock, limit=1 << 20):
    buf = b""
    while not buf.endswith(b"\n"):
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("peer closed")
        buf += chunk
        if len(buf) > limit:
            raise ConnectionError("line too long")
    return buf.decode()


def rendezvous(me, size, key, host, port, hello):
    """A real TCP meeting of `size` members: member `key == 0` listens on host:port (which
    must be its own node's address), every other one connects there. Each member brings a
    line `hello`; all get back the lines of all, ordered by the first word (an integer)."""
    addr = resolve(host)
    if key == 0:
        mine = my_addr()
        if addr != mine:
            die(f"the rendezvous host {host} ({addr}) is not this node ({my_node()}, {mine})")
        srv = socket.create_server((mine, port), backlog=size + 8)
        srv.settimeout(DEADLINE_S)
        peers, lines = [], [hello]
        try:
            while len(peers) < size - 1:
                c, _ = srv.accept()
                c.settimeout(DEADLINE_S)
                try:
                    lines.append(_recv_line(c).strip())
                except (OSError, ConnectionError):
                    c.close()
                    continue
                peers.append(c)
        except socket.timeout:
            die(f"rendezvous at {mine}:{port}: {len(peers) + 1} of {size} arrived in {DEADLINE_S:.0f} s")
        lines.sort(key=lambda l: int(l.split()[0]))
        reply = ("\n".join(lines) + "\n").encode()
        for c in peers:
            c.sendall(reply)
            c.close()
        srv.close()
        return lines
    deadline = time.time() + DEADLINE_S
    while True:
        try:
            c = socket.create_connection((addr, port), timeout=5)
            c.settimeout(DEADLINE_S)
            c.sendall((hello + "\n").encode())
            data = b""
            while True:
                chunk = c.recv(65536)
                if not chunk:
                    break
                data += chunk
            c.close()
            lines = data.decode().splitlines()
            if len(lines) == size:
                return lines
        except OSError:
            pass
        if time.time() > deadline:
            die(f"rendezvous: no host answered at {host}:{port} ({addr}) in {DEADLINE_S:.0f} s")
        time.sleep(0.1)


def visible_gpus():
    v = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    return [g for g in v.split(",") if g != ""]


def write_result(**fields):
    """One line per rank in $CORPUS_RESULTS (appended whole, so concurrent ranks never mix)."""
    env = os.environ
    head = {
        "job": env.get("SLURM_JOB_ID", "?"),
        "array_job": env.get("SLURM_ARRAY_JOB_ID", "-"),
        "array_task": env.get("SLURM_ARRAY_TASK_ID", "-"),
        "restart": env.get("SLURM_RESTART_COUNT", "0"),
        "node": my_node(),
        "addr": my_addr(),
        "gpus": ",".join(visible_gpus()) or "-",
    }
    head.update(fields)
    line = " ".join(f"{k}={v}" for k, v in head.items()) + "\n"
    path = env.get("CORPUS_RESULTS")
    if not path:
        die("CORPUS_RESULTS is not set")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)
    print(line, end="", flush=True)
