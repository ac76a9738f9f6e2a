#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The documented input limits, as an ordinary client meets them (Python's urllib, which
# sends a whole body before it reads an answer): a URL with hundreds of query parameters
# is answered 400 naming the query (not left unanswered), a job whose command is over
# 262,144 bytes is 413 naming the command, and a 64 MiB body is answered 413 that the
# client can read (not a reset).
source "$(dirname "$0")/lib.sh"
e2e_init
e2e_need python3
e2e_server

python3 - "$SERVER_URL" "$ADMIN_TOKEN" <<'EOF' || fail "a limit was not answered as documented"
import json, sys, time, urllib.request, urllib.error
base, token = sys.argv[1], sys.argv[2]
bad = 0

def parse(text):
    try:
        return json.loads(text or b"{}")
    except ValueError:
        return {"text": text[:200].decode(errors="replace")}

def call(method, path, body=None):
    req = urllib.request.Request(base + path, data=body, method=method,
                                 headers={"Authorization": "Bearer " + token,
                                          "Content-Type": "application/json"})
    t0 = time.monotonic()
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            return r.status, parse(r.read()), time.monotonic() - t0
    except urllib.error.HTTPError as e:
        return e.code, parse(e.read()), time.monotonic() - t0
    except Exception as e:  # no answer at all: what the limits must never give
        return repr(e), {}, time.monotonic() - t0

def expect(what, got, status, field=None, code=None):
    global bad
    st, doc, took = got
    err = doc.get("error") or {}
    ok = st == status and (field is None or err.get("field") == field) and \
        (code is None or err.get("code") == code)
    print("%s %s: %s %s (%.2f s)" % ("ok  " if ok else "FAIL", what, st, err or doc, took))
    bad += not ok

for n in (500, 1000, 3000):
    q = "&".join("p%d=%d" % (i, i) for i in range(n))
    expect("%d query parameters (%d bytes)" % (n, len(q)), call("GET", "/v1/jobs?" + q), 400, "query")
expect("then a request within the limits", call("GET", "/v1/jobs?limit=5&state=running"), 200)

for words, size in ((1, 300000), (5, 60000)):
    body = json.dumps({"command": ["x" * size] * words, "gpus": 0}).encode()
    expect("a command of %d bytes in %d words" % (words * size, words), call("POST", "/v1/jobs", body),
           413, None, "too_large")
    st, doc, _ = call("POST", "/v1/jobs", body)
    f = (doc.get("error") or {}).get("field", "")
    if not f.startswith("command"):
        print("FAIL the refusal names %r, not the command" % f)
        bad += 1

body = b"{" + b" " * (64 << 20) + b"}"
expect("a 64 MiB body", call("POST", "/v1/jobs", body), 413, None, "too_large")
expect("a 1 MiB + 1 byte body", call("POST", "/v1/jobs", b" " * ((1 << 20) + 1)), 413, None, "too_large")
expect("then an ordinary request", call("GET", "/v1/queues"), 200)
sys.exit(1 if bad else 0)
EOF
echo "PASS: http_limits"
