#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Who may do what, and how bad requests are answered: bob cannot cancel or hold alice's
# job, nor submit to a queue that admits only alice; a wrong token is refused; malformed,
# wrongly typed and oversized requests get 4xx answers with the documented error object,
# and the CLI turns them into one clear line and a non-zero exit.
source "$(dirname "$0")/lib.sh"
e2e_init
E2E_QUEUES='  - {name: private, users: [alice]}' e2e_server
e2e_agent n1 2xH100-80GB

# alice's running job
mine=$(as_alice "$GPOOL" submit -g 1 -- sleep 30)
wait_for 20 "alice's job to run" job_is "$mine" running

# bob may not cancel or hold it
out=$(as_bob "$GPOOL" cancel "$mine" 2>&1) && fail "bob cancelled alice's job"
expect_contains "$out" "gpool cancel:" "the refusal is one line from gpool"
job_is "$mine" running || fail "alice's job must still run after bob's attempt"
as_bob "$GPOOL" hold "$mine" >/dev/null 2>&1 && fail "bob held alice's job"
expect_eq 403 "$(api_status POST "/v1/jobs/$mine/cancel" "$BOB_TOKEN")" "cancel by another user is 403"
expect_eq permission_denied "$(jq -r .error.code "$E2E_DIR/body")" "error code"

# bob may not use alice's queue, but may use the default one
out=$(as_bob "$GPOOL" submit -q private -g 1 -- true 2>&1) && fail "bob submitted to a queue that does not admit him"
expect_contains "$out" "gpool submit:" "submit refusal message"
bobs=$(as_bob "$GPOOL" submit -g 1 -- true) || fail "bob can submit to the default queue"
expect_eq bob "$(job_field "$bobs" .user)" "the job belongs to bob"

# wrong or missing token
expect_eq 401 "$(api_status GET /v1/jobs not-a-token)" "a wrong token is 401"
expect_eq unauthenticated "$(jq -r .error.code "$E2E_DIR/body")" "401 error code"
out=$(GPOOL_TOKEN=not-a-token "$GPOOL" jobs 2>&1) && fail "a wrong token must fail"
expect_contains "$out" "gpool jobs:" "wrong-token message"

# malformed, mistyped, oversized
expect_eq 400 "$(api_status POST /v1/jobs "$ADMIN_TOKEN" --data '{"command": ["true"], "gpus": ')" "malformed JSON is 400"
expect_eq invalid_argument "$(jq -r .error.code "$E2E_DIR/body")" "malformed JSON code"
expect_eq 400 "$(api_status POST /v1/jobs "$ADMIN_TOKEN" --data '{"command": ["true"], "gpus": "two"}')" "a string for gpus is 400"
expect_eq gpus "$(jq -r .error.field "$E2E_DIR/body")" "the error names the field"
expect_eq 400 "$(api_status POST /v1/jobs "$ADMIN_TOKEN" --data '{"command": ["true"], "gpus": -3}')" "negative gpus is 400"
expect_eq 400 "$(api_status POST /v1/jobs "$ADMIN_TOKEN" --data '{"gpus": 1}')" "a job without a command is 400"
head -c $((2 * 1024 * 1024)) /dev/zero | tr '\0' 'x' | sed 's/^/{"command": ["/; s/$/"]}/' >"$E2E_DIR/big.json"
status=$(api_status POST /v1/jobs "$ADMIN_TOKEN" --data-binary @"$E2E_DIR/big.json")
expect_eq 413 "$status" "a 2 MiB body is 413"
expect_eq 404 "$(api_status GET /v1/jobs/999999 "$ADMIN_TOKEN")" "an unknown job is 404"
out=$(as_alice "$GPOOL" show 999999 2>&1) && fail "show of an unknown job must fail"
expect_contains "$out" "gpool show:" "unknown job message"

# the server is still healthy after all that
curl -fsS "$SERVER_URL/healthz" >/dev/null || fail "the server must survive bad requests"
as_alice "$GPOOL" cancel "$mine" >/dev/null
echo "ok: auth and bad requests"
