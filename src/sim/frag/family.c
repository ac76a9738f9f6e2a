/* SPDX-License-Identifier: Apache-2.0 */
/* Workload families built from one openb pod list (see family.h). Every draw comes from
 * one splitmix64 stream of the family seed, so a member is the same on every machine. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/model.h"
#include "sim/frag/family.h"
#include "sim/frag/rng.h"
#include "util/buf.h"
#include "util/mem.h"

/* The kinds of pod a family draws from. */
enum { K_CPU, K_FRACTION, K_ONE, K_MULTI, K_COUNT };

static int pod_kind(const gp_frag_pod *p) {
  if (p->n_gpus == 0) return K_CPU;
  if (p->n_gpus == 1) return p->gpu_milli < GP_GPU_MILLI ? K_FRACTION : K_ONE;
  return K_MULTI;
}

static int64_t pod_milli(const gp_frag_pod *p) {
  return (int64_t)p->n_gpus * p->gpu_milli;
}

static const char *const kind_names[] = {NULL, "cpu", "gpushare", "multigpu", "gpuspec"};

int gp_frag_family_parse(const char *s, gp_frag_family *f, gp_err *err) {
  const char *colon = s ? strchr(s, ':') : NULL;
  if (!colon)
    return gp_err_set(err, GP_EINVAL, NULL, 0, "family",
                      "expected KIND:PCT (cpu, gpushare, multigpu or gpuspec), not '%s'", s ? s : "");
  size_t klen = (size_t)(colon - s);
  int kind = 0;
  for (int k = GP_FRAG_FAMILY_CPU; k <= GP_FRAG_FAMILY_GPUSPEC; k++) {
    if (strlen(kind_names[k]) == klen && strncmp(s, kind_names[k], klen) == 0) kind = k;
  }
  if (!kind)
    return gp_err_set(err, GP_EINVAL, NULL, 0, "family",
                      "unknown family '%.*s' (cpu, gpushare, multigpu or gpuspec)", (int)klen, s);
  char *end = NULL;
  long pct = strtol(colon + 1, &end, 10);
  int top = kind == GP_FRAG_FAMILY_CPU ? 99 : 100;
  if (!colon[1] || *end || pct < 0 || pct > top)
    return gp_err_set(err, GP_EINVAL, NULL, 0, "family", "the percentage must be a whole number 0..%d, not '%s'",
                      top, colon + 1);
  f->kind = (gp_frag_family_kind)kind;
  f->pct = (int)pct;
  return 0;
}

/* The indices of t's pods of each kind. */
typedef struct pools {
  int *idx[K_COUNT];
  int n[K_COUNT];
} pools;

static void pools_build(const gp_frag_trace *t, pools *p) {
  memset(p, 0, sizeof(*p));
  for (int k = 0; k < K_COUNT; k++) p->idx[k] = gp_xmalloc((size_t)(t->n_pods + 1) * sizeof(int));
  for (int i = 0; i < t->n_pods; i++) {
    int k = pod_kind(&t->pods[i]);
    p->idx[k][p->n[k]++] = i;
  }
}

static void pools_free(pools *p) {
  for (int k = 0; k < K_COUNT; k++) free(p->idx[k]);
}

/* A growing list of pods. */
typedef struct pod_list {
  gp_frag_pod *v;
  size_t n, cap;
} pod_list;

static int push(pod_list *l, const gp_frag_pod *p, gp_err *err) {
  if (l->n >= GP_FRAG_MAX_ROWS)
    return gp_err_set(err, GP_ELIMIT, NULL, 0, "family", "more than %d pods", GP_FRAG_MAX_ROWS);
  gp_xgrow((void **)&l->v, &l->cap, l->n + 1, sizeof(gp_frag_pod));
  l->v[l->n++] = *p;
  return 0;
}

static int need(const pools *p, int kind, const char *what, gp_err *err) {
  if (p->n[kind] > 0) return 0;
  return gp_err_set(err, GP_EINVAL, NULL, 0, "family", "the pod list has no %s pod to draw from", what);
}

/* CPU-only pods P% of all: GPU pods kept in order, after round(P x GPU pods / (100 - P))
   CPU-only pods drawn with replacement. */
static int make_cpu(const gp_frag_trace *t, const gp_frag_family *f, const pools *p, gp__sim_frag_rng *g, pod_list *out,
                    gp_err *err) {
  int64_t n_gpu = t->n_pods - p->n[K_CPU];
  int64_t n_cpu = (n_gpu * f->pct * 2 + (100 - f->pct)) / (2 * (100 - f->pct));
  int rc = n_cpu > 0 ? need(p, K_CPU, "CPU-only", err) : 0;
  for (int64_t i = 0; i < n_cpu && !rc; i++)
    rc = push(out, &t->pods[p->idx[K_CPU][gp__sim_frag_rng_below(g, (uint64_t)p->n[K_CPU])]], err);
  for (int i = 0; i < t->n_pods && !rc; i++) {
    if (pod_kind(&t->pods[i]) != K_CPU) rc = push(out, &t->pods[i], err);
  }
  return rc;
}

