#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# A service replica for the services' end-to-end test (tests/e2e/service_test.sh): an HTTP
# server on $PORT that answers
#   /healthz  200 "ok", or 503 while the file $SVC_DIR/unhealthy exists (liveness and
#             readiness fail), or never when started with --never-healthy;
#   /metrics  Prometheus text with gpool_test_load, the figure in $SVC_DIR/load (0 without);
#   /         "VERSION job JOB" (VERSION from $SVC_VERSION), the request stream's answer.
# It writes its pid to $SVC_DIR/started.<job> when it listens, and serves each request on its own thread.
import http.server
import os
import socketserver
import sys

PORT = int(os.environ["PORT"])
DIR = os.environ.get("SVC_DIR", ".")
VERSION = os.environ.get("SVC_VERSION", "v1")
JOB = os.environ.get("GPOOL_JOB_ID", "?")
NEVER = "--never-healthy" in sys.argv


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def reply(self, code, body):
        data = body.encode()
        self.send_response(code)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/healthz":
            bad = NEVER or os.path.exists(os.path.join(DIR, "unhealthy." + JOB))
            self.reply(503 if bad else 200, "unhealthy\n" if bad else "ok\n")
        elif self.path == "/metrics":
            try:
                with open(os.path.join(DIR, "load")) as f:
                    load = float(f.read().strip() or 0)
            except (OSError, ValueError):
                load = 0.0
            self.reply(200, "# TYPE gpool_test_load gauge\ngpool_test_load %g\n" % load)
        else:
            self.reply(200, "%s job %s\n" % (VERSION, JOB))

    def log_message(self, *args):
        pass


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


srv = Server(("0.0.0.0", PORT), Handler)
with open(os.path.join(DIR, "started." + JOB), "w") as f:
    f.write(str(os.getpid()))
srv.serve_forever()
