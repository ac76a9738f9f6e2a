/* SPDX-License-Identifier: Apache-2.0 */
/* The hub of the event streams (events.h): open streams, their bounded buffers, the
 * pinger, which also wakes the streams. Lock order: the hub's lock, then nothing; libmicrohttpd's resume is called after
 * the lock is released (a stream's connection cannot go away while it is suspended, and
 * only the hub resumes it, once per suspension: the `suspended` flag is flipped under the
 * lock). */
#include "server/streams/events.h"

#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/clock.h"
#include "util/mem.h"

typedef struct stream {
  struct gp_srv_events *hub;
  struct MHD_Connection *conn;
  const char *user;         /* borrowed from the config; streams are counted per user */
  char *buf;                /* bytes not yet handed to libmicrohttpd: buf[off, len) */
  size_t off, len, cap;
  bool suspended;           /* its connection waits for data */
  bool ended;               /* no more events: send what is buffered, then close */
  bool overflowed;          /* ended because the buffer would pass its bound */
  struct stream *prev, *next;
} stream;

struct gp_srv_events {
  pthread_mutex_t lock;
  pthread_cond_t cond;      /* wakes the pinger early (a batch published, closing) */
  bool wake_due;            /* streams have something new to send */
  stream *head;
  int n, max_streams, max_per_user;
  _Atomic int listening;    /* n, read without the lock by the state thread */
  _Atomic uint64_t epoch;   /* times n went from 0 to 1 */
  size_t buffer_max;
  int ping_s;
  bool closed;
  uint64_t next_id;
  gp_srv_events_stats stats;
  pthread_t pinger;
  bool pinger_running;
};

/* Hands the connections of the listed streams back to libmicrohttpd's loop. */
static void resume_all(struct MHD_Connection **conns, int n) {
  for (int i = 0; i < n; i++) MHD_resume_connection(conns[i]);
}

/* Under the lock: s->suspended? Then it is ours to resume once the lock is released. */
static void wake(stream *s, struct MHD_Connection ***conns, int *n, size_t *cap) {
  if (!s->suspended) return;
  s->suspended = false;
  gp_xgrow((void **)conns, cap, (size_t)*n + 1, sizeof **conns);
  (*conns)[(*n)++] = s->conn;
}

static void drop_buffer(struct gp_srv_events *h, stream *s) {
  h->stats.buffered_bytes -= s->len - s->off;
  free(s->buf);
  s->buf = NULL;
  s->off = s->len = s->cap = 0;
}

/* Under the lock: appends text to a stream, or ends it when its buffer would pass the
 * bound. Returns whether the stream took it. */
static bool append(struct gp_srv_events *h, stream *s, const char *text, size_t n) {
  if (s->ended) return false;
  size_t held = s->len - s->off;
  if (held + n > h->buffer_max) {
    s->ended = s->overflowed = true;
    h->stats.overflows++;
    drop_buffer(h, s);
    return false;
  }
  if (s->len + n > s->cap && s->off > 0) { /* room at the front first */
    memmove(s->buf, s->buf + s->off, held);
    s->off = 0;
    s->len = held;
  }
  if (s->len + n > s->cap) {
    size_t cap = s->cap ? s->cap : 4096;
    while (cap < s->len + n) cap *= 2;
    if (cap > h->buffer_max) cap = h->buffer_max;
    s->buf = gp_xrealloc(s->buf, cap);
    s->cap = cap;
  }
  memcpy(s->buf + s->len, text, n);
  s->len += n;
  h->stats.buffered_bytes += n;
  if (s->len - s->off > h->stats.max_stream_bytes) h->stats.max_stream_bytes = s->len - s->off;
  return true;
}

