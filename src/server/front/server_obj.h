/* SPDX-License-Identifier: Apache-2.0 */
/* The server object (struct gp_server) as its files share it: server.c makes, starts and
 * stops it, server_loop.c is its state thread, server_http.c its HTTP threads. Private to
 * those three files. */
#ifndef GP_SERVER_SERVER_OBJ_H
#define GP_SERVER_SERVER_OBJ_H

#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "server/elastic/autoscale.h"
#include "server/streams/events.h"
#include "server/leadership/leader.h"
#include "server/front/logproxy.h"
#include "server/state/notify.h"
#include "server/front/readers.h"
#include "server/server.h"
#include "server/state/server_int.h"
#include "tls/conns.h"
#include "tls/dial.h"
#include "tls/listen.h"

struct gp_server {
  const gp_server_config *cfg;
  gp_store *store;
  gp_srv_state *state;
  struct MHD_Daemon *mhd;
  gp_tls_listener *tls;     /* HTTPS files of the API (plain HTTP without tls.cert) */
  gp_tls_dial agent_dial;   /* how log reads verify agents (tls.agent_ca) */
  gp_tls_conns *conns;      /* request deadlines, connection limits (tls/conns.h) */
  struct MHD_Daemon *agent_mhd;  /* `agent_listen`: the agent protocol only; NULL: none */
  gp_tls_conns *agent_conns;     /* its own table (agent_max_connections) */
  int agent_port;
  gp_srv_proxy *proxy;      /* log reads from agents */
  struct gp_srv_sessions *sessions; /* interactive sessions (sessions.h) */
  gp_srv_readers *readers;  /* history lists, reports, advice (readers.h) */
  gp_srv_autoscale *autoscale; /* provider calls (autoscale.h), NULL: a fixed fleet */
  gp_srv_events *events;    /* GET /v1/events streams (events.h) */
  gp_srv_notify *notify;    /* the notification sender (notify.h), or NULL */
  int port;
  pthread_t thread;
  bool thread_running;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  gp_srv_req *inbox;        /* LIFO; reversed when taken */
  bool stopping;
  char *healthz;            /* GET /healthz's body, under `lock`; set by the state thread */
  bool healthy;             /* under `lock`: /healthz answers 200, else 503 */
  _Atomic bool loading;     /* listening while the store loads: everything answers 503 */
  bool reload_failed;       /* memory is not the store's truth: no writes until a reload works */
  gp_err reload_err;
  int64_t next_tick_ms, next_sched_ms, last_sched_ms;
  /* High availability (leader.h, follower.h): NULL leader: a server alone, always leading. */
  gp_srv_leader *leader;
  _Atomic int role;         /* gp_srv_role, read by HTTP threads */
  int64_t role_epoch;       /* the epoch the state thread acts under; 0: following */
  int64_t next_follow_ms;   /* a follower's next reload */
  char self_url[300];       /* this server's URL: ha.advertise, else the listen address */
};

/* Hands an answered (or failed) request back to its HTTP thread. */
static inline void gp__srv_conn_resume(gp_srv_req *r) { MHD_resume_connection(r->conn); }

/* server_loop.c: the state thread's body (arg: the gp_server), and the leader's callback
 * that wakes it when the lease changes hands (ctx: the gp_server). */
void *gp__srv_loop_main(void *arg);
void gp__srv_loop_ha_wake(void *ctx);

/* server_http.c: libmicrohttpd's callbacks (cls: the gp_server). on_target sees the raw
 * request target first, on_request reads and hands over each request, on_completed frees
 * it once its connection is done with it. */
void *gp__srv_http_on_target(void *cls, const char *uri, struct MHD_Connection *c);
enum MHD_Result gp__srv_http_on_request(void *cls, struct MHD_Connection *c, const char *url,
                                        const char *method, const char *version,
                                        const char *upload_data, size_t *upload_size,
                                        void **con_cls);
/* The same for the agents' listener (agent_listen): the agent protocol only. */
enum MHD_Result gp__srv_http_on_agent_request(void *cls, struct MHD_Connection *c, const char *url,
                                              const char *method, const char *version,
                                              const char *upload_data, size_t *upload_size,
                                              void **con_cls);
void gp__srv_http_on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                               enum MHD_RequestTerminationCode toe);

#endif
