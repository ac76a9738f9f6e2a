/* SPDX-License-Identifier: Apache-2.0 */
/* A job's load record (jobrec.c): what the server needs to rebuild a job at start, kept in
 * the store beside its JSON document (the jobs table's `rec` column, store.h) in a form
 * that reads without a JSON parse, so that a restart costs what copying the fields costs
 * rather than parsing every document (docs/perf/server.md, "Loading the store at start").
 * The document stays the truth for readers of the history and for stores written before
 * the record existed; the record must rebuild exactly the job the document does
 * (tests/server/jobrec_test.c checks both ways on many jobs).
 *
 * Internal to src/server (gp__srv_ names). */
#ifndef GP_SERVER_JOBREC_H
#define GP_SERVER_JOBREC_H

#include <jansson.h>

#include "server/state/job.h"
#include "util/error.h"

/* The record of `j` (malloc'd text, never NULL); jobdoc.c. */
char *gp__srv_job_store_rec(const gp_srv_job *j);
/* Rebuilds a job from a record; GP_EPARSE naming the part that does not read when the record
 * is damaged (the caller then falls back to the document); jobjson.c. */
int gp__srv_job_from_rec(const char *rec, gp_srv_job **ret, gp_err *err);
/* Whether a stored text is a load record (else a JSON document). */
bool gp__srv_job_is_rec(const char *text);

/* jobrec.c's two halves, for the two above: the record of `j` with `rest` (its document's
 * sections that only some jobs have, as one JSON object; NULL: none), and the reading of
 * one into a new job's fields, with *rest pointing into `rec` at that object (NULL: none). */
char *gp__srv_rec_encode(const gp_srv_job *j, const char *rest, size_t rest_len);
int gp__srv_rec_decode(const char *rec, gp_srv_job *j, const char **rest, size_t *rest_len,
                       gp_err *err);

#endif
