/* SPDX-License-Identifier: Apache-2.0 */
/* Who may speak for a node (docs/agent.md, "Node credentials"). An agent token bound to a
 * node (`node:` in the config) acts as that node only. An unbound agent token is a bootstrap
 * credential: with it, an agent presents its node's own credential (a random secret it made
 * and keeps in its data directory) on every call; the first registration of a name records
 * the credential's SHA-256, and from then on only that credential speaks for the name, until
 * an admin forgets it. So one shared agent token cannot be used to report as another node. */
#include <stdio.h>
#include <string.h>

#include "protocol/limits.h"
#include "server/state/server_int.h"
#include "server/workloads/node_credential.h"
#include "tls/digest.h"
#include "util/secret.h"

static const gp_token *token_of(const gp_srv_state *s, const gp_srv_req *r) {
  for (int i = 0; i < s->cfg->n_tokens; i++)
    if (s->cfg->tokens[i].token == r->token) return &s->cfg->tokens[i];
  return NULL;
}

static bool credential_valid(const char *c) {
  size_t len = strlen(c);
  if (len < GP_PROTO_CREDENTIAL_MIN || len > GP_PROTO_CREDENTIAL_MAX) return false;
  return strspn(c, "0123456789abcdef") == len;
}

bool gp__srv_node_auth(gp_srv_state *s, gp_srv_req *r, const char *name, const gp_srv_node *n,
                       bool registering) {
  const gp_token *t = token_of(s, r);
  if (t && t->node) {
    if (strcmp(t->node, name) == 0) return true;
    gp__srv_reply_error(r, 403, "permission_denied", "node",
                        "this agent token acts as node %s only, not %s", t->node, name);
    return false;
  }
  /* A node with a token of its own is that token's: a shared token cannot claim it. */
  for (int i = 0; i < s->cfg->n_tokens; i++)
    if (s->cfg->tokens[i].node && strcmp(s->cfg->tokens[i].node, name) == 0) {
      gp__srv_reply_error(r, 403, "permission_denied", "node",
                          "node %s has an agent token of its own; use that token", name);
      return false;
    }
  const char *cred = json_string_value(json_object_get(r->json, "credential"));
  if (!cred || !credential_valid(cred)) {
    gp__srv_reply_error(r, 403, "permission_denied", "credential",
                        "an agent token that names no node needs the node's credential: %d to %d "
                        "lowercase hex digits",
                        GP_PROTO_CREDENTIAL_MIN, GP_PROTO_CREDENTIAL_MAX);
    return false;
  }
  if (!n) return true; /* registering claims the name; a heartbeat is told to register */
  if (!n->credential_hash[0]) {
    if (registering) return true; /* the name is free (forgotten): registering claims it */
    gp__srv_reply_error(r, 409, "conflict", "node", "node %s has no credential; register again", name);
    return false;
  }
  char hash[GP_TLS_SHA256_HEX_MAX];
  if (gp_tls_sha256_hex(cred, strlen(cred), hash) == 0 && gp_secret_equal(hash, n->credential_hash))
    return true;
  gp__srv_reply_error(r, 403, "permission_denied", "credential",
                      "node %s belongs to another agent (its credential differs); an admin frees "
                      "the name with `gpool nodes forget %s`",
                      name, name);
  return false;
}

int gp__srv_node_claim(gp_srv_state *s, gp_srv_req *r, gp_srv_node *n, gp_err *err) {
  const char *cred = json_string_value(json_object_get(r->json, "credential"));
  if (n->credential_hash[0] || !cred || !credential_valid(cred)) return 0;
  const gp_token *t = token_of(s, r);
  if (t && t->node) return 0; /* the binding is the credential */
  if (gp_tls_sha256_hex(cred, strlen(cred), n->credential_hash))
    return gp_err_set(err, GP_EIO, NULL, 0, "credential", "cannot hash the node's credential");
  return gp_store_put_credential(s->store, n->name, n->credential_hash, err);
}

int gp__srv_node_forget(gp_srv_state *s, gp_srv_node *n, gp_err *err) {
  n->credential_hash[0] = '\0';
  return gp_store_put_credential(s->store, n->name, NULL, err);
}
