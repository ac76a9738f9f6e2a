# SPDX-License-Identifier: Apache-2.0
"""Sinks for tests/e2e/notify_test.sh, each on 127.0.0.1 on a free port that it writes to
PORTFILE once it listens:
  webhook OUT PORTFILE  an HTTP server: each POST's path and JSON body, one line in OUT
  smtp OUT PORTFILE     an SMTP server (Debian's python3-aiosmtpd): each mail in OUT
  dead PORTFILE         accepts connections and never answers (a dead endpoint)"""
import datetime
import json
import os
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def log(what):
    """One timestamped line on stdout (the test's *.log, printed when it fails)."""
    print(datetime.datetime.now().isoformat(timespec="milliseconds"), what, flush=True)


def publish(portfile, port):
    with open(portfile + ".tmp", "w") as f:
        f.write(str(port))
    os.rename(portfile + ".tmp", portfile)


def webhook(out, portfile):
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            n = int(self.headers.get("Content-Length", "0"))
            body = self.rfile.read(n)
            rec = {"path": self.path, "content_type": self.headers.get("Content-Type"),
                   "body": json.loads(body)}
            with lock, open(out, "a") as f:
                f.write(json.dumps(rec) + "\n")
            log("POST %s %s job %s" % (self.path, rec["body"].get("event"),
                                      rec["body"].get("job", {}).get("id")))
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    publish(portfile, srv.server_address[1])
    srv.serve_forever()


def smtp(out, portfile):
    from aiosmtpd.controller import Controller

    class Handler:
        async def handle_DATA(self, server, session, envelope):
            log("mail to %s" % ",".join(envelope.rcpt_tos))
            with open(out, "a") as f:
                f.write("RCPT %s\n%s\n.\n" % (",".join(envelope.rcpt_tos),
                                              envelope.content.decode("utf-8", "replace")))
            return "250 OK"

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    # server_hostname: without it every connection's greeting looks up this machine's FQDN,
    # which blocks the sink for the resolver's timeouts on a machine without DNS.
    c = Controller(Handler(), hostname="127.0.0.1", port=port, server_hostname="sink.test")
    c.start()
    publish(portfile, port)
    while True:
        time.sleep(3600)


def dead(portfile):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", 0))
    s.listen(128)
    publish(portfile, s.getsockname()[1])
    held = []
    while True:
        conn, _ = s.accept()
        log("held a connection")
        held.append(conn)  # read nothing, answer nothing, close nothing


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "webhook":
        webhook(sys.argv[2], sys.argv[3])
    elif mode == "smtp":
        smtp(sys.argv[2], sys.argv[3])
    else:
        dead(sys.argv[2])
