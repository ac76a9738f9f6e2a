#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `gpool exec` through the server and the agent (WebSocket sessions, docs/interactive.md):
# the command sees the job's environment (its GPUs), its exit code and both streams come
# back, stdin goes in; `gpool attach` streams a task's output to its exit code; only the job's owner and admins may enter (another user and a viewer
# get 403, a malformed upgrade 400); sessions_per_user holds (429); /metrics counts them;
# a stopping server ends a session with a clear sentence and the job keeps running; a
# killed server too. A `gpool run --pty` (pexpect) outlives a stopping server: the CLI says
# how to reattach, its output meanwhile is kept, `gpool attach` gets the terminal back and
# `exit 7` ends the job failed with 7; a `gpool run` whose CLI dies ends its job (129);
# one whose server is killed runs on and ends with its own code.
source "$(dirname "$0")/lib.sh"
e2e_need python3
python3 -c 'import pexpect' 2>/dev/null || fail "python3-pexpect is not installed (run scripts/setup.sh)"
e2e_init
e2e_others
e2e_server "sessions_per_user: 2"
e2e_agent n1 2xH100-80GB

id=$(as_bob "$GPOOL" submit -g 1 -- sh -c "echo CVD=\$CUDA_VISIBLE_DEVICES; $(gate_wait)")
wait_for 20 "bob's job to run" job_launched "$id"
wait_for 10 "the job's first line" sh -c "GPOOL_TOKEN=$BOB_TOKEN '$GPOOL' logs $id | grep -q CVD="
want=$(as_bob "$GPOOL" logs "$id" | grep CVD=)

# The job's environment, its exit code, stdout and stderr apart.
out=$(as_bob timeout 20 "$GPOOL" exec "$id" -- sh -c 'echo CVD=$CUDA_VISIBLE_DEVICES; echo to-err >&2; exit 7' 2>"$E2E_DIR/err")
expect_eq 7 "$?" "exec returns the command's exit code"
expect_eq "$want" "$out" "exec sees the job's CUDA_VISIBLE_DEVICES"
expect_eq to-err "$(cat "$E2E_DIR/err")" "stderr comes back apart"
# stdin goes in (-i), to its end; without -i the command reads an empty input.
expect_eq hello "$(echo hello | as_bob timeout 20 "$GPOOL" exec -i "$id" -- cat)" "exec -i forwards stdin"
expect_eq "" "$(echo hello | as_bob timeout 20 "$GPOOL" exec "$id" -- cat)" "without -i stdin is empty"
# A big output arrives whole (several frames, flow control on the way).
n=$(as_bob timeout 30 "$GPOOL" exec "$id" -- sh -c 'head -c 5000000 /dev/zero' | wc -c)
expect_eq 5000000 "$n" "5 MB of output arrive whole"
# An admin may enter; a missing command fails as a command would.
as_alice timeout 20 "$GPOOL" exec "$id" -- true || fail "an admin may exec into bob's job"
as_bob timeout 20 "$GPOOL" exec "$id" -- no-such-command-xyz 2>"$E2E_DIR/err"
expect_eq 127 "$?" "a missing command exits 127"