void gp__srv_events_publish(gp_srv_events *h, const char *kind, const char *data) {
  if (!h) return;
  pthread_mutex_lock(&h->lock);
  if (h->closed || !h->head) {
    pthread_mutex_unlock(&h->lock);
    return;
  }
  char head[96];
  int hl = snprintf(head, sizeof head, "id: %llu\nevent: %s\ndata: ",
                    (unsigned long long)++h->next_id, kind);
  size_t dl = strlen(data), len = (size_t)hl + dl + 2;
  char *text = gp_xmalloc(len + 1);
  memcpy(text, head, (size_t)hl);
  memcpy(text + hl, data, dl);
  memcpy(text + hl + dl, "\n\n", 3);
  h->stats.events++;
  for (stream *s = h->head; s; s = s->next) append(h, s, text, len);
  pthread_mutex_unlock(&h->lock);
  free(text);
}

void gp__srv_events_wake(gp_srv_events *h) {
  if (!h) return;
  pthread_mutex_lock(&h->lock);
  if (!h->wake_due) {
    h->wake_due = true;
    pthread_cond_signal(&h->cond);
  }
  pthread_mutex_unlock(&h->lock);
}

/* libmicrohttpd asks for the stream's next bytes (on the connection's thread). */
static ssize_t read_stream(void *cls, uint64_t pos, char *buf, size_t max) {
  (void)pos;
  stream *s = cls;
  struct gp_srv_events *h = s->hub;
  pthread_mutex_lock(&h->lock);
  size_t held = s->len - s->off;
  if (held > 0) {
    size_t n = held < max ? held : max;
    memcpy(buf, s->buf + s->off, n);
    s->off += n;
    h->stats.buffered_bytes -= n;
    if (s->off == s->len) s->off = s->len = 0;
    pthread_mutex_unlock(&h->lock);
    return (ssize_t)n;
  }
  if (s->ended) {
    bool overflowed = s->overflowed;
    pthread_mutex_unlock(&h->lock);
    /* An overflow cuts the stream short, so the client sees an error and reconnects. */
    return overflowed ? MHD_CONTENT_READER_END_WITH_ERROR : MHD_CONTENT_READER_END_OF_STREAM;
  }
  s->suspended = true;
  MHD_suspend_connection(s->conn);
  pthread_mutex_unlock(&h->lock);
  return 0;
}

/* The connection is gone (closed by either side, or the server stopped). */
static void free_stream(void *cls) {
  stream *s = cls;
  struct gp_srv_events *h = s->hub;
  pthread_mutex_lock(&h->lock);
  if (s->prev) s->prev->next = s->next;
  else h->head = s->next;
  if (s->next) s->next->prev = s->prev;
  h->n--;
  h->stats.streams = h->n;
  atomic_store(&h->listening, h->n);
  drop_buffer(h, s);
  pthread_mutex_unlock(&h->lock);
  free(s);
}

static enum MHD_Result refuse(struct MHD_Connection *c, unsigned status, const char *code,
                              const char *message) {
  json_t *o = json_pack("{s:{s:s,s:s,s:n}}", "error", "code", code, "message", message, "field");
  char *body = o ? json_dumps(o, JSON_COMPACT) : NULL;
  json_decref(o);
  if (!body) return MHD_NO;
  struct MHD_Response *r = MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
  if (!r) {
    free(body);
    return MHD_NO;
  }
  MHD_add_response_header(r, "Content-Type", "application/json");
  enum MHD_Result ret = MHD_queue_response(c, status, r);
  MHD_destroy_response(r);
  return ret;
}