/* Fractional pods P% of the GPU demand, as many GPU pods as before: each drawn from the
   fractional pods while their share so far is under P%, else from the whole-GPU ones. */
static int make_gpushare(const gp_frag_trace *t, const gp_frag_family *f, const pools *p, gp__sim_frag_rng *g,
                         pod_list *out, gp_err *err) {
  int n_whole = p->n[K_ONE] + p->n[K_MULTI];
  int rc = 0;
  if (f->pct > 0) rc = need(p, K_FRACTION, "GPU-sharing", err);
  if (!rc && f->pct < 100 && n_whole == 0)
    rc = gp_err_set(err, GP_EINVAL, NULL, 0, "family", "the pod list has no whole-GPU pod to draw from");
  int64_t frac_milli = 0, total = 0;
  for (int i = 0; i < t->n_pods && !rc; i++) {
    const gp_frag_pod *q = &t->pods[i];
    if (pod_kind(q) != K_CPU) {
      if (frac_milli * 100 < (int64_t)f->pct * total || f->pct == 100) {
        q = &t->pods[p->idx[K_FRACTION][gp__sim_frag_rng_below(g, (uint64_t)p->n[K_FRACTION])]];
        frac_milli += pod_milli(q);
      } else {
        int k = (int)gp__sim_frag_rng_below(g, (uint64_t)n_whole);
        q = &t->pods[k < p->n[K_ONE] ? p->idx[K_ONE][k] : p->idx[K_MULTI][k - p->n[K_ONE]]];
      }
      total += pod_milli(q);
    }
    rc = push(out, q, err);
  }
  return rc;
}

/* Multi-GPU pods P% of the GPU demand: the list, then copies of its multi-GPU pods. */
static int make_multigpu(const gp_frag_trace *t, const gp_frag_family *f, const pools *p, gp__sim_frag_rng *g,
                         pod_list *out, gp_err *err) {
  int64_t multi = 0, total = 0;
  int rc = 0;
  for (int i = 0; i < t->n_pods && !rc; i++) {
    total += pod_milli(&t->pods[i]);
    if (pod_kind(&t->pods[i]) == K_MULTI) multi += pod_milli(&t->pods[i]);
    rc = push(out, &t->pods[i], err);
  }
  if (rc) return rc;
  if (total > 0 && multi * 100 > (int64_t)f->pct * total)
    return gp_err_set(err, GP_EINVAL, NULL, 0, "family",
                      "multi-GPU pods already ask %.1f%% of the GPU demand, more than %d%%",
                      100.0 * (double)multi / (double)total, f->pct);
  if (f->pct == 100 && total > multi)
    return gp_err_set(err, GP_EINVAL, NULL, 0, "family", "multigpu:100 would need the other GPU pods removed");
  if (multi * 100 < (int64_t)f->pct * total && (rc = need(p, K_MULTI, "multi-GPU", err)) != 0) return rc;
  while (multi * 100 < (int64_t)f->pct * total && !rc) {
    const gp_frag_pod *q = &t->pods[p->idx[K_MULTI][gp__sim_frag_rng_below(g, (uint64_t)p->n[K_MULTI])]];
    multi += pod_milli(q), total += pod_milli(q);
    rc = push(out, q, err);
  }
  return rc;
}

/* The constrained pods of the reference list by kind, as gpu_spec indices of t (added to
   t's specs as needed). */
static int spec_pools(gp_frag_trace *t, const gp_frag_trace *ref, pools *sp, gp_err *err) {
  memset(sp, 0, sizeof(*sp));
  for (int k = 0; k < K_COUNT; k++) sp->idx[k] = gp_xmalloc((size_t)(ref->n_pods + 1) * sizeof(int));
  int *map = gp_xmalloc((size_t)(ref->n_specs + 1) * sizeof(int));
  for (int i = 0; i < ref->n_specs; i++) map[i] = -1;
  gp_buf b;
  gp_buf_init(&b, 0);
  int rc = 0;
  for (int i = 0; i < ref->n_pods && !rc; i++) {
    const gp_frag_pod *q = &ref->pods[i];
    if (q->spec < 0 || q->n_gpus == 0) continue;
    if (map[q->spec] < 0) {
      gp_buf_reset(&b);
      for (int m = 0; m < ref->specs[q->spec].n_models; m++)
        gp_buf_printf(&b, "%s%s", m ? "|" : "", ref->specs[q->spec].models[m]);
      int idx = gp_frag_trace_spec(t, b.data, err);
      if (idx < 0) rc = idx;
      else map[q->spec] = idx;
    }
    if (!rc) {
      int k = pod_kind(q);
      sp->idx[k][sp->n[k]++] = map[q->spec];
    }
  }
  gp_buf_done(&b);
  free(map);
  if (!rc && sp->n[K_FRACTION] + sp->n[K_ONE] + sp->n[K_MULTI] == 0)
    rc = gp_err_set(err, GP_EINVAL, NULL, 0, "specs_from", "the reference list has no GPU pod with a gpu_spec");
  return rc;
}

