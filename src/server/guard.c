/* SPDX-License-Identifier: Apache-2.0 */
/* The request deadline (guard.h): every open connection is in one list; a thread looks at
 * it four times a second and shuts down the connections whose request is late. */
#include "server/guard.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "util/clock.h"
#include "util/mem.h"

typedef struct entry {
  struct gp_srv_guard *g;
  int fd;
  int64_t since_ms; /* when the clock of the current request started */
  bool reading;     /* a request is due; false while one is being handled */
  bool cut;
  struct entry *prev, *next;
} entry;

struct gp_srv_guard {
  int64_t timeout_ms;
  pthread_t thread;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  bool stopping;
  entry *head;
};


static void *guard_main(void *arg) {
  gp_srv_guard *g = arg;
  pthread_mutex_lock(&g->lock);
  while (!g->stopping) {
    gp_cond_wait_until_ms(&g->cond, &g->lock, gp_mono_ms() + 250);
    int64_t now = gp_mono_ms();
    for (entry *e = g->head; e; e = e->next) {
      if (!e->reading || e->cut || now - e->since_ms < g->timeout_ms) continue;
      /* The entry leaves the list (under this lock) before libmicrohttpd closes the
       * descriptor, so fd is still this connection's. */
      shutdown(e->fd, SHUT_RDWR);
      e->cut = true;
    }
  }
  pthread_mutex_unlock(&g->lock);
  return NULL;
}

gp_srv_guard *gp__srv_guard_new(int request_timeout_s) {
  gp_srv_guard *g = gp_xcalloc(1, sizeof *g);
  g->timeout_ms = (int64_t)request_timeout_s * 1000;
  pthread_mutex_init(&g->lock, NULL);
  gp_cond_init_monotonic(&g->cond);
  if (pthread_create(&g->thread, NULL, guard_main, g) != 0) {
    pthread_cond_destroy(&g->cond);
    pthread_mutex_destroy(&g->lock);
    free(g);
    return NULL;
  }
  return g;
}

void gp__srv_guard_notify(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode code) {
  gp_srv_guard *g = cls;
  if (code == MHD_CONNECTION_NOTIFY_STARTED) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    entry *e = gp_xcalloc(1, sizeof *e);
    e->g = g;
    e->fd = info ? info->connect_fd : -1;
    e->since_ms = gp_mono_ms();
    e->reading = e->fd >= 0;
    pthread_mutex_lock(&g->lock);
    e->next = g->head;
    if (g->head) g->head->prev = e;
    g->head = e;
    pthread_mutex_unlock(&g->lock);
    *socket_context = e;
    return;
  }
  entry *e = *socket_context;
  if (!e) return;
  pthread_mutex_lock(&g->lock);
  if (e->prev) e->prev->next = e->next;
  else g->head = e->next;
  if (e->next) e->next->prev = e->prev;
  pthread_mutex_unlock(&g->lock);
  free(e);
  *socket_context = NULL;
}

static entry *entry_of(struct MHD_Connection *c) {
  const union MHD_ConnectionInfo *info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  return info ? info->socket_context : NULL;
}

static void set_reading(struct MHD_Connection *c, bool reading) {
  entry *e = entry_of(c);
  if (!e) return;
  pthread_mutex_lock(&e->g->lock);
  e->reading = reading && e->fd >= 0;
  e->since_ms = gp_mono_ms();
  pthread_mutex_unlock(&e->g->lock);
}

void gp__srv_guard_request_in(struct MHD_Connection *c) { set_reading(c, false); }

void gp__srv_guard_answered(struct MHD_Connection *c) { set_reading(c, true); }

void gp__srv_guard_free(gp_srv_guard *g) {
  if (!g) return;
  pthread_mutex_lock(&g->lock);
  g->stopping = true;
  pthread_cond_signal(&g->cond);
  pthread_mutex_unlock(&g->lock);
  pthread_join(g->thread, NULL);
  /* libmicrohttpd closed every connection (and removed its entry) when it stopped. */
  pthread_cond_destroy(&g->cond);
  pthread_mutex_destroy(&g->lock);
  free(g);
}
