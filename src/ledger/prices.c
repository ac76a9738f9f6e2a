/* SPDX-License-Identifier: Apache-2.0 */
/* The price catalogue reader and lookups (see prices.h; the format is in docs/config.md).
 * Every value is checked where it is read and named by its field path and line: a price is a
 * finite number >= 0, a date a real calendar day, a model 1-64 printable characters; lists
 * are bounded; the same (model, capacity, from) twice, or two commitments for one model that
 * overlap in time, are refused because either would make a GPU-hour's price ambiguous. */
#include "ledger/prices.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/calendar.h"
#include "util/mem.h"

/* "path.list[i].key" (or "path.key" with i < 0) into buf, cut to fit. */
static const char *field(char *buf, size_t size, const char *path, const char *list, int i,
                         const char *key) {
  size_t n = 0;
  const char *parts[3] = {path, list, NULL};
  for (int p = 0; p < 2 && parts[p]; p++) {
    if (p && n + 1 < size) buf[n++] = '.';
    for (const char *s = parts[p]; *s && n + 1 < size; s++) buf[n++] = *s;
  }
  if (i >= 0) {
    char num[16];
    int k = 0;
    do num[k++] = (char)('0' + i % 10); while ((i /= 10) && k < 15);
    if (n + 1 < size) buf[n++] = '[';
    while (k && n + 1 < size) buf[n++] = num[--k];
    if (n + 1 < size) buf[n++] = ']';
  }
  if (key) {
    if (n + 1 < size) buf[n++] = '.';
    for (const char *s = key; *s && n + 1 < size; s++) buf[n++] = *s;
  }
  buf[n] = '\0';
  return buf;
}

static int missing(const gp_doc *d, const gp_doc_node *m, const char *f, gp_err *err) {
  return gp_err_set(err, GP_EINVAL, d->name, m->line, f, "missing");
}

static int read_model(const gp_doc *d, const gp_doc_node *m, const char *f, bool allow_any,
                      gp_arena *a, const char **ret, gp_err *err) {
  const gp_doc_node *n = gp_doc_get(m, "model");
  const char *s;
  int rc;
  if (!n) return missing(d, m, f, err);
  if ((rc = gp_doc_str(d, n, f, &s, err))) return rc;
  size_t len = strlen(s);
  bool printable = len >= 1 && len <= GP_PRICES_MODEL_MAX;
  for (size_t i = 0; printable && i < len; i++)
    printable = (unsigned char)s[i] >= 0x20 && (unsigned char)s[i] < 0x7f;
  if (!printable)
    return gp_err_set(err, GP_EINVAL, d->name, n->line, f,
                      "must be 1-%d printable characters (\"*\": any model)", GP_PRICES_MODEL_MAX);
  if (!allow_any && strcmp(s, "*") == 0)
    return gp_err_set(err, GP_EINVAL, d->name, n->line, f,
                      "a commitment names one model, not \"*\"");
  *ret = gp_arena_strdup(a, s);
  return 0;
}

static int read_price(const gp_doc *d, const gp_doc_node *m, const char *key, const char *f,
                      double *ret, gp_err *err) {
  const gp_doc_node *n = gp_doc_get(m, key);
  int rc;
  if (!n) return missing(d, m, f, err);
  if ((rc = gp_doc_double(d, n, f, ret, err))) return rc;
  if (!isfinite(*ret) || *ret < 0 || *ret > 1e9)
    return gp_err_set(err, GP_EINVAL, d->name, n->line, f,
                      "must be a finite number between 0 and 1e9");
  return 0;
}

/* A date; absent (or null) gives `dflt` when `required` is false. */
static int read_date(const gp_doc *d, const gp_doc_node *m, const char *key, const char *f,
                     bool required, int64_t dflt, int64_t *ret, gp_err *err) {
  const gp_doc_node *n = gp_doc_get(m, key);
  if (!n || gp_doc_is_null(n)) {
    if (required) return missing(d, m, f, err);
    *ret = dflt;
    return 0;
  }
  if (n->kind != GP_DOC_SCALAR || !gp_parse_date(n->scalar, ret))
    return gp_err_set(err, GP_EINVAL, d->name, n->line, f,
                      "must be a date YYYY-MM-DD (a real day, 1970-9999)");
  return 0;
}

static int read_list(const gp_doc *d, const gp_doc_node *map, const char *path,
                     const char *list, const gp_doc_node **ret, gp_err *err) {
  char f[160];
  const gp_doc_node *n = gp_doc_get(map, list);
  *ret = NULL;
  if (!n || gp_doc_is_null(n)) return 0;
  int rc = gp_doc_expect(d, n, field(f, sizeof f, path, list, -1, NULL), GP_DOC_SEQ, err);
  if (rc) return rc;
  if (n->n > GP_PRICES_MAX_ENTRIES)
    return gp_err_set(err, GP_ELIMIT, d->name, n->line, f, "more than %d entries",
                      GP_PRICES_MAX_ENTRIES);
  *ret = n;
  return 0;
}