# Another user and a viewer: 403, before anything reaches the agent.
out=$(GPOOL_TOKEN=$CAROL_TOKEN timeout 20 "$GPOOL" exec "$id" -- true 2>&1) && fail "carol entered bob's job"
expect_contains "$out" "only its owner or an admin" "carol's refusal says why"
expect_contains "$out" "HTTP 403" "carol gets 403"
out=$(GPOOL_TOKEN=$VIEWER_TOKEN timeout 20 "$GPOOL" exec "$id" -- true 2>&1) && fail "a viewer entered bob's job"
expect_contains "$out" "HTTP 403" "a viewer gets 403"
ws=(-H 'Upgrade: websocket' -H 'Connection: Upgrade' -H 'Sec-WebSocket-Version: 13' -H 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==')
expect_eq 403 "$(api_status GET "/v1/jobs/$id/session" "$CAROL_TOKEN" "${ws[@]}")" "carol's upgrade is 403"
expect_eq 403 "$(api_status GET "/v1/jobs/$id/session" "$VIEWER_TOKEN" "${ws[@]}")" "a viewer's upgrade is 403"
expect_eq 400 "$(api_status GET "/v1/jobs/$id/session" "$BOB_TOKEN" -H 'Upgrade: websocket' -H 'Connection: Upgrade' -H 'Sec-WebSocket-Version: 13' -H 'Sec-WebSocket-Key: short')" "a bad key is 400"
expect_eq 400 "$(api_status GET "/v1/jobs/$id/session" "$BOB_TOKEN")" "a plain GET is 400"
done_id=$(as_bob "$GPOOL" submit -- true)
wait_for 20 "the short job to end" job_is "$done_id" completed
out=$(as_bob timeout 20 "$GPOOL" exec "$done_id" -- true 2>&1) && fail "exec into an ended job"
expect_contains "$out" "not running" "an ended job has no session"
# The agent's own endpoint refuses a session without the agent's token.
agent_url=$(GPOOL_TOKEN=$ADMIN_TOKEN "$GPOOL" nodes -o json | jq -r '.[0].agent_url')
code=$(curl -sS -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $BOB_TOKEN" "${ws[@]}" "$agent_url/sessions/$id")
expect_eq 401 "$code" "the agent refuses a user's token"

# attach: the output as it is written, then the task's exit code.
att=$(as_bob "$GPOOL" submit -- sh -c "i=0; while [ ! -e '$E2E_DIR/gate2' ] && [ \$i -lt 600 ]; do echo tick; sleep 0.2; i=\$((i+1)); done; echo bye; echo err-bye >&2; exit 4")
wait_for 20 "the ticking job to run" job_launched "$att"
(GPOOL_TOKEN=$BOB_TOKEN timeout 30 "$GPOOL" attach "$att" >"$E2E_DIR/att.out" 2>"$E2E_DIR/att.err"; echo $? >"$E2E_DIR/att.rc") &
wait_for 10 "attached output" grep -q tick "$E2E_DIR/att.out"
touch "$E2E_DIR/gate2"
wait_for 20 "attach to end" test -s "$E2E_DIR/att.rc"
expect_eq 4 "$(cat "$E2E_DIR/att.rc")" "attach exits with the task's code"
expect_eq bye "$(tail -n1 "$E2E_DIR/att.out")" "attach shows the output to the end"
expect_contains "$(cat "$E2E_DIR/att.err")" "err-bye" "attach shows stderr apart"

# sessions_per_user: 2 open, the third refused (429); they end with their commands.
GPOOL_TOKEN=$BOB_TOKEN "$GPOOL" exec "$id" -- sleep 30 >/dev/null 2>&1 &
s1=$!
GPOOL_TOKEN=$BOB_TOKEN "$GPOOL" exec "$id" -- sleep 30 >/dev/null 2>&1 &
s2=$!
wait_for 10 "two sessions open" sh -c "curl -fsS $SERVER_URL/metrics | grep -q '^gpool_sessions_open 2'"
out=$(as_bob timeout 20 "$GPOOL" exec "$id" -- true 2>&1) && fail "a third session passed sessions_per_user: 2"
expect_contains "$out" "sessions_per_user" "the limit is named"
expect_contains "$out" "HTTP 429" "the limit is 429"
as_alice timeout 20 "$GPOOL" exec "$id" -- true || fail "another user's sessions do not count against bob"
curl -fsS "$SERVER_URL/metrics" | grep -q '^gpool_sessions_refused_total 1' || fail "the refusal is counted"

# A `gpool run` whose CLI dies (not a server stop): its command gets the hang-up and the
# job ends with it (129).
GPOOL_TOKEN=$ADMIN_TOKEN "$GPOOL" run -g 1 -- sh -c 'echo started $GPOOL_JOB_ID; sleep 30' >"$E2E_DIR/r2.out" 2>&1 &
r2=$!
wait_for 20 "the run's command to start" grep -q started "$E2E_DIR/r2.out"
r2_job=$(awk '/started/{print $2}' "$E2E_DIR/r2.out")
kill -KILL "$r2"
wait "$r2" 2>/dev/null
wait_for 20 "the killed run's job to end" job_is "$r2_job" failed
expect_eq 129 "$(job_field "$r2_job" .exit_code)" "a run whose CLI died ends with the hang-up's code"

# A `gpool run --pty` on a terminal (pexpect) beside an exec: both survive a stopping server.
cat >"$E2E_DIR/reattach.py" <<'PY'
import sys, pexpect
gpool, d, phase = sys.argv[1], sys.argv[2], sys.argv[3]
if phase == "run":
    p = pexpect.spawn(gpool, ["run", "-g", "1", "--pty", "--", "sh"], dimensions=(24, 80), timeout=30, encoding="utf-8")
    p.logfile_read = sys.stdout
    p.expect(r"[$#] ")
    # Output written while no CLI is attached: kept by the agent for the next attach.
    p.sendline("(while [ ! -e %s/away ]; do sleep 0.1; done; echo while-$((5+6))) &" % d)
    p.sendline("echo ready-$((2+3))")
    p.expect_exact("ready-5")
    open(d + "/run.ready", "w").close()
    p.expect(pexpect.EOF, timeout=30)
    p.close()
    print("\nEXIT", p.exitstatus, flush=True)
    sys.exit(0 if p.exitstatus == 1 else 1)
p = pexpect.spawn(gpool, ["attach", sys.argv[4]], dimensions=(30, 100), timeout=30, encoding="utf-8")
p.logfile_read = sys.stdout
p.expect_exact("while-11")  # the kept output first
p.sendline("echo back-$((3+4)); stty size")
p.expect_exact("back-7")
p.expect_exact("30 100")  # this terminal's size, sent at the handover
p.sendline("exit 7")
p.expect(pexpect.EOF)
p.close()
print("\nEXIT", p.exitstatus, flush=True)
sys.exit(0 if p.exitstatus == 7 else 1)
PY
(as_bob "$GPOOL" exec "$id" -- sleep 30 >"$E2E_DIR/s3.out" 2>"$E2E_DIR/s3.err"; echo $? >"$E2E_DIR/s3.rc") &
(GPOOL_TOKEN=$ADMIN_TOKEN python3 "$E2E_DIR/reattach.py" "$GPOOL" "$E2E_DIR" run >"$E2E_DIR/r3.out" 2>&1; echo $? >"$E2E_DIR/r3.rc") &
# SIGTERM to a CLI without a terminal goes on to its command: both sessions end.
kill -TERM "$s1" "$s2"
wait "$s1" "$s2"
wait_for 20 "the run's shell" test -e "$E2E_DIR/run.ready"
wait_for 20 "two sessions open" sh -c "curl -fsS $SERVER_URL/metrics | grep -q '^gpool_sessions_open 2'"
kill -TERM "$SERVER_PID"
wait_for 15 "the CLI to end" test -s "$E2E_DIR/s3.rc"
expect_eq 1 "$(cat "$E2E_DIR/s3.rc")" "a session ended by the server exits 1"
expect_contains "$(cat "$E2E_DIR/s3.err")" "the server is stopping" "the CLI says the server stopped"
expect_contains "$(cat "$E2E_DIR/s3.err")" "job keeps running" "the CLI says the job runs on"
wait_for 15 "gpool run to end" test -s "$E2E_DIR/r3.rc"
expect_eq 0 "$(cat "$E2E_DIR/r3.rc")" "a run ended by the server exits 1 (the driver's check)"
r3=$(tr -d '\r' <"$E2E_DIR/r3.out")
expect_contains "$r3" "gpool run: the server is stopping; the job " "gpool run says the server stopped"
run_job=$(printf '%s\n' "$r3" | sed -n 's/.*the job \([0-9]*\) keeps running; reattach with: gpool attach \1$/\1/p')
[ -n "$run_job" ] || fail "gpool run names the job and the attach command: $r3"
touch "$E2E_DIR/away"
wait "$SERVER_PID" 2>/dev/null
e2e_server
job_is "$id" running || fail "the job must keep running over the server's restart"
job_is "$run_job" running || fail "the run's job must keep running over the server's restart"
wait_for 20 "the node back" node_is n1 up
GPOOL_TOKEN=$ADMIN_TOKEN timeout 40 python3 "$E2E_DIR/reattach.py" "$GPOOL" "$E2E_DIR" attach "$run_job" >"$E2E_DIR/a3.out" 2>&1 \
  || fail "gpool attach did not get the run's terminal back: $(cat "$E2E_DIR/a3.out")"
wait_for 20 "the run's job to end" job_is "$run_job" failed
expect_eq 7 "$(job_field "$run_job" .exit_code)" "the reattached run's job ends with its command's code"

# A killed server: the CLI says the connection was lost; an exec's job and a run's job
# both run on (the run's command detached on the agent), and the run's job ends with its
# command's own code once that ends.
wait_for 20 "the node back" node_is n1 up
(as_bob "$GPOOL" exec "$id" -- sleep 30 >/dev/null 2>"$E2E_DIR/s4.err"; echo $? >"$E2E_DIR/s4.rc") &
(GPOOL_TOKEN=$ADMIN_TOKEN "$GPOOL" run -g 1 -- sh -c "echo started \$GPOOL_JOB_ID; while [ ! -e $E2E_DIR/away4 ]; do sleep 0.1; done; exit 6" \
  >"$E2E_DIR/r4.out" 2>&1; echo $? >"$E2E_DIR/r4.rc") &
wait_for 20 "the run's command to start" grep -q started "$E2E_DIR/r4.out"
r4_job=$(awk '/started/{print $2}' "$E2E_DIR/r4.out")
wait_for 10 "two sessions open" sh -c "curl -fsS $SERVER_URL/metrics | grep -q '^gpool_sessions_open 2'"
kill -KILL "$SERVER_PID"
wait_for 15 "the CLI to end" test -s "$E2E_DIR/s4.rc"
expect_eq 1 "$(cat "$E2E_DIR/s4.rc")" "a session whose server died exits 1"
expect_contains "$(cat "$E2E_DIR/s4.err")" "connection to the server was lost" "the CLI says the server went away"
wait_for 15 "gpool run to end" test -s "$E2E_DIR/r4.rc"
expect_contains "$(cat "$E2E_DIR/r4.out")" "if the server went down, job $r4_job keeps running (reattach with: gpool attach $r4_job)" \
  "gpool run says how to reattach after a crash"
e2e_server
job_is "$id" running || fail "the job must keep running over the server's crash"
job_is "$r4_job" running || fail "the run's job must keep running over the server's crash"
touch "$E2E_DIR/away4"
wait_for 20 "the crash-surviving run to end" job_is "$r4_job" failed
expect_eq 6 "$(job_field "$r4_job" .exit_code)" "the run's job ends with its command's code, not the hang-up's"
open_gate
echo "ok: exec sessions"
