#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Job notifications on a real pool (docs/notifications.md):
#   1. bob's webhook (a python3 http.server sink) hears his jobs' begin, end and fail
#      events with their fields and a Slack `text`; the admins' webhook of the config hears
#      them too; --mail-type/--mail-user mail goes through sendmail (msmtp relaying to an
#      aiosmtpd SMTP sink) to the address given; /metrics counts what was sent;
#   2. what gpool cannot send is refused by name: TIME_LIMIT_80, STAGE_OUT in an #SBATCH
#      line, mail with no address, a webhook that is not http(s); nobody else sees bob's
#      webhook;
#   3. a dead webhook endpoint (accepts, never answers) does not delay job starts: submit
#      to running with and without it; a full queue drops its oldest and counts it;
#   4. nor other users' notifications: alice's begin arrives while bob's endpoint hangs,
#      and her job's requeue (its node lost) is announced.
source "$(dirname "$0")/lib.sh"
SINKS=$(cd "$(dirname "$0")" && pwd)/notify_sinks.py
e2e_init
e2e_need msmtp
PY=/usr/bin/python3 # Debian's, with python3-aiosmtpd
"$PY" -c 'import aiosmtpd' 2>/dev/null || fail "python3-aiosmtpd is not installed (run scripts/setup.sh)"

e2e_spawn "$E2E_DIR/webhook.log" "$PY" "$SINKS" webhook "$E2E_DIR/hooks.jsonl" "$E2E_DIR/webhook.port"
e2e_spawn "$E2E_DIR/smtp.log" "$PY" "$SINKS" smtp "$E2E_DIR/mails.txt" "$E2E_DIR/smtp.port"
e2e_spawn "$E2E_DIR/dead.log" "$PY" "$SINKS" dead "$E2E_DIR/dead.port"
wait_for 20 "the sinks to listen" test -s "$E2E_DIR/webhook.port" -a -s "$E2E_DIR/smtp.port" -a -s "$E2E_DIR/dead.port"
WP=$(cat "$E2E_DIR/webhook.port") SP=$(cat "$E2E_DIR/smtp.port") DP=$(cat "$E2E_DIR/dead.port")
touch "$E2E_DIR/hooks.jsonl" "$E2E_DIR/mails.txt"

# The system's sendmail here is msmtp, relaying to the SMTP sink.
printf 'account default\nhost 127.0.0.1\nport %s\nfrom gpool@example.org\nauth off\ntls off\n' "$SP" \
  >"$E2E_DIR/msmtprc"
chmod 600 "$E2E_DIR/msmtprc"
printf '#!/bin/sh\nexec msmtp -C "%s" "$@"\n' "$E2E_DIR/msmtprc" >"$E2E_DIR/sendmail"
chmod +x "$E2E_DIR/sendmail"

