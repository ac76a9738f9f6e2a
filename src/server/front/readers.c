/* SPDX-License-Identifier: Apache-2.0 */
/* The heavy-read threads (readers.h): a slot per thread, taken when a read is handed over
 * and given back when its answer is set, so a read is never queued behind another. */
#include "server/front/readers.h"

#include <microhttpd.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "server/accounting/advice.h"
#include "server/accounting/report.h"
#include "server/front/routes.h"
#include "util/mem.h"

struct gp_srv_readers {
  gp_store *store;
  int n, busy;        /* threads, and reads handed over and not yet answered */
  bool stopping;
  gp_srv_req *queue;  /* taken, not yet started (at most n - running) */
  gp_srv_req **tail;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  pthread_t *threads;
  int n_started;
};

bool gp__srv_readers_wants(const gp_srv_req *r) {
  if (r->answered) return r->status == 200 && (r->report || r->advice);
  return gp__srv_history_is_list(r);
}

static void run(gp_srv_readers *p, gp_srv_req *r) {
  if (r->report) gp__srv_report_run(r);
  else if (r->advice) gp__srv_advice_run(r);
  else gp__srv_history_list(p->store, r);
}

static void *reader_main(void *arg) {
  gp_srv_readers *p = arg;
  /* Below the HTTP and state threads: on a busy machine the agents' protocol gets the CPU
   * first (Linux: a thread's nice value is its own). */
  if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 10) != 0) {
    /* not permitted: the same priority as the rest */
  }
  pthread_mutex_lock(&p->lock);
  for (;;) {
    while (!p->queue && !p->stopping) pthread_cond_wait(&p->cond, &p->lock);
    gp_srv_req *r = p->queue;
    if (!r) break; /* stopping, nothing left */
    p->queue = r->next;
    if (!p->queue) p->tail = &p->queue;
    r->next = NULL;
    pthread_mutex_unlock(&p->lock);
    run(p, r);
    r->answered = true;
    pthread_mutex_lock(&p->lock);
    p->busy--;
    pthread_mutex_unlock(&p->lock);
    MHD_resume_connection(r->conn);
    pthread_mutex_lock(&p->lock);
  }
  pthread_mutex_unlock(&p->lock);
  return NULL;
}

gp_srv_readers *gp__srv_readers_new(int n, gp_store *store) {
  gp_srv_readers *p = gp_xcalloc(1, sizeof *p);
  p->store = store;
  p->n = n < 1 ? 1 : n;
  p->tail = &p->queue;
  pthread_mutex_init(&p->lock, NULL);
  pthread_cond_init(&p->cond, NULL);
  p->threads = gp_xcalloc((size_t)p->n, sizeof *p->threads);
  for (; p->n_started < p->n; p->n_started++)
    if (pthread_create(&p->threads[p->n_started], NULL, reader_main, p) != 0) {
      gp__srv_readers_free(p);
      return NULL;
    }
  return p;
}

bool gp__srv_readers_take(gp_srv_readers *p, gp_srv_req *r) {
  pthread_mutex_lock(&p->lock);
  bool ok = !p->stopping && p->busy < p->n;
  if (ok) {
    p->busy++;
    r->next = NULL;
    *p->tail = r;
    p->tail = &r->next;
    pthread_cond_signal(&p->cond);
  }
  pthread_mutex_unlock(&p->lock);
  return ok;
}

void gp__srv_readers_busy(const gp_srv_readers *p, gp_srv_req *r) {
  gp__srv_reply_error(r, 503, "unavailable", NULL,
                      "%d long reads (job history, reports, advice) are running already; retry in a moment",
                      p ? p->n : 0);
  r->retry_after_s = 1;
}

void gp__srv_readers_stop(gp_srv_readers *p) {
  if (!p) return;
  pthread_mutex_lock(&p->lock);
  bool joined = p->stopping && !p->threads;
  p->stopping = true;
  pthread_cond_broadcast(&p->cond);
  pthread_mutex_unlock(&p->lock);
  if (joined) return;
  /* Each thread empties the queue before it ends, so every taken read is answered. */
  for (int i = 0; i < p->n_started; i++) pthread_join(p->threads[i], NULL);
  free(p->threads);
  p->threads = NULL;
  p->n_started = 0;
}

void gp__srv_readers_free(gp_srv_readers *p) {
  if (!p) return;
  gp__srv_readers_stop(p);
  pthread_cond_destroy(&p->cond);
  pthread_mutex_destroy(&p->lock);
  free(p);
}
