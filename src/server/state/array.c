/* SPDX-License-Identifier: Apache-2.0 */
/* Job arrays, the record itself (array.h): Slurm's index syntax, positions and indexes,
 * the stored form and the API's summary. What the state does with arrays is in
 * array_ops.c. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/state/array.h"
#include "server/state/state.h"
#include "util/buf.h"
#include "util/mem.h"

static int bad(gp_err *err, const char *spec, const char *why) {
  return gp_err_set(err, GP_EINVAL, NULL, 0, "array", "'%.64s' is not an array spec: %s (e.g. 0-99:2%%8 or 1,3,5-7)",
                    spec, why);
}

/* A decimal number of at most 9 digits at *p; advances *p. */
static bool number(const char **p, int64_t *out) {
  const char *s = *p;
  int64_t v = 0;
  int n = 0;
  while (*s >= '0' && *s <= '9' && n < 10) v = v * 10 + (*s++ - '0'), n++;
  if (n == 0 || n > 9) return false;
  *p = s;
  *out = v;
  return true;
}

static int range_cmp(const void *a, const void *b) {
  const gp_srv_array_range *x = a, *y = b;
  return x->lo < y->lo ? -1 : x->lo > y->lo;
}

int gp__srv_array_parse(const char *spec, gp_srv_array **ret, gp_err *err) {
  *ret = NULL;
  if (!spec || !*spec || strlen(spec) > 4096) return bad(err, spec ? spec : "", "empty or too long");
  gp_srv_array *a = gp_xcalloc(1, sizeof *a);
  const char *p = spec;
  int rc = 0;
  size_t cap = 0;
  for (;;) {
    gp_srv_array_range r = {0, 0, 1};
    if (!number(&p, &r.lo)) {
      rc = bad(err, spec, "an index must be a number of at most 9 digits");
      break;
    }
    r.hi = r.lo;
    if (*p == '-') {
      p++;
      if (!number(&p, &r.hi) || r.hi < r.lo) {
        rc = bad(err, spec, "a range is LOW-HIGH with HIGH >= LOW");
        break;
      }
      if (*p == ':') {
        p++;
        if (!number(&p, &r.step) || r.step < 1) {
          rc = bad(err, spec, "a step is a number >= 1");
          break;
        }
      }
    }
    if (r.hi > GP_SRV_ARRAY_MAX_INDEX) {
      rc = bad(err, spec, "indexes go up to 100000000");
      break;
    }
    r.hi = r.lo + (r.hi - r.lo) / r.step * r.step; /* the last index the step reaches */
    if (a->n_ranges >= GP_SRV_ARRAY_MAX_RANGES) {
      rc = bad(err, spec, "at most 1000 ranges");
      break;
    }
    gp_xgrow((void **)&a->ranges, &cap, (size_t)a->n_ranges + 1, sizeof *a->ranges);
    a->ranges[a->n_ranges++] = r;
    if (*p == ',') {
      p++;
      continue;
    }
    break;
  }
  if (!rc && *p == '%') {
    p++;
    int64_t lim;
    if (!number(&p, &lim) || lim < 1) rc = bad(err, spec, "the % limit is a number >= 1");
    else a->limit = lim > 1000000 ? 1000000 : (int)lim;
  }
  if (!rc && *p) rc = bad(err, spec, "unexpected text after it");
  if (!rc) {
    qsort(a->ranges, (size_t)a->n_ranges, sizeof *a->ranges, range_cmp);
    for (int i = 0; i < a->n_ranges && !rc; i++) {
      if (i > 0 && a->ranges[i].lo <= a->ranges[i - 1].hi) rc = bad(err, spec, "ranges overlap");
      a->count += (a->ranges[i].hi - a->ranges[i].lo) / a->ranges[i].step + 1;
      if (a->count > GP_SRV_ARRAY_MAX) rc = bad(err, spec, "at most 1000000 elements");
    }
  }
  if (rc) {
    gp__srv_array_free(a);
    return rc;
  }
  *ret = a;
  return 0;
}

static void posv_free(gp_srv_posv *v) {
  free(v->v);
  memset(v, 0, sizeof *v);
}

void gp__srv_array_free(gp_srv_array *a) {
  if (!a) return;
  free(a->ranges);
  posv_free(&a->extra);
  posv_free(&a->held);
  posv_free(&a->owed);
  for (int i = 0; i < a->n_after_corr; i++) free(a->after_corr[i]);
  free(a->after_corr);
  free(a);
}

int64_t gp__srv_array_index(const gp_srv_array *a, int64_t p) {
  for (int i = 0; i < a->n_ranges; i++) {
    int64_t n = (a->ranges[i].hi - a->ranges[i].lo) / a->ranges[i].step + 1;
    if (p < n) return a->ranges[i].lo + p * a->ranges[i].step;
    p -= n;
  }
  return -1;
}

