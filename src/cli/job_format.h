/* SPDX-License-Identifier: Apache-2.0 */
/* How a job (the API's JOB object) reads for a person: its GPU request in a few
 * characters, where it runs, how long it has been in its state, the full `gpool show`
 * text and the `gpool why` sentence. Pure formatting of JSON: no network, so tests can
 * feed it the documented shapes. */
#ifndef GP_CLI_JOB_FORMAT_H
#define GP_CLI_JOB_FORMAT_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "util/buf.h"

/* "8", "2x8", "0.5", "20G/GPU", "mig 1g.10gb", "-" (CPU only). */
void gp_job_fmt_gpus(json_t *job, char *out, size_t cap);
/* "n1", "n1,n2", "n1,n2,n3+5", "" when not placed. */
void gp_job_fmt_nodes(json_t *job, char *out, size_t cap);
/* Seconds in the current state as of `now` (waiting, running or ran). */
int64_t gp_job_elapsed(json_t *job, int64_t now);
/* The one-line pending reason, end reason or "" for the jobs table. */
const char *gp_job_reason(json_t *job);
/* True for a state from which a job never moves again. */
int gp_job_state_final(const char *state);

/* The whole `gpool show` text into out. */
void gp_job_fmt_show(json_t *job, int64_t now, gp_buf *out);
/* `gpool why`: one or two sentences, ending in a newline. */
void gp_job_fmt_why(json_t *job, int64_t now, gp_buf *out);

#endif
