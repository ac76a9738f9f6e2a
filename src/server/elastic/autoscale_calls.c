/* SPDX-License-Identifier: Apache-2.0 */
/* The autoscaler's workers: a few threads that run provider calls (gp_provider_run) off
 * the state thread. A call goes in with everything it needs copied into it and comes back
 * with its answer; the workers never read or change the cluster state. Each call ends by
 * its deadline (src/provider/), so stopping the workers waits for one call at most. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/elastic/autoscale_int.h"
#include "util/mem.h"

static int64_t wall_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void run_call(const gp_srv_autoscale *a, gp_srv_as_call *c) {
  const gp_node_template *nt = &a->cfg->node_templates[c->tmpl];
  const char *ids[1] = {c->id};
  c->started_ms = wall_ms();
  gp_provider_request req = {.verb = c->verb, .tmpl = &nt->t, .count = c->count,
                             .n_instances = c->verb == GP_PROVIDER_DELETE ? 1 : 0,
                             .instances = ids,
                             .idempotency_key = c->key[0] ? c->key : NULL,
                             .deadline_ms = c->started_ms + (int64_t)nt->timeout_s * 1000};
  c->rc = gp_provider_run(&req, &c->res, &c->e);
}

static void *worker(void *arg) {
  gp_srv_autoscale *a = arg;
  pthread_mutex_lock(&a->lock);
  for (;;) {
    while (!a->todo && !a->stopping) pthread_cond_wait(&a->cond, &a->lock);
    if (a->stopping) break;
    gp_srv_as_call *c = a->todo;
    a->todo = c->next;
    if (!a->todo) a->todo_tail = &a->todo;
    c->next = NULL;
    pthread_mutex_unlock(&a->lock);
    run_call(a, c);
    pthread_mutex_lock(&a->lock);
    gp_srv_as_call **p = &a->done; /* appended: answers are taken in the order they came */
    while (*p) p = &(*p)->next;
    *p = c;
  }
  pthread_mutex_unlock(&a->lock);
  return NULL;
}

void gp__srv_as_workers_start(gp_srv_autoscale *a) {
  pthread_mutex_init(&a->lock, NULL);
  pthread_cond_init(&a->cond, NULL);
  a->todo_tail = &a->todo;
  for (int i = 0; i < GP_SRV_AS_WORKERS; i++) {
    if (pthread_create(&a->threads[i], NULL, worker, a) != 0) {
      fprintf(stderr, "gpool server: autoscaler: could not start a worker thread\n");
      break;
    }
    a->n_threads++;
  }
}

void gp__srv_as_workers_stop(gp_srv_autoscale *a) {
  pthread_mutex_lock(&a->lock);
  a->stopping = true;
  pthread_cond_broadcast(&a->cond);
  pthread_mutex_unlock(&a->lock);
  for (int i = 0; i < a->n_threads; i++) pthread_join(a->threads[i], NULL);
  a->n_threads = 0;
  for (gp_srv_as_call *c = a->todo, *n; c; c = n) {
    n = c->next;
    gp__srv_as_call_free(c);
  }
  for (gp_srv_as_call *c = a->done, *n; c; c = n) {
    n = c->next;
    gp__srv_as_call_free(c);
  }
  a->todo = a->done = NULL;
  pthread_mutex_destroy(&a->lock);
  pthread_cond_destroy(&a->cond);
}

void gp__srv_as_submit(gp_srv_autoscale *a, gp_srv_as_call *c) {
  c->next = NULL;
  pthread_mutex_lock(&a->lock);
  if (a->n_threads == 0) { /* no worker could start: the call fails as a broken provider */
    pthread_mutex_unlock(&a->lock);
    c->rc = GP_EIO;
    c->e.cls = GP_PROVIDER_BROKEN;
    c->e.retry_after_s = -1;
    snprintf(c->e.message, sizeof c->e.message, "the server could not start a provider worker");
    pthread_mutex_lock(&a->lock);
    c->next = a->done;
    a->done = c;
    pthread_mutex_unlock(&a->lock);
    return;
  }
  *a->todo_tail = c;
  a->todo_tail = &c->next;
  pthread_cond_signal(&a->cond);
  pthread_mutex_unlock(&a->lock);
}

gp_srv_as_call *gp__srv_as_take_done(gp_srv_autoscale *a) {
  pthread_mutex_lock(&a->lock);
  gp_srv_as_call *c = a->done;
  a->done = NULL;
  pthread_mutex_unlock(&a->lock);
  return c;
}

void gp__srv_as_call_free(gp_srv_as_call *c) {
  if (!c) return;
  gp_provider_result_done(&c->res);
  free(c);
}
