/* SPDX-License-Identifier: Apache-2.0 */
/* Reads the server's YAML config (see config.h and docs/config.md). Policy, priority
 * classes, queues and pools go through the shared readers of src/snapshot; this file adds
 * the server's own keys and their checks. */
#include "server/state/config.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ledger/prices.h"
#include "protocol/limits.h"
#include "server/state/node_templates.h"
#include "snapshot/policy_read.h"
#include "util/doc.h"
#include "util/fileperm.h"
#include "util/mem.h"
#include "util/units.h"

const char *gp_role_name(gp_role r) {
  switch (r) {
  case GP_ROLE_USER: return "user";
  case GP_ROLE_ADMIN: return "admin";
  case GP_ROLE_AGENT: return "agent";
  case GP_ROLE_VIEWER: return "viewer";
  default: return "none";
  }
}

gp_server_config *gp_server_config_new(void) {
  gp_server_config *c = gp_xcalloc(1, sizeof *c);
  c->arena = gp_arena_new();
  c->file = "";
  c->listen_host = "127.0.0.1";
  c->listen_port = 8642;
  c->data_dir = ".";
  gp_policy_init(&c->policy);
  gp_fairshare_config_init(&c->fairshare);
  c->node_timeout_s = 30;
  c->heartbeat_s = 5;
  c->schedule_interval_ms = 1000;
  c->schedule_min_gap_ms = 5;
  c->http_threads = 4;
  c->max_connections = 10000;
  c->agent_max_connections = 100000;
  c->max_pending_per_user = 10000;
  c->max_pending_per_queue = 50000;
  c->max_job_bytes = 64 * 1024;
  c->recent_ended_jobs = 10000;
  gp_autoscale_config_init(&c->autoscale);
  gp_notify_config_init(&c->notify);
  gp_server_ha_init(&c->ha);
  c->max_connections_per_address = 128;
  c->http_idle_timeout_s = 15;
  c->sessions_per_user = 8;
  c->sessions_max = 256;
  c->session_idle_timeout_s = 3600;
  c->link_ttl_s = 8 * 3600;
  c->events_max_streams = 1000;
  c->events_max_streams_per_user = 32;
  c->events_buffer_kib = 256;
  c->events_ping_s = 15;
  c->http_request_timeout_s = 10;
  return c;
}

void gp_server_config_free(gp_server_config *c) {
  if (!c) return;
  gp_prices_free(c->prices);
  for (int i = 0; i < c->n_queues; i++) gp__srv_ulimits_free((gp_srv_ulimits *)&c->queues[i].user_limits);
  gp_arena_free(c->arena);
  free(c);
}

int gp_server_parse_listen(const char *s, char *host, size_t host_size, int *ret_port) {
  const char *colon = s ? strrchr(s, ':') : NULL;
  if (!colon) return GP_EINVAL;
  size_t hl = (size_t)(colon - s);
  if (hl >= host_size) return GP_EINVAL;
  int64_t port;
  if (gp_parse_int64(colon + 1, &port) || port < 0 || port > 65535) return GP_EINVAL;
  if (hl == 0) snprintf(host, host_size, "127.0.0.1");
  else {
    memcpy(host, s, hl);
    host[hl] = '\0';
  }
  *ret_port = (int)port;
  return 0;
}

/* `node: NAME` binds an agent token to one node: it may register and heartbeat only as
 * that node (docs/agent.md). Other roles act on no node. */
static int read_token_node(const gp_doc *d, const gp_doc_node *m, const char *path, int i,
                           gp_arena *a, gp_token *t, gp_err *err) {
  const gp_doc_node *nn = gp_doc_get(m, "node");
  if (!nn) return 0;
  char f[160];
  snprintf(f, sizeof f, "%s[%d].node", path, i);
  const char *v;
  int r = gp_doc_str(d, nn, f, &v, err);
  if (r) return r;
  if (t->role != GP_ROLE_AGENT)
    return gp_err_set(err, GP_EINVAL, d->name, nn->line, f, "only a token with role agent names a node");
  if (!*v || strlen(v) >= GP_PROTO_NODE_MAX)
    return gp_err_set(err, GP_EINVAL, d->name, nn->line, f, "must be a node name (1-%d bytes)",
                      GP_PROTO_NODE_MAX - 1);
  t->node = gp_arena_strdup(a, v);
  return 0;
}

