/* SPDX-License-Identifier: Apache-2.0 */
/* Stored jobs and timeline events read in parallel at load (load_jobs.h). Reading one row
 * touches nothing shared (jansson values of their own, the job struct it makes), so
 * threads take rows from a shared counter; the state thread alone inserts the results
 * afterwards, in the store's order. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/state/jobrec.h"
#include "server/state/load_jobs.h"
#include "server/state/state.h"
#include "store/store.h"
#include "util/mem.h"

/* A batch holds at most this many rows or bytes of text (a document may be as large as
 * max_job_bytes): the memory of a load stays bounded whatever the store holds. */
#define BATCH_ROWS 4096
#define BATCH_BYTES (32u << 20)

static size_t copy(gp__srv_rows *r, const char *s) {
  if (!s) return GP_SRV_ROW_NONE;
  size_t len = strlen(s) + 1, at = r->bytes;
  gp_xgrow((void **)&r->text, &r->cap_text, at + len, 1);
  memcpy(r->text + at, s, len);
  r->bytes += len;
  return at;
}

bool gp__srv_rows_add(gp__srv_rows *r, int64_t id, const char *doc, const char *rec) {
  if (r->n == r->cap) {
    r->cap = r->cap ? r->cap * 2 : 256;
    r->ids = gp_xrealloc(r->ids, (size_t)r->cap * sizeof *r->ids);
    r->docs = gp_xrealloc(r->docs, (size_t)r->cap * sizeof *r->docs);
    r->recs = gp_xrealloc(r->recs, (size_t)r->cap * sizeof *r->recs);
  }
  r->ids[r->n] = id;
  r->docs[r->n] = copy(r, doc ? doc : "");
  r->recs[r->n] = copy(r, rec);
  r->n++;
  return r->n >= BATCH_ROWS || r->bytes >= BATCH_BYTES;
}

const char *gp__srv_row_doc(const gp__srv_rows *r, int i) { return r->text + r->docs[i]; }

const char *gp__srv_row_rec(const gp__srv_rows *r, int i) {
  return r->recs[i] == GP_SRV_ROW_NONE ? NULL : r->text + r->recs[i];
}

static void rows_reset(gp__srv_rows *r) {
  r->n = 0;
  r->bytes = 0;
}

