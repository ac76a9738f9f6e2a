/* SPDX-License-Identifier: Apache-2.0 */
/* An ended job's stored document as the advice engine's run (advice.h). Advice over a year
 * reads a few hundred thousand documents, and building each one's tree with jansson cost
 * most of the answer's time, so the fields advice needs are picked out by a scan that
 * allocates nothing: it walks the top-level object (and `usage`), skipping every other
 * value whole. A document the scan cannot read plainly (malformed, or a needed string with
 * an escape) is read with jansson instead, so both paths give the same run. */
#include <stdlib.h>
#include <string.h>

#include "server/accounting/advice.h"

#define MAX_DEPTH 64 /* nesting a skipped value may have */

typedef struct cur {
  const char *p;
} cur;

static void ws(cur *c) {
  while (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r') c->p++;
}

/* A string after its opening quote: [*s, *s + *n) raw, *esc when it holds an escape. */
static bool string(cur *c, const char **s, size_t *n, bool *esc) {
  const char *start = c->p;
  *esc = false;
  for (;;) {
    char ch = *c->p;
    if (ch == '\0') return false;
    if (ch == '"') break;
    if (ch == '\\') {
      *esc = true;
      if (!c->p[1]) return false;
      c->p++;
    }
    c->p++;
  }
  *s = start;
  *n = (size_t)(c->p - start);
  c->p++;
  return true;
}

static bool skip(cur *c, int depth) {
  ws(c);
  const char *s;
  size_t n;
  bool esc;
  char ch = *c->p;
  if (ch == '"') {
    c->p++;
    return string(c, &s, &n, &esc);
  }
  if (ch == '{' || ch == '[') {
    if (depth >= MAX_DEPTH) return false;
    char close = ch == '{' ? '}' : ']';
    c->p++;
    ws(c);
    if (*c->p == close) {
      c->p++;
      return true;
    }
    for (;;) {
      if (ch == '{') {
        ws(c);
        if (*c->p != '"') return false;
        c->p++;
        if (!string(c, &s, &n, &esc)) return false;
        ws(c);
        if (*c->p != ':') return false;
        c->p++;
      }
      if (!skip(c, depth + 1)) return false;
      ws(c);
      if (*c->p == ',') {
        c->p++;
        continue;
      }
      if (*c->p != close) return false;
      c->p++;
      return true;
    }
  }
  /* A number or a literal: up to the next delimiter. */
  const char *start = c->p;
  for (;; c->p++) {
    char d = *c->p;
    if (d == '\0' || d == ',' || d == '}' || d == ']' || d == ' ' || d == '\t' || d == '\n' ||
        d == '\r')
      break;
  }
  return c->p > start;
}

/* A number value as a double; false when it is not one (null, a string, ...). */
static bool number(cur *c, double *ret) {
  ws(c);
  const char *start = c->p;
  if (!skip(c, MAX_DEPTH)) return false;
  size_t n = (size_t)(c->p - start);
  char buf[48];
  if (n == 0 || n >= sizeof buf || !strchr("-0123456789", *start)) return false;
  memcpy(buf, start, n);
  buf[n] = '\0';
  char *end = NULL;
  *ret = strtod(buf, &end);
  return end == buf + n;
}

typedef enum key { K_OTHER, K_NAME, K_MIG, K_TASKS, K_GPUS, K_FRACTION, K_REQUEUE, K_CKPT,
                   K_SUBMITTED, K_STARTED, K_USAGE, K_PEAK, K_AVG } key;

static key key_of(const char *s, size_t n, bool in_usage) {
  static const struct { const char *name; key k; bool usage; } keys[] = {
      {"name", K_NAME, false},           {"mig", K_MIG, false},
      {"tasks", K_TASKS, false},         {"gpus", K_GPUS, false},
      {"gpu_fraction", K_FRACTION, false}, {"requeue", K_REQUEUE, false},
      {"last_checkpoint_at", K_CKPT, false}, {"submitted_at", K_SUBMITTED, false},
      {"started_at", K_STARTED, false},  {"usage", K_USAGE, false},
      {"peak_mem_mib", K_PEAK, true},    {"avg_sm_util_pct", K_AVG, true}};
  for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
    if (keys[i].usage == in_usage && strlen(keys[i].name) == n && memcmp(keys[i].name, s, n) == 0)
      return keys[i].k;
  return K_OTHER;
}

/* A string value copied into buf (NULL for null); false for anything else, an escape, or
 * one longer than buf. */
static bool text(cur *c, char *buf, size_t cap, const char **ret) {
  ws(c);
  if (strncmp(c->p, "null", 4) == 0) {
    c->p += 4;
    *ret = NULL;
    return true;
  }
  const char *s;
  size_t n;
  bool esc;
  if (*c->p != '"') return false;
  c->p++;
  if (!string(c, &s, &n, &esc) || esc || n >= cap) return false;
  memcpy(buf, s, n);
  buf[n] = '\0';
  *ret = buf;
  return true;
}

/* The fields of one object; `usage` when it is the usage object. */
static bool object(cur *c, gp_advice_run *r, gp_srv_advice_doc_buf *b, bool usage) {
  ws(c);
  if (*c->p != '{') return false;
  c->p++;
  ws(c);
  if (*c->p == '}') {
    c->p++;
    return true;
  }
  for (;;) {
    ws(c);
    const char *s;
    size_t n;
    bool esc;
    if (*c->p != '"') return false;
    c->p++;
    if (!string(c, &s, &n, &esc)) return false;
    ws(c);
    if (*c->p != ':') return false;
    c->p++;
    key k = esc ? K_OTHER : key_of(s, n, usage);
    double d = 0;
    bool ok = true;
    ws(c);
    switch (k) {
    case K_NAME: ok = text(c, b->name, sizeof b->name, &r->name); break;
    case K_MIG: ok = text(c, b->mig, sizeof b->mig, &r->mig); break;
    case K_TASKS: if (number(c, &d)) r->tasks = (int)d; break;
    case K_GPUS: if (number(c, &d)) r->gpus = (int)d; break;
    case K_FRACTION:
      if (number(c, &d)) r->gpu_milli = d > 0 && d < 1 ? (int)(d * GP_GPU_MILLI + 0.5) : 0;
      break;
    case K_REQUEUE:
      r->requeue = strncmp(c->p, "true", 4) == 0;
      ok = skip(c, 0);
      break;
    case K_CKPT: if (number(c, &d)) r->last_checkpoint_at = (int64_t)d; break;
    case K_SUBMITTED: if (number(c, &d)) r->submitted_at = (int64_t)d; break;
    case K_STARTED: if (number(c, &d)) r->started_at = (int64_t)d; break;
    case K_USAGE: ok = *c->p == '{' ? object(c, r, b, true) : skip(c, 0); break;
    case K_PEAK: if (number(c, &d) && d >= 0) r->peak_mem_mib = (int64_t)d; break;
    case K_AVG: if (number(c, &d) && d >= 0 && d <= 100) r->avg_sm_util_pct = d; break;
    case K_OTHER: ok = skip(c, 1); break;
    }
    if (!ok) return false;
    ws(c);
    if (*c->p == ',') {
      c->p++;
      continue;
    }
    if (*c->p != '}') return false;
    c->p++;
    return true;
  }
}

bool gp__srv_advice_doc_scan(const char *doc, const char *user, const char *queue, int64_t id,
                             gp_srv_advice_doc_buf *b, gp_advice_run *ret) {
  gp_advice_run r = {.job = id, .user = user, .queue = queue, .peak_mem_mib = -1,
                     .avg_sm_util_pct = -1};
  cur c = {doc ? doc : ""};
  if (!object(&c, &r, b, false)) return false;
  if (!r.user || !r.queue || r.tasks < 1) return false;
  *ret = r;
  return true;
}
