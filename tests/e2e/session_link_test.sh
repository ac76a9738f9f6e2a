#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The console's link to a job's HTTP port (docs/interactive.md, "A link in the console"):
# only the job's owner and admins make one (another user and a viewer get 403); the link
# serves the same bytes as the port itself (a page, 20 MB streamed, a POST's body); every
# answer carries the sandbox CSP and no-referrer; the client's Authorization and Cookie
# never reach the app, the app's Set-Cookie never reaches the client; a wrong, expired or
# revoked (job ended) capability is 404; a server stopping with a link's body in flight to
# a client that reads nothing stops in time.
source "$(dirname "$0")/lib.sh"
e2e_need python3
e2e_init
e2e_others
e2e_server "link_ttl_s: 6"
e2e_agent n1 2xH100-80GB

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
code() { curl -sS -o /dev/null -w '%{http_code}' "$@"; }
mkdir -p "$E2E_DIR/www"
printf '<!doctype html><title>link page</title><h1 id="x">served by the job</h1>\n' >"$E2E_DIR/www/index.html"
head -c 20000000 /dev/urandom >"$E2E_DIR/www/big.bin"
# The app: http.server, plus /echo that answers the headers it got (and sets a cookie)
# and echoes a POST's body.
cat >"$E2E_DIR/app.py" <<'PY'
import http.server, sys
class H(http.server.SimpleHTTPRequestHandler):
    def do_GET(self):
        if not self.path.startswith("/echo"):
            return super().do_GET()
        body = str(self.headers).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Set-Cookie", "app=1; Path=/")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
PY
jport=$(free_port)
id=$(as_bob "$GPOOL" submit -g 1 -- sh -c "cd '$E2E_DIR/www' && exec python3 '$E2E_DIR/app.py' $jport")
wait_for 20 "bob's job to run" job_launched "$id"
wait_for 20 "the job's web server" curl -fsS -o /dev/null "http://127.0.0.1:$jport/"

# Who may make a link.
body="{\"port\": $jport}"
expect_eq 403 "$(api_status POST "/v1/jobs/$id/proxy" "$CAROL_TOKEN" -d "$body")" "another user makes a link"
expect_eq 403 "$(api_status POST "/v1/jobs/$id/proxy" "$VIEWER_TOKEN" -d "$body")" "a viewer makes a link"
expect_eq 400 "$(api_status POST "/v1/jobs/$id/proxy" "$BOB_TOKEN" -d '{"port": 0}')" "port 0"
expect_eq 201 "$(api_status POST "/v1/jobs/$id/proxy" "$ADMIN_TOKEN" -d "$body")" "an admin makes a link"
expect_eq 201 "$(api_status POST "/v1/jobs/$id/proxy" "$BOB_TOKEN" -d "$body")" "the owner makes a link"
url=$(jq -r .url "$E2E_DIR/body")
[[ "$url" =~ ^/proxy/[0-9a-f]{64}/$jport/$ ]] || fail "the link's form: $url"
link=$SERVER_URL$url

# The same page, the same 20 MB, a POST's body; the headers.
expect_eq "$(curl -fsS "http://127.0.0.1:$jport/")" "$(curl -fsS "$link")" "the page through the link"
expect_eq "$(sha256sum <"$E2E_DIR/www/big.bin" | cut -d' ' -f1)" \
  "$(curl -fsS "${link}big.bin" | sha256sum | cut -d' ' -f1)" "20 MB through the link"
expect_eq "posted body" "$(curl -fsS --data-binary 'posted body' "${link}echo")" "a POST's body through the link"
hdrs=$(curl -fsS -D - -o /dev/null "$link" | tr -d '\r')
expect_contains "$hdrs" "Content-Security-Policy: sandbox allow-scripts allow-forms allow-popups allow-downloads" "the CSP"
expect_contains "$hdrs" "Referrer-Policy: no-referrer" "the referrer policy"
case "$(echo "$hdrs" | grep -i '^content-security-policy')" in *allow-same-origin*) fail "same origin allowed" ;; esac
got=$(curl -fsS -D "$E2E_DIR/echo.h" -H "Authorization: Bearer $BOB_TOKEN" -H "Cookie: console=1" -H "X-Probe: 7" "${link}echo")
expect_contains "$got" "X-Probe: 7" "the app gets the client's own headers"
case "$got" in *"$BOB_TOKEN"* | *Authorization* | *console=1*) fail "the token or the cookie reached the app: $got" ;; esac
grep -qi '^set-cookie' "$E2E_DIR/echo.h" && fail "the app's cookie reached the console's origin"
expect_eq 308 "$(code "${link%/}")" "the link without its slash"

# Wrong capabilities and ports: 404.
cap=${url:7:64}
other=$([ "${cap:0:1}" = 0 ] && echo 1 || echo 0)
expect_eq 404 "$(code "$SERVER_URL/proxy/$other${cap:1}/$jport/")" "a wrong capability"
expect_eq 404 "$(code "$SERVER_URL/proxy/$cap/1/")" "another port"
expect_eq 404 "$(code "$SERVER_URL/proxy/abc/$jport/")" "a short capability"
esc=$(printf '%%%02x' "'${cap:0:1}")${cap:1}
expect_eq 400 "$(code "$SERVER_URL/proxy/$esc/$jport/")" "an escaped capability"
# Expired (link_ttl_s: 6 s here).
sleep 6.5
expect_eq 404 "$(code "$link")" "an expired link"
# Revoked: the job ended.
expect_eq 201 "$(api_status POST "/v1/jobs/$id/proxy" "$BOB_TOKEN" -d "$body")" "a fresh link"
link=$SERVER_URL$(jq -r .url "$E2E_DIR/body")
expect_eq 200 "$(code "$link")" "the fresh link works"
as_bob "$GPOOL" cancel "$id" >/dev/null
wait_for 20 "the job to end" job_is "$id" cancelled
expect_eq 404 "$(code "$link")" "the link of an ended job"

# A stopping server with a link's body in flight to a client that reads nothing: the relay
# ends and the server stops within its 10 s for sessions (no suspended connection left).
jport=$(free_port)
id=$(as_bob "$GPOOL" submit -g 1 -- sh -c "cd '$E2E_DIR/www' && exec python3 '$E2E_DIR/app.py' $jport")
wait_for 20 "bob's second job to run" job_launched "$id"
wait_for 20 "the second web server" curl -fsS -o /dev/null "http://127.0.0.1:$jport/"
expect_eq 201 "$(api_status POST "/v1/jobs/$id/proxy" "$BOB_TOKEN" -d "{\"port\": $jport}")" "a link to the second job"
path=$(jq -r .url "$E2E_DIR/body")big.bin
python3 - "${SERVER_URL#http://}" "$path" <<'PY' &
import socket, sys, time
host, port = sys.argv[1].rsplit(":", 1)
s = socket.create_connection((host, int(port)))
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.sendall(("GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % sys.argv[2]).encode())
s.recv(100)
time.sleep(20)  # reads nothing more
PY
stalled=$!
wait_for 10 "the relay counted" sh -c "curl -fsS $SERVER_URL/metrics | grep -q '^gpool_links_relays_open 1'"
kill -TERM "$SERVER_PID"
wait_for 13 "the server to stop with a link's body in flight" sh -c "! kill -0 $SERVER_PID 2>/dev/null"
kill "$stalled" 2>/dev/null
grep -q "Sanitizer\|runtime error" "$E2E_DIR/server.log" && fail "the server's sanitizers: $(tail -30 "$E2E_DIR/server.log")"
echo "ok: console links"