static void rows_free(gp__srv_rows *r) {
  free(r->ids);
  free(r->docs);
  free(r->recs);
  free(r->text);
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

/* ---- jobs ---- */

/* Its record when it has one that reads, else its document. */
static void parse_job(void *ctx, int i) {
  gp__srv_job_batch *b = ctx;
  const char *rec = gp__srv_row_rec(&b->rows, i);
  b->from_doc[i] = !rec || gp__srv_job_from_rec(rec, &b->jobs[i], NULL) != 0;
  if (b->from_doc[i]) b->rcs[i] = gp__srv_job_from_doc(gp__srv_row_doc(&b->rows, i), &b->jobs[i], NULL);
  if (b->rcs[i]) b->jobs[i] = NULL;
}

void gp__srv_job_batch_parse(gp__srv_job_batch *b, int threads) {
  size_t n = (size_t)(b->rows.n ? b->rows.n : 1);
  b->jobs = gp_xrealloc(b->jobs, n * sizeof *b->jobs);
  b->rcs = gp_xrealloc(b->rcs, n * sizeof *b->rcs);
  b->from_doc = gp_xrealloc(b->from_doc, n * sizeof *b->from_doc);
  memset(b->jobs, 0, n * sizeof *b->jobs);
  memset(b->rcs, 0, n * sizeof *b->rcs);
  parallel_for(b->rows.n, threads, parse_job, b);
  b->parsed = b->rows.n;
}

int gp__srv_job_batch_take(gp__srv_job_batch *b, int i, gp_srv_job **ret, gp_err *err) {
  long long id = (long long)b->rows.ids[i];
  gp_srv_job *j = b->jobs[i];
  b->jobs[i] = NULL;
  *ret = NULL;
  if (b->rcs[i]) { /* read again, for the message */
    gp_err why = {0};
    if (!gp__srv_job_from_doc(gp__srv_row_doc(&b->rows, i), &j, &why)) {
      gp__srv_job_free(j);
      snprintf(why.message, sizeof why.message, "error %d", b->rcs[i]);
    }
    return gp_err_set(err, GP_EPARSE, NULL, 0, why.field[0] ? why.field : NULL,
                      "stored job %lld does not read (%s): restore the store from a backup, or "
                      "remove that row", id, why.message);
  }
  if (j->id != b->rows.ids[i] || j->id <= 0) {
    gp__srv_job_free(j);
    return gp_err_set(err, GP_EPARSE, NULL, 0, NULL,
                      "stored job %lld is inconsistent: its document says job %s", id, j->idstr);
  }
  if (b->from_doc[i] && gp__srv_row_rec(&b->rows, i)) {
    gp_srv_job *x = NULL;
    gp_err why = {0};
    gp__srv_job_from_rec(gp__srv_row_rec(&b->rows, i), &x, &why);
    gp__srv_job_free(x);
    fprintf(stderr, "gpool server: stored job %lld: its load record does not read (%s); read from "
                    "its document, the record is written again\n", id, why.message);
  }
  if (b->from_doc[i]) {
    gp_xgrow((void **)&b->backfill, &b->cap_backfill, (size_t)b->n_backfill + 1, sizeof *b->backfill);
    b->backfill[b->n_backfill++] = b->rows.ids[i];
  }
  *ret = j;
  return 0;
}

void gp__srv_job_batch_reset(gp__srv_job_batch *b) {
  for (int i = 0; i < b->parsed; i++) {
    gp__srv_job_free(b->jobs[i]);
    b->jobs[i] = NULL;
  }
  b->parsed = 0;
  rows_reset(&b->rows);
}

void gp__srv_job_batch_free(gp__srv_job_batch *b) {
  gp__srv_job_batch_reset(b);
  rows_free(&b->rows);
  free(b->jobs);
  free(b->rcs);
  free(b->from_doc);
  free(b->backfill);
  memset(b, 0, sizeof *b);
}

void gp__srv_job_batch_backfill(gp_srv_state *s, gp__srv_job_batch *b) {
  if (!b->n_backfill) return;
  gp_err err = {0};
  int r = gp_store_begin(s->store, &err), written = 0;
  for (int i = 0; i < b->n_backfill && !r; i++) {
    int64_t id = b->backfill[i];
    gp_srv_job *j = id > 0 && (size_t)id < s->cap_jobs ? s->jobs[id] : NULL;
    if (!j) continue;
    char *doc = gp__srv_job_store_doc(j), *rec = gp__srv_job_store_rec(j);
    gp_store_job row = {j->id, gp_job_state_name(j->state), j->queue, j->user, j->submitted_at, doc, rec};
    r = gp_store_put_job(s->store, &row, &err);
    free(doc);
    free(rec);
    written++;
  }
  if (!r) r = gp_store_commit(s->store, &err);
  if (r) {
    gp_store_rollback(s->store);
    fprintf(stderr, "gpool server: writing the load records of %d jobs failed (tried again at the "
                    "next start): %s\n", b->n_backfill, err.message);
  } else {
    fprintf(stderr, "gpool server: wrote the load records of %d jobs read from their documents\n",
            written);
  }
  b->n_backfill = 0;
}

/* ---- timeline events ---- */

static void parse_event(void *ctx, int i) {
  gp__srv_event_batch *b = ctx;
  b->events[i] = json_loads(gp__srv_row_doc(&b->rows, i), 0, NULL);
}

void gp__srv_event_batch_parse(gp__srv_event_batch *b, int threads) {
  b->events = gp_xrealloc(b->events, (size_t)(b->rows.n ? b->rows.n : 1) * sizeof *b->events);
  parallel_for(b->rows.n, threads, parse_event, b);
  b->parsed = b->rows.n;
}

void gp__srv_event_batch_reset(gp__srv_event_batch *b) {
  for (int i = 0; i < b->parsed; i++) {
    json_decref(b->events[i]);
    b->events[i] = NULL;
  }
  b->parsed = 0;
  rows_reset(&b->rows);
}

void gp__srv_event_batch_free(gp__srv_event_batch *b) {
  gp__srv_event_batch_reset(b);
  rows_free(&b->rows);
  free(b->events);
  memset(b, 0, sizeof *b);
}