enum MHD_Result gp__srv_events_serve(gp_srv_events *h, struct MHD_Connection *c,
                                     const char *method, const char *user, gp_role role) {
  if (strcmp(method, "GET") != 0)
    return refuse(c, 405, "method_not_allowed", "use GET on /v1/events");
  if (role == GP_ROLE_AGENT)
    return refuse(c, 403, "permission_denied", "agent tokens may use only /v1/agent/*");
  if (!h) return refuse(c, 503, "unavailable", "the event stream is not running");
  stream *s = gp_xcalloc(1, sizeof *s);
  s->hub = h;
  s->conn = c;
  s->user = user;
  pthread_mutex_lock(&h->lock);
  char why[300] = "";
  unsigned status = 503;
  int mine = 0;
  /* One user's streams are bounded first, so one user (a script, tabs left open) cannot
   * hold every stream the server allows and shut everyone else out. */
  for (const stream *o = h->head; o && mine < h->max_per_user; o = o->next)
    mine += strcmp(o->user, user) == 0;
  if (h->closed) {
    snprintf(why, sizeof why, "the server is shutting down");
  } else if (mine >= h->max_per_user) {
    status = 429;
    snprintf(why, sizeof why,
             "user %.64s already has %d event streams open, the most one user may "
             "(events_max_streams_per_user: %d); close one (a browser tab) and retry",
             user, mine, h->max_per_user);
  } else if (h->n >= h->max_streams) {
    snprintf(why, sizeof why, "too many event streams are open (events_max_streams: %d); retry later",
             h->max_streams);
  }
  if (why[0]) {
    pthread_mutex_unlock(&h->lock);
    free(s);
    return refuse(c, status, status == 429 ? "too_many_streams" : "unavailable", why);
  }
  /* A first comment, so the client knows the stream is open before any event. */
  static const char hello[] = ": open\nretry: 3000\n\n";
  append(h, s, hello, sizeof hello - 1);
  s->next = h->head;
  if (h->head) h->head->prev = s;
  h->head = s;
  h->n++;
  h->stats.streams = h->n;
  if (h->n == 1) atomic_fetch_add(&h->epoch, 1);
  atomic_store(&h->listening, h->n);
  pthread_mutex_unlock(&h->lock);
  struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, read_stream,
                                                             s, free_stream);
  if (!r) {
    free_stream(s);
    return MHD_NO;
  }
  MHD_add_response_header(r, "Content-Type", "text/event-stream");
  MHD_add_response_header(r, "Cache-Control", "no-store");
  MHD_add_response_header(r, "X-Accel-Buffering", "no"); /* proxies pass events at once */
  enum MHD_Result ret = MHD_queue_response(c, MHD_HTTP_OK, r);
  MHD_destroy_response(r); /* the connection holds it; free_stream runs when it closes */
  return ret;
}


/* The hub's thread: wakes the streams that have something to send, at most once per
 * GP_SRV_EVENTS_GAP_MS (what a batch published, or a ping every ping_s), so the state
 * thread never makes a system call per stream and a busy pool costs one wake-up and one
 * write per stream per gap, however many events it holds. */
static void *pinger_main(void *arg) {
  struct gp_srv_events *h = arg;
  static const char ping[] = ": ping\n\n";
  int64_t next_ping = gp_mono_ms() + (int64_t)h->ping_s * 1000, last_wake = 0;
  pthread_mutex_lock(&h->lock);
  while (!h->closed) {
    int64_t deadline = next_ping;
    if (h->wake_due && last_wake + GP_SRV_EVENTS_GAP_MS < deadline)
      deadline = last_wake + GP_SRV_EVENTS_GAP_MS;
    int64_t now = gp_mono_ms();
    if (deadline > now) {
      gp_cond_wait_until_ms(&h->cond, &h->lock, deadline);
      continue; /* woken early (a batch, closing) or on time: look again */
    }
    if (now >= next_ping) {
      for (stream *s = h->head; s; s = s->next) append(h, s, ping, sizeof ping - 1);
      next_ping = now + (int64_t)h->ping_s * 1000;
      h->wake_due = true;
    }
    if (!h->wake_due || now < last_wake + GP_SRV_EVENTS_GAP_MS) continue;
    h->wake_due = false;
    last_wake = now;
    struct MHD_Connection **conns = NULL;
    int n = 0;
    size_t cap = 0;
    for (stream *s = h->head; s; s = s->next)
      if (s->len > s->off || s->ended) wake(s, &conns, &n, &cap); /* data, or its end */
    pthread_mutex_unlock(&h->lock);
    resume_all(conns, n);
    free(conns);
    pthread_mutex_lock(&h->lock);
  }
  pthread_mutex_unlock(&h->lock);
  return NULL;
}

