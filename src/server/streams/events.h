/* SPDX-License-Identifier: Apache-2.0 */
/* GET /v1/events: the server's changes as Server-Sent Events, for the web console.
 *
 * Two halves. The feed (events_feed.c, state thread) notes which jobs, nodes and queues a
 * batch changed and, once the batch is committed, publishes one event for each whose
 * summary changed. The hub (events.c) holds the open streams, each with its own bounded
 * buffer: publishing only copies bytes into buffers under the hub's lock and wakes the
 * streams' connections, so the state thread never waits on a client. A stream whose
 * buffer would pass its bound (a stalled or slow reader) is ended at once; the browser's
 * EventSource reconnects and reloads what it shows. A stream with nothing to send is a
 * suspended libmicrohttpd connection (no thread, no timer). The hub's thread wakes the
 * streams that have something to send, at most every GP_SRV_EVENTS_GAP_MS, and writes a
 * comment to every stream each ping interval, so proxies keep the connection and a client
 * that went away is noticed. */
#ifndef GP_SERVER_EVENTS_H
#define GP_SERVER_EVENTS_H

#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/state/config.h"
#include "util/buf.h"

typedef struct gp_srv_events gp_srv_events;

/* The most often a stream is woken to send: events published meanwhile go out together. */
#define GP_SRV_EVENTS_GAP_MS 100

/* What the hub has now, for /metrics and tests. */
typedef struct gp_srv_events_stats {
  int streams;              /* open streams */
  size_t buffered_bytes;    /* bytes waiting in all streams' buffers */
  size_t max_stream_bytes;  /* the most one stream held at any time since the start */
  uint64_t events;          /* events published */
  uint64_t overflows;       /* streams ended because their buffer was full */
} gp_srv_events_stats;

/* A hub for at most cfg->events_max_streams streams (cfg->events_max_streams_per_user of
 * one user) of cfg->events_buffer_kib each, with
 * its pinger thread. NULL when the thread cannot start. */
gp_srv_events *gp__srv_events_new(const gp_server_config *cfg);

/* HTTP thread: answers GET /v1/events for an authenticated caller (user and role borrowed
 * from the config, which outlives the hub): a stream, or 403 (agent), 405 (not GET), 429
 * (the user has events_max_streams_per_user open) or 503 (too many streams, shutting
 * down). */
enum MHD_Result gp__srv_events_serve(gp_srv_events *h, struct MHD_Connection *c,
                                     const char *method, const char *user, gp_role role);

/* Publishes one event of `kind` ("job", "node", "queue", "service") with `data` (one line of JSON,
 * what every caller may read: events_feed.c) into the buffer of every stream. Never
 * blocks on a client. The streams
 * send it once gp__srv_events_wake is called, within GP_SRV_EVENTS_GAP_MS: the events of
 * that time go out together, one wake-up and one write per stream rather than one per
 * event. */
void gp__srv_events_publish(gp_srv_events *h, const char *kind, const char *data);
/* Asks the hub's thread to wake every stream that has something to send (it does so at
 * most once per GP_SRV_EVENTS_GAP_MS). Never blocks on a client. */
void gp__srv_events_wake(gp_srv_events *h);

/* Is any stream open? (A hint read without the lock: a stream that opens meanwhile reads
 * the lists before it applies events, so what it missed is in them.) */
bool gp__srv_events_listening(gp_srv_events *h);
/* Grows each time the first stream opens after none was: changes made while nobody
 * listened were not noted, so what was last sent before is no guide. */
uint64_t gp__srv_events_epoch(gp_srv_events *h);

void gp__srv_events_stats_get(gp_srv_events *h, gp_srv_events_stats *ret);
/* Appends the hub's figures to a /metrics text. */
void gp__srv_events_metrics(gp_srv_events *h, gp_buf *out);

/* Ends every stream (what is buffered is still sent) and refuses new ones; joins the
 * pinger. Call before MHD_stop_daemon: libmicrohttpd must not stop with a suspended
 * connection. */
void gp__srv_events_close(gp_srv_events *h);
/* Frees the hub once libmicrohttpd has stopped (every stream is gone). Accepts NULL. */
void gp__srv_events_free(gp_srv_events *h);

/* The feed's record (events_feed.c), behind gp_srv_state.events_feed: the jobs, nodes,
 * queues and service decisions noted since the last flush (its functions are declared in
 * state.h). NULL until a record is noted while a stream listens; freed with the state
 * (parts.c). */
struct gp_srv_state;
struct gp_srv_job;
struct gp_srv_node;
void gp__srv_events_feed_free(struct gp_srv_state *s);

/* ---- events_feed.c: what the event streams hear ---- */
/* A job, a node or a queue changed (the job and node marks ride on gp__srv_job_changed
 * and gp__srv_node_changed). Nothing is kept while s->events is NULL. */
void gp__srv_events_note_job(struct gp_srv_state *s, struct gp_srv_job *j);
void gp__srv_events_note_node(struct gp_srv_state *s, struct gp_srv_node *n);
void gp__srv_events_note_queue(struct gp_srv_state *s, const char *name);
/* A service's scaling decision (`data`: one line of JSON every caller may read), heard
 * once it is committed. */
void gp__srv_events_note_service(struct gp_srv_state *s, const char *data);
/* After a commit: publishes an event for each noted record whose summary changed. Call
 * before ended jobs are evicted. */
void gp__srv_events_flush(struct gp_srv_state *s);

#endif