static int read_entry_map(const gp_doc *d, const gp_doc_node *m, const char *f,
                          const char *const *keys, gp_err *err) {
  int rc = gp_doc_expect(d, m, f, GP_DOC_MAP, err);
  return rc ? rc : gp_doc_check_keys(d, m, f, keys, err);
}

static int read_gpu_hour(const gp_doc *d, const gp_doc_node *seq, const char *path,
                         gp_prices *p, gp_err *err) {
  static const char *const keys[] = {"model", "capacity", "price", "from", NULL};
  char f[160];
  int rc;
  p->prices = gp_arena_alloc(p->arena, sizeof *p->prices * (size_t)(seq->n ? seq->n : 1));
  for (int i = 0; i < seq->n; i++) {
    const gp_doc_node *m = seq->items[i];
    gp_price *e = &p->prices[i];
    if ((rc = read_entry_map(d, m, field(f, sizeof f, path, "gpu_hour", i, NULL), keys, err)) ||
        (rc = read_model(d, m, field(f, sizeof f, path, "gpu_hour", i, "model"), true, p->arena,
                         &e->model, err)))
      return rc;
    const gp_doc_node *c = gp_doc_get(m, "capacity");
    const char *cs;
    field(f, sizeof f, path, "gpu_hour", i, "capacity");
    if (!c) return missing(d, m, f, err);
    if ((rc = gp_doc_str(d, c, f, &cs, err))) return rc;
    if (gp_capacity_parse(cs, &e->capacity))
      return gp_err_set(err, GP_EINVAL, d->name, c->line, f,
                        "unknown capacity \"%.32s\" (on-demand, reserved, spot or on-prem)", cs);
    if ((rc = read_price(d, m, "price", field(f, sizeof f, path, "gpu_hour", i, "price"),
                         &e->per_gpu_hour, err)) ||
        (rc = read_date(d, m, "from", field(f, sizeof f, path, "gpu_hour", i, "from"), false, 0,
                        &e->from, err)))
      return rc;
    for (int j = 0; j < i; j++) {
      const gp_price *o = &p->prices[j];
      if (o->capacity == e->capacity && o->from == e->from && !strcasecmp(o->model, e->model))
        return gp_err_set(err, GP_EINVAL, d->name, m->line,
                          field(f, sizeof f, path, "gpu_hour", i, NULL),
                          "the same model, capacity and from as gpu_hour[%d]", j);
    }
    p->n_prices = i + 1;
  }
  return 0;
}

static int read_commitments(const gp_doc *d, const gp_doc_node *seq, const char *path,
                            gp_prices *p, gp_err *err) {
  static const char *const keys[] = {"model", "gpus", "price", "from", "to", NULL};
  char f[160];
  int rc;
  p->commitments = gp_arena_alloc(p->arena, sizeof *p->commitments * (size_t)(seq->n ? seq->n : 1));
  for (int i = 0; i < seq->n; i++) {
    const gp_doc_node *m = seq->items[i];
    gp_commitment *e = &p->commitments[i];
    if ((rc = read_entry_map(d, m, field(f, sizeof f, path, "commitments", i, NULL), keys, err)) ||
        (rc = read_model(d, m, field(f, sizeof f, path, "commitments", i, "model"), false,
                         p->arena, &e->model, err)))
      return rc;
    const gp_doc_node *g = gp_doc_get(m, "gpus");
    int64_t gpus;
    field(f, sizeof f, path, "commitments", i, "gpus");
    if (!g) return missing(d, m, f, err);
    if ((rc = gp_doc_int(d, g, f, &gpus, err))) return rc;
    if (gpus < 1 || gpus > GP_PRICES_MAX_GPUS)
      return gp_err_set(err, GP_EINVAL, d->name, g->line, f, "must be between 1 and %d",
                        GP_PRICES_MAX_GPUS);
    e->gpus = (int)gpus;
    if ((rc = read_price(d, m, "price", field(f, sizeof f, path, "commitments", i, "price"),
                         &e->per_gpu_hour, err)) ||
        (rc = read_date(d, m, "from", field(f, sizeof f, path, "commitments", i, "from"), true,
                        0, &e->from, err)) ||
        (rc = read_date(d, m, "to", field(f, sizeof f, path, "commitments", i, "to"), true, 0,
                        &e->to, err)))
      return rc;
    if (e->to <= e->from)
      return gp_err_set(err, GP_EINVAL, d->name, gp_doc_get(m, "to")->line, f,
                        "must be after from");
    for (int j = 0; j < i; j++) {
      const gp_commitment *o = &p->commitments[j];
      if (o->from < e->to && e->from < o->to && !strcasecmp(o->model, e->model))
        return gp_err_set(err, GP_EINVAL, d->name, m->line,
                          field(f, sizeof f, path, "commitments", i, NULL),
                          "overlaps commitments[%d] for the same model (one commitment per "
                          "model at a time: add the GPUs to one, or split the dates)", j);
    }
    p->n_commitments = i + 1;
  }
  return 0;
}

