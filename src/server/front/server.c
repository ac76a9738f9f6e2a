/* SPDX-License-Identifier: Apache-2.0 */
/* The server's threads. libmicrohttpd's thread pool reads requests, checks the token and
 * parses the JSON body; then it suspends the connection and hands the request to the
 * state thread through a queue. The state thread takes everything queued at once,
 * handles the batch inside one store transaction, commits (one fsync for the whole batch:
 * group commit), and only then answers, so an acknowledged change is durable. When a
 * commit fails, every request of the batch gets 503, the state is reloaded from the store
 * once, and the server refuses writes until the store takes them again (store_health.h).
 * The server listens before it loads the store and answers 503 "loading the store" until
 * the load is done. Between batches the state thread runs the scheduler (at most once per
 * schedule_min_gap_ms after an event, and every schedule_interval_ms), checks node
 * liveness and time limits, and answers agents' long polls when their orders are durable
 * or their wait is over. Helper threads keep slow peers and long reads off the HTTP
 * threads: the log proxy (logproxy.c) reads jobs' logs from agents, the reader threads
 * (readers.c) the job history, reports and advice; the connection table (tls/conns.h)
 * cuts requests that miss their deadline and makes room past the connection limits
 * (agents' connections have their own allowance); the raw request target is checked by
 * intake.c. What each commit changed goes to the open event streams (events.h) after the
 * commit. This file holds the server's lifetime (made, started, stopped); the state thread is
 * server_loop.c, the HTTP threads server_http.c, the answers' helpers reply.c. */
#include "server/cycle/parts.h"
#include "server/workloads/sessions.h"
#include "server/server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "server/elastic/autoscale.h"
#include "server/streams/events.h"
#include "server/leadership/follower.h"
#include "server/leadership/leader.h"
#include "server/front/logproxy.h"
#include "server/front/readers.h"
#include "server/state/notify_job.h"
#include "server/accounting/advice.h"
#include "server/accounting/ledger.h"
#include "server/accounting/report.h"
#include "server/state/server_int.h"
#include "server/front/server_obj.h"
#include "server/front/web.h"
#include "tls/conns.h"
#include "tls/dial.h"
#include "tls/listen.h"
#include "util/clock.h"
#include "util/fileperm.h"
#include "util/mem.h"
#include "util/units.h"

/* ---- lifetime ---- */

/* Says what lets other local users read secrets; the store's own files are made private
 * whatever the directory's mode (sqlite.c), so these are warnings, not refusals. */
static void warn_open_files(const gp_server_config *cfg) {
  if (gp_fileperm_open_to_others(cfg->data_dir))
    fprintf(stderr, "gpool server: warning: other users may enter the data directory %s; "
                    "chmod 700 %s\n", cfg->data_dir, cfg->data_dir);
  if (cfg->tokens_inline && cfg->file[0] && gp_fileperm_open_to_others(cfg->file))
    fprintf(stderr, "gpool server: warning: %s lists tokens and other users may read it; "
                    "chmod 600 it, or move the tokens to a token_file\n", cfg->file);
}

int gp_server_new(const gp_server_config *cfg, gp_store *store, gp_server **ret, gp_err *err) {
  if (!store) {
    /* The directory holds the database (every job's environment): 0700 when created. */
    if (mkdir(cfg->data_dir, 0700) != 0 && errno != EEXIST)
      return gp_err_set(err, GP_EIO, cfg->data_dir, 0, "data_dir", "cannot create the data directory: %s",
                        strerror(errno));
    warn_open_files(cfg);
    char path[1200];
    snprintf(path, sizeof path, "%s/gpool.db", cfg->data_dir);
    int r = gp_store_open(cfg->store ? cfg->store : path, &store, err);
    if (r) return r;
  }
  gp_server *srv = gp_xcalloc(1, sizeof *srv);
  srv->cfg = cfg;
  srv->store = store;
  srv->state = gp__srv_state_make(cfg, store);
  atomic_init(&srv->loading, true);
  int64_t now_ms = gp_mono_ms();
  pthread_mutex_init(&srv->lock, NULL);
  gp_cond_init_monotonic(&srv->cond);
  srv->next_tick_ms = now_ms;
  srv->next_sched_ms = now_ms;
  *ret = srv;
  return 0;
}

/* Reads HOST:PORT's address (`field` names it in errors). */
static int listen_addr(const gp_server *srv, const char *field, const char *host, int port,
                       struct sockaddr_in *addr, gp_err *err) {
  memset(addr, 0, sizeof *addr);
  addr->sin_family = AF_INET;
  addr->sin_port = htons((uint16_t)port);
  if (strcmp(host, "localhost") == 0) host = "127.0.0.1";
  if (inet_pton(AF_INET, host, &addr->sin_addr) != 1)
    return gp_err_set(err, GP_EINVAL, srv->cfg->file, 0, field, "\"%s\" is not an IPv4 address", host);
  return 0;
}

/* One libmicrohttpd daemon of the server: the API's (on_request gp__srv_http_on_request)
 * or the agents' own (gp__srv_http_on_agent_request), each with its connection table. */
