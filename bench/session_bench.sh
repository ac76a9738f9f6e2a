#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Interactive sessions' figures (issue 35, docs/performance.md), on one machine: a real
# server and a sim agent, every byte through the CLI, the server and the agent.
#   1. Keystroke round trip: `gpool exec -it JOB -- cat` on a pexpect terminal; one byte
#      typed, timed until the remote terminal's echo is back; N keystrokes, the first WARM
#      left out. p50, p99, max in ms (target p99 < 20 ms).
#   2. Port-forward throughput: a SIZE_MB file from `python3 -m http.server` inside a job,
#      through `gpool port-forward` and directly; MB/s of each, best of 3 (target >= 0.5x).
#   3. `gpool run -g 1 -- true` on an idle pool, from the command to its exit: RUNS runs,
#      p50 and max in ms (target < 500 ms).
#
#   bench/session_bench.sh [BUILD_DIR]   (default build/rel)
#   env: N=500 WARM=20 SIZE_MB=500 RUNS=20
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "${1:-$ROOT/build/rel}" 2>/dev/null && pwd) || BUILD=${1:-$ROOT/build/rel}
N=${N:-500} WARM=${WARM:-20} SIZE_MB=${SIZE_MB:-500} RUNS=${RUNS:-20}
[ -x "$BUILD/gpool" ] || { echo "build first: cmake -S . -B build/rel -DCMAKE_BUILD_TYPE=Release && cmake --build build/rel --target gpool_bin" >&2; exit 2; }
export GPOOL_BIN=$BUILD/gpool
source "$ROOT/tests/e2e/lib.sh"
e2e_need python3
e2e_init
e2e_server
e2e_agent n1 4xH100-80GB
export GPOOL_TOKEN=$ADMIN_TOKEN
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# 1. keystrokes
id=$("$GPOOL" submit -g 1 -- sh -c "$(gate_wait)")
wait_for 20 "the job to run" job_launched "$id"
python3 - "$GPOOL" "$id" "$N" "$WARM" <<'PY'
import sys, time, pexpect
gpool, job, n, warm = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
p = pexpect.spawn(gpool, ["exec", job, "-it", "--", "cat"], timeout=10)
p.delaybeforesend = None  # pexpect waits 50 ms before each send by default
time.sleep(1.0)
lat = []
for i in range(n):
    ch = b"abcdefghij"[i % 10:i % 10 + 1]
    t0 = time.perf_counter()
    p.send(ch)
    p.expect_exact(ch)
    lat.append((time.perf_counter() - t0) * 1000)
lat = sorted(lat[warm:])
q = lambda f: lat[min(len(lat) - 1, int(f * len(lat)))]
print(f"keystroke round trip (exec -it, {len(lat)} keys): p50 {q(0.5):.2f} ms, p99 {q(0.99):.2f} ms, max {lat[-1]:.2f} ms", flush=True)
p.send(b"\r")
p.sendcontrol("d")
p.expect(pexpect.EOF)
PY
open_gate

# 2. port-forward
mkdir -p www
head -c $((SIZE_MB * 1000000)) /dev/urandom >www/big.bin
jport=$(free_port)
web=$("$GPOOL" submit -- sh -c "cd '$E2E_DIR/www' && exec python3 -m http.server $jport --bind 127.0.0.1")
wait_for 20 "the web job" curl -fsS -o /dev/null "http://127.0.0.1:$jport/"
lport=$(free_port)
e2e_spawn "$E2E_DIR/pf.log" "$GPOOL" port-forward "$web" "$lport:$jport"
wait_for 20 "the forward" grep -q Forwarding "$E2E_DIR/pf.log"
best() {
  local url=$1 b=0
  for _ in 1 2 3; do
    local s
    s=$(curl -fsS -o /dev/null -w '%{speed_download}' "$url")
    s=${s%.*}
    [ "$s" -gt "$b" ] && b=$s
  done
  echo "$b"
}
direct=$(best "http://127.0.0.1:$jport/big.bin")
fwd=$(best "http://127.0.0.1:$lport/big.bin")
python3 -c "import sys; d, f = int(sys.argv[1]), int(sys.argv[2]); print(f'port-forward throughput ({sys.argv[3]} MB): direct {d/1e6:.0f} MB/s, forwarded {f/1e6:.0f} MB/s, ratio {f/d:.2f}')" "$direct" "$fwd" "$SIZE_MB"
"$GPOOL" cancel "$web" >/dev/null

# 3. gpool run -g 1 -- true on the idle pool
wait_for 20 "an idle pool" sh -c "[ \"\$('$GPOOL' jobs -o json | jq '[.[] | select(.state == \"running\")] | length')\" = 0 ]"
python3 - "$GPOOL" "$RUNS" <<'PY'
import subprocess, sys, time
gpool, runs = sys.argv[1], int(sys.argv[2])
t = []
for _ in range(runs):
    t0 = time.perf_counter()
    r = subprocess.run([gpool, "run", "-g", "1", "--", "true"], stderr=subprocess.DEVNULL)
    t.append((time.perf_counter() - t0) * 1000)
    assert r.returncode == 0, r.returncode
t.sort()
print(f"gpool run -g 1 -- true on an idle pool ({runs} runs): p50 {t[len(t)//2]:.0f} ms, max {t[-1]:.0f} ms")
PY
