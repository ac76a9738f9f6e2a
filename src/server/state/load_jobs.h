/* SPDX-License-Identifier: Apache-2.0 */
/* Stored jobs and their timeline events read back at load (load_jobs.c). A job row is
 * rebuilt from its load record (jobrec.h) when it has one, else from its JSON document,
 * which is most of a restart's cost (~20 µs a job); each row is read on its own, so a batch
 * of them is spread over the CPUs, and the state thread then inserts the results in the
 * store's order. Jobs read from their documents get a record written once the load is done
 * (gp__srv_job_batch_backfill), so a store of an older gpool loads fast from its next
 * start on. */
#ifndef GPOOL_SERVER_LOAD_JOBS_H
#define GPOOL_SERVER_LOAD_JOBS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "server/state/job.h"
#include "util/error.h"

struct gp_srv_state;

/* Rows read from the store, copied (the store's text lives one row) one after another into
 * one buffer that the next batch reuses: a malloc and a free per text were a third of a
 * restart's time once the documents were no longer parsed. */
typedef struct gp__srv_rows {
  int n, cap;
  int64_t *ids;       /* each row's job id */
  size_t *docs;       /* where its JSON document starts in `text` */
  size_t *recs;       /* where its load record starts, GP_SRV_ROW_NONE where none */
  char *text;
  size_t bytes, cap_text; /* of `text` used, and held */
} gp__srv_rows;

#define GP_SRV_ROW_NONE SIZE_MAX

/* Adds a row (doc and rec, which may be NULL, copied); true when the batch should be read
 * now. */
bool gp__srv_rows_add(gp__srv_rows *r, int64_t id, const char *doc, const char *rec);
/* Row i's document and record (NULL: none), valid until the batch is reset. */
const char *gp__srv_row_doc(const gp__srv_rows *r, int i);
const char *gp__srv_row_rec(const gp__srv_rows *r, int i);

typedef struct gp__srv_job_batch {
  gp__srv_rows rows;
  int parsed;         /* rows read into the arrays below (0 until a parse) */
  gp_srv_job **jobs;  /* read, in row order; NULL where rcs[i] != 0 */
  int *rcs;           /* 0, or the error reading row i (read again for the message) */
  bool *from_doc;     /* row i was read from its document (no record, or one that did not read) */
  int64_t *backfill;  /* the jobs taken that were read from their documents */
  int n_backfill;
  size_t cap_backfill;
} gp__srv_job_batch;

/* Reads every row of the batch into jobs[i] (or an error in rcs[i]) over up to `threads`
 * threads; the rows stay until the reset. */
void gp__srv_job_batch_parse(gp__srv_job_batch *b, int threads);
/* Takes row i's job out of the batch (0), or says why the row does not read, naming the
 * job (GP_EPARSE). A record that does not read while its document does is reported on
 * stderr and the document's job taken. */
int gp__srv_job_batch_take(gp__srv_job_batch *b, int i, gp_srv_job **ret, gp_err *err);
/* Empties the batch for the next rows (the jobs left in it are freed). */
void gp__srv_job_batch_reset(gp__srv_job_batch *b);
void gp__srv_job_batch_free(gp__srv_job_batch *b);
/* Writes, in one transaction, the document and load record of every job taken from its
 * document that is still in memory; a failure is reported on stderr and left for the next
 * start (the documents stay the truth). */
void gp__srv_job_batch_backfill(struct gp_srv_state *s, gp__srv_job_batch *b);

/* Timeline events: the same for rows of job_events (their docs; no records). */
typedef struct gp__srv_event_batch {
  gp__srv_rows rows;
  int parsed;
  json_t **events;    /* parsed, in row order; NULL where a document is not JSON */
} gp__srv_event_batch;

void gp__srv_event_batch_parse(gp__srv_event_batch *b, int threads);
/* Frees the documents and the events not taken (events[i] set to NULL once taken). */
void gp__srv_event_batch_reset(gp__srv_event_batch *b);
void gp__srv_event_batch_free(gp__srv_event_batch *b);

#endif