e2e_server "notify:
  sendmail: $E2E_DIR/sendmail
  webhooks: any
  hooks: [{url: \"http://127.0.0.1:$WP/admins\", events: \"end,fail\"}]
  timeout_s: 5
  attempts: 3
  backoff_s: 1
  queue_max: 32"
e2e_agent n1 2xH100-80GB
# What the sender did, every 2 s, printed with the other logs if the test fails.
e2e_spawn "$E2E_DIR/notify-metrics.log" sh -c "while :; do date +%T.%N; curl -fsS '$SERVER_URL/metrics' |
  grep '^gpool_notify_.*[1-9]' | tr '\n' ' '; echo; sleep 2; done"

# hook_count PATH EVENT JOB: the webhook records of EVENT for JOB at PATH.
hook_count() { jq -s --arg p "$1" --arg e "$2" --arg j "$3" \
  '[.[] | select(.path == $p and .body.event == $e and .body.job.id == $j)] | length' "$E2E_DIR/hooks.jsonl"; }
hook_has() { [ "$(hook_count "$@")" -ge 1 ]; }
hook_body() { jq -s -c --arg p "$1" --arg e "$2" --arg j "$3" \
  '[.[] | select(.path == $p and .body.event == $e and .body.job.id == $j)][0].body' "$E2E_DIR/hooks.jsonl"; }
metric() { curl -fsS "$SERVER_URL/metrics" | awk -v k="$1" '$1 == k {print $2}'; }

# --- 1. webhooks and mail ---------------------------------------------------------------
out=$(as_bob "$GPOOL" notify set --webhook "http://127.0.0.1:$WP/bob" --events begin,end,fail)
expect_contains "$out" "Webhook: http://127.0.0.1:$WP/bob" "gpool notify set shows the webhook"
expect_contains "$out" "Events:  begin,end,fail" "gpool notify set shows the events"
# A run of 4 s: mail at half its limit, and when it is stopped at the limit.
tl=$(as_bob "$GPOOL" submit -n limited -g 1 -t 4 --grace 1 --mail-type=TIME_LIMIT_50,TIME_LIMIT \
  --mail-user=bob+tl@example.org -- sleep 30)
ok=$(as_bob "$GPOOL" submit -n good -g 1 --mail-type=BEGIN,END --mail-user=bob@example.org -- true)
wait_for 30 "job $ok to complete" job_is "$ok" completed
wait_for 20 "the begin event of $ok" hook_has /bob begin "$ok"
wait_for 20 "the end event of $ok" hook_has /bob end "$ok"
body=$(hook_body /bob end "$ok")
expect_eq "good bob default completed 0" \
  "$(jq -r '[.job.name, .job.user, .job.queue, .job.state, .job.exit_code] | join(" ")' <<<"$body")" \
  "the end event's fields"
expect_eq true "$(jq '.job.submitted_at > 0 and .job.started_at >= .job.submitted_at and .job.ended_at >= .job.started_at' <<<"$body")" \
  "the end event's times"
expect_contains "$(jq -r .text <<<"$body")" "gpool job $ok (good) of bob in queue default ended: completed, exit code 0" \
  "the Slack text"
expect_eq application/json "$(jq -s -r '.[0].content_type' "$E2E_DIR/hooks.jsonl")" "JSON is posted"
expect_eq 1 "$(hook_count /bob begin "$ok")" "one begin event"
bad=$(as_bob "$GPOOL" submit -n 'bad <!channel>' -g 1 -- sh -c 'exit 3')
wait_for 30 "job $bad to fail" job_is "$bad" failed
wait_for 20 "the fail event of $bad" hook_has /bob fail "$bad"
body=$(hook_body /bob fail "$bad")
expect_eq "failed 3" "$(jq -r '[.job.state, .job.exit_code] | join(" ")' <<<"$body")" "the fail event's fields"
expect_contains "$(jq -r .text <<<"$body")" "(bad &lt;!channel&gt;) of bob in queue default failed: failed, exit code 3" \
  "Slack markup in a job name is escaped"
wait_for 20 "the admins' webhook to hear the end of $ok" hook_has /admins end "$ok"
wait_for 20 "the admins' webhook to hear the failure of $bad" hook_has /admins fail "$bad"
expect_eq 0 "$(hook_count /admins begin "$ok")" "the admins' webhook takes only end,fail"
# Mail: BEGIN and END of the good job, to the address given.
# mails N: at least N mails to bob@example.org (a function, so wait_for counts them anew on
# every try).
mails() { [ "$(grep -c '^RCPT bob@example.org$' "$E2E_DIR/mails.txt")" -ge "$1" ]; }
wait_for 40 "two mails to bob@example.org" mails 2
mail_text=$(cat "$E2E_DIR/mails.txt")
expect_contains "$mail_text" "Subject: gpool job $ok (good) of bob in queue default began" "the begin mail"
expect_contains "$mail_text" "Subject: gpool job $ok (good) of bob in queue default ended: completed, exit code 0" "the end mail"
expect_contains "$mail_text" "Auto-Submitted: auto-generated" "mail says it is automatic"
webhooks_sent() { [ "$(metric 'gpool_notify_sent_total{channel="webhook"}')" -ge "$1" ]; }
wait_for 10 "the metrics to count the webhooks" webhooks_sent 5
[ "$(metric 'gpool_notify_sent_total{channel="mail"}')" -ge 2 ] || fail "mails are counted"
expect_eq 0 "$(metric 'gpool_notify_failed_total{channel="mail"}')" "no mail failed"

# TIME_LIMIT_50 at 2 s, TIME_LIMIT at the end (state timeout, also bob's webhook's fail).
wait_for 30 "job $tl to time out" job_is "$tl" timeout
tl_mails() { [ "$(grep -c '^RCPT bob+tl@example.org$' "$E2E_DIR/mails.txt")" -ge "$1" ]; }
wait_for 40 "two mails to bob+tl@example.org" tl_mails 2
mail_text=$(cat "$E2E_DIR/mails.txt")
expect_contains "$mail_text" "Subject: gpool job $tl (limited) of bob in queue default reached 50% of its time limit (00:00:04)" \
  "the TIME_LIMIT_50 mail"
expect_contains "$mail_text" "Subject: gpool job $tl (limited) of bob in queue default failed: timeout" "the TIME_LIMIT mail"
wait_for 20 "the fail event of $tl" hook_has /bob fail "$tl"

# --- 2. refusals and secrets ------------------------------------------------------------
err=$(as_bob "$GPOOL" submit --mail-type=INVALID_DEPEND -- true 2>&1) && fail "INVALID_DEPEND must be refused"
expect_contains "$err" "INVALID_DEPEND is not supported" "INVALID_DEPEND refused by name"
printf '#!/bin/sh\n#SBATCH --mail-type=END,STAGE_OUT\ntrue\n' >staged.sh
err=$(as_bob "$GPOOL" submit staged.sh 2>&1) && fail "STAGE_OUT must be refused"
expect_contains "$err" "staged.sh:2" "the script's line is named"
expect_contains "$err" "STAGE_OUT is not supported" "STAGE_OUT refused by name"
err=$(as_alice "$GPOOL" submit --mail-type=END -- true 2>&1) && fail "mail with no address must be refused"
expect_contains "$err" "no address to mail" "mail with no address refused"
err=$(as_bob "$GPOOL" submit --mail-user='bob@example.org>,eve@example.org' -- true 2>&1) && fail "a bad address must be refused"
expect_contains "$err" "is not a mail address" "a bad address refused"
err=$(as_bob "$GPOOL" notify set --webhook "ftp://127.0.0.1/x" 2>&1) && fail "a non-http webhook must be refused"
expect_contains "$err" "http:// or https://" "a non-http webhook refused"
expect_eq null "$(as_alice "$GPOOL" notify -o json | jq -r .webhook)" "alice does not see bob's webhook"
expect_eq "http://127.0.0.1:$WP/bob" "$(as_bob "$GPOOL" notify -o json | jq -r .webhook)" "bob sees his"
# Bob's script's mail settings are his: with #SBATCH lines, mail goes to his address.
printf '#!/bin/sh\n#SBATCH --mail-type=END\n#SBATCH --mail-user=bob@example.org\ntrue\n' >mailed.sh
sb=$(as_bob "$GPOOL" submit mailed.sh)
expect_eq "end bob@example.org" "$(job_field "$sb" '[.mail_type, .mail_user] | join(" ")')" "#SBATCH mail lines are kept"
wait_for 30 "job $sb to complete" job_is "$sb" completed
wait_for 40 "the mail of the #SBATCH job" mails 3

# --- 3. a dead endpoint never slows scheduling --------------------------------------------
# start_ms JOB...: the longest submit-to-running time of jobs submitted one after another.
start_ms() {
  local worst=0 t0 id
  for _ in 1 2 3; do
    t0=$(date +%s%N)
    id=$(as_bob "$GPOOL" submit -g 1 -- true)
    wait_for 20 "job $id to start" job_launched "$id"
    local ms=$((($(date +%s%N) - t0) / 1000000))
    [ $ms -gt $worst ] && worst=$ms
    wait_for 20 "job $id to end" job_is "$id" completed
  done
  echo $worst
}
as_bob "$GPOOL" notify set --webhook "" --events all >/dev/null
base=$(start_ms)
as_bob "$GPOOL" notify set --webhook "http://127.0.0.1:$DP/dead" >/dev/null
dead=$(start_ms)
echo "submit to running, worst of 3: ${base} ms without a webhook, ${dead} ms with a dead one"
# A state thread that waited on the endpoint would lose 5 s (timeout_s) per event; the
# margin is for a loaded test machine.
[ "$dead" -lt $((base + 2500)) ] || fail "a dead webhook slowed job starts: ${dead} ms vs ${base} ms"
# Jobs x 2 events (begin, end), each held up to 5 s x 3 attempts, in a queue of 32: 20 jobs
# push the oldest out. (The queue is large enough that section 1's burst, delivered one
# message of bob's at a time, never overflows it on a loaded machine.)
for i in $(seq 20); do as_bob "$GPOOL" submit -g 1 -- true >/dev/null; done
dropped() { [ "$(metric 'gpool_notify_dropped_total{channel="webhook"}')" -ge 1 ]; }
wait_for 30 "the full queue to drop its oldest" dropped

# --- 4. others are not held up; requeue -----------------------------------------------------
# Bob's dead endpoint holds one sender thread; alice's events still arrive at once, and a
# run that ends with its node lost is announced as a requeue.
as_alice "$GPOOL" notify set --webhook "http://127.0.0.1:$WP/alice" --events all >/dev/null
rq=$(as_alice "$GPOOL" submit -g 1 --requeue --mail-user=alice@example.org -- sh -c "$(gate_wait)")
wait_for 20 "job $rq to start" job_launched "$rq"
expect_eq "(hidden)" "$(as_bob "$GPOOL" show "$rq" -o json | jq -r .mail_user)" "bob does not see alice's address"
expect_eq "alice@example.org" "$(as_alice "$GPOOL" show "$rq" -o json | jq -r .mail_user)" "alice sees hers"
wait_for 3 "alice's begin event while bob's endpoint hangs" hook_has /alice begin "$rq"
kill -KILL "$(agent_pid n1)"
wait_for 20 "alice's requeue event" hook_has /alice requeue "$rq"
expect_eq pending "$(hook_body /alice requeue "$rq" | jq -r .job.state)" "the requeued job waits again"
expect_contains "$(hook_body /alice requeue "$rq" | jq -r .text)" "of alice in queue default was requeued" \
  "the requeue text"
as_alice "$GPOOL" cancel "$rq" >/dev/null
echo "ok: notify"
