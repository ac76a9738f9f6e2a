#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# HTTPS between every part of a pool: a throwaway CA signs the server's and the agent's
# certificates; the server serves HTTPS and wants agents' client certificates,
# the agent serves HTTPS and wants the server's. A job runs and its log is read through the
# server's proxy. Refused: a private key others can read, plain HTTP to a TLS port, a client
# without the CA, a server whose certificate names another host (the CLI and the agent
# both check the name), an agent without a client certificate or with one from another CA,
# and a log read from the agent without the server's certificate.
source "$(dirname "$0")/lib.sh"
e2e_init
e2e_need openssl

pki=$E2E_DIR/pki
mkdir -p "$pki"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=gpool test CA" \
  -keyout "$pki/ca.key" -out "$pki/ca.pem" 2>/dev/null || fail "openssl cannot make the CA"
# cert NAME SUBJECT_ALT_NAMES: a key and a certificate signed by the CA.
cert() {
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$1" \
    -keyout "$pki/$1.key" -out "$pki/$1.csr" 2>/dev/null &&
    printf 'subjectAltName=%s\n' "$2" >"$pki/$1.ext" &&
    openssl x509 -req -in "$pki/$1.csr" -CA "$pki/ca.pem" -CAkey "$pki/ca.key" -CAcreateserial \
      -days 2 -extfile "$pki/$1.ext" -out "$pki/$1.pem" 2>/dev/null || fail "openssl cannot sign $1"
  chmod 600 "$pki/$1.key"
}
cert server IP:127.0.0.1
cert n1 IP:127.0.0.1
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=n1" \
  -keyout "$pki/rogue.key" -out "$pki/rogue.pem" 2>/dev/null || fail "openssl cannot make the rogue cert"

e2e_write_config "tls: {cert: pki/server.pem, key: pki/server.key, client_ca: pki/ca.pem, agent_ca: pki/ca.pem}
agent_listen: 127.0.0.1:0"

# A private key that others can read is refused, naming the key and the file.
chmod 644 "$pki/server.key"
out=$("$GPOOL" server --config "$E2E_DIR/server.yaml" 2>&1) && fail "the server started with a 0644 key"
expect_contains "$out" "tls.key" "the error names the key"
expect_contains "$out" "$pki/server.key" "the error names the file"
expect_contains "$out" "chmod 600" "the error says what to do"
chmod 600 "$pki/server.key"

e2e_spawn "$E2E_DIR/server.log" "$GPOOL" server --config "$E2E_DIR/server.yaml"
wait_for 20 "the server to write server.url" test -s "$E2E_DIR/server/server.url"
SERVER_URL=$(head -n1 "$E2E_DIR/server/server.url")
expect_contains "$SERVER_URL" "https://127.0.0.1:" "server.url"
AGENT_URL=$(head -n1 "$E2E_DIR/server/agent.url") # agent_listen: the same certificates
expect_contains "$AGENT_URL" "https://127.0.0.1:" "agent.url"
wait_for 10 "the server to answer /healthz over HTTPS" curl -fsS --cacert "$pki/ca.pem" "$SERVER_URL/healthz"
export GPOOL_SERVER=$SERVER_URL GPOOL_TOKEN=$ADMIN_TOKEN

# Plain HTTP to the TLS port gets no answer.
curl -sS -m 5 "http://${SERVER_URL#https://}/healthz" >/dev/null 2>&1 && fail "plain HTTP was answered on the TLS port"
# A client without the CA cannot verify the server: the CLI says so and exits 3.
curl -sS -m 5 "$SERVER_URL/healthz" >/dev/null 2>&1 && fail "curl verified the server without the CA"
out=$("$GPOOL" nodes 2>&1)
expect_eq 3 "$?" "gpool without the CA exits 3"
expect_contains "$out" "cannot verify the server" "gpool without the CA"
"$GPOOL" nodes --ca "$pki/ca.pem" >/dev/null || fail "gpool --ca cannot reach the server"
mkdir -p "$GPOOL_CONFIG_DIR"
printf '{"ca": "%s"}\n' "$pki/ca.pem" >"$GPOOL_CONFIG_DIR/client.json"
chmod 600 "$GPOOL_CONFIG_DIR/client.json"
"$GPOOL" nodes >/dev/null || fail "gpool cannot use client.json's ca"
rm "$GPOOL_CONFIG_DIR/client.json"
export GPOOL_CA=$pki/ca.pem

# Agents must show a certificate from the CA: none, or one from another CA, is refused.
register() { curl -sS -m 5 --cacert "$pki/ca.pem" -o "$E2E_DIR/body" -w '%{http_code}' -X POST \
  -H "Authorization: Bearer $AGENT_TOKEN" -H 'Content-Type: application/json' "$@" \
  --data '{"node": {"name": "x", "gpus": 0}}' "$SERVER_URL/v1/agent/register"; }
expect_eq 401 "$(register)" "an agent call without a client certificate"
expect_contains "$(cat "$E2E_DIR/body")" "client certificate is required" "the refusal says why"
expect_eq 401 "$(register --cert "$pki/rogue.pem" --key "$pki/rogue.key")" "a client certificate from another CA"
expect_eq 401 "$(SERVER_URL=$AGENT_URL register)" "an agent call on agent_listen without a client certificate"
curl -sS -m 5 "http://${AGENT_URL#https://}/livez" >/dev/null 2>&1 && fail "plain HTTP was answered on agent_listen"
# With agent_ca the server reads logs over verified HTTPS only: an http:// agent is refused.
status=$(curl -sS -m 5 --cacert "$pki/ca.pem" --cert "$pki/n1.pem" --key "$pki/n1.key" -o "$E2E_DIR/body" \
  -w '%{http_code}' -X POST -H "Authorization: Bearer $AGENT_TOKEN" -H 'Content-Type: application/json' \
  --data '{"node": {"name": "x", "gpus": 0}, "agent_url": "http://127.0.0.1:9"}' "$SERVER_URL/v1/agent/register")
