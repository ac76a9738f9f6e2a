/* SPDX-License-Identifier: Apache-2.0 */
/* Stored job documents and their timeline events parsed in parallel at load (load_jobs.c):
 * parsing is most of a restart's cost (~20 µs a job), and each row is parsed on its own, so
 * a batch of them is spread over the CPUs; the state thread then inserts the results in the
 * store's order. */
#ifndef GPOOL_SERVER_LOAD_JOBS_H
#define GPOOL_SERVER_LOAD_JOBS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "server/job.h"

typedef struct gp__srv_job_batch {
  int n, cap;
  size_t bytes;       /* of the documents held */
  int64_t *ids;       /* each row's id column */
  char **docs;        /* copies of the documents (the store's text lives one row) */
  gp_srv_job **jobs;  /* parsed, in row order; NULL where rcs[i] != 0 */
  int *rcs;          /* 0, or the error parsing row i (parse it again for the message) */
} gp__srv_job_batch;

/* Adds a row (the document copied); true when the batch should be parsed now. */
bool gp__srv_job_batch_add(gp__srv_job_batch *b, int64_t id, const char *doc);
/* Parses every document of the batch into jobs[i] (or an error in rcs[i]) over up to
 * `threads` threads; the documents stay until the reset. */
void gp__srv_job_batch_parse(gp__srv_job_batch *b, int threads);
/* Empties the batch for the next rows (the jobs left in it must have been taken). */
void gp__srv_job_batch_reset(gp__srv_job_batch *b);
void gp__srv_job_batch_free(gp__srv_job_batch *b);

/* Timeline events: the same for rows of job_events. */
typedef struct gp__srv_event_batch {
  int n, cap;
  size_t bytes;
  int64_t *job_ids;
  char **docs;
  json_t **events;    /* parsed, in row order; NULL where a document is not JSON */
} gp__srv_event_batch;

bool gp__srv_event_batch_add(gp__srv_event_batch *b, int64_t job_id, const char *doc);
void gp__srv_event_batch_parse(gp__srv_event_batch *b, int threads);
/* Frees the documents and the events not taken (events[i] set to NULL once taken). */
void gp__srv_event_batch_reset(gp__srv_event_batch *b);
void gp__srv_event_batch_free(gp__srv_event_batch *b);

#endif
