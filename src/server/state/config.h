/* SPDX-License-Identifier: Apache-2.0 */
/* The server's configuration: one YAML file (listen address, data dir, tokens, queues,
 * priority classes, policy, pools, default queues, timeouts). Every error names the file,
 * the line and the key. The policy sections are read with the same readers as `gpool plan`
 * (src/snapshot/policy_read.h), so a key means the same thing everywhere.
 * Everything lives in the config's arena (gp_server_config_free). docs/config.md is the
 * reference of every key. */
#ifndef GP_SERVER_CONFIG_H
#define GP_SERVER_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/idle.h"
#include "core/model.h"
#include "ledger/decay.h"
#include "server/state/autoscale_config.h"
#include "server/state/budget.h"
#include "server/state/leader_config.h"
#include "server/state/notify.h"
#include "server/state/user_limits.h"
#include "tls/tls.h"
#include "util/error.h"

typedef enum gp_role { GP_ROLE_NONE = 0, GP_ROLE_USER, GP_ROLE_ADMIN, GP_ROLE_AGENT, GP_ROLE_VIEWER } gp_role;

const char *gp_role_name(gp_role r);

/* May the role read every user's jobs, reports and figures? An admin, and a viewer (a
 * read-only token for wall screens: it reads what an admin reads, except jobs' commands,
 * environments and logs, and changes nothing). */
static inline bool gp_role_reads_all(gp_role r) { return r == GP_ROLE_ADMIN || r == GP_ROLE_VIEWER; }

typedef struct gp_token {
  const char *token;
  const char *user;
  gp_role role;
  const char *node; /* role agent: the one node this token acts as; NULL: any (bootstrap) */
} gp_token;

/* A queue of the config plus who may submit to it ("*" admits everyone) and which
 * priority classes its users may ask for (n_priority_classes < 0: the default, see
 * gp__srv_queue_allows_class). */
typedef struct gp_server_queue {
  gp_queue q;
  int n_users;
  const char *const *users;
  int n_priority_classes;
  const char *const *priority_classes;
  gp_budget budget;            /* `budget:` (budget.h); .set false: none */
  gp_idle_policy idle_policy;  /* `idle_policy:` (core/idle.h); .set false: none */
  gp_srv_ulimits user_limits;  /* `user_limits:` (user_limits.h); n 0: none (malloc'd) */
} gp_server_queue;

/* `default_queue`: one queue for everyone, or a map user -> queue ("*" for the rest). */
typedef struct gp_default_queue {
  const char *user; /* "*" for everyone else */
  const char *queue;
} gp_default_queue;

#define GP_SERVER_MAX_TOKENS 10000

typedef struct gp_server_config {
  const char *file;            /* where it came from, or "" */
  const char *listen_host;     /* "127.0.0.1" */
  int listen_port;             /* 0: any free port */
  /* `agent_listen`: the agent protocol's own listener (NULL: agents use `listen`), so no
   * number of user connections can lock agents out (docs/config.md). */
  const char *agent_listen_host;
  int agent_listen_port;       /* 0: any free port */
  int agent_max_connections;   /* concurrent connections on agent_listen (100000) */
  const char *data_dir;        /* holds gpool.db and server.url */
  int n_tokens;
  const gp_token *tokens;
  int n_queues;
  const gp_server_queue *queues;
  gp_policy policy;            /* its priority classes live in the arena too */
  int n_pools;
  const gp_pool *pools;
  int n_default_queues;
  const gp_default_queue *default_queues;
  int node_timeout_s;          /* no heartbeat for this long: node down (default 30) */
  int heartbeat_s;             /* told to agents (default 5) */
  int schedule_interval_ms;    /* timer between scheduling steps without events (1000) */
  int schedule_min_gap_ms;     /* at most one event-driven step per this gap (5) */
  int http_threads;            /* libmicrohttpd thread pool size (4) */
  int max_connections;         /* concurrent HTTP connections (10000) */
  gp_tls_files tls;            /* `tls:` HTTPS files; empty: plain HTTP. peer_ca is agent_ca */
  bool tokens_inline;          /* `tokens:` in the config file itself (not token_file) */
  /* Submission limits (docs/config.md, "Limits"): jobs not yet started (pending or held)
   * per user and per queue, and the bytes of a job's command and environment. */
  int max_pending_per_user;    /* 10000 */
  int max_pending_per_queue;   /* 50000 */
  int max_job_bytes;           /* 65536; at most GP_PROTO_MAX_ARGS_BYTES */
  int max_connections_per_address; /* concurrent HTTP connections from one address (128) */
  int http_idle_timeout_s;     /* a connection silent this long is closed (15) */
  int http_request_timeout_s;  /* a request must arrive whole within this (10) */
  /* Interactive sessions (docs/interactive.md): open at once per user and in all, and the
   * silence (no byte either way) after which one is closed. */
  int sessions_per_user;       /* 8 */
  int sessions_max;            /* 256 */
  int session_idle_timeout_s;  /* 3600 */
  int link_ttl_s;              /* 28800: a console link's life (webproxy.h) */
  int recent_ended_jobs;       /* ended jobs kept in memory, newest first (10000) */
  struct gp_prices *prices;    /* `prices:` (src/ledger/prices.h; one reference), NULL: none */
  gp_fairshare_config fairshare; /* `fairshare:` (src/ledger/decay.h): half-life, reset, weights */
  int n_node_templates;        /* `node_templates:` (node_templates.h) */
  const struct gp_node_template *node_templates;
  gp_autoscale_config autoscale; /* `autoscale:` (autoscale_config.h) */
  /* GET /v1/events (events.h): streams open at once, of them one user's, each stream's
   * buffer, the interval of its keep-alive comments. */
  int events_max_streams;      /* 1000 */
  int events_max_streams_per_user; /* 32 */
  int events_buffer_kib;       /* 256 */
  int events_ping_s;           /* 15 */
  gp_server_ha ha;             /* `ha:` (leader_config.h); .on false: one server */
  gp_notify_config notify;     /* `notify:` (notify.h): mail, webhooks, their limits */
  struct gp_arena *arena;
  const char *store;           /* `store:` a postgresql:// URL; NULL: <data_dir>/gpool.db */
} gp_server_config;

/* A config with every default and no tokens, queues or pools (for tests and `gpool up`
 * before it reads a file). */
gp_server_config *gp_server_config_new(void);

/* Reads `path` into a new config. Returns 0, or GP_EINVAL/GP_EPARSE/GP_EIO with
 * "file:line: key: problem" in *err. */
int gp_server_config_load(const char *path, gp_server_config **ret, gp_err *err);

/* The same from text (`name` is used in messages). */
int gp_server_config_parse(const char *name, const char *text, size_t len,
                           gp_server_config **ret, gp_err *err);

/* Parses "host:port" (host may be empty: 127.0.0.1). Returns 0 or GP_EINVAL. */
int gp_server_parse_listen(const char *s, char *host, size_t host_size, int *ret_port);

void gp_server_config_free(gp_server_config *c); /* accepts NULL */

#endif
