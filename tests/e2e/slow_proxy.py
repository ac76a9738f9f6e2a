#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A TCP proxy on 127.0.0.1 whose answers flow at a bounded rate: a registry behind it is a
registry over a slow link, so that a test sees a pull in progress (container_test.sh).
Usage: slow_proxy.py TARGET_PORT BYTES_PER_S PORT_FILE (writes the port it listens on)."""
import socket
import sys
import threading
import time


def pump(src, dst, rate):
    chunk = 16384
    try:
        while True:
            data = src.recv(chunk)
            if not data:
                break
            dst.sendall(data)
            if rate:
                time.sleep(len(data) / rate)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def serve(client, target, rate):
    try:
        upstream = socket.create_connection(("127.0.0.1", target))
    except OSError:
        client.close()
        return
    threading.Thread(target=pump, args=(client, upstream, 0), daemon=True).start()
    threading.Thread(target=pump, args=(upstream, client, rate), daemon=True).start()


def main():
    target, rate, port_file = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", 0))
    ls.listen(64)
    with open(port_file + ".tmp", "w") as f:
        f.write(str(ls.getsockname()[1]))
    import os
    os.rename(port_file + ".tmp", port_file)
    while True:
        c, _ = ls.accept()
        serve(c, target, rate)


if __name__ == "__main__":
    main()
