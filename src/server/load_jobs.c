/* SPDX-License-Identifier: Apache-2.0 */
/* Stored job documents and timeline events parsed in parallel at load (load_jobs.h). The
 * parse of one row touches nothing shared (jansson values of their own, the job struct it
 * makes), so threads take rows from a shared counter; the state thread alone inserts the
 * results afterwards, in the store's order. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "server/load_jobs.h"
#include "server/state.h"
#include "util/mem.h"

/* A batch holds at most this many rows or bytes of documents (a document may be as large
 * as max_job_bytes): the memory of a load stays bounded whatever the store holds. */
#define BATCH_ROWS 4096
#define BATCH_BYTES (32u << 20)

bool gp__srv_job_batch_add(gp__srv_job_batch *b, int64_t id, const char *doc) {
  if (b->n == b->cap) {
    b->cap = b->cap ? b->cap * 2 : 256;
    b->ids = gp_xrealloc(b->ids, (size_t)b->cap * sizeof *b->ids);
    b->docs = gp_xrealloc(b->docs, (size_t)b->cap * sizeof *b->docs);
    b->jobs = gp_xrealloc(b->jobs, (size_t)b->cap * sizeof *b->jobs);
    b->rcs = gp_xrealloc(b->rcs, (size_t)b->cap * sizeof *b->rcs);
  }
  size_t len = strlen(doc);
  b->ids[b->n] = id;
  b->docs[b->n] = gp_xmalloc(len + 1);
  memcpy(b->docs[b->n], doc, len + 1);
  b->jobs[b->n] = NULL;
  b->rcs[b->n] = 0;
  b->n++;
  b->bytes += len + 1;
  return b->n >= BATCH_ROWS || b->bytes >= BATCH_BYTES;
}

/* Runs one(ctx, i) for every i < n over up to `threads` threads, taking indexes from a
 * shared counter; this thread takes its share too. */
typedef struct parallel_work {
  int n;
  void (*one)(void *ctx, int i);
  void *ctx;
  atomic_int next;
} parallel_work;

static void *parallel_main(void *arg) {
  parallel_work *w = arg;
  for (int i; (i = atomic_fetch_add_explicit(&w->next, 1, memory_order_relaxed)) < w->n;)
    w->one(w->ctx, i);
  return NULL;
}

static void parallel_for(int n, int threads, void (*one)(void *ctx, int i), void *ctx) {
  parallel_work w = {n, one, ctx, 0};
  /* A thread per 256 rows at most: a small batch is not worth a thread's start. */
  int t = threads < 1 ? 1 : threads;
  if (t > 1 + n / 256) t = 1 + n / 256;
  pthread_t th[64];
  if (t > 64) t = 64;
  int started = 0;
  for (; started < t - 1; started++)
    if (pthread_create(&th[started], NULL, parallel_main, &w) != 0) break;
  parallel_main(&w);
  for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
}

static void parse_job(void *ctx, int i) {
  gp__srv_job_batch *b = ctx;
  gp_err e = {0};
  b->rcs[i] = gp__srv_job_from_doc(b->docs[i], &b->jobs[i], &e);
  if (b->rcs[i]) b->jobs[i] = NULL;
}

void gp__srv_job_batch_parse(gp__srv_job_batch *b, int threads) {
  parallel_for(b->n, threads, parse_job, b);
}

void gp__srv_job_batch_reset(gp__srv_job_batch *b) {
  for (int i = 0; i < b->n; i++) free(b->docs[i]);
  b->n = 0;
  b->bytes = 0;
}

void gp__srv_job_batch_free(gp__srv_job_batch *b) {
  for (int i = 0; i < b->n; i++) gp__srv_job_free(b->jobs[i]);
  gp__srv_job_batch_reset(b);
  free(b->ids);
  free(b->docs);
  free(b->jobs);
  free(b->rcs);
  memset(b, 0, sizeof *b);
}

/* ---- timeline events ---- */

bool gp__srv_event_batch_add(gp__srv_event_batch *b, int64_t job_id, const char *doc) {
  if (b->n == b->cap) {
    b->cap = b->cap ? b->cap * 2 : 256;
    b->job_ids = gp_xrealloc(b->job_ids, (size_t)b->cap * sizeof *b->job_ids);
    b->docs = gp_xrealloc(b->docs, (size_t)b->cap * sizeof *b->docs);
    b->events = gp_xrealloc(b->events, (size_t)b->cap * sizeof *b->events);
  }
  size_t len = strlen(doc);
  b->job_ids[b->n] = job_id;
  b->docs[b->n] = gp_xmalloc(len + 1);
  memcpy(b->docs[b->n], doc, len + 1);
  b->events[b->n] = NULL;
  b->n++;
  b->bytes += len + 1;
  return b->n >= BATCH_ROWS || b->bytes >= BATCH_BYTES;
}

static void parse_event(void *ctx, int i) {
  gp__srv_event_batch *b = ctx;
  b->events[i] = json_loads(b->docs[i], 0, NULL);
}

void gp__srv_event_batch_parse(gp__srv_event_batch *b, int threads) {
  parallel_for(b->n, threads, parse_event, b);
}

void gp__srv_event_batch_reset(gp__srv_event_batch *b) {
  for (int i = 0; i < b->n; i++) {
    free(b->docs[i]);
    json_decref(b->events[i]);
  }
  b->n = 0;
  b->bytes = 0;
}

void gp__srv_event_batch_free(gp__srv_event_batch *b) {
  gp__srv_event_batch_reset(b);
  free(b->job_ids);
  free(b->docs);
  free(b->events);
  memset(b, 0, sizeof *b);
}