/* Reads a `tokens:` list into *tokens (appending). */
static int read_tokens(const gp_doc *d, const gp_doc_node *seq, const char *path, gp_arena *a,
                       gp_token **tokens, int *n, size_t *cap, gp_err *err) {
  int r = gp_doc_expect(d, seq, path, GP_DOC_SEQ, err);
  if (r) return r;
  static const char *const keys[] = {"token", "user", "role", "node", NULL};
  for (int i = 0; i < seq->n; i++) {
    const gp_doc_node *m = seq->items[i];
    char f[160];
    snprintf(f, sizeof f, "%s[%d]", path, i);
    if ((r = gp_doc_expect(d, m, f, GP_DOC_MAP, err)) || (r = gp_doc_check_keys(d, m, f, keys, err)))
      return r;
    if (*n >= GP_SERVER_MAX_TOKENS)
      return gp_err_set(err, GP_ELIMIT, d->name, m->line, f, "more than %d tokens",
                        GP_SERVER_MAX_TOKENS);
    gp_token t = {0};
    const char *v;
    snprintf(f, sizeof f, "%s[%d].token", path, i);
    const gp_doc_node *tn = gp_doc_get(m, "token");
    if (!tn) return gp_err_set(err, GP_EINVAL, d->name, m->line, f, "missing");
    if ((r = gp_doc_str(d, tn, f, &v, err))) return r;
    if (strlen(v) < 8 || strlen(v) > 512)
      return gp_err_set(err, GP_EINVAL, d->name, tn->line, f, "must have 8 to 512 characters");
    for (const char *c = v; *c; c++)
      if (*c <= ' ' || *c == 0x7f)
        return gp_err_set(err, GP_EINVAL, d->name, tn->line, f,
                          "must not contain spaces or control characters");
    for (int k = 0; k < *n; k++)
      if (strcmp((*tokens)[k].token, v) == 0)
        return gp_err_set(err, GP_EINVAL, d->name, tn->line, f, "the same token is listed twice");
    t.token = gp_arena_strdup(a, v);
    snprintf(f, sizeof f, "%s[%d].user", path, i);
    const gp_doc_node *un = gp_doc_get(m, "user");
    if (!un) return gp_err_set(err, GP_EINVAL, d->name, m->line, f, "missing");
    if ((r = gp_doc_str(d, un, f, &v, err))) return r;
    if (!*v || strlen(v) > 64 || strchr(v, '*'))
      return gp_err_set(err, GP_EINVAL, d->name, un->line, f, "must be a user name (1-64 characters)");
    t.user = gp_arena_strdup(a, v);
    snprintf(f, sizeof f, "%s[%d].role", path, i);
    const gp_doc_node *rn = gp_doc_get(m, "role");
    t.role = GP_ROLE_USER;
    if (rn) {
      if ((r = gp_doc_str(d, rn, f, &v, err))) return r;
      if (strcmp(v, "admin") == 0) t.role = GP_ROLE_ADMIN;
      else if (strcmp(v, "user") == 0) t.role = GP_ROLE_USER;
      else if (strcmp(v, "agent") == 0) t.role = GP_ROLE_AGENT;
      else if (strcmp(v, "viewer") == 0) t.role = GP_ROLE_VIEWER;
      else
        return gp_err_set(err, GP_EINVAL, d->name, rn->line, f,
                          "must be admin, user, viewer or agent, not \"%s\"", v);
    }
    if ((r = read_token_node(d, m, path, i, a, &t, err))) return r;
    gp_xgrow((void **)tokens, cap, (size_t)*n + 1, sizeof **tokens);
    (*tokens)[(*n)++] = t;
  }
  return 0;
}

