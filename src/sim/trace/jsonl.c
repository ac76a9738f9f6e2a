/* SPDX-License-Identifier: Apache-2.0 */
/* The JSONL trace reader: one JSON object per line with the generic format's keys
 * (docs/simulator.md). Values may be numbers or strings ("4h"); unknown keys are ignored
 * so exports from other tools need no cleaning; a line that is not an object is a bad row. */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "sim/trace/reader.h"

static const struct {
  const char *key;
  gp__sim_trace_col col;
} keys[] = {
    {"submit_time", GP__COL_SUBMIT}, {"duration", GP__COL_DURATION},
    {"gpus", GP__COL_GPUS},          {"tasks", GP__COL_TASKS},
    {"queue", GP__COL_QUEUE},        {"user", GP__COL_USER},
    {"priority", GP__COL_PRIORITY},  {"time_limit", GP__COL_TIME_LIMIT},
    {"gpu_model", GP__COL_GPU_MODEL}, {"id", GP__COL_ID},
    {"idle_tail", GP__COL_IDLE_TAIL},
};

int gp__sim_trace_read_jsonl(gp_trace *t, char *text, size_t len, const gp_trace_opts *o,
                         gp_err *err) {
  char *p = text, *end = text + len;
  int line = 0, rc;
  /* Numbers are printed back to text for the shared converter; 32 bytes hold any. */
  char numbuf[GP__COL_COUNT][40];
  while (p < end) {
    char *nl = memchr(p, '\n', (size_t)(end - p));
    char *line_end = nl ? nl : end;
    size_t n = (size_t)(line_end - p);
    char *s = p;
    p = nl ? nl + 1 : end;
    line++;
    while (n && (s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t')) n--;
    while (n && (*s == ' ' || *s == '\t')) s++, n--;
    if (n == 0) continue;
    if (t->n_jobs >= o->max_jobs) break;
    if (n > GP_TRACE_MAX_LINE) {
      gp_err_set(err, GP_EINVAL, t->source, line, NULL, "row longer than %d bytes",
                 GP_TRACE_MAX_LINE);
      if ((rc = gp__sim_trace_bad_row(t, o, err))) return rc;
      continue;
    }
    json_error_t je;
    json_t *obj = json_loadb(s, n, JSON_REJECT_DUPLICATES, &je);
    if (!obj || !json_is_object(obj)) {
      gp_err_set(err, GP_EINVAL, t->source, line, NULL, "not a JSON object: %s",
                 obj ? "another JSON value" : je.text);
      json_decref(obj);
      if ((rc = gp__sim_trace_bad_row(t, o, err))) return rc;
      continue;
    }
    gp__sim_trace_row row = {.line = line};
    bool ok = true;
    for (size_t k = 0; k < sizeof keys / sizeof keys[0] && ok; k++) {
      json_t *v = json_object_get(obj, keys[k].key);
      gp__sim_trace_col c = keys[k].col;
      row.name[c] = keys[k].key;
      if (!v || json_is_null(v)) continue;
      if (json_is_string(v)) {
        row.v[c] = json_string_value(v);
      } else if (json_is_integer(v)) {
        snprintf(numbuf[c], sizeof numbuf[c], "%lld", (long long)json_integer_value(v));
        row.v[c] = numbuf[c];
      } else if (json_is_real(v)) {
        snprintf(numbuf[c], sizeof numbuf[c], "%.17g", json_real_value(v));
        row.v[c] = numbuf[c];
      } else {
        gp_err_set(err, GP_EINVAL, t->source, line, keys[k].key,
                   "expected a number or a string");
        ok = false;
      }
    }
    if (ok) ok = gp__sim_trace_add_row(t, GP_TRACE_JSONL, o, &row, err) == 0;
    json_decref(obj);
    if (!ok && (rc = gp__sim_trace_bad_row(t, o, err))) return rc;
  }
  return 0;
}
