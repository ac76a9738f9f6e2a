/* SPDX-License-Identifier: Apache-2.0 */
/* One run of the fragmentation experiment (see frag.h).
 *
 * Faithfulness notes (from reading the paper's simulator, not copying it):
 * - the workload mix FGD measures against is built from the trace's own pod list (before
 *   resampling), CPU-only pods included, keeping the most popular shapes covering 95%;
 * - resampling appends clones drawn uniformly from the original list after the shuffled
 *   list and stops at the first clone whose per-GPU milli would take the total past the
 *   target (their test; a multi-GPU clone may overshoot by a few GPUs); a list asking more
 *   than the target loses random pods instead;
 * - equally popular shapes at the 95% cut are ordered like theirs: larger (CPU, per-GPU
 *   milli, GPU count, gpu_spec string) first;
 * - node ties go to the first node of a random order of the nodes drawn per run from the
 *   seed, except for Random: the simulator picks the smallest node name, but before the
 *   run it prefixes every node's name with its place in a random permutation
 *   (pkg/simulator/simulator.go, syncClusterResourceList), so "smallest name" is a random
 *   node, not the first of the list. Ties decide where most CPU-only pods go under FGD
 *   (they change no node's fragmentation, so every node scores the same), which is why
 *   list order put FGD 0.9 / 1.9 points under the published figures at 20% / 25% CPU-only
 *   pods;
 * - the allocation at "k% arrived" is the mean of the allocation over every arrival whose
 *   arrived demand rounds to k% (the authors' analysis does this), falling back to k-1..k+1.
 *
 * Speed: a node's score for a request depends only on the node's state and the request's
 * shape, so scores are cached per (node, request class) and recomputed only for nodes
 * that changed since; one run over the openb traces takes well under a second. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/share/share.h"
#include "sim/frag/frag.h"
#include "sim/frag/rng.h"
#include "util/buf.h"
#include "util/mem.h"

#define MAX_SEQUENCE 50000000 /* arrivals per run */
#define MAX_CACHE_ENTRIES (4u * 1024 * 1024) /* 64 MiB of cached scores at most */

void gp_frag_opts_init(gp_frag_opts *o) {
  o->policy = GP_SHARE_POLICY_FGD;
  o->seed = 42;
  o->inflate = 1.3;
  o->popularity_pct = 95;
}

/* The order the nodes are scored in, which decides ties: a permutation drawn from its own
   stream of the seed (so the arrival sequence is the same as with any other order). */
static int *node_order(int n, uint64_t seed) {
  int *perm = gp_xmalloc((size_t)(n > 0 ? n : 1) * sizeof(int));
  for (int i = 0; i < n; i++) perm[i] = i;
  gp__sim_frag_rng g = {seed ^ 0x6e6f64652d6f7264ULL};
  for (int i = n - 1; i > 0; i--) {
    int j = (int)gp__sim_frag_rng_below(&g, (uint64_t)i + 1);
    int tmp = perm[i];
    perm[i] = perm[j], perm[j] = tmp;
  }
  return perm;
}

typedef struct cache_entry {
  uint32_t version; /* node version + 1 when filled; 0: empty */
  uint32_t mask;
  double score;     /* -INFINITY: does not fit */
} cache_entry;

typedef struct run {
  const gp_frag_trace *t;
  gp_share_node *nodes;
  gp_share_req *req;     /* per class */
  int *pod_class;        /* per trace pod */
  int n_classes;
  uint32_t *version;     /* per node */
  cache_entry *cache;    /* n_classes x n_nodes (a class's row is scanned per arrival),
                            or NULL when too large */
} run;

static int64_t pod_gpu(const gp_frag_pod *p) {
  return (int64_t)p->n_gpus * p->gpu_milli;
}