static int read_token_file(const gp_doc *d, const gp_doc_node *n, const char *config_path,
                           gp_arena *a, gp_token **tokens, int *nt, size_t *cap, gp_err *err) {
  const char *v;
  int r = gp_doc_str(d, n, "token_file", &v, err);
  if (r) return r;
  char path[1024];
  const char *slash = config_path ? strrchr(config_path, '/') : NULL;
  if (v[0] != '/' && slash)
    snprintf(path, sizeof path, "%.*s/%s", (int)(slash - config_path), config_path, v);
  else
    snprintf(path, sizeof path, "%s", v);
  if ((r = gp_fileperm_check(path, GP_FILEPERM_SECRET, "token_file", err))) return r;
  gp_doc *td = NULL;
  gp_err e2 = {0};
  if ((r = gp_doc_load_file(path, &td, &e2))) {
    if (err) *err = e2;
    if (!e2.file[0])
      gp_err_set(err, r, d->name, n->line, "token_file", "cannot read %s: %s", path, e2.message);
    return r;
  }
  const gp_doc_node *list = td->root ? gp_doc_get(td->root, "tokens") : NULL;
  if (!list) {
    r = gp_err_set(err, GP_EINVAL, path, td->root ? td->root->line : 1, "tokens",
                   "the token file must hold a `tokens:` list");
  } else {
    static const char *const keys[] = {"tokens", NULL};
    r = gp_doc_check_keys(td, td->root, "", keys, err);
    if (!r) r = read_tokens(td, list, "tokens", a, tokens, nt, cap, err);
  }
  gp_doc_free(td);
  return r;
}

static int read_default_queue(const gp_doc *d, const gp_doc_node *n, gp_server_config *c,
                              gp_err *err) {
  gp_default_queue *dq;
  if (n->kind == GP_DOC_SCALAR) {
    const char *v;
    int r = gp_doc_str(d, n, "default_queue", &v, err);
    if (r) return r;
    dq = gp_arena_alloc(c->arena, sizeof *dq);
    dq->user = "*";
    dq->queue = gp_arena_strdup(c->arena, v);
    c->default_queues = dq;
    c->n_default_queues = 1;
    return 0;
  }
  int r = gp_doc_expect(d, n, "default_queue", GP_DOC_MAP, err);
  if (r) return r;
  dq = gp_arena_alloc(c->arena, sizeof *dq * (size_t)(n->n ? n->n : 1));
  for (int i = 0; i < n->n; i++) {
    char f[200];
    snprintf(f, sizeof f, "default_queue.%s", n->keys[i]);
    const char *v;
    if ((r = gp_doc_str(d, n->items[i], f, &v, err))) return r;
    dq[i].user = gp_arena_strdup(c->arena, n->keys[i]);
    dq[i].queue = gp_arena_strdup(c->arena, v);
  }
  c->default_queues = dq;
  c->n_default_queues = n->n;
  return 0;
}

static bool queue_known(const gp_server_config *c, const char *name) {
  for (int i = 0; i < c->n_queues; i++)
    if (strcmp(c->queues[i].q.name, name) == 0) return true;
  return false;
}

/* The submission limits. A job's bytes stay within what the agent protocol carries, so
 * nothing the API accepts is refused by an agent after the 201. */
static int read_limits(const gp_doc *d, const gp_doc_node *root, gp_server_config *c, gp_err *err) {
  const gp_doc_node *n;
  int r = 0;
  if ((n = gp_doc_get(root, "max_pending_per_user")) &&
      (r = gp_doc_int_range(d, n, "max_pending_per_user", 1, 10000000, &c->max_pending_per_user, err)))
    return r;
  if ((n = gp_doc_get(root, "max_pending_per_queue")) &&
      (r = gp_doc_int_range(d, n, "max_pending_per_queue", 1, 10000000, &c->max_pending_per_queue, err)))
    return r;
  if ((n = gp_doc_get(root, "max_job_bytes")) &&
      (r = gp_doc_int_range(d, n, "max_job_bytes", 1024, GP_PROTO_MAX_ARGS_BYTES, &c->max_job_bytes, err)))
    return r;
  if ((n = gp_doc_get(root, "recent_ended_jobs")) &&
      (r = gp_doc_int_range(d, n, "recent_ended_jobs", 1, 10000000, &c->recent_ended_jobs, err)))
    return r;
  if ((n = gp_doc_get(root, "events_max_streams")) &&
      (r = gp_doc_int_range(d, n, "events_max_streams", 0, 100000, &c->events_max_streams, err)))
    return r;
  if ((n = gp_doc_get(root, "events_max_streams_per_user")) &&
      (r = gp_doc_int_range(d, n, "events_max_streams_per_user", 1, 100000,
                          &c->events_max_streams_per_user, err)))
    return r;
  if ((n = gp_doc_get(root, "events_buffer_kib")) &&
      (r = gp_doc_int_range(d, n, "events_buffer_kib", 16, 65536, &c->events_buffer_kib, err)))
    return r;
  if ((n = gp_doc_get(root, "events_ping_s")) &&
      (r = gp_doc_int_range(d, n, "events_ping_s", 1, 3600, &c->events_ping_s, err)))
    return r;
  return 0;
}

