# SPDX-License-Identifier: Apache-2.0
"""An HTTP proxy between one agent and the server that puts the agent protocol's messages of
a requeue race in a fixed order, for tests/e2e/requeue_race_test.sh:

1. Until the agent has reported the end of JOB's task (which requeued itself and exited),
   heartbeat answers reach it without their `stop` orders for JOB, and with a `gen` below
   them, so that the server sends them again: the agent sees the stop after the task's end.
2. A heartbeat that carries an `exited` event with reason `lost` for JOB (the agent's answer
   to that stop, for a job it no longer has) is held until the server runs JOB again (its
   next run, restarts >= 1), so that the answer reaches the server during the new run.

Everything else passes through unchanged. Usage: requeue_race_proxy.py SERVER_URL TOKEN JOB
PORT_FILE MARK_FILE; it writes its URL to PORT_FILE and the held `lost` answer to MARK_FILE
once the server has taken it."""
import http.client
import http.server
import json
import os
import sys
import time
import urllib.parse
import urllib.request

SERVER, TOKEN, JOB, PORT_FILE, MARK = sys.argv[1:6]
target = urllib.parse.urlsplit(SERVER)
exit_seen = False  # the agent reported the end of JOB's task


def job_doc():
    req = urllib.request.Request(f"{SERVER}/v1/jobs/{JOB}", headers={"Authorization": f"Bearer {TOKEN}"})
    with urllib.request.urlopen(req, timeout=5) as r:
        doc = json.load(r)
    return doc.get("job", doc)


def events_of(body):
    try:
        return json.loads(body or b"{}").get("events") or []
    except ValueError:
        return []


def without_stops(data):
    """Rule 1: the answer without its stop orders for JOB, and acknowledging none of them."""
    doc = json.loads(data)
    orders = doc.get("orders") or []
    stops = [int(o["id"][1:]) for o in orders if o.get("kind") == "stop" and o.get("job") == JOB]
    if not stops:
        return data
    doc["orders"] = [o for o in orders if not (o.get("kind") == "stop" and o.get("job") == JOB)]
    doc["gen"] = min(doc.get("gen", 0), min(stops) - 1)
    return json.dumps(doc).encode()


class Proxy(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # the agent's log says enough
        pass

    def do_GET(self):
        self.forward(None)

    def do_POST(self):
        self.forward(self.rfile.read(int(self.headers.get("Content-Length") or 0)))

    def forward(self, body):
        global exit_seen
        events = events_of(body) if self.path == "/v1/agent/heartbeat" else []
        if any(e.get("kind") == "exited" and e.get("job") == JOB and e.get("reason") != "lost" for e in events):
            exit_seen = True
        lost = [e for e in events if e.get("kind") == "exited" and e.get("job") == JOB and e.get("reason") == "lost"]
        if lost:
            # Rule 2: the answer to the earlier run's stop reaches the server in the new run.
            deadline = time.time() + 30
            while time.time() < deadline:
                d = job_doc()
                if d.get("state") == "running" and d.get("restarts", 0) >= 1:
                    break
                time.sleep(0.05)
        conn = http.client.HTTPConnection(target.hostname, target.port, timeout=60)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
        conn.request(self.command, self.path, body=body, headers=headers)
        resp = conn.getresponse()
        data = resp.read()
        conn.close()
        if lost:  # the server has taken it
            with open(MARK, "a") as f:
                f.write(json.dumps(lost[0]) + "\n")
        if self.path == "/v1/agent/heartbeat" and not exit_seen and resp.status == 200:
            data = without_stops(data)
        self.send_response(resp.status)
        for k, v in resp.getheaders():
            if k.lower() not in ("connection", "transfer-encoding", "content-length"):
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True


srv = Server(("127.0.0.1", 0), Proxy)
with open(PORT_FILE + ".tmp", "w") as f:
    f.write(f"http://127.0.0.1:{srv.server_address[1]}\n")
os.rename(PORT_FILE + ".tmp", PORT_FILE)
srv.serve_forever()
