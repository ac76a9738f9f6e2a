/* SPDX-License-Identifier: Apache-2.0 */
/* The trace container: loading a file (bounded), choosing the reader, interning strings,
 * sorting jobs into a deterministic order, and the bookkeeping of bad rows. */
#include "sim/trace/trace.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/trace/reader.h"
#include "util/mem.h"

static const char *const format_names[] = {
    [GP_TRACE_AUTO] = "auto", [GP_TRACE_PHILLY] = "philly", [GP_TRACE_OPENB] = "openb",
    [GP_TRACE_CSV] = "csv",   [GP_TRACE_JSONL] = "jsonl"};

const char *gp_trace_format_name(gp_trace_format f) {
  return (unsigned)f < sizeof format_names / sizeof format_names[0] ? format_names[f] : "unknown";
}

int gp_trace_format_parse(const char *s, gp_trace_format *ret) {
  for (unsigned i = 0; s && i < sizeof format_names / sizeof format_names[0]; i++)
    if (strcmp(s, format_names[i]) == 0) {
      *ret = (gp_trace_format)i;
      return 0;
    }
  return GP_EINVAL;
}

void gp_trace_split_gang(int total_gpus, int node_gpus, int *ret_tasks, int *ret_per_task) {
  if (total_gpus <= 0 || node_gpus <= 0 || total_gpus <= node_gpus) {
    *ret_tasks = 1;
    *ret_per_task = total_gpus > 0 ? total_gpus : 0;
    return;
  }
  /* The largest divisor of the total that fits a node gives the fewest equal tasks. */
  for (int per = node_gpus; per >= 1; per--)
    if (total_gpus % per == 0) {
      *ret_tasks = total_gpus / per;
      *ret_per_task = per;
      return;
    }
  *ret_tasks = total_gpus;
  *ret_per_task = 1;
}

static uint64_t hash_bytes(const char *s, size_t n) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
  return h;
}

int gp__sim_trace_intern(gp_trace *t, const char *s, size_t n, int *ret, gp_err *err) {
  if (t->n_names * 2 >= t->hash_cap) {
    size_t cap = t->hash_cap ? t->hash_cap * 2 : 256;
    int *h = gp_xmalloc(cap * sizeof *h);
    for (size_t i = 0; i < cap; i++) h[i] = -1;
    for (size_t i = 0; i < t->n_names; i++) {
      size_t k = hash_bytes(t->names[i], strlen(t->names[i])) & (cap - 1);
      while (h[k] >= 0) k = (k + 1) & (cap - 1);
      h[k] = (int)i;
    }
    free(t->hash);
    t->hash = h;
    t->hash_cap = cap;
  }
  size_t k = hash_bytes(s, n) & (t->hash_cap - 1);
  while (t->hash[k] >= 0) {
    const char *c = t->names[t->hash[k]];
    if (strncmp(c, s, n) == 0 && c[n] == '\0') {
      *ret = t->hash[k];
      return 0;
    }
    k = (k + 1) & (t->hash_cap - 1);
  }
  if (t->n_names >= GP_TRACE_MAX_NAMES)
    return gp_err_set(err, GP_ELIMIT, t->source, 0, NULL,
                      "more than %d distinct queue/user/model names", GP_TRACE_MAX_NAMES);
  if ((t->n_names & (t->n_names - 1)) == 0) /* grow at powers of two */
    t->names = gp_xrealloc(t->names, (t->n_names ? t->n_names * 2 : 1) * sizeof *t->names);
  t->names[t->n_names] = gp_xstrndup(s, n);
  t->hash[k] = (int)t->n_names;
  *ret = (int)t->n_names++;
  return 0;
}

int gp__sim_trace_bad_row(gp_trace *t, const gp_trace_opts *o, gp_err *err) {
  if (!o->skip_bad || err->code == GP_ELIMIT) return err->code ? err->code : GP_EINVAL;
  if (t->bad_rows < GP_TRACE_MAX_REPORTED) {
    char msg[1024];
    gp_err_format(err, msg, sizeof msg);
    gp_buf_printf(&t->bad_report, "%s\n", msg);
  }
  t->bad_rows++;
  memset(err, 0, sizeof *err);
  return 0;
}

static int cmp_jobs(const void *a, const void *b) {
  const gp_trace_job *x = a, *y = b;
  if (x->submit != y->submit) return x->submit < y->submit ? -1 : 1;
  return (x->line > y->line) - (x->line < y->line);
}