/* Groups pods with equal requests (so their scores can be cached together). */
static void build_classes(run *r) {
  const gp_frag_trace *t = r->t;
  size_t cap = 1;
  while (cap < (size_t)t->n_pods * 2) cap <<= 1;
  int *slot = gp_xmalloc(cap * sizeof(int));
  for (size_t i = 0; i < cap; i++) slot[i] = -1;
  int *first = gp_xmalloc((size_t)t->n_pods * sizeof(int));
  r->pod_class = gp_xmalloc((size_t)t->n_pods * sizeof(int));
  r->n_classes = 0;
  for (int i = 0; i < t->n_pods; i++) {
    const gp_frag_pod *p = &t->pods[i];
    uint64_t h = (uint64_t)p->cpu_milli * 0x9e3779b97f4a7c15ULL ^ (uint64_t)p->mem_mib * 0xc2b2ae3d27d4eb4fULL ^
                 (uint64_t)p->n_gpus * 0x165667b19e3779f9ULL ^ (uint64_t)p->gpu_milli * 0x27d4eb2f165667c5ULL ^
                 (uint64_t)(p->spec + 1) * 0x94d049bb133111ebULL;
    h ^= h >> 29;
    size_t k = (size_t)h & (cap - 1);
    for (;;) {
      if (slot[k] < 0) {
        slot[k] = r->n_classes;
        first[r->n_classes] = i;
        r->pod_class[i] = r->n_classes++;
        break;
      }
      const gp_frag_pod *q = &t->pods[first[slot[k]]];
      if (q->cpu_milli == p->cpu_milli && q->mem_mib == p->mem_mib && q->n_gpus == p->n_gpus &&
          q->gpu_milli == p->gpu_milli && q->spec == p->spec) {
        r->pod_class[i] = slot[k];
        break;
      }
      k = (k + 1) & (cap - 1);
    }
  }
  r->req = gp_xcalloc((size_t)r->n_classes, sizeof(gp_share_req));
  for (int c = 0; c < r->n_classes; c++) {
    const gp_frag_pod *p = &t->pods[first[c]];
    gp_share_req *q = &r->req[c];
    q->n_gpus = p->n_gpus;
    q->gpu_milli = p->n_gpus ? p->gpu_milli : 0;
    q->cpu_milli = p->cpu_milli;
    q->mem_mib = p->mem_mib;
    if (p->spec >= 0) {
      q->n_models = t->specs[p->spec].n_models;
      q->models = t->specs[p->spec].models;
    }
  }
  free(first);
  free(slot);
}

/* The authors' key for a shape's accepted models: the gpu_spec string ("A|B"), "" for any. */
static void spec_string(const gp_frag_trace *t, int spec, gp_buf *b) {
  gp_buf_reset(b);
  if (spec < 0) return;
  for (int i = 0; i < t->specs[spec].n_models; i++)
    gp_buf_printf(b, "%s%s", i ? "|" : "", t->specs[spec].models[i]);
}

typedef struct mix_key {
  int cls;
  const gp_frag_pod *p;
  const char *spec; /* the gpu_spec string, "" for any */
} mix_key;

/* Descending (CPU, per-GPU milli, GPU count, gpu_spec string): the authors' simulator sorts
   the shapes by count, and equal counts by this key, largest first (pkg/type/resource.go,
   TargetPodList.Less and PodResource.Less, under sort.Reverse in
   pkg/utils/frag.go:SortTargetPodInDecreasingCount). Host memory is not in their key. */
static int mix_key_cmp(const void *a, const void *b) {
  const mix_key *x = a, *y = b;
  int64_t xg = x->p->n_gpus ? x->p->gpu_milli : 0, yg = y->p->n_gpus ? y->p->gpu_milli : 0;
  if (x->p->cpu_milli != y->p->cpu_milli) return x->p->cpu_milli > y->p->cpu_milli ? -1 : 1;
  if (xg != yg) return xg > yg ? -1 : 1;
  if (x->p->n_gpus != y->p->n_gpus) return x->p->n_gpus > y->p->n_gpus ? -1 : 1;
  int c = strcmp(x->spec, y->spec);
  if (c) return c > 0 ? -1 : 1;
  return x->cls - y->cls; /* same key, other host memory: merged by the mix anyway */
}

