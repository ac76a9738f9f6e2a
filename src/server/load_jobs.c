/* SPDX-License-Identifier: Apache-2.0 */
/* Stored job documents parsed in parallel at load (load_jobs.h). The parse of one document
 * touches nothing shared (jansson values of their own, the job struct it makes), so threads
 * take rows from a shared counter; the state thread alone inserts the jobs afterwards. */
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

typedef struct parse_work {
  gp__srv_job_batch *b;
  atomic_int next;
} parse_work;

static void *parse_main(void *arg) {
  parse_work *w = arg;
  for (int i; (i = atomic_fetch_add_explicit(&w->next, 1, memory_order_relaxed)) < w->b->n;) {
    gp_err e = {0};
    w->b->rcs[i] = gp__srv_job_from_doc(w->b->docs[i], &w->b->jobs[i], &e);
    if (w->b->rcs[i]) w->b->jobs[i] = NULL;
  }
  return NULL;
}

void gp__srv_job_batch_parse(gp__srv_job_batch *b, int threads) {
  parse_work w = {b, 0};
  /* A thread per 256 rows at most: a small batch is not worth a thread's start. */
  int n = threads < 1 ? 1 : threads;
  if (n > 1 + b->n / 256) n = 1 + b->n / 256;
  pthread_t th[64];
  if (n > 64) n = 64;
  int started = 0;
  for (; started < n - 1; started++)
    if (pthread_create(&th[started], NULL, parse_main, &w) != 0) break; /* this thread does the rest */
  parse_main(&w);
  for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
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