/* A queue's `priority_classes`: names of classes the policy knows. */
static int read_queue_classes(const gp_doc *d, const gp_doc_node *qn, int i, gp_server_config *c,
                              gp_server_queue *sq, gp_err *err) {
  const gp_doc_node *pn = gp_doc_get(qn, "priority_classes");
  sq->n_priority_classes = -1;
  if (!pn) return 0;
  char f[160];
  snprintf(f, sizeof f, "queues[%d].priority_classes", i);
  int r = gp_doc_expect(d, pn, f, GP_DOC_SEQ, err);
  if (r) return r;
  const char **names = gp_arena_alloc(c->arena, sizeof *names * (size_t)(pn->n ? pn->n : 1));
  for (int k = 0; k < pn->n; k++) {
    const char *v;
    snprintf(f, sizeof f, "queues[%d].priority_classes[%d]", i, k);
    if ((r = gp_doc_str(d, pn->items[k], f, &v, err))) return r;
    if (!gp_priority_class_find(&c->policy, v))
      return gp_err_set(err, GP_EINVAL, d->name, pn->items[k]->line, f,
                        "no priority class is called \"%.64s\"", v);
    names[k] = gp_arena_strdup(c->arena, v);
  }
  sq->priority_classes = names;
  sq->n_priority_classes = pn->n;
  return 0;
}

/* The price catalogue, and the budgets that need it: one in money without prices could
 * never be measured. */
static int read_prices(const gp_doc *d, const gp_doc_node *root, const gp_doc_node *qseq,
                       gp_server_config *c, gp_err *err) {
  const gp_doc_node *n = gp_doc_get(root, "prices");
  int r;
  if (n && !gp_doc_is_null(n) && (r = gp_prices_read(d, n, "prices", &c->prices, err))) return r;
  for (int i = 0; i < c->n_queues && !c->prices; i++)
    if (c->queues[i].budget.set && c->queues[i].budget.money) {
      const gp_doc_node *bn = gp_doc_get(qseq->items[i], "budget");
      char f[160];
      snprintf(f, sizeof f, "queues[%d].budget.amount", i);
      return gp_err_set(err, GP_EINVAL, d->name, gp_doc_get(bn, "amount")->line, f,
                        "a budget in money needs a `prices:` catalogue");
    }
  return 0;
}