static int read_energy(const gp_doc *d, const gp_doc_node *seq, const char *path, gp_prices *p,
                       gp_err *err) {
  static const char *const keys[] = {"price_per_kwh", "from", NULL};
  char f[160];
  int rc;
  p->energy = gp_arena_alloc(p->arena, sizeof *p->energy * (size_t)(seq->n ? seq->n : 1));
  for (int i = 0; i < seq->n; i++) {
    const gp_doc_node *m = seq->items[i];
    gp_energy_price *e = &p->energy[i];
    if ((rc = read_entry_map(d, m, field(f, sizeof f, path, "energy", i, NULL), keys, err)) ||
        (rc = read_price(d, m, "price_per_kwh",
                         field(f, sizeof f, path, "energy", i, "price_per_kwh"), &e->per_kwh,
                         err)) ||
        (rc = read_date(d, m, "from", field(f, sizeof f, path, "energy", i, "from"), false, 0,
                        &e->from, err)))
      return rc;
    for (int j = 0; j < i; j++)
      if (p->energy[j].from == e->from)
        return gp_err_set(err, GP_EINVAL, d->name, m->line,
                          field(f, sizeof f, path, "energy", i, NULL),
                          "the same from as energy[%d]", j);
    p->n_energy = i + 1;
  }
  return 0;
}

static int read_currency(const gp_doc *d, const gp_doc_node *map, const char *path,
                         gp_prices *p, gp_err *err) {
  char f[160];
  const gp_doc_node *n = gp_doc_get(map, "currency");
  const char *s;
  int rc;
  p->currency = "USD";
  if (!n || gp_doc_is_null(n)) return 0;
  if ((rc = gp_doc_str(d, n, field(f, sizeof f, path, "currency", -1, NULL), &s, err))) return rc;
  size_t len = strlen(s);
  bool ok = len >= 3 && len <= 8;
  for (size_t i = 0; ok && i < len; i++)
    ok = (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z');
  if (!ok) return gp_err_set(err, GP_EINVAL, d->name, n->line, f, "must be 3-8 letters (e.g. USD)");
  p->currency = gp_arena_strdup(p->arena, s);
  return 0;
}

int gp_prices_read(const gp_doc *d, const gp_doc_node *map, const char *path, gp_prices **ret,
                   gp_err *err) {
  static const char *const keys[] = {"currency", "gpu_hour", "commitments", "energy", NULL};
  const gp_doc_node *gpu_hour, *commitments, *energy;
  if (!path) path = "prices";
  int rc = gp_doc_expect(d, map, path, GP_DOC_MAP, err);
  if (rc || (rc = gp_doc_check_keys(d, map, path, keys, err)) ||
      (rc = read_list(d, map, path, "gpu_hour", &gpu_hour, err)) ||
      (rc = read_list(d, map, path, "commitments", &commitments, err)) ||
      (rc = read_list(d, map, path, "energy", &energy, err)))
    return rc;
  gp_prices *p = gp_xcalloc(1, sizeof *p);
  p->arena = gp_arena_new();
  p->refs = 1;
  if ((rc = read_currency(d, map, path, p, err)) ||
      (gpu_hour && (rc = read_gpu_hour(d, gpu_hour, path, p, err))) ||
      (commitments && (rc = read_commitments(d, commitments, path, p, err))) ||
      (energy && (rc = read_energy(d, energy, path, p, err)))) {
    gp_prices_free(p);
    return rc;
  }
  *ret = p;
  return 0;
}

gp_prices *gp_prices_ref(gp_prices *p) {
  if (p) __atomic_add_fetch(&p->refs, 1, __ATOMIC_RELAXED);
  return p;
}

void gp_prices_free(gp_prices *p) {
  if (!p || __atomic_sub_fetch(&p->refs, 1, __ATOMIC_ACQ_REL) > 0) return;
  gp_arena_free(p->arena);
  free(p);
}

bool gp_prices_rate(const gp_prices *p, const char *model, gp_capacity c, int64_t at,
                    double *ret) {
  if (!p || !model) return false;
  if (c == GP_CAP_RESERVED)
    for (int i = 0; i < p->n_commitments; i++) {
      const gp_commitment *k = &p->commitments[i];
      if (k->from <= at && at < k->to && !strcasecmp(k->model, model)) {
        *ret = k->per_gpu_hour;
        return true;
      }
    }
  /* The latest applicable entry of the exact model, else of "*". */
  const gp_price *exact = NULL, *any = NULL;
  for (int i = 0; i < p->n_prices; i++) {
    const gp_price *e = &p->prices[i];
    if (e->capacity != c || e->from > at) continue;
    if (!strcmp(e->model, "*")) {
      if (!any || e->from > any->from) any = e;
    } else if (!strcasecmp(e->model, model) && (!exact || e->from > exact->from)) {
      exact = e;
    }
  }
  const gp_price *e = exact ? exact : any;
  if (!e) return false;
  *ret = e->per_gpu_hour;
  return true;
}

bool gp_prices_energy_rate(const gp_prices *p, int64_t at, double *ret) {
  const gp_energy_price *best = NULL;
  for (int i = 0; p && i < p->n_energy; i++)
    if (p->energy[i].from <= at && (!best || p->energy[i].from > best->from)) best = &p->energy[i];
  if (!best) return false;
  *ret = best->per_kwh;
  return true;
}