static bool ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Picks the format from the name and the first line (the CSV header). */
static gp_trace_format detect(const char *name, const char *text, size_t len) {
  if (ends_with(name, ".jsonl") || ends_with(name, ".ndjson")) return GP_TRACE_JSONL;
  size_t i = 0;
  while (i < len && (text[i] == ' ' || text[i] == '\t' || text[i] == '\r' || text[i] == '\n')) i++;
  if (i < len && text[i] == '{') return GP_TRACE_JSONL;
  const char *nl = memchr(text, '\n', len);
  size_t hl = nl ? (size_t)(nl - text) : len;
  char header[1024];
  if (hl >= sizeof header) hl = sizeof header - 1;
  memcpy(header, text, hl);
  header[hl] = '\0';
  if (strstr(header, "timestamp") && strstr(header, "num_gpus") && strstr(header, "cluster"))
    return GP_TRACE_PHILLY;
  if (strstr(header, "creation_time") || (strstr(header, "num_gpu") && strstr(header, "gpu_milli")))
    return GP_TRACE_OPENB;
  if (strstr(header, "submit_time")) return GP_TRACE_CSV;
  return GP_TRACE_AUTO;
}

static gp_trace *trace_new(const char *name) {
  gp_trace *t = gp_xcalloc(1, sizeof *t);
  t->source = gp_xstrdup(name);
  gp_buf_init(&t->bad_report, 64 << 10);
  return t;
}

void gp_trace_free(gp_trace *t) {
  if (!t) return;
  for (size_t i = 0; i < t->n_names; i++) free(t->names[i]);
  free(t->names);
  free(t->hash);
  free(t->jobs);
  free(t->source);
  gp_buf_done(&t->bad_report);
  free(t);
}

/* `text` must be writable and NUL-terminated at len: the readers split it in place. */
static int read_text(const char *name, char *text, size_t len, const gp_trace_opts *opts,
                     gp_trace **ret, gp_err *err) {
  gp_trace_opts o = opts ? *opts : (gp_trace_opts){0};
  if (!o.max_jobs || o.max_jobs > GP_TRACE_MAX_JOBS) o.max_jobs = GP_TRACE_MAX_JOBS;
  gp_trace_format fmt = o.format != GP_TRACE_AUTO ? o.format : detect(name, text, len);
  if (fmt == GP_TRACE_AUTO)
    return gp_err_set(err, GP_EINVAL, name, 1, "format",
                      "cannot tell the trace format from the name or header; pass --format "
                      "philly|openb|csv|jsonl");
  gp_trace *t = trace_new(name);
  t->format = fmt;
  gp_err local = {0};
  int rc = fmt == GP_TRACE_JSONL ? gp__sim_trace_read_jsonl(t, text, len, &o, &local)
                                 : gp__sim_trace_read_csv(t, fmt, text, len, &o, &local);
  if (rc == 0 && t->n_jobs == 0 && t->bad_rows)
    rc = gp_err_set(&local, GP_EINVAL, name, 0, NULL,
                    "no valid job in the trace (%zu bad rows; first: %s)", t->bad_rows,
                    t->bad_report.data ? t->bad_report.data : "");
  else if (rc == 0 && t->n_jobs == 0)
    rc = gp_err_set(&local, GP_EINVAL, name, 0, NULL, "no job in the trace");
  if (rc) {
    if (err) *err = local;
    gp_trace_free(t);
    return rc;
  }
  qsort(t->jobs, t->n_jobs, sizeof *t->jobs, cmp_jobs);
  *ret = t;
  return 0;
}

int gp_trace_read_string(const char *name, const char *text, size_t len,
                         const gp_trace_opts *opts, gp_trace **ret, gp_err *err) {
  if (len > GP_TRACE_MAX_BYTES)
    return gp_err_set(err, GP_ELIMIT, name, 0, NULL, "trace larger than %zu bytes",
                      GP_TRACE_MAX_BYTES);
  char *copy = gp_xmalloc(len + 1);
  memcpy(copy, text, len);
  copy[len] = '\0';
  int rc = read_text(name, copy, len, opts, ret, err);
  free(copy);
  return rc;
}

int gp_trace_read_file(const char *path, const gp_trace_opts *opts, gp_trace **ret,
                       gp_err *err) {
  FILE *f = fopen(path, "rb");
  if (!f) return gp_err_set(err, GP_EIO, path, 0, NULL, "cannot open: %s", strerror(errno));
  size_t cap = 1 << 20, len = 0;
  char *text = gp_xmalloc(cap);
  for (;;) {
    if (len + 1 >= cap) {
      if (cap > GP_TRACE_MAX_BYTES) {
        free(text);
        fclose(f);
        return gp_err_set(err, GP_ELIMIT, path, 0, NULL, "trace larger than %zu bytes",
                          GP_TRACE_MAX_BYTES);
      }
      cap *= 2;
      text = gp_xrealloc(text, cap);
    }
    size_t n = fread(text + len, 1, cap - len - 1, f);
    len += n;
    if (n == 0) break;
  }
  int bad = ferror(f);
  fclose(f);
  if (bad) {
    free(text);
    return gp_err_set(err, GP_EIO, path, 0, NULL, "read error");
  }
  if (len > GP_TRACE_MAX_BYTES) {
    free(text);
    return gp_err_set(err, GP_ELIMIT, path, 0, NULL, "trace larger than %zu bytes",
                      GP_TRACE_MAX_BYTES);
  }
  text[len] = '\0';
  int rc = read_text(path, text, len, opts, ret, err);
  free(text);
  return rc;
}