gp_srv_events *gp__srv_events_new(const gp_server_config *cfg) {
  struct gp_srv_events *h = gp_xcalloc(1, sizeof *h);
  h->max_streams = cfg->events_max_streams;
  h->max_per_user = cfg->events_max_streams_per_user > 0 ? cfg->events_max_streams_per_user : 1;
  h->buffer_max = (size_t)cfg->events_buffer_kib * 1024;
  h->ping_s = cfg->events_ping_s;
  pthread_mutex_init(&h->lock, NULL);
  gp_cond_init_monotonic(&h->cond);
  if (pthread_create(&h->pinger, NULL, pinger_main, h) != 0) {
    gp__srv_events_free(h);
    return NULL;
  }
  h->pinger_running = true;
  return h;
}

bool gp__srv_events_listening(gp_srv_events *h) { return h && atomic_load(&h->listening) > 0; }

uint64_t gp__srv_events_epoch(gp_srv_events *h) { return h ? atomic_load(&h->epoch) : 0; }

void gp__srv_events_stats_get(gp_srv_events *h, gp_srv_events_stats *ret) {
  *ret = (gp_srv_events_stats){0};
  if (!h) return;
  pthread_mutex_lock(&h->lock);
  *ret = h->stats;
  pthread_mutex_unlock(&h->lock);
}

void gp__srv_events_metrics(gp_srv_events *h, gp_buf *out) {
  gp_srv_events_stats st;
  gp__srv_events_stats_get(h, &st);
  gp_buf_printf(out,
                "# HELP gpool_event_streams Open GET /v1/events streams.\n"
                "# TYPE gpool_event_streams gauge\n"
                "gpool_event_streams %d\n"
                "# HELP gpool_event_stream_buffered_bytes Bytes waiting in the event streams' buffers.\n"
                "# TYPE gpool_event_stream_buffered_bytes gauge\n"
                "gpool_event_stream_buffered_bytes %zu\n"
                "# HELP gpool_event_stream_max_bytes The most bytes one stream held at once.\n"
                "# TYPE gpool_event_stream_max_bytes gauge\n"
                "gpool_event_stream_max_bytes %zu\n"
                "# HELP gpool_events_total Events published.\n"
                "# TYPE gpool_events_total counter\n"
                "gpool_events_total %llu\n"
                "# HELP gpool_event_stream_overflows_total Streams ended because a reader fell behind by a whole buffer.\n"
                "# TYPE gpool_event_stream_overflows_total counter\n"
                "gpool_event_stream_overflows_total %llu\n",
                st.streams, st.buffered_bytes, st.max_stream_bytes,
                (unsigned long long)st.events, (unsigned long long)st.overflows);
}

void gp__srv_events_close(gp_srv_events *h) {
  if (!h) return;
  struct MHD_Connection **conns = NULL;
  int n = 0;
  size_t cap = 0;
  pthread_mutex_lock(&h->lock);
  h->closed = true;
  for (stream *s = h->head; s; s = s->next) {
    s->ended = true;
    wake(s, &conns, &n, &cap);
  }
  pthread_cond_broadcast(&h->cond);
  pthread_mutex_unlock(&h->lock);
  resume_all(conns, n);
  free(conns);
  if (h->pinger_running) {
    pthread_join(h->pinger, NULL);
    h->pinger_running = false;
  }
}

void gp__srv_events_free(gp_srv_events *h) {
  if (!h) return;
  gp__srv_events_close(h);
  /* libmicrohttpd has stopped: every stream's free callback has run. */
  pthread_mutex_destroy(&h->lock);
  pthread_cond_destroy(&h->cond);
  free(h);
}