int64_t gp__srv_array_pos(const gp_srv_array *a, int64_t index) {
  int64_t base = 0;
  for (int i = 0; i < a->n_ranges; i++) {
    const gp_srv_array_range *r = &a->ranges[i];
    int64_t n = (r->hi - r->lo) / r->step + 1;
    if (index >= r->lo && index <= r->hi && (index - r->lo) % r->step == 0) return base + (index - r->lo) / r->step;
    base += n;
  }
  return -1;
}

static bool posv_has(const gp_srv_posv *v, int64_t p) {
  for (int i = 0; i < v->n; i++)
    if (v->v[i] == p) return true;
  return false;
}

bool gp__srv_array_made(const gp_srv_array *a, int64_t p) {
  if (p < a->next) return !posv_has(&a->held, p) && !posv_has(&a->owed, p);
  return posv_has(&a->extra, p);
}

void gp__srv_array_spec(const gp_srv_array *a, char *buf, size_t n) {
  gp_buf b = {0};
  for (int i = 0; i < a->n_ranges; i++) {
    const gp_srv_array_range *r = &a->ranges[i];
    if (i) gp_buf_puts(&b, ",");
    if (r->lo == r->hi) gp_buf_printf(&b, "%" PRId64, r->lo);
    else if (r->step == 1) gp_buf_printf(&b, "%" PRId64 "-%" PRId64, r->lo, r->hi);
    else gp_buf_printf(&b, "%" PRId64 "-%" PRId64 ":%" PRId64, r->lo, r->hi, r->step);
  }
  if (a->limit) gp_buf_printf(&b, "%%%d", a->limit);
  char *s = gp_buf_steal(&b);
  snprintf(buf, n, "%s", s ? s : "");
  free(s);
}

static json_t *posv_json(const gp_srv_posv *v) {
  json_t *o = json_array();
  for (int i = 0; i < v->n; i++) json_array_append_new(o, json_integer(v->v[i]));
  return o;
}

json_t *gp__srv_array_doc(const gp_srv_array *a) {
  char spec[8192];
  gp__srv_array_spec(a, spec, sizeof spec);
  json_t *o = json_object();
  json_object_set_new(o, "spec", json_string(spec));
  json_object_set_new(o, "next", json_integer(a->next));
  json_object_set_new(o, "extra", posv_json(&a->extra));
  json_object_set_new(o, "held", posv_json(&a->held));
  json_object_set_new(o, "owed", posv_json(&a->owed));
  json_object_set_new(o, "held_all", json_boolean(a->held_all));
  json_object_set_new(o, "cancelled", json_boolean(a->cancelled));
  json_t *corr = json_array();
  for (int i = 0; i < a->n_after_corr; i++) json_array_append_new(corr, json_string(a->after_corr[i]));
  json_object_set_new(o, "after_corr", corr);
  return o;
}

static int posv_read(const json_t *o, const char *key, const gp_srv_array *a, gp_srv_posv *v, gp_err *err) {
  const json_t *arr = json_object_get(o, key);
  if (!arr) return 0;
  if (!json_is_array(arr) || json_array_size(arr) > (size_t)a->count)
    return gp_err_set(err, GP_EPARSE, NULL, 0, "array", "stored array: %s is not a list of positions", key);
  for (size_t i = 0; i < json_array_size(arr); i++) {
    const json_t *x = json_array_get(arr, i);
    if (!json_is_integer(x) || json_integer_value(x) < 0 || json_integer_value(x) >= a->count)
      return gp_err_set(err, GP_EPARSE, NULL, 0, "array", "stored array: %s holds a bad position", key);
    gp_xgrow((void **)&v->v, &v->cap, (size_t)v->n + 1, sizeof *v->v);
    v->v[v->n++] = json_integer_value(x);
  }
  return 0;
}

int gp__srv_array_from_doc(const json_t *o, gp_srv_array **ret, gp_err *err) {
  *ret = NULL;
  if (json_is_string(o)) return gp__srv_array_parse(json_string_value(o), ret, err);
  if (!json_is_object(o)) return gp_err_set(err, GP_EINVAL, NULL, 0, "array", "must be a spec such as \"0-99%%8\"");
  gp_srv_array *a = NULL;
  int r = gp__srv_array_parse(json_string_value(json_object_get(o, "spec")), &a, err);
  if (r) return r;
  const json_t *next = json_object_get(o, "next");
  if (json_is_integer(next) && json_integer_value(next) >= 0 && json_integer_value(next) <= a->count)
    a->next = json_integer_value(next);
  a->held_all = json_is_true(json_object_get(o, "held_all"));
  a->cancelled = json_is_true(json_object_get(o, "cancelled"));
  if ((r = posv_read(o, "extra", a, &a->extra, err)) || (r = posv_read(o, "held", a, &a->held, err)) ||
      (r = posv_read(o, "owed", a, &a->owed, err))) {
    gp__srv_array_free(a);
    return r;
  }
  const json_t *corr = json_object_get(o, "after_corr");
  if (json_is_array(corr) && json_array_size(corr) <= GP_SRV_MAX_DEPS) {
    a->after_corr = gp_xcalloc(json_array_size(corr) + 1, sizeof *a->after_corr);
    for (size_t i = 0; i < json_array_size(corr); i++) {
      const char *id = json_string_value(json_array_get(corr, i));
      if (id && strlen(id) < 24) a->after_corr[a->n_after_corr++] = gp_xstrdup(id);
    }
  }
  *ret = a;
  return 0;
}