/* The FGD mix: every class weighted by how many pods of the original list have it. The
   mix sorts by weight keeping insertion order on ties, so the classes go in in the
   authors' tie order: which of several equally popular shapes survives the 95% cut
   decides the mix (on gpuspec33 two shapes of 6 pods each are at the cut). */
static int build_mix(run *r, double popularity_pct, gp_share_mix **ret, gp_err *err) {
  double *count = gp_xcalloc((size_t)r->n_classes, sizeof(double));
  int *first = gp_xmalloc((size_t)r->n_classes * sizeof(int));
  for (int c = 0; c < r->n_classes; c++) first[c] = -1;
  for (int i = 0; i < r->t->n_pods; i++) {
    count[r->pod_class[i]] += 1;
    if (first[r->pod_class[i]] < 0) first[r->pod_class[i]] = i;
  }
  mix_key *keys = gp_xcalloc((size_t)r->n_classes, sizeof(mix_key));
  gp_buf b;
  gp_buf_init(&b, 0);
  for (int c = 0; c < r->n_classes; c++) {
    keys[c].cls = c;
    keys[c].p = &r->t->pods[first[c]];
    spec_string(r->t, keys[c].p->spec, &b);
    keys[c].spec = gp_xstrdup(b.len ? b.data : "");
  }
  gp_buf_done(&b);
  qsort(keys, (size_t)r->n_classes, sizeof(mix_key), mix_key_cmp);
  gp_share_mix *mix = gp_share_mix_new();
  int rc = 0;
  for (int k = 0; k < r->n_classes && !rc; k++)
    rc = gp_share_mix_add(mix, &r->req[keys[k].cls], count[keys[k].cls], err);
  /* The cluster's GPUs per model, which gpool weighs model-limited demand against. */
  for (int i = 0; i < r->t->n_nodes && !rc; i++)
    rc = gp_share_mix_set_capacity(mix, r->t->models[r->t->nodes[i].model], r->t->nodes[i].n_gpus, err);
  if (!rc) rc = gp_share_mix_finish(mix, popularity_pct, err);
  for (int c = 0; c < r->n_classes; c++) free((char *)keys[c].spec);
  free(keys);
  free(first);
  free(count);
  if (rc) {
    gp_share_mix_free(mix);
    return rc;
  }
  *ret = mix;
  return 0;
}

/* The arrival sequence: shuffled list, then resampled up (or trimmed down) to target. */
static int build_sequence(const gp_frag_trace *t, uint64_t seed, int64_t target, int **ret_seq,
                          int *ret_n, gp_err *err) {
  gp__sim_frag_rng g = {seed};
  size_t cap = (size_t)t->n_pods;
  int *seq = gp_xmalloc(cap * sizeof(int));
  int n = t->n_pods;
  int64_t total = 0;
  for (int i = 0; i < n; i++) seq[i] = i, total += pod_gpu(&t->pods[i]);
  if (total == 0) {
    free(seq);
    return gp_err_set(err, GP_EINVAL, NULL, 0, "pods", "no pod in the trace asks for a GPU");
  }
  for (int i = n - 1; i > 0; i--) {
    int j = (int)gp__sim_frag_rng_below(&g, (uint64_t)i + 1);
    int tmp = seq[i];
    seq[i] = seq[j], seq[j] = tmp;
  }
  if (total < target) {
    for (;;) {
      int i = (int)gp__sim_frag_rng_below(&g, (uint64_t)t->n_pods);
      /* The authors' stop test adds the clone's per-GPU milli, not its total
         (pkg/simulator/simulator.go:tuneUpPods), so a multi-GPU clone drawn near the
         target is still appended and the list may end a few GPUs past it. */
      if (total + (t->pods[i].n_gpus ? t->pods[i].gpu_milli : 0) > target) break;
      if (n >= MAX_SEQUENCE) {
        free(seq);
        return gp_err_set(err, GP_ELIMIT, NULL, 0, "pods", "more than %d arrivals", MAX_SEQUENCE);
      }
      gp_xgrow((void **)&seq, &cap, (size_t)n + 1, sizeof(int));
      seq[n++] = i;
      total += pod_gpu(&t->pods[i]);
    }
  } else {
    /* Dropping uniformly random pods one at a time is dropping them in the order of a
       random permutation: draw it, drop until the total fits, keep the rest in order. */
    int *order = gp_xmalloc((size_t)n * sizeof(int));
    for (int i = 0; i < n; i++) order[i] = i;
    for (int i = n - 1; i > 0; i--) {
      int j = (int)gp__sim_frag_rng_below(&g, (uint64_t)i + 1);
      int tmp = order[i];
      order[i] = order[j], order[j] = tmp;
    }
    for (int k = 0; k < n && total > target; k++) {
      total -= pod_gpu(&t->pods[seq[order[k]]]);
      seq[order[k]] = -1;
    }
    free(order);
    int m = 0;
    for (int i = 0; i < n; i++) {
      if (seq[i] >= 0) seq[m++] = seq[i];
    }
    n = m;
  }
  *ret_seq = seq;
  *ret_n = n;
  return 0;
}

