/* SPDX-License-Identifier: Apache-2.0 */
/* A cluster trace in memory: the jobs a replay feeds to the scheduler, whatever file they
 * came from (Microsoft Philly, Alibaba openb pod lists, or gpool's generic CSV/JSONL that
 * users export from their own scheduler, e.g. with sacct).
 *
 * Readers validate every row (the file is untrusted): a bad row is reported with its
 * line number and either skipped or fatal (gp_trace_opts.skip_bad). After reading, jobs
 * are sorted by (submit time, line), so unsorted input is fine and the order is
 * deterministic. Strings (queues, users, priority classes, GPU model lists) are interned:
 * jobs refer to them by index into gp_trace.names, which keeps 82k-job traces compact. */
#ifndef GP_SIM_TRACE_TRACE_H
#define GP_SIM_TRACE_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"
#include "util/error.h"

#define GP_TRACE_MAX_BYTES ((size_t)1 << 30)  /* 1 GiB of text */
#define GP_TRACE_MAX_JOBS 20000000
#define GP_TRACE_MAX_LINE 65536               /* bytes in one row */
#define GP_TRACE_MAX_NAMES 1000000            /* distinct interned strings */
#define GP_TRACE_MAX_GPUS 100000              /* GPUs of one job */
#define GP_TRACE_MAX_TIME ((int64_t)1 << 40)  /* seconds: ~35,000 years, keeps sums exact */
#define GP_TRACE_MAX_REPORTED 20              /* bad rows quoted in full; the rest counted */

typedef enum gp_trace_format {
  GP_TRACE_AUTO = 0, /* by extension (.jsonl, .ndjson) and CSV header */
  GP_TRACE_PHILLY,   /* timestamp,duration,num_gpus,gpu_time,cluster */
  GP_TRACE_OPENB,    /* name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,...,creation_time,deletion_time */
  GP_TRACE_CSV,      /* gpool's generic CSV (docs/simulator.md) */
  GP_TRACE_JSONL,    /* the same fields, one JSON object a line */
} gp_trace_format;

typedef struct gp_trace_job {
  int64_t submit;      /* seconds on the trace's clock (Philly: Unix time, UTC) */
  int64_t duration;    /* seconds of work the job needs when it runs undisturbed */
  int64_t time_limit;  /* seconds, from the trace; 0 when the trace has none */
  int gpus;            /* whole GPUs of the whole job; 0 for a fractional or CPU-only job */
  int tasks;           /* gang size as the trace gives it; 0: not given (the replay splits
                          `gpus` over nodes with gp_trace_split_gang) */
  int gpu_milli;       /* 1..999 for a fractional share of one GPU, else 0 */
  int64_t cpu_milli;   /* per task, 0: not constrained */
  int64_t mem_mib;     /* per task, 0: not constrained */
  int queue;           /* index into names; always set */
  int user;            /* index into names, or -1 */
  int priority;        /* priority class name, index into names, or -1 */
  int gpu_models;      /* '|'-separated accepted models, index into names, or -1: any */
  int id;              /* the trace's own job name, index into names, or -1 */
  int line;            /* 1-based line of the row in the file */
  int64_t idle_tail;   /* seconds at the end of the run during which the job holds its GPUs
                          idle (generic formats' `idle_tail`, 0..duration); 0: none */
} gp_trace_job;

typedef struct gp_trace {
  char *source;          /* file name, for messages */
  gp_trace_format format;
  size_t n_jobs;
  gp_trace_job *jobs;    /* sorted by (submit, line) */
  size_t n_names;
  char **names;          /* interned strings */
  bool has_idle_tail;    /* some row gave `idle_tail` (the generic formats' optional field) */
  size_t bad_rows;       /* rows skipped as malformed (with skip_bad) */
  gp_buf bad_report;     /* "file:line: field: problem\n" for the first GP_TRACE_MAX_REPORTED */
  /* internal: the intern hash table */
  size_t hash_cap;
  int *hash;
} gp_trace;

typedef struct gp_trace_opts {
  gp_trace_format format; /* GP_TRACE_AUTO to detect */
  bool skip_bad;          /* skip malformed rows (counted and reported) instead of failing */
  size_t max_jobs;        /* stop after this many jobs (0: GP_TRACE_MAX_JOBS); rows are
                             taken in file order, before sorting */
  bool shapes;            /* an openb pod list read for its pods' shapes (gpool sim frag):
                             times are not read (every job submits at 0 with duration 0,
                             so jobs keep file order), cpu_milli and memory_mib are required,
                             and gpu_milli without GPUs is an error */
} gp_trace_opts;

/* Reads a trace file. On success returns 0 and stores a new trace in *ret (free with
 * gp_trace_free). Fails with GP_EIO (cannot read), GP_ELIMIT (over a bound), GP_EINVAL
 * (bad header or, without skip_bad, the first bad row: err names file, line and field) or
 * GP_EINVAL for a trace with no job at all. */
int gp_trace_read_file(const char *path, const gp_trace_opts *opts, gp_trace **ret,
                       gp_err *err);
/* The same from text in memory; `name` names it in messages and drives auto-detection. */
int gp_trace_read_string(const char *name, const char *text, size_t len,
                         const gp_trace_opts *opts, gp_trace **ret, gp_err *err);
void gp_trace_free(gp_trace *t); /* accepts NULL */

/* The interned string, or NULL for -1. */
static inline const char *gp_trace_name(const gp_trace *t, int idx) {
  return idx < 0 ? NULL : t->names[idx];
}

/* "philly", "openb", "csv", "jsonl", "auto" and the parser; 0 or GP_EINVAL. */
const char *gp_trace_format_name(gp_trace_format f);
int gp_trace_format_parse(const char *s, gp_trace_format *ret);

/* Splits a total GPU count into a gang: one task when it fits on a node of `node_gpus`
 * GPUs, else the fewest tasks of equal whole-GPU size that fit (12 GPUs on 8-GPU nodes:
 * 2 tasks of 6). Used for traces that give only a total (Philly). */
void gp_trace_split_gang(int total_gpus, int node_gpus, int *ret_tasks, int *ret_per_task);

#endif