/* P% of the GPU pods (a random choice) take a gpu_spec drawn from the reference list's
   constrained pods of their kind (any kind when it has none of theirs); the others none. */
static int make_gpuspec(gp_frag_trace *t, const gp_frag_family *f, gp__sim_frag_rng *g, pod_list *out, gp_err *err) {
  if (!f->specs_from)
    return gp_err_set(err, GP_EINVAL, NULL, 0, "specs_from",
                      "the gpuspec family draws gpu_specs from a reference pod list (--specs-from)");
  pools sp;
  int rc = spec_pools(t, f->specs_from, &sp, err);
  int *gpu = gp_xmalloc((size_t)(t->n_pods + 1) * sizeof(int));
  int n_gpu = 0;
  for (int i = 0; i < t->n_pods && !rc; i++) {
    if (t->pods[i].n_gpus > 0) gpu[n_gpu++] = i;
    rc = push(out, &t->pods[i], err);
    if (!rc) out->v[out->n - 1].spec = -1;
  }
  int pick = (int)(((int64_t)n_gpu * f->pct * 2 + 100) / 200);
  for (int i = 0; i < pick && !rc; i++) { /* a partial Fisher-Yates shuffle picks them */
    int j = i + (int)gp__sim_frag_rng_below(g, (uint64_t)(n_gpu - i));
    int tmp = gpu[i];
    gpu[i] = gpu[j], gpu[j] = tmp;
    gp_frag_pod *q = &out->v[gpu[i]];
    int k = pod_kind(q);
    if (sp.n[k] > 0) {
      q->spec = sp.idx[k][gp__sim_frag_rng_below(g, (uint64_t)sp.n[k])];
    } else {
      int all = sp.n[K_FRACTION] + sp.n[K_ONE] + sp.n[K_MULTI];
      int r = (int)gp__sim_frag_rng_below(g, (uint64_t)all);
      for (int kk = K_FRACTION; kk < K_COUNT; kk++) {
        if (r < sp.n[kk]) {
          q->spec = sp.idx[kk][r];
          break;
        }
        r -= sp.n[kk];
      }
    }
  }
  free(gpu);
  pools_free(&sp);
  return rc;
}

int gp_frag_family_apply(gp_frag_trace *t, const gp_frag_family *f, gp_err *err) {
  if (!t || !f || f->kind < GP_FRAG_FAMILY_CPU || f->kind > GP_FRAG_FAMILY_GPUSPEC || f->pct < 0 ||
      f->pct > (f->kind == GP_FRAG_FAMILY_CPU ? 99 : 100))
    return gp_err_set(err, GP_EINVAL, NULL, 0, "family", "bad family or percentage");
  pools p;
  pools_build(t, &p);
  gp__sim_frag_rng g = {f->seed ^ 0x66616d696c79ULL};
  pod_list out = {0};
  int rc;
  switch (f->kind) {
  case GP_FRAG_FAMILY_CPU: rc = make_cpu(t, f, &p, &g, &out, err); break;
  case GP_FRAG_FAMILY_GPUSHARE: rc = make_gpushare(t, f, &p, &g, &out, err); break;
  case GP_FRAG_FAMILY_MULTIGPU: rc = make_multigpu(t, f, &p, &g, &out, err); break;
  default: rc = make_gpuspec(t, f, &g, &out, err); break;
  }
  pools_free(&p);
  if (!rc && out.n == 0) rc = gp_err_set(err, GP_EINVAL, NULL, 0, "family", "the member has no pod");
  if (rc) {
    free(out.v);
    return rc;
  }
  free(t->pods);
  t->pods = out.v;
  t->n_pods = (int)out.n;
  size_t len = strlen(t->name);
  snprintf(t->name + len, sizeof(t->name) - len, "+%s%d", kind_names[f->kind], f->pct);
  return 0;
}
