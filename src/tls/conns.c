/* SPDX-License-Identifier: Apache-2.0 */
/* The connection table of an endpoint (conns.h): every open connection is in one list and
 * in its address's list (a hash of addresses); one lock guards both. Room is made when a
 * connection opens; a thread looks at the list four times a second for late requests. */
#include "tls/conns.h"

#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "util/clock.h"
#include "util/mem.h"

#define N_BUCKETS 1024

typedef struct conn conn;

typedef struct address {
  unsigned char key[16]; /* IPv4 as ::ffff:a.b.c.d */
  int counted;           /* open, not cut, not trusted, not on probation */
  int probation;         /* open, not cut, on probation */
  conn *head;            /* its connections */
  struct address *next;  /* in the bucket */
} address;

struct conn {
  gp_tls_conns *t;
  address *addr;
  int fd;
  int64_t since_ms; /* when the connection last became idle */
  bool idle;        /* no request being handled */
  bool cut, trusted, probation;
  conn *prev, *next;   /* every connection */
  conn *aprev, *anext; /* the address's */
};

struct gp_tls_conns {
  gp_tls_conns_limits lim;
  int64_t timeout_ms;
  pthread_t thread;
  bool has_thread, stopping;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  conn *head;
  int open; /* not cut */
  address *buckets[N_BUCKETS];
};

