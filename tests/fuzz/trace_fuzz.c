/* SPDX-License-Identifier: Apache-2.0 */
/* Cluster traces as the simulator reads them: each input is read as a Philly trace, an
 * openb pod list (with times, and for its pods' shapes as `gpool sim frag` reads it),
 * gpool's generic CSV and JSONL, each strict and with bad rows skipped; and as an openb node
 * list (gp_node_list_read, which takes a path: the input goes to a temporary file). A trace
 * that reads holds jobs sorted by (submit, line) with interned names in range. */

#include "fuzz.h"
#include "sim/trace/node_list.h"
#include "sim/trace/trace.h"

static void check_trace(const gp_trace *t) {
  fuzz_check(t->n_jobs > 0);
  for (size_t i = 0; i < t->n_jobs; i++) {
    const gp_trace_job *j = &t->jobs[i];
    fuzz_check(j->queue >= 0 && (size_t)j->queue < t->n_names);
    fuzz_check(j->user < 0 || (size_t)j->user < t->n_names);
    fuzz_check(j->priority < 0 || (size_t)j->priority < t->n_names);
    fuzz_check(j->gpu_models < 0 || (size_t)j->gpu_models < t->n_names);
    fuzz_check(j->id < 0 || (size_t)j->id < t->n_names);
    fuzz_check(j->duration >= 0 && j->gpus >= 0);
    if (i) {
      const gp_trace_job *p = &t->jobs[i - 1];
      fuzz_check(p->submit < j->submit || (p->submit == j->submit && p->line < j->line));
    }
  }
}

static void read_as(const char *name, const char *text, size_t len, gp_trace_format fmt,
                    bool skip_bad, bool shapes) {
  gp_trace_opts o = {.format = fmt, .skip_bad = skip_bad, .shapes = shapes};
  gp_trace *t = NULL;
  gp_err err = {0};
  if (gp_trace_read_string(name, text, len, &o, &t, &err) == 0) {
    check_trace(t);
    gp_trace_free(t);
  } else {
    fuzz_check(t == NULL && err.message[0] != '\0');
  }
}

static int count_row(void *arg, const gp_node_row *row, gp_err *err) {
  (void)err;
  fuzz_check(row->gpus >= 0 && row->line >= 1);
  ++*(int *)arg;
  return 0;
}

static void read_node_list(const uint8_t *data, size_t size) {
  const char *path = fuzz_write_file("nodes.csv", data, size);
  int rows = 0;
  gp_err err = {0};
  if (gp_node_list_read(path, count_row, &rows, &err) != 0) fuzz_check(err.message[0] != '\0');
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *text = (const char *)data;
  for (int skip = 0; skip <= 1; skip++) {
    read_as("fuzz.csv", text, size, GP_TRACE_PHILLY, skip, false);
    read_as("fuzz.csv", text, size, GP_TRACE_OPENB, skip, false);
    read_as("fuzz.csv", text, size, GP_TRACE_OPENB, skip, true);
    read_as("fuzz.csv", text, size, GP_TRACE_CSV, skip, false);
    read_as("fuzz.jsonl", text, size, GP_TRACE_JSONL, skip, false);
    read_as("fuzz.csv", text, size, GP_TRACE_AUTO, skip, false);
  }
  read_node_list(data, size);
  return 0;
}