static struct MHD_Daemon *start_daemon(gp_server *srv, const struct sockaddr_in *addr,
                                       MHD_AccessHandlerCallback handler, gp_tls_conns *conns,
                                       int max) {
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_ALLOW_UPGRADE |
                   MHD_USE_TURBO | gp_tls_listener_flags(srv->tls);
  return MHD_start_daemon(
      flags, 0, NULL, NULL, handler, srv,
      MHD_OPTION_SOCK_ADDR, (const struct sockaddr *)addr,
      MHD_OPTION_THREAD_POOL_SIZE, (unsigned)srv->cfg->http_threads,
      MHD_OPTION_CONNECTION_LIMIT, gp_tls_conns_hard_limit(max),
      MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)srv->cfg->http_idle_timeout_s,
      MHD_OPTION_URI_LOG_CALLBACK, gp__srv_http_on_target, srv,
      MHD_OPTION_NOTIFY_CONNECTION, gp_tls_conns_notify, conns,
      MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned)1024,
      MHD_OPTION_LISTENING_ADDRESS_REUSE, (unsigned)1,
      MHD_OPTION_NOTIFY_COMPLETED, gp__srv_http_on_completed, srv,
      MHD_OPTION_ARRAY, gp_tls_listener_options(srv->tls), MHD_OPTION_END);
}

static void stop_daemons(gp_server *srv) {
  if (srv->mhd) MHD_stop_daemon(srv->mhd);
  if (srv->agent_mhd) MHD_stop_daemon(srv->agent_mhd);
  srv->mhd = srv->agent_mhd = NULL;
}

int gp_server_start(gp_server *srv, gp_err *err) {
  const gp_server_config *cfg = srv->cfg;
  struct sockaddr_in addr, agent_addr;
  const char *host = strcmp(cfg->listen_host, "localhost") == 0 ? "127.0.0.1" : cfg->listen_host;
  int rc = listen_addr(srv, "listen", cfg->listen_host, cfg->listen_port, &addr, err);
  if (!rc && cfg->agent_listen_host)
    rc = listen_addr(srv, "agent_listen", cfg->agent_listen_host, cfg->agent_listen_port, &agent_addr, err);
  if (rc) return rc;
  /* Both daemons bind with SO_REUSEPORT: on one port they would share its connections. */
  if (cfg->agent_listen_host && cfg->agent_listen_port != 0 && cfg->agent_listen_port == cfg->listen_port)
    return gp_err_set(err, GP_EINVAL, cfg->file, 0, "agent_listen",
                      "must use another port than listen (%d)", cfg->listen_port);
  rc = gp_tls_listener_new(&srv->cfg->tls, "tls", &srv->tls, err);
  if (rc) return rc;
  srv->agent_dial = (gp_tls_dial){.ca = srv->cfg->tls.peer_ca, .cert = srv->cfg->tls.cert,
                                  .key = srv->cfg->tls.key, .https_only = srv->cfg->tls.peer_ca[0]};
  gp_tls_conns_limits lim = {.max = srv->cfg->max_connections,
                             .per_address = srv->cfg->max_connections_per_address,
                             .request_timeout_s = srv->cfg->http_request_timeout_s};
  srv->conns = gp_tls_conns_new(&lim);
  /* The agents' listener has a table of its own, sized for the fleet: user connections
   * never count against it. A connection not yet authenticated as an agent's still counts
   * against its address's share there; agents' own are exempt (tls/conns.h). */
  gp_tls_conns_limits agent_lim = lim;
  agent_lim.max = cfg->agent_max_connections;
  if (cfg->agent_listen_host) srv->agent_conns = gp_tls_conns_new(&agent_lim);
  srv->proxy = gp__srv_proxy_new(&srv->agent_dial);
  srv->sessions = gp__srv_sessions_new(&srv->agent_dial, srv->cfg->sessions_per_user, srv->cfg->sessions_max,
                                       srv->cfg->session_idle_timeout_s);
  srv->readers = gp__srv_readers_new(GP_SRV_READERS(srv->cfg->http_threads), srv->store);
  if (!srv->conns || !srv->proxy || !srv->readers || (cfg->agent_listen_host && !srv->agent_conns))
    return gp_err_set(err, GP_EIO, NULL, 0, NULL, "cannot start the HTTP helper threads");
  srv->mhd = start_daemon(srv, &addr, gp__srv_http_on_request, srv->conns, cfg->max_connections);
  if (!srv->mhd)
    return gp_err_set(err, GP_EIO, srv->cfg->file, 0, "listen", "cannot listen on %s:%d (in use?)",
                      srv->cfg->listen_host, srv->cfg->listen_port);
  if (cfg->agent_listen_host) {
    srv->agent_mhd = start_daemon(srv, &agent_addr, gp__srv_http_on_agent_request, srv->agent_conns,
                                  cfg->agent_max_connections);
    if (!srv->agent_mhd) {
      stop_daemons(srv);
      return gp_err_set(err, GP_EIO, srv->cfg->file, 0, "agent_listen", "cannot listen on %s:%d (in use?)",
                        cfg->agent_listen_host, cfg->agent_listen_port);
    }
    const union MHD_DaemonInfo *ai = MHD_get_daemon_info(srv->agent_mhd, MHD_DAEMON_INFO_BIND_PORT);
    srv->agent_port = ai ? ai->port : cfg->agent_listen_port;
  }
  const union MHD_DaemonInfo *info = MHD_get_daemon_info(srv->mhd, MHD_DAEMON_INFO_BIND_PORT);
  srv->port = info ? info->port : srv->cfg->listen_port;
  snprintf(srv->self_url, sizeof srv->self_url, "%s://%s:%d", srv->cfg->tls.cert[0] ? "https" : "http",
           host, srv->port);
  /* A server of several loads as a follower (nothing written) until it holds the lease. */
  if (srv->cfg->ha.on) gp__srv_ledger_set_off(srv->state, true);
  /* Clients and agents get 503 "loading" rather than a refused connection meanwhile. */
  int r = gp__srv_state_load(srv->state, time(NULL), gp_mono_ms(), err);
  if (r) {
    stop_daemons(srv);
    return r;
  }
  /* Agents could not heartbeat during the load: their timeout starts now. */
  int64_t now_ms = gp_mono_ms();
  for (int i = 0; i < srv->state->n_nodes; i++) srv->state->nodes[i]->last_seen_ms = now_ms;
  srv->next_tick_ms = srv->next_sched_ms = now_ms;
  srv->autoscale = gp__srv_autoscale_new(srv->cfg);
  srv->state->autoscale = srv->autoscale;
  /* Streams open once the store is loaded (until then every request gets 503). */
  srv->events = gp__srv_events_new(srv->cfg);
  srv->state->events = srv->events;
  srv->state->sessions = srv->sessions;
  /* Notifications go out only from a leader: a follower's state is reloaded as it leads. */
  srv->notify = gp__srv_notify_new(&srv->cfg->notify);
  if (!srv->cfg->ha.on) srv->state->notify = srv->notify;
  if (srv->cfg->ha.on) {
    srv->next_follow_ms = gp_mono_ms() + GP_SRV_FOLLOW_REFRESH_MS;
    r = gp__srv_leader_new(&srv->cfg->ha, srv->self_url, gp__srv_loop_ha_wake, srv,
                           &srv->leader, err);
    if (!r) r = gp__srv_leader_start(srv->leader, err);
    if (r) {
      stop_daemons(srv);
      return r;
    }
  }
  atomic_store(&srv->role, srv->leader ? GP_SRV_FOLLOWER : GP_SRV_LEADER);
  atomic_store(&srv->loading, false);
  if (pthread_create(&srv->thread, NULL, gp__srv_loop_main, srv) != 0) {
    stop_daemons(srv);
    return gp_err_set(err, GP_EIO, NULL, 0, NULL, "cannot start the state thread");
  }
  srv->thread_running = true;
  return 0;
}

