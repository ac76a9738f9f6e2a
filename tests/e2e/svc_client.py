#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# A steady client for the services' rollout test (tests/e2e/service_rollout_test.sh): WORKERS
# threads send GET / through the balancer at URL, each on a new connection, until the file
# STOP exists; then it prints one JSON line: requests, failures (and the first few), and how
# many answers came from each version.
import http.client
import json
import os
import sys
import threading
import time

url_host, url_port, stop, workers = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
lock = threading.Lock()
stats = {"requests": 0, "failures": 0, "errors": [], "versions": {}}


def worker():
    while not os.path.exists(stop):
        ok, what = False, ""
        try:
            c = http.client.HTTPConnection(url_host, url_port, timeout=5)
            c.request("GET", "/", headers={"Connection": "close"})
            r = c.getresponse()
            body = r.read().decode(errors="replace")
            c.close()
            ok = r.status == 200
            what = body.split(" ")[0] if ok else "HTTP %d" % r.status
        except Exception as e:  # a refused or reset connection is a lost request
            what = repr(e)
        with lock:
            stats["requests"] += 1
            if ok:
                stats["versions"][what] = stats["versions"].get(what, 0) + 1
            else:
                stats["failures"] += 1
                if len(stats["errors"]) < 5:
                    stats["errors"].append("%.3f %s" % (time.time(), what))
        time.sleep(0.01)


threads = [threading.Thread(target=worker) for _ in range(workers)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(json.dumps(stats))