static void key_of(struct MHD_Connection *c, unsigned char key[16]) {
  memset(key, 0, 16);
  const union MHD_ConnectionInfo *info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  const struct sockaddr *sa = info ? info->client_addr : NULL;
  if (sa && sa->sa_family == AF_INET) {
    key[10] = key[11] = 0xff;
    memcpy(key + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
  } else if (sa && sa->sa_family == AF_INET6) {
    memcpy(key, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
  }
}

static address *address_get(gp_tls_conns *t, const unsigned char key[16]) {
  uint32_t h = 2166136261u;
  for (int i = 0; i < 16; i++) h = (h ^ key[i]) * 16777619u;
  address **b = &t->buckets[h % N_BUCKETS];
  for (address *a = *b; a; a = a->next)
    if (memcmp(a->key, key, 16) == 0) return a;
  address *a = gp_xcalloc(1, sizeof *a);
  memcpy(a->key, key, 16);
  a->next = *b;
  *b = a;
  return a;
}

static void address_drop_if_empty(gp_tls_conns *t, address *a) {
  if (a->head) return;
  uint32_t h = 2166136261u;
  for (int i = 0; i < 16; i++) h = (h ^ a->key[i]) * 16777619u;
  for (address **p = &t->buckets[h % N_BUCKETS]; *p; p = &(*p)->next)
    if (*p == a) {
      *p = a->next;
      free(a);
      return;
    }
}

/* The counts an open connection adds to. */
static void count(conn *e, int d) {
  if (e->cut) return;
  e->t->open += d;
  if (e->probation) e->addr->probation += d;
  else if (!e->trusted) e->addr->counted += d;
}

/* Closes `e` (under the lock); it leaves the counts at once. */
static void cut(conn *e) {
  count(e, -1);
  e->cut = true;
  if (e->fd >= 0) shutdown(e->fd, SHUT_RDWR);
}

/* Whether `e` may be closed to make room: idle, and of the kind asked for. */
static bool evictable(const conn *e, const conn *skip, bool trusted, bool probation) {
  return e != skip && !e->cut && e->idle && e->trusted == trusted && e->probation == probation;
}

/* The oldest idle connection of address a (a_only) or of all, of the kind asked for. */
static conn *oldest(gp_tls_conns *t, address *a, const conn *skip, bool trusted, bool probation) {
  conn *best = NULL;
  if (a) {
    for (conn *e = a->head; e; e = e->anext)
      if (evictable(e, skip, trusted, probation) && (!best || e->since_ms < best->since_ms)) best = e;
  } else {
    for (conn *e = t->head; e; e = e->next)
      if (evictable(e, skip, trusted, probation) && (!best || e->since_ms < best->since_ms)) best = e;
  }
  return best;
}

/* A new connection `e` (counted) past its address's limit or the endpoint's. */
static void make_room(gp_tls_conns *t, conn *e) {
  address *a = e->addr;
  if (a->counted > t->lim.per_address) {
    conn *v = oldest(t, a, e, false, false);
    if (v) {
      cut(v);
    } else { /* nothing of its address is idle: it may still carry a trusted request */
      count(e, -1);
      e->probation = true;
      count(e, +1);
      if (a->probation > GP_TLS_CONNS_PROBATION) {
        v = oldest(t, a, e, false, true);
        cut(v ? v : e);
      }
    }
  }
  if (!e->cut && t->open > t->lim.max) {
    conn *v = oldest(t, NULL, e, false, true);
    if (!v) v = oldest(t, NULL, e, false, false);
    if (!v) v = oldest(t, NULL, e, true, false);
    cut(v ? v : e);
  }
}

static void *deadline_main(void *arg) {
  gp_tls_conns *t = arg;
  pthread_mutex_lock(&t->lock);
  while (!t->stopping) {
    gp_cond_wait_until_ms(&t->cond, &t->lock, gp_mono_ms() + 250);
    int64_t now = gp_mono_ms();
    for (conn *e = t->head; e; e = e->next)
      if (e->idle && !e->cut && e->fd >= 0 && now - e->since_ms >= t->timeout_ms) cut(e);
  }
  pthread_mutex_unlock(&t->lock);
  return NULL;
}

gp_tls_conns *gp_tls_conns_new(const gp_tls_conns_limits *limits) {
  gp_tls_conns *t = gp_xcalloc(1, sizeof *t);
  t->lim = *limits;
  t->timeout_ms = (int64_t)limits->request_timeout_s * 1000;
  pthread_mutex_init(&t->lock, NULL);
  gp_cond_init_monotonic(&t->cond);
  if (t->timeout_ms > 0) {
    if (pthread_create(&t->thread, NULL, deadline_main, t) != 0) {
      pthread_cond_destroy(&t->cond);
      pthread_mutex_destroy(&t->lock);
      free(t);
      return NULL;
    }
    t->has_thread = true;
  }
  return t;
}

unsigned gp_tls_conns_hard_limit(int max) {
  /* Room for the connections that arrive while older ones are being closed. */
  return (unsigned)max + (unsigned)max / 8 + 16;
}

void gp_tls_conns_notify(void *cls, struct MHD_Connection *c, void **socket_context,
                         enum MHD_ConnectionNotificationCode code) {
  gp_tls_conns *t = cls;
  if (code == MHD_CONNECTION_NOTIFY_STARTED) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    unsigned char key[16];
    key_of(c, key);
    conn *e = gp_xcalloc(1, sizeof *e);
    e->t = t;
    e->fd = info ? info->connect_fd : -1;
    e->since_ms = gp_mono_ms();
    e->idle = true;
    pthread_mutex_lock(&t->lock);
    e->addr = address_get(t, key);
    e->next = t->head;
    if (t->head) t->head->prev = e;
    t->head = e;
    e->anext = e->addr->head;
    if (e->addr->head) e->addr->head->aprev = e;
    e->addr->head = e;
    count(e, +1);
    make_room(t, e);
    pthread_mutex_unlock(&t->lock);
    *socket_context = e;
    return;
  }
  conn *e = *socket_context;
  if (!e) return;
  pthread_mutex_lock(&t->lock);
  count(e, -1);
  if (e->prev) e->prev->next = e->next;
  else t->head = e->next;
  if (e->next) e->next->prev = e->prev;
  if (e->aprev) e->aprev->anext = e->anext;
  else e->addr->head = e->anext;
  if (e->anext) e->anext->aprev = e->aprev;
  address_drop_if_empty(t, e->addr);
  pthread_mutex_unlock(&t->lock);
  free(e);
  *socket_context = NULL;
}

static conn *conn_of(struct MHD_Connection *c) {
  const union MHD_ConnectionInfo *info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  return info ? info->socket_context : NULL;
}

static void set_idle(struct MHD_Connection *c, bool idle) {
  conn *e = conn_of(c);
  if (!e) return;
  pthread_mutex_lock(&e->t->lock);
  e->idle = idle;
  e->since_ms = gp_mono_ms();
  pthread_mutex_unlock(&e->t->lock);
}

void gp_tls_conns_request_in(struct MHD_Connection *c) { set_idle(c, false); }

void gp_tls_conns_answered(struct MHD_Connection *c) { set_idle(c, true); }

void gp_tls_conns_trust(struct MHD_Connection *c) {
  conn *e = conn_of(c);
  if (!e) return;
  pthread_mutex_lock(&e->t->lock);
  if (!e->trusted) {
    count(e, -1);
    e->trusted = true;
    e->probation = false;
    count(e, +1);
  }
  pthread_mutex_unlock(&e->t->lock);
}

bool gp_tls_conns_on_probation(struct MHD_Connection *c) {
  conn *e = conn_of(c);
  if (!e) return false;
  pthread_mutex_lock(&e->t->lock);
  bool p = e->probation;
  pthread_mutex_unlock(&e->t->lock);
  return p;
}

enum MHD_Result gp_tls_conns_refuse(struct MHD_Connection *c) {
  static const char body[] =
      "{\"error\":{\"code\":\"unavailable\",\"message\":\"too many connections from your address are "
      "busy; retry shortly\",\"field\":null}}";
  struct MHD_Response *r =
      MHD_create_response_from_buffer(sizeof body - 1, (void *)body, MHD_RESPMEM_PERSISTENT);
  MHD_add_response_header(r, "Content-Type", "application/json");
  MHD_add_response_header(r, "Retry-After", "1");
  MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
  enum MHD_Result ok = MHD_queue_response(c, MHD_HTTP_SERVICE_UNAVAILABLE, r);
  MHD_destroy_response(r);
  return ok;
}

void gp_tls_conns_free(gp_tls_conns *t) {
  if (!t) return;
  pthread_mutex_lock(&t->lock);
  t->stopping = true;
  pthread_cond_signal(&t->cond);
  pthread_mutex_unlock(&t->lock);
  if (t->has_thread) pthread_join(t->thread, NULL);
  /* libmicrohttpd closed every connection (and removed its entry) when it stopped. */
  for (int i = 0; i < N_BUCKETS; i++)
    while (t->buckets[i]) {
      address *a = t->buckets[i];
      t->buckets[i] = a->next;
      free(a);
    }
  pthread_cond_destroy(&t->cond);
  pthread_mutex_destroy(&t->lock);
  free(t);
}