int gp_server_port(const gp_server *srv) { return srv->port; }

int gp_server_agent_port(const gp_server *srv) { return srv->agent_port; }

gp_store *gp_server_store(gp_server *srv) { return srv->store; }

void gp_server_stop(gp_server *srv) {
  if (!srv) return;
  pthread_mutex_lock(&srv->lock);
  srv->stopping = true;
  pthread_cond_signal(&srv->cond);
  pthread_mutex_unlock(&srv->lock);
  if (srv->thread_running) {
    pthread_join(srv->thread, NULL);
    srv->thread_running = false;
  }
  /* Log reads in flight are answered (503) and resumed: libmicrohttpd must not stop with
   * a connection suspended. */
  gp__srv_proxy_stop(srv->proxy);
  gp__srv_readers_stop(srv->readers); /* the same for long reads */
  gp__srv_events_close(srv->events); /* the same for event streams */
  /* Sessions end with a close the CLI reports ("the server is stopping"); libmicrohttpd
   * stops only once every upgraded connection is closed. */
  gp__srv_sessions_stop(srv->sessions);
  stop_daemons(srv);
  /* Nothing writes any more: the lease goes, and a follower takes over at once. */
  gp__srv_leader_free(srv->leader);
  srv->leader = NULL;
  gp_tls_listener_free(srv->tls);
  srv->tls = NULL;
}

void gp_server_free(gp_server *srv) {
  if (!srv) return;
  gp_server_stop(srv);
  gp__srv_proxy_free(srv->proxy);
  gp__srv_sessions_free(srv->sessions);
  gp__srv_readers_free(srv->readers);
  gp_tls_conns_free(srv->conns);
  gp_tls_conns_free(srv->agent_conns);
  gp__srv_autoscale_free(srv->autoscale);
  gp__srv_events_free(srv->events);
  gp__srv_notify_free(srv->notify); /* after the state thread: it queued the last ones */
  gp__srv_state_free(srv->state);
  gp_store_close(srv->store);
  free(srv->healthz);
  pthread_mutex_destroy(&srv->lock);
  pthread_cond_destroy(&srv->cond);
  free(srv);
}