static void place(run *r, int node, const gp_share_req *q, uint32_t mask) {
  gp_share_node *nd = &r->nodes[node];
  for (int g = 0; g < nd->n_gpus; g++) {
    if (mask & (1u << g)) nd->gpu_free_milli[g] -= q->gpu_milli;
  }
  nd->cpu_free_milli -= q->cpu_milli;
  nd->mem_free_mib -= q->mem_mib;
  r->version[node]++;
}

int gp_frag_run(const gp_frag_trace *t, const gp_frag_opts *o, gp_frag_result *ret, gp_err *err) {
  if (!(o->inflate > 0) || o->inflate * 100 > GP_FRAG_MAX_PCT)
    return gp_err_set(err, GP_EINVAL, NULL, 0, "inflate", "must be in (0, %d%%]", GP_FRAG_MAX_PCT);
  run r = {.t = t};
  r.nodes = gp_xcalloc((size_t)t->n_nodes, sizeof(gp_share_node));
  r.version = gp_xcalloc((size_t)t->n_nodes, sizeof(uint32_t));
  int64_t cap_milli = 0;
  int *order = node_order(t->n_nodes, o->seed);
  for (int k = 0; k < t->n_nodes; k++) {
    int i = order[k];
    gp_share_node *nd = &r.nodes[k]; /* scored (and tie-broken) in this order */
    nd->model = t->models[t->nodes[i].model];
    nd->n_gpus = t->nodes[i].n_gpus;
    for (int g = 0; g < nd->n_gpus; g++) nd->gpu_free_milli[g] = GP_GPU_MILLI;
    nd->cpu_free_milli = t->nodes[i].cpu_milli;
    nd->mem_free_mib = t->nodes[i].mem_mib;
    cap_milli += (int64_t)nd->n_gpus * GP_GPU_MILLI;
  }
  free(order);
  build_classes(&r);
  gp_share_mix *mix = NULL;
  int *seq = NULL, n_seq = 0;
  double *sum = NULL;
  int *cnt = NULL;
  int rc = build_mix(&r, o->popularity_pct, &mix, err);
  if (!rc) rc = build_sequence(t, o->seed, (int64_t)floor(o->inflate * (double)cap_milli), &seq, &n_seq, err);
  if (rc) goto out;
  /* Random's GPU choice changes with the round; its fit does not: it is cached too and the
     chosen node's GPU is drawn again below. */
  bool use_cache = (uint64_t)t->n_nodes * (uint64_t)r.n_classes <= MAX_CACHE_ENTRIES;
  if (use_cache) r.cache = gp_xcalloc((size_t)t->n_nodes * (size_t)r.n_classes, sizeof(cache_entry));

  gp_frag_result res;
  memset(&res, 0, sizeof(res));
  res.max_pct = (int)floor(o->inflate * 100 + 1e-9);
  res.gpu_capacity_milli = cap_milli;
  sum = gp_xcalloc(GP_FRAG_MAX_PCT + 2, sizeof(double));
  cnt = gp_xcalloc(GP_FRAG_MAX_PCT + 2, sizeof(int));
  gp_share_ctx ctx = {.policy = o->policy, .mix = mix, .seed = o->seed, .round = 0, .tie = GP_SHARE_TIE_FIRST};
  int64_t alloc = 0, arrived = 0;
  for (int s = 0; s < n_seq && !rc; s++) {
    int pod = seq[s];
    int cls = r.pod_class[pod];
    const gp_share_req *q = &r.req[cls];
    ctx.round = (uint64_t)s;
    int best = -1;
    double best_score = 0;
    uint32_t best_mask = 0;
    uint64_t best_tie = 0;
    for (int i = 0; i < t->n_nodes; i++) {
      double score;
      uint32_t mask;
      cache_entry *ce = r.cache ? &r.cache[(size_t)cls * (size_t)t->n_nodes + (size_t)i] : NULL;
      if (ce && ce->version == r.version[i] + 1) {
        score = ce->score, mask = ce->mask;
      } else {
        gp_share_choice c;
        rc = gp_share_score(&ctx, &r.nodes[i], q, &c, err);
        if (rc) break;
        score = c.fits ? c.score : -INFINITY;
        mask = c.gpu_mask;
        if (ce) ce->version = r.version[i] + 1, ce->score = score, ce->mask = mask;
      }
      if (score == -INFINITY) continue;
      if (best < 0 || score > best_score) {
        best = i, best_score = score, best_mask = mask, best_tie = gp_share_tiebreak(&ctx, i);
      } else if (score == best_score) {
        uint64_t tie = gp_share_tiebreak(&ctx, i);
        if (tie > best_tie) best = i, best_mask = mask, best_tie = tie;
      }
    }
    if (rc) break;
    if (best >= 0 && o->policy == GP_SHARE_POLICY_RANDOM && r.cache) {
      gp_share_choice c;
      if ((rc = gp_share_score(&ctx, &r.nodes[best], q, &c, err)) != 0) break;
      best_mask = c.gpu_mask;
    }
    int64_t want = (int64_t)q->n_gpus * q->gpu_milli;
    arrived += want;
    res.pods_arrived++;
    res.gpu_arrived_milli += want;
    if (best >= 0) {
      place(&r, best, q, best_mask);
      alloc += want;
    } else {
      res.pods_failed++;
      res.gpu_failed_milli += want;
    }
    long k = lround((double)arrived * 100.0 / (double)cap_milli);
    if (k >= 0 && k <= GP_FRAG_MAX_PCT) {
      sum[k] += (double)alloc * 100.0 / (double)cap_milli;
      cnt[k]++;
    }
  }
  if (rc) goto out;
  for (int k = 0; k <= res.max_pct; k++) {
    if (cnt[k]) {
      res.alloc_pct[k] = sum[k] / cnt[k];
      continue;
    }
    double s2 = 0;
    int c2 = 0;
    for (int j = k - 1; j <= k + 1; j++) {
      if (j >= 0 && j <= GP_FRAG_MAX_PCT) s2 += sum[j], c2 += cnt[j];
    }
    /* No arrival near k% (a huge pod jumped over it, or the run ended short of it): the
       allocation then is the one reached when arrivals passed k, i.e. the last before. */
    res.alloc_pct[k] = c2 ? s2 / c2 : (k > 0 ? res.alloc_pct[k - 1] : 0);
  }
  *ret = res;
out:
  free(sum);
  free(cnt);
  free(seq);
  gp_share_mix_free(mix);
  free(r.cache);
  free(r.req);
  free(r.pod_class);
  free(r.version);
  free(r.nodes);
  return rc;
}
