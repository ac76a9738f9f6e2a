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

#include "server/job.h"
#include "util/buf.h"
#include "util/error.h"

/* The record of `j` (malloc'd text, never NULL). */
char *gp__srv_job_store_rec(const gp_srv_job *j);
/* Rebuilds a job from a record; GP_EPARSE naming the part that does not read when the record
 * is damaged (the caller then falls back to the document). */
int gp__srv_job_from_rec(const char *rec, gp_srv_job **ret, gp_err *err);
/* Whether a stored text is a load record (else a JSON document). */
bool gp__srv_job_is_rec(const char *text);

/* For jobrec.c, from jobdoc.c and jobjson.c: the document's sections that only some jobs
 * have (mail, container, array, what its runs left), appended as `,"key":value` pieces; a
 * new job as the parsers start it; and the reading of those sections from an object that
 * holds only them. */
void gp__srv_job_doc_rest(gp_buf *b, const gp_srv_job *j);
gp_srv_job *gp__srv_job_blank(void);
int gp__srv_job_read_rest(const json_t *o, gp_srv_job *j, gp_err *err);

#endif