static int parse_doc(const gp_doc *d, const char *path, gp_server_config *c, gp_err *err) {
  static const char *const keys[] = {
      "listen", "agent_listen", "agent_max_connections", "data_dir", "tokens", "token_file", "queues", "priority_classes", "policy",
      "pools", "default_queue", "node_timeout_s", "heartbeat_s", "schedule_interval_ms",
      "schedule_min_gap_ms", "http_threads", "max_connections", "tls",
      "max_pending_per_user", "max_pending_per_queue", "max_job_bytes",
      "max_connections_per_address", "http_idle_timeout_s", "http_request_timeout_s",
      "recent_ended_jobs", "prices", "node_templates", "autoscale",
      "events_max_streams_per_user",
      "events_max_streams", "events_buffer_kib", "events_ping_s", "ha", "store", "notify",
      "fairshare", "sessions_per_user", "sessions_max", "session_idle_timeout_s", "link_ttl_s", NULL};
  const gp_doc_node *root = d->root;
  if (!root) return 0;
  int r = gp_doc_expect(d, root, "", GP_DOC_MAP, err);
  if (r || (r = gp_doc_check_keys(d, root, "", keys, err))) return r;
  gp_arena *a = c->arena;
  const gp_doc_node *n;
  const char *v;
  if ((n = gp_doc_get(root, "listen"))) {
    if ((r = gp_doc_str(d, n, "listen", &v, err))) return r;
    char host[256];
    if (gp_server_parse_listen(v, host, sizeof host, &c->listen_port))
      return gp_err_set(err, GP_EINVAL, d->name, n->line, "listen",
                        "expected HOST:PORT such as 127.0.0.1:8642, not \"%s\"", v);
    c->listen_host = gp_arena_strdup(a, host);
  }
  if ((n = gp_doc_get(root, "agent_listen"))) {
    if ((r = gp_doc_str(d, n, "agent_listen", &v, err))) return r;
    char host[256];
    if (gp_server_parse_listen(v, host, sizeof host, &c->agent_listen_port))
      return gp_err_set(err, GP_EINVAL, d->name, n->line, "agent_listen",
                        "expected HOST:PORT such as 0.0.0.0:8643, not \"%s\"", v);
    c->agent_listen_host = gp_arena_strdup(a, host);
  }
  if ((n = gp_doc_get(root, "agent_max_connections")) &&
      (r = gp_doc_int_range(d, n, "agent_max_connections", 16, 1000000, &c->agent_max_connections, err)))
    return r;
  if ((n = gp_doc_get(root, "data_dir"))) {
    if ((r = gp_doc_str(d, n, "data_dir", &v, err))) return r;
    if (!*v) return gp_err_set(err, GP_EINVAL, d->name, n->line, "data_dir", "must not be empty");
    c->data_dir = gp_arena_strdup(a, v);
  }
  /* The URL may carry a password: errors name the key, never the value. */
  if ((n = gp_doc_get(root, "store"))) {
    if ((r = gp_doc_str(d, n, "store", &v, err))) return r;
    bool pg = strncmp(v, "postgresql://", 13) == 0 || strncmp(v, "postgres://", 11) == 0;
    size_t len = strlen(v);
    for (size_t i = 0; pg && i < len; i++) pg = (unsigned char)v[i] > 0x20 && v[i] != 0x7f;
    if (!pg || len > 511)
      return gp_err_set(err, GP_EINVAL, d->name, n->line, "store",
                        "expected a postgresql:// URL of at most 511 characters without spaces "
                        "(leave `store` out for the SQLite file in data_dir)");
    c->store = gp_arena_strdup(a, v);
  }
  gp_token *tokens = NULL;
  int nt = 0;
  size_t cap = 0;
  if ((n = gp_doc_get(root, "tokens")) && (r = read_tokens(d, n, "tokens", a, &tokens, &nt, &cap, err)))
    goto fail_tokens;
  c->tokens_inline = n && n->kind == GP_DOC_SEQ && n->n > 0;
  if ((n = gp_doc_get(root, "token_file")) &&
      (r = read_token_file(d, n, path, a, &tokens, &nt, &cap, err)))
    goto fail_tokens;
  if (nt) {
    gp_token *t = gp_arena_alloc(a, sizeof *t * (size_t)nt);
    memcpy(t, tokens, sizeof *t * (size_t)nt);
    c->tokens = t;
    c->n_tokens = nt;
  }
  free(tokens);

  if ((n = gp_doc_get(root, "policy"))) {
    static const char *const none[] = {NULL};
    if ((r = gp_policy_read(d, n, "policy", none, a, &c->policy, err))) return r;
  }
  if ((n = gp_doc_get(root, "priority_classes"))) {
    gp_priority_class *pc;
    int npc;
    if ((r = gp_priority_classes_read(d, n, "priority_classes", a, &pc, &npc, err))) return r;
    c->policy.priority_classes = pc;
    c->policy.n_priority_classes = npc;
  }
  const gp_doc_node *qseq = gp_doc_get(root, "queues");
  gp_queue *qs = NULL;
  int nq = 0;
  if (qseq) {
    static const char *const extra[] = {"users", "priority_classes", "budget", "idle_policy",
                                        "user_limits", NULL};
    if ((r = gp_queues_read(d, qseq, "queues", extra, a, &qs, &nq, err))) return r;
    gp_server_queue *sq = gp_arena_alloc(a, sizeof *sq * (size_t)(nq ? nq : 1));
    c->queues = sq; /* (now, so that a failure below frees what the queues hold) */
    for (int i = 0; i < nq; i++) {
      sq[i].q = qs[i];
      c->n_queues = i + 1;
      char lf[160];
      snprintf(lf, sizeof lf, "queues[%d].user_limits", i);
      if ((r = gp__srv_ulimits_read(d, gp_doc_get(qseq->items[i], "user_limits"), lf, &sq[i].user_limits, err)))
        return r;
      if ((r = read_queue_classes(d, qseq->items[i], i, c, &sq[i], err))) return r;
      char bf[160];
      snprintf(bf, sizeof bf, "queues[%d].budget", i);
      if ((r = gp_budget_read(d, gp_doc_get(qseq->items[i], "budget"), bf, &sq[i].budget, err)))
        return r;
      snprintf(bf, sizeof bf, "queues[%d].idle_policy", i);
      if ((r = gp_idle_policy_read(d, gp_doc_get(qseq->items[i], "idle_policy"), bf,
                                   &sq[i].idle_policy, err)))
        return r;
      const gp_doc_node *un = gp_doc_get(qseq->items[i], "users");
      char f[160];
      snprintf(f, sizeof f, "queues[%d].users", i);
      if (!un) {
        static const char *const everyone[] = {"*"};
        sq[i].users = everyone;
        sq[i].n_users = 1;
        continue;
      }
      if ((r = gp_doc_expect(d, un, f, GP_DOC_SEQ, err))) return r;
      const char **users = gp_arena_alloc(a, sizeof *users * (size_t)(un->n ? un->n : 1));
      for (int k = 0; k < un->n; k++) {
        snprintf(f, sizeof f, "queues[%d].users[%d]", i, k);
        if ((r = gp_doc_str(d, un->items[k], f, &v, err))) return r;
        users[k] = gp_arena_strdup(a, v);
      }
      sq[i].users = users;
      sq[i].n_users = un->n;
    }
    c->queues = sq;
    c->n_queues = nq;
  }
  if ((r = gp_policy_check(&c->policy, qs, nq, d, gp_doc_get(root, "policy"), qseq, err))) return r;
  if ((n = gp_doc_get(root, "pools"))) {
    gp_pool *pools;
    int np;
    if ((r = gp_pools_read(d, n, "pools", NULL, qs, nq, a, &pools, &np, err))) return r;
    c->pools = pools;
    c->n_pools = np;
  }
  if ((n = gp_doc_get(root, "default_queue"))) {
    if ((r = read_default_queue(d, n, c, err))) return r;
    for (int i = 0; i < c->n_default_queues; i++)
      if (!queue_known(c, c->default_queues[i].queue))
        return gp_err_set(err, GP_EINVAL, d->name, n->line, "default_queue",
                          "queue \"%s\" is not defined under queues", c->default_queues[i].queue);
  }
  if ((n = gp_doc_get(root, "node_timeout_s")) &&
      (r = gp_doc_int_range(d, n, "node_timeout_s", 1, 86400, &c->node_timeout_s, err)))
    return r;
  if ((n = gp_doc_get(root, "heartbeat_s")) &&
      (r = gp_doc_int_range(d, n, "heartbeat_s", 1, 3600, &c->heartbeat_s, err)))
    return r;
  if ((n = gp_doc_get(root, "schedule_interval_ms")) &&
      (r = gp_doc_int_range(d, n, "schedule_interval_ms", 10, 600000, &c->schedule_interval_ms, err)))
    return r;
  if ((n = gp_doc_get(root, "schedule_min_gap_ms")) &&
      (r = gp_doc_int_range(d, n, "schedule_min_gap_ms", 0, 60000, &c->schedule_min_gap_ms, err)))
    return r;
  if ((n = gp_doc_get(root, "http_threads")) &&
      (r = gp_doc_int_range(d, n, "http_threads", 1, 256, &c->http_threads, err)))
    return r;
  if ((n = gp_doc_get(root, "max_connections")) &&
      (r = gp_doc_int_range(d, n, "max_connections", 16, 1000000, &c->max_connections, err)))
    return r;
  if ((n = gp_doc_get(root, "tls")) && (r = gp_tls_files_read(d, n, path, "agent_ca", &c->tls, err)))
    return r;
  if ((r = read_limits(d, root, c, err))) return r;
  if ((n = gp_doc_get(root, "max_connections_per_address")) &&
      (r = gp_doc_int_range(d, n, "max_connections_per_address", 1, 1000000,
                          &c->max_connections_per_address, err)))
    return r;
  if ((n = gp_doc_get(root, "http_idle_timeout_s")) &&
      (r = gp_doc_int_range(d, n, "http_idle_timeout_s", 1, 3600, &c->http_idle_timeout_s, err)))
    return r;
  if ((n = gp_doc_get(root, "sessions_per_user")) &&
      (r = gp_doc_int_range(d, n, "sessions_per_user", 1, 1024, &c->sessions_per_user, err)))
    return r;
  if ((n = gp_doc_get(root, "sessions_max")) &&
      (r = gp_doc_int_range(d, n, "sessions_max", 1, 65536, &c->sessions_max, err)))
    return r;
  if ((n = gp_doc_get(root, "link_ttl_s")) &&
      (r = gp_doc_int_range(d, n, "link_ttl_s", 1, 7 * 86400, &c->link_ttl_s, err)))
    return r;
  if ((n = gp_doc_get(root, "session_idle_timeout_s")) &&
      (r = gp_doc_int_range(d, n, "session_idle_timeout_s", 1, 7 * 86400, &c->session_idle_timeout_s, err)))
    return r;
  if ((n = gp_doc_get(root, "http_request_timeout_s")) &&
      (r = gp_doc_int_range(d, n, "http_request_timeout_s", 1, 3600, &c->http_request_timeout_s, err)))
    return r;
  if ((r = read_prices(d, root, qseq, c, err))) return r;
  if ((n = gp_doc_get(root, "fairshare")) &&
      (r = gp_fairshare_read(d, n, "fairshare", a, &c->fairshare, err)))
    return r;
  if ((n = gp_doc_get(root, "node_templates"))) {
    gp_node_template *tmpls;
    if ((r = gp_node_templates_read(d, n, "node_templates", a, &tmpls, &c->n_node_templates, err)))
      return r;
    c->node_templates = tmpls;
  }
  if ((n = gp_doc_get(root, "autoscale")) &&
      (r = gp_autoscale_config_read(d, n, "autoscale", &c->autoscale, err)))
    return r;
  if ((n = gp_doc_get(root, "notify")) &&
      (r = gp_notify_config_read(d, n, "notify", a, &c->notify, err)))
    return r;
  if ((n = gp_doc_get(root, "ha"))) {
    if ((r = gp_server_ha_read(d, n, "ha", a, &c->ha, err))) return r;
    /* The lease lives in the store every server shares; a SQLite file is one server's. */
    if (!c->store)
      return gp_err_set(err, GP_EINVAL, d->name, n->line, "ha",
                        "needs a PostgreSQL store that the servers share (store: postgresql://...)");
    c->ha.url = c->store;
  }
  return 0;
fail_tokens:
  free(tokens);
  return r;
}

static int finish(gp_doc *d, const char *path, gp_server_config **ret, gp_err *err) {
  gp_server_config *c = gp_server_config_new();
  c->file = gp_arena_strdup(c->arena, path);
  int r = parse_doc(d, path, c, err);
  gp_doc_free(d);
  if (r) {
    gp_server_config_free(c);
    return r;
  }
  *ret = c;
  return 0;
}

int gp_server_config_load(const char *path, gp_server_config **ret, gp_err *err) {
  gp_doc *d = NULL;
  int r = gp_fileperm_check(path, GP_FILEPERM_CONFIG, NULL, err);
  if (!r) r = gp_doc_load_file(path, &d, err);
  if (r) return r;
  return finish(d, path, ret, err);
}

int gp_server_config_parse(const char *name, const char *text, size_t len,
                           gp_server_config **ret, gp_err *err) {
  gp_doc *d = NULL;
  int r = gp_doc_load_string(name, text, len, &d, err);
  if (r) return r;
  return finish(d, name, ret, err);
}
