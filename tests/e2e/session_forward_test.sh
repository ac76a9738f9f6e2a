#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `gpool port-forward` through the server and the agent (docs/interactive.md): a 100 MB
# file served by `python3 -m http.server` inside a job arrives intact; a bad token is
# refused before anything listens; a job cannot reach a port that another job listens on, nor
# the agent's own; a client that stops reading leaves the server's memory bounded and the
# job unharmed.
source "$(dirname "$0")/lib.sh"
e2e_need python3
e2e_init
e2e_server
e2e_agent n1 2xH100-80GB

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
mkdir -p "$E2E_DIR/www"
head -c 100000000 /dev/urandom >"$E2E_DIR/www/big.bin"
want=$(sha256sum <"$E2E_DIR/www/big.bin" | cut -d' ' -f1)
jport=$(free_port)
id=$(as_bob "$GPOOL" submit -g 1 -- sh -c "cd '$E2E_DIR/www' && exec python3 -m http.server $jport --bind 127.0.0.1")
wait_for 20 "bob's job to run" job_launched "$id"
wait_for 20 "the job's web server" curl -fsS -o /dev/null "http://127.0.0.1:$jport/"

lport=$(free_port)
GPOOL_TOKEN=$BOB_TOKEN e2e_spawn "$E2E_DIR/pf.log" "$GPOOL" port-forward "$id" "$lport:$jport"
pf=$LAST_PID
wait_for 20 "the forward to listen" grep -q "Forwarding from 127.0.0.1:$lport" "$E2E_DIR/pf.log"
got=$(curl -fsS "http://127.0.0.1:$lport/big.bin" | sha256sum | cut -d' ' -f1)
expect_eq "$want" "$got" "100 MB through port-forward arrive intact"
curl -fsS "http://127.0.0.1:$lport/" | grep -q big.bin || fail "the directory listing through the forward"

# A refusal is said before anything listens (the route's 403s for other users and
# viewers are session_exec_test's: every session kind shares them).
out=$(GPOOL_TOKEN=nope timeout 20 "$GPOOL" port-forward "$id" 0:$jport 2>&1) && fail "a wrong token forwarded"
expect_contains "$out" "HTTP 401" "a wrong token is refused"

# A job cannot reach a port it does not listen on: alice's own job asks for bob's port
# and for the agent's port.
other=$(as_alice "$GPOOL" submit -- sh -c "$(gate_wait)")
wait_for 20 "alice's job to run" job_launched "$other"
lport2=$(free_port)
GPOOL_TOKEN=$ADMIN_TOKEN e2e_spawn "$E2E_DIR/pf2.log" "$GPOOL" port-forward "$other" "$lport2:$jport"
wait_for 20 "alice's forward to listen" grep -q "Forwarding from" "$E2E_DIR/pf2.log"
curl -fsS -m 10 -o /dev/null "http://127.0.0.1:$lport2/" && fail "alice's job reached bob's web server"
wait_for 10 "the refusal" grep -q "no process of job $other listens on port $jport" "$E2E_DIR/pf2.log"
agent_port=$(GPOOL_TOKEN=$ADMIN_TOKEN "$GPOOL" nodes -o json | jq -r '.[0].agent_url' | sed 's|.*:||')
lport3=$(free_port)
GPOOL_TOKEN=$ADMIN_TOKEN e2e_spawn "$E2E_DIR/pf3.log" "$GPOOL" port-forward "$other" "$lport3:$agent_port"
wait_for 20 "the third forward to listen" grep -q "Forwarding from" "$E2E_DIR/pf3.log"
curl -fsS -m 10 -o /dev/null "http://127.0.0.1:$lport3/healthz" && fail "a job reached its agent's endpoint"
open_gate

# A client that stops reading: the server holds a bounded amount, the job is unharmed.
rss() { awk '/^VmRSS/ {print $2}' "/proc/$SERVER_PID/status"; }
before=$(rss)
python3 - "$lport" <<'PY' &
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.sendall(b"GET /big.bin HTTP/1.0\r\n\r\n")
s.recv(100)
time.sleep(8)  # reads nothing more while the job has 100 MB to send
PY
stalled=$!
sleep 6
during=$(rss)
grow=$((during - before))
[ "$grow" -lt 65536 ] || fail "the server grew by $grow KiB for a client that stopped reading (bounded buffers: less than 64 MiB)"
wait "$stalled"
got=$(curl -fsS "http://127.0.0.1:$lport/big.bin" | sha256sum | cut -d' ' -f1)
expect_eq "$want" "$got" "the job still serves after a stalled client"
job_is "$id" running || fail "the job runs on"
echo "ok: port-forward ($grow KiB of server growth for a stalled 100 MB read)"