const char *gp__srv_array_elem_state(const gp_srv_job *parent, int64_t pos) {
  const gp_srv_array *a = parent->array;
  if (a->cancelled) return "cancelled";
  if (a->held_all || posv_has(&a->held, pos)) return "held";
  return "pending";
}

/* Appends index runs of consecutive positions [p0, p1] as "lo-hi:step" pieces. */
static void put_run(const gp_srv_array *a, int64_t p0, int64_t p1, gp_buf *b, bool *first) {
  while (p0 <= p1) {
    /* The range holding p0, and how far the run stays in it. */
    int64_t base = 0;
    int i = 0;
    for (; i < a->n_ranges; i++) {
      int64_t n = (a->ranges[i].hi - a->ranges[i].lo) / a->ranges[i].step + 1;
      if (p0 < base + n) break;
      base += n;
    }
    if (i == a->n_ranges) return;
    const gp_srv_array_range *r = &a->ranges[i];
    int64_t last = base + (r->hi - r->lo) / r->step;
    int64_t q = p1 < last ? p1 : last;
    int64_t lo = r->lo + (p0 - base) * r->step, hi = r->lo + (q - base) * r->step;
    if (!*first) gp_buf_puts(b, ",");
    *first = false;
    if (lo == hi) gp_buf_printf(b, "%" PRId64, lo);
    else if (r->step == 1) gp_buf_printf(b, "%" PRId64 "-%" PRId64, lo, hi);
    else gp_buf_printf(b, "%" PRId64 "-%" PRId64 ":%" PRId64, lo, hi, r->step);
    p0 = q + 1;
  }
}

void gp__srv_array_fields(json_t *o, const gp_srv_state *s, const gp_srv_job *j, bool for_store) {
  if (j->array) json_object_set_new(o, "array", for_store ? gp__srv_array_doc(j->array) : gp__srv_array_api(s, j));
  if (!j->array_job) return;
  char aj[24], aid[48];
  snprintf(aj, sizeof aj, "%" PRId64, j->array_job);
  snprintf(aid, sizeof aid, "%" PRId64 "_%" PRId64, j->array_job, j->array_index);
  json_object_set_new(o, "array_job_id", json_string(aj));
  json_object_set_new(o, "array_index", json_integer(j->array_index));
  if (!for_store) json_object_set_new(o, "array_id", json_string(aid));
}

json_t *gp__srv_array_api(const gp_srv_state *s, const gp_srv_job *j) {
  const gp_srv_array *a = j->array;
  json_t *o = gp__srv_array_doc(a);
  json_object_set_new(o, "count", json_integer(a->count));
  json_object_set_new(o, "limit", a->limit ? json_integer(a->limit) : json_null());
  json_object_set_new(o, "n_running", json_integer(a->n_live - a->n_waiting));
  json_object_set_new(o, "n_ended", json_integer(a->n_done));
  json_object_set_new(o, "n_failed", json_integer(a->n_bad - a->n_cancel));
  json_object_set_new(o, "n_cancelled", json_integer(a->n_cancel));
  /* Pending: the elements not made jobs (unless cancelled or held one by one) and the made ones still
   * pending: `gpool jobs` shows them on one line, as squeue does. */
  gp_buf b = {0};
  bool first = true;
  int64_t run0 = -1, pend = 0;
  /* (Without the state, from the history thread, the array has ended: nothing pends.) */
  for (int64_t p = 0; s && !gp_job_state_is_final(j->state) && p <= a->count; p++) {
    bool waiting = false;
    if (p < a->count) {
      if (gp__srv_array_made(a, p)) {
        int64_t id = j->id + 1 + p;
        const gp_srv_job *e = (size_t)id < s->cap_jobs ? s->jobs[id] : NULL;
        waiting = e && e->state == GP_JOB_PENDING;
      } else {
        waiting = !a->cancelled && !posv_has(&a->held, p); /* (held with the array: its line says held) */
      }
    }
    if (waiting) {
      pend++;
      if (run0 < 0) run0 = p;
    } else if (run0 >= 0) {
      put_run(a, run0, p - 1, &b, &first);
      run0 = -1;
    }
  }
  char *txt = gp_buf_steal(&b);
  json_object_set_new(o, "pending", json_string(txt ? txt : ""));
  json_object_set_new(o, "n_pending", json_integer(pend));
  free(txt);
  return o;
}