expect_eq 400 "$status" "an http:// agent when the server verifies agents"
expect_contains "$(cat "$E2E_DIR/body")" "must serve https://" "the refusal says why"
mkdir -p "$E2E_DIR/agent-n0"
cat >"$E2E_DIR/agent-n0.yaml" <<EOF
tls: {server_ca: $pki/ca.pem}
EOF
e2e_spawn "$E2E_DIR/agent-n0.log" "$GPOOL" agent --config "$E2E_DIR/agent-n0.yaml" --server "$SERVER_URL" \
  --token "$AGENT_TOKEN" --name n0 --sim 1xH100-80GB --data "$E2E_DIR/agent-n0" --personal --heartbeat-s 1
n0=$LAST_PID
wait_for 15 "the agent without a certificate to be refused" grep -q "registration refused (HTTP 401)" "$E2E_DIR/agent-n0.log"
kill "$n0"
[ -z "$("$GPOOL" nodes -o json | jq -r '.[] | select(.name == "n0") | .name')" ] || fail "n0 registered without a certificate"

# The agent with its certificate: serves HTTPS and wants the server's certificate for logs.
cat >"$E2E_DIR/agent-n1.yaml" <<EOF
tls: {cert: $pki/n1.pem, key: $pki/n1.key, client_ca: $pki/ca.pem, server_ca: $pki/ca.pem}
EOF
SERVER_URL=$AGENT_URL e2e_agent n1 1xH100-80GB --config "$E2E_DIR/agent-n1.yaml" --job-server "$SERVER_URL"
grep -q "registered with $AGENT_URL" "$E2E_DIR/agent-n1.log" || fail "n1 should talk to the server on agent_listen"
agent_url=$("$GPOOL" nodes -o json | jq -r '.[] | select(.name == "n1") | .agent_url')
expect_contains "$agent_url" "https://127.0.0.1:" "the agent advertises HTTPS"

job=$("$GPOOL" submit -- echo secret-over-tls) || fail "submit over HTTPS"
wait_for 20 "the job to complete" job_is "$job" completed
expect_eq secret-over-tls "$("$GPOOL" logs "$job")" "the log read through the server over HTTPS"
status=$(curl -sS -m 5 --cacert "$pki/ca.pem" -o "$E2E_DIR/body" -w '%{http_code}' \
  -H "Authorization: Bearer $AGENT_TOKEN" "$agent_url/logs/$job")
expect_eq 401 "$status" "a log read from the agent without the server's certificate"
curl -sS -m 5 "http://${agent_url#https://}/healthz" >/dev/null 2>&1 && fail "plain HTTP was answered on the agent's TLS port"
# An interactive session over both TLS hops (the CLI verifies the server; the server the
# agent, showing its certificate).
sjob=$("$GPOOL" submit -- sh -c "$(gate_wait)") || fail "submit the session's job"
wait_for 20 "the session's job to run" job_launched "$sjob"
expect_eq over-tls "$(timeout 20 "$GPOOL" exec "$sjob" -- echo over-tls)" "exec over HTTPS to server and agent"
open_gate

# The server's certificate names 127.0.0.1 only: called as localhost, it names another host,
# and the CLI and an agent refuse it although the CA signed it.
misnamed=https://localhost:${SERVER_URL##*:}
out=$("$GPOOL" nodes --server "$misnamed" 2>&1)
expect_eq 3 "$?" "gpool against a certificate for another name exits 3"
expect_contains "$out" "cannot verify the server" "gpool against a certificate for another name"
mkdir -p "$E2E_DIR/agent-n2"
cat >"$E2E_DIR/agent-n2.yaml" <<EOF
tls: {cert: $pki/n1.pem, key: $pki/n1.key, server_ca: $pki/ca.pem}
EOF
e2e_spawn "$E2E_DIR/agent-n2.log" "$GPOOL" agent --config "$E2E_DIR/agent-n2.yaml" --server "$misnamed" \
  --token "$AGENT_TOKEN" --name n2 --sim 1xH100-80GB --data "$E2E_DIR/agent-n2" --personal --heartbeat-s 1
wait_for 15 "the agent to refuse the misnamed server" grep -q "cannot reach the server" "$E2E_DIR/agent-n2.log"
grep -q "registered with" "$E2E_DIR/agent-n2.log" && fail "an agent registered with a misnamed server"
# An agent told to verify the server will not call it over plain HTTP.
out=$(timeout 20 "$GPOOL" agent --config "$E2E_DIR/agent-n2.yaml" --server "http://${SERVER_URL#https://}" \
  --token "$AGENT_TOKEN" --name n3 --sim 1xH100-80GB --data "$E2E_DIR/agent-n3" --personal 2>&1) &&
  fail "an agent with tls.server_ca started against an http:// server"
expect_contains "$out" "must be an https:// URL" "the agent says why it does not start"
echo "ok: HTTPS between CLI, server and agent (sessions too); plain, unverified and misnamed peers refused"
