/* SPDX-License-Identifier: Apache-2.0 */
/* The CSV family of trace readers (Philly, openb pod lists, gpool's generic CSV): a header
 * line names the columns, each format maps its column names onto the common row columns,
 * and every data line becomes a row for the shared converter. Blank lines are ignored;
 * a line longer than GP_TRACE_MAX_LINE or with a broken quote is a bad row. */
#include <string.h>

#include "sim/trace/reader.h"

#define MAX_FIELDS 64

typedef struct colmap {
  const char *header; /* name in the file */
  gp__sim_trace_col col;
} colmap;

static const colmap philly_cols[] = {
    {"timestamp", GP__COL_SUBMIT}, {"duration", GP__COL_DURATION},
    {"num_gpus", GP__COL_GPUS},    {"cluster", GP__COL_QUEUE},
    {NULL, 0}};
static const colmap openb_cols[] = {
    {"name", GP__COL_ID},          {"cpu_milli", GP__COL_CPU_MILLI},
    {"memory_mib", GP__COL_MEM_MIB}, {"num_gpu", GP__COL_GPUS},
    {"gpu_milli", GP__COL_GPU_MILLI}, {"gpu_spec", GP__COL_GPU_MODEL},
    {"creation_time", GP__COL_SUBMIT}, {"deletion_time", GP__COL_END},
    {NULL, 0}};
static const colmap generic_cols[] = {
    {"submit_time", GP__COL_SUBMIT}, {"duration", GP__COL_DURATION},
    {"gpus", GP__COL_GPUS},          {"tasks", GP__COL_TASKS},
    {"queue", GP__COL_QUEUE},        {"user", GP__COL_USER},
    {"priority", GP__COL_PRIORITY},  {"time_limit", GP__COL_TIME_LIMIT},
    {"gpu_model", GP__COL_GPU_MODEL}, {"id", GP__COL_ID},
    {"idle_tail", GP__COL_IDLE_TAIL}, {NULL, 0}};

/* Columns a format cannot do without. */
static const char *const philly_required[] = {"timestamp", "duration", "num_gpus", "cluster", NULL};
static const char *const openb_required[] = {"num_gpu", "gpu_milli", NULL};
static const char *const openb_shape_required[] = {"cpu_milli", "memory_mib", "num_gpu", "gpu_milli", NULL};
static const char *const generic_required[] = {"submit_time", "duration", "gpus", NULL};

int gp__sim_csv_split(char *line, char **fields, int max) {
  int n = 0;
  char *p = line;
  for (;;) {
    if (n >= max) return -1;
    if (*p == '"') {
      /* Quoted: "" is a quote; the field ends at the closing quote. */
      char *w = ++p, *start = w;
      for (;;) {
        if (*p == '\0') return -1;
        if (*p == '"') {
          if (p[1] == '"') {
            *w++ = '"';
            p += 2;
            continue;
          }
          p++;
          break;
        }
        *w++ = *p++;
      }
      if (*p != ',' && *p != '\0') return -1;
      char next = *p;
      *w = '\0';
      fields[n++] = start;
      if (next == '\0') return n;
      p++;
    } else {
      fields[n++] = p;
      char *c = strchr(p, ',');
      if (!c) return n;
      *c = '\0';
      p = c + 1;
    }
  }
}

/* Strips a trailing CR and surrounding blanks of an unquoted field. */
static char *trim(char *s) {
  while (*s == ' ' || *s == '\t') s++;
  size_t n = strlen(s);
  while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r')) s[--n] = '\0';
  return s;
}

int gp__sim_trace_read_csv(gp_trace *t, gp_trace_format fmt, char *text, size_t len,
                       const gp_trace_opts *o, gp_err *err) {
  const colmap *cols = fmt == GP_TRACE_PHILLY  ? philly_cols
                       : fmt == GP_TRACE_OPENB ? openb_cols
                                               : generic_cols;
  const char *const *required = fmt == GP_TRACE_PHILLY  ? philly_required
                                : fmt == GP_TRACE_OPENB ? (o->shapes ? openb_shape_required : openb_required)
                                                        : generic_required;
  int index_of[GP__COL_COUNT]; /* field index in a row, -1: absent */
  const char *names[GP__COL_COUNT] = {0};
  for (int c = 0; c < GP__COL_COUNT; c++) index_of[c] = -1;
  int n_header = -1;
  char *fields[MAX_FIELDS];
  char *p = text, *end = text + len;
  int line = 0;
  while (p < end) {
    char *nl = memchr(p, '\n', (size_t)(end - p));
    char *line_end = nl ? nl : end;
    size_t line_len = (size_t)(line_end - p);
    *line_end = '\0';
    char *s = p;
    p = nl ? nl + 1 : end;
    line++;
    char *body = trim(s);
    if (*body == '\0') continue;
    if (n_header < 0) {
      /* The header: map names to columns, check the required ones are there. */
      if (line_len > GP_TRACE_MAX_LINE)
        return gp_err_set(err, GP_ELIMIT, t->source, line, NULL, "header line too long");
      n_header = gp__sim_csv_split(body, fields, MAX_FIELDS);
      if (n_header < 0)
        return gp_err_set(err, GP_EINVAL, t->source, line, NULL,
                          "cannot read the CSV header (broken quote or over %d columns)",
                          MAX_FIELDS);
      for (int i = 0; i < n_header; i++) {
        char *h = trim(fields[i]);
        for (const colmap *m = cols; m->header; m++)
          if (strcmp(h, m->header) == 0 && index_of[m->col] < 0) {
            index_of[m->col] = i;
            names[m->col] = m->header;
          }
      }
      for (const char *const *r = required; *r; r++) {
        bool found = false;
        for (const colmap *m = cols; m->header; m++)
          if (strcmp(m->header, *r) == 0 && index_of[m->col] >= 0) found = true;
        if (!found)
          return gp_err_set(err, GP_EINVAL, t->source, line, *r,
                            "missing column '%s' in the %s trace header", *r,
                            gp_trace_format_name(fmt));
      }
      continue;
    }
    if (t->n_jobs >= o->max_jobs) break;
    int rc;
    if (line_len > GP_TRACE_MAX_LINE) {
      gp_err_set(err, GP_EINVAL, t->source, line, NULL, "row longer than %d bytes",
                 GP_TRACE_MAX_LINE);
      if ((rc = gp__sim_trace_bad_row(t, o, err))) return rc;
      continue;
    }
    int n = gp__sim_csv_split(body, fields, MAX_FIELDS);
    if (n < 0 || n != n_header) {
      if (n < 0)
        gp_err_set(err, GP_EINVAL, t->source, line, NULL, "broken quote or over %d fields",
                   MAX_FIELDS);
      else
        gp_err_set(err, GP_EINVAL, t->source, line, NULL, "%d fields, the header has %d", n,
                   n_header);
      if ((rc = gp__sim_trace_bad_row(t, o, err))) return rc;
      continue;
    }
    gp__sim_trace_row row = {.line = line};
    for (int c = 0; c < GP__COL_COUNT; c++) {
      row.name[c] = names[c];
      row.v[c] = index_of[c] >= 0 ? trim(fields[index_of[c]]) : NULL;
    }
    if (gp__sim_trace_add_row(t, fmt, o, &row, err) && (rc = gp__sim_trace_bad_row(t, o, err))) return rc;
  }
  if (n_header < 0)
    return gp_err_set(err, GP_EINVAL, t->source, 0, NULL, "empty trace: no header line");
  return 0;
}
