/* SPDX-License-Identifier: Apache-2.0 */
/* Internal to the trace readers: every format is mapped to one set of named columns, so
 * a Philly row, an openb pod, a generic CSV row and a JSONL object all become a `row` of
 * optional strings and go through one validating converter (row.c). */
#ifndef GP_SIM_TRACE_READER_H
#define GP_SIM_TRACE_READER_H

#include "sim/trace/trace.h"

typedef enum gp__sim_trace_col {
  GP__COL_SUBMIT = 0, /* seconds or "YYYY-MM-DD HH:MM:SS" (UTC) */
  GP__COL_END,        /* openb deletion_time: duration = end - submit */
  GP__COL_DURATION,   /* seconds, or "4h", "1-00:00:00" */
  GP__COL_GPUS,       /* total GPUs; a fraction (0.5) for a shared GPU */
  GP__COL_GPU_MILLI,  /* openb: share of one GPU in thousandths */
  GP__COL_TASKS,
  GP__COL_QUEUE,
  GP__COL_USER,
  GP__COL_PRIORITY,
  GP__COL_TIME_LIMIT,
  GP__COL_GPU_MODEL,
  GP__COL_CPU_MILLI,
  GP__COL_MEM_MIB,
  GP__COL_ID,
  GP__COL_IDLE_TAIL,  /* generic: seconds idle at the end of the run, 0..duration */
  GP__COL_COUNT
} gp__sim_trace_col;

/* One input row: values by column (NULL or "" when absent) and where it came from. */
typedef struct gp__sim_trace_row {
  const char *v[GP__COL_COUNT];
  const char *name[GP__COL_COUNT]; /* the column's name in the input, for messages */
  int line;
} gp__sim_trace_row;

/* Converts a row to a job and appends it to t. Returns 0, or GP_EINVAL with err naming
 * the file, line and field. */
int gp__sim_trace_add_row(gp_trace *t, gp_trace_format fmt, const gp_trace_opts *o,
                      const gp__sim_trace_row *row, gp_err *err);

/* Interns s[0..n) and stores its index; GP_ELIMIT past GP_TRACE_MAX_NAMES. */
int gp__sim_trace_intern(gp_trace *t, const char *s, size_t n, int *ret, gp_err *err);

/* "2017-10-09 07:01:55" (also with 'T', optional 'Z') as UTC, or plain seconds (a
 * fraction is rounded). 0 or GP_EINVAL. */
int gp__sim_trace_parse_time(const char *s, int64_t *ret);

/* Splits a CSV line in place (RFC 4180 quoting, no embedded newlines). Returns the number
 * of fields, or -1 for more than `max` fields or a broken quote. */
int gp__sim_csv_split(char *line, char **fields, int max);

/* A file of at most `max` bytes as one NUL-terminated string (malloc'd; its length in
 * *ret_len), or NULL with err set (GP_EIO, GP_ELIMIT). */
char *gp__sim_trace_slurp(const char *path, size_t max, size_t *ret_len, gp_err *err);

/* Cuts the next line out of a NUL-terminated text, advancing *cursor past it, and trims
 * trailing CR and spaces; an empty string for a blank line. */
char *gp__sim_trace_next_line(char **cursor);

/* Readers of the two families. */
int gp__sim_trace_read_csv(gp_trace *t, gp_trace_format fmt, char *text, size_t len,
                       const gp_trace_opts *o, gp_err *err);
int gp__sim_trace_read_jsonl(gp_trace *t, char *text, size_t len, const gp_trace_opts *o,
                         gp_err *err);

/* Records a bad row: fails (returns err->code) without skip_bad, else counts it, keeps
 * the first messages in t->bad_report and returns 0. */
int gp__sim_trace_bad_row(gp_trace *t, const gp_trace_opts *o, gp_err *err);

#endif
