/* SPDX-License-Identifier: Apache-2.0 */
/* The workload mix (request shapes and their popularity) and the node fragmentation
 * measure FGD is built on (Weng et al., ATC'23, section 4): a node's free GPU capacity is a
 * fragment for a shape when the shape cannot be placed on the node at all (wrong model, too
 * little CPU, too few GPUs with enough free room), and otherwise the free room of each GPU
 * too small for the shape is. F_n(M) sums that over the mix, weighted by popularity.
 *
 * Shapes are keyed like the paper's simulator keys its "typical pods": GPUs, milli-GPU per
 * GPU, GPU memory, CPU and accepted models; host memory is left out of the key (it does not
 * decide GPU fragmentation and would split popular shapes into many rare ones). */
#include <stdlib.h>
#include <string.h>

#include "core/share/share.h"
#include "core/share/share_internal.h"
#include "util/mem.h"

#define MIX_MAX_SHAPES GP_SHARE_MAX_SHAPES
#define MIX_MAX_MODELS 64
#define MIX_MAX_CAP_MODELS 256

static bool same_models(const gp_share_req *a, const gp_share_req *b) {
  if (a->n_models != b->n_models) return false;
  for (int i = 0; i < a->n_models; i++) {
    if (strcmp(a->models[i], b->models[i]) != 0) return false;
  }
  return true;
}

static bool same_shape(const gp_share_req *a, const gp_share_req *b) {
  return a->n_gpus == b->n_gpus && a->gpu_milli == b->gpu_milli &&
         a->gpu_mem_mib == b->gpu_mem_mib && a->cpu_milli == b->cpu_milli && same_models(a, b);
}

gp_share_mix *gp_share_mix_new(void) {
  return gp_xcalloc(1, sizeof(gp_share_mix));
}

void gp_share_mix_free(gp_share_mix *mix) {
  if (!mix) return;
  for (int i = 0; i < mix->n; i++) {
    for (int j = 0; j < mix->shape[i].n_models; j++) free((char *)mix->shape[i].models[j]);
    free((void *)mix->shape[i].models);
  }
  for (int i = 0; i < mix->n_memo; i++) free(mix->memo_model[i]), free(mix->memo_acc[i]);
  for (int i = 0; i < mix->n_cap; i++) free(mix->cap_model[i]);
  free(mix->cap_model);
  free(mix->cap_gpus);
  free(mix->cap_pressure);
  free(mix->shape);
  free(mix->weight);
  free(mix);
}

int gp_share_req_check(const gp_share_req *req, gp_err *err) {
  if (!req) return gp_err_set(err, GP_EINVAL, NULL, 0, "request", "no request given");
  if (req->n_gpus < 0 || req->n_gpus > GP_MAX_NODE_GPUS)
    return gp_err_set(err, GP_EINVAL, NULL, 0, "n_gpus", "GPUs per task must be 0..%d, not %d",
                      GP_MAX_NODE_GPUS, req->n_gpus);
  if (req->n_gpus > 0 && (req->gpu_milli < 1 || req->gpu_milli > GP_GPU_MILLI))
    return gp_err_set(err, GP_EINVAL, NULL, 0, "gpu_milli",
                      "milli-GPU per GPU must be 1..1000, not %d", req->gpu_milli);
  if (req->n_gpus > 1 && req->gpu_milli != GP_GPU_MILLI)
    return gp_err_set(err, GP_EINVAL, NULL, 0, "gpu_milli",
                      "a fraction of a GPU is possible only with one GPU (asked %d GPUs at %d milli)",
                      req->n_gpus, req->gpu_milli);
  if (req->cpu_milli < 0 || req->mem_mib < 0 || req->gpu_mem_mib < 0)
    return gp_err_set(err, GP_EINVAL, NULL, 0, "cpu_milli", "negative CPU or memory request");
  if (req->n_models < 0 || req->n_models > MIX_MAX_MODELS || (req->n_models > 0 && !req->models))
    return gp_err_set(err, GP_EINVAL, NULL, 0, "models", "bad list of GPU models");
  for (int i = 0; i < req->n_models; i++) {
    if (!req->models[i]) return gp_err_set(err, GP_EINVAL, NULL, 0, "models", "NULL GPU model");
  }
  return 0;
}

int gp_share_mix_add(gp_share_mix *mix, const gp_share_req *req, double weight, gp_err *err) {
  int rc = gp_share_req_check(req, err);
  if (rc) return rc;
  if (mix->finished)
    return gp_err_set(err, GP_ESTATE, NULL, 0, "mix", "the mix is finished; build a new one");
  if (!(weight > 0) || weight > 1e12)
    return gp_err_set(err, GP_EINVAL, NULL, 0, "weight", "weight must be positive");
  gp_share_req key = *req;
  if (key.n_gpus == 0) key.gpu_milli = 0, key.gpu_mem_mib = 0;
  key.mem_mib = 0;
  for (int i = 0; i < mix->n; i++) {
    if (same_shape(&mix->shape[i], &key)) {
      mix->weight[i] += weight;
      return 0;
    }
  }
  if (mix->n >= MIX_MAX_SHAPES)
    return gp_err_set(err, GP_ELIMIT, NULL, 0, "mix", "more than %d request shapes",
                      MIX_MAX_SHAPES);
  gp_xgrow((void **)&mix->shape, &mix->shape_cap, (size_t)mix->n + 1, sizeof(gp_share_req));
  gp_xgrow((void **)&mix->weight, &mix->weight_cap, (size_t)mix->n + 1, sizeof(double));
  const char **models = NULL;
  if (key.n_models > 0) {
    models = gp_xcalloc((size_t)key.n_models, sizeof(char *));
    for (int i = 0; i < key.n_models; i++) models[i] = gp_xstrdup(key.models[i]);
  }
  key.models = models;
  mix->shape[mix->n] = key;
  mix->weight[mix->n] = weight;
  mix->n++;
  return 0;
}

/* Each capacity model's pressure (share.h), from the kept shapes' popularity x GPUs. */
static void mix_pressures(gp_share_mix *mix) {
  double demand = 0, gpus = 0;
  for (int i = 0; i < mix->n; i++) demand += mix->weight[i] * mix->shape[i].n_gpus * mix->shape[i].gpu_milli;
  for (int m = 0; m < mix->n_cap; m++) gpus += mix->cap_gpus[m];
  for (int m = 0; m < mix->n_cap; m++) {
    double limited = 0;
    for (int i = 0; i < mix->n; i++) {
      const gp_share_req *s = &mix->shape[i];
      if (s->n_gpus == 0 || s->n_models == 0) continue;
      for (int k = 0; k < s->n_models; k++) {
        if (strcmp(s->models[k], mix->cap_model[m]) == 0) {
          limited += mix->weight[i] * s->n_gpus * s->gpu_milli / s->n_models;
          break;
        }
      }
    }
    mix->cap_pressure[m] = demand > 0 && mix->cap_gpus[m] > 0 ? (limited / demand) / (mix->cap_gpus[m] / gpus) : 0;
  }
}

int gp_share_mix_finish(gp_share_mix *mix, double popularity_pct, gp_err *err) {
  if (mix->finished) return gp_err_set(err, GP_ESTATE, NULL, 0, "mix", "already finished");
  if (!(popularity_pct > 0) || popularity_pct > 100)
    return gp_err_set(err, GP_EINVAL, NULL, 0, "popularity_pct", "must be in (0, 100]");
  /* Most popular first; equal weights keep insertion order (stable insertion sort). */
  for (int i = 1; i < mix->n; i++) {
    gp_share_req s = mix->shape[i];
    double w = mix->weight[i];
    int j = i - 1;
    while (j >= 0 && mix->weight[j] < w) {
      mix->shape[j + 1] = mix->shape[j];
      mix->weight[j + 1] = mix->weight[j];
      j--;
    }
    mix->shape[j + 1] = s;
    mix->weight[j + 1] = w;
  }
  double total = 0;
  for (int i = 0; i < mix->n; i++) total += mix->weight[i];
  int keep = 0;
  double kept = 0;
  while (keep < mix->n && kept < popularity_pct / 100.0 * total) kept += mix->weight[keep++];
  for (int i = keep; i < mix->n; i++) {
    for (int j = 0; j < mix->shape[i].n_models; j++) free((char *)mix->shape[i].models[j]);
    free((void *)mix->shape[i].models);
  }
  mix->n = keep;
  for (int i = 0; i < mix->n; i++) mix->weight[i] = kept > 0 ? mix->weight[i] / kept : 0;
  mix_pressures(mix);
  double demand = 0, multi = 0;
  for (int i = 0; i < mix->n; i++) {
    double d = mix->weight[i] * mix->shape[i].n_gpus * mix->shape[i].gpu_milli;
    demand += d;
    if (mix->shape[i].n_gpus > 1) multi += d;
  }
  mix->multi_share = demand > 0 ? multi / demand : 0;
  mix->finished = true;
  return 0;
}

int gp_share_mix_set_capacity(gp_share_mix *mix, const char *model, double gpus, gp_err *err) {
  if (mix->finished) return gp_err_set(err, GP_ESTATE, NULL, 0, "mix", "the mix is finished; set capacity first");
  if (!model || !model[0]) return gp_err_set(err, GP_EINVAL, NULL, 0, "model", "empty GPU model");
  if (!(gpus >= 0) || gpus > 1e12) return gp_err_set(err, GP_EINVAL, NULL, 0, "gpus", "GPUs must be 0 or more");
  for (int i = 0; i < mix->n_cap; i++) {
    if (strcmp(mix->cap_model[i], model) == 0) {
      mix->cap_gpus[i] += gpus;
      return 0;
    }
  }
  if (mix->n_cap >= MIX_MAX_CAP_MODELS)
    return gp_err_set(err, GP_ELIMIT, NULL, 0, "model", "more than %d GPU models", MIX_MAX_CAP_MODELS);
  mix->cap_model = gp_xrealloc(mix->cap_model, sizeof(char *) * (size_t)(mix->n_cap + 1));
  mix->cap_gpus = gp_xrealloc(mix->cap_gpus, sizeof(double) * (size_t)(mix->n_cap + 1));
  mix->cap_pressure = gp_xrealloc(mix->cap_pressure, sizeof(double) * (size_t)(mix->n_cap + 1));
  mix->cap_model[mix->n_cap] = gp_xstrdup(model);
  mix->cap_gpus[mix->n_cap] = gpus;
  mix->cap_pressure[mix->n_cap] = 0;
  mix->n_cap++;
  return 0;
}

double gp_share_mix_pressure(const gp_share_mix *mix, const char *model) {
  if (!mix || !model) return 0;
  for (int i = 0; i < mix->n_cap; i++) {
    if (strcmp(mix->cap_model[i], model) == 0) return mix->cap_pressure[i];
  }
  return 0;
}

int gp_share_mix_count(const gp_share_mix *mix) {
  return mix ? mix->n : 0;
}

const gp_share_req *gp_share_mix_shape(const gp_share_mix *mix, int i, double *ret_popularity) {
  if (!mix || i < 0 || i >= mix->n) return NULL;
  if (ret_popularity) *ret_popularity = mix->weight[i];
  return &mix->shape[i];
}

bool gp_share_model_ok(const gp_share_node *node, const gp_share_req *req) {
  if (req->n_models == 0) return true;
  if (!node->model || !node->model[0]) return false;
  for (int i = 0; i < req->n_models; i++) {
    if (strcmp(req->models[i], node->model) == 0) return true;
  }
  return false;
}

void gp_share_mix_access(const gp_share_mix *cmix, const gp_share_node *node, bool *acc) {
  if (!cmix) return;
  gp_share_mix *mix = (gp_share_mix *)cmix; /* the memo only; see share_internal.h */
  const char *model = node->model ? node->model : "";
  for (int m = 0; m < mix->n_memo; m++) {
    if (strcmp(mix->memo_model[m], model) == 0) {
      memcpy(acc, mix->memo_acc[m], (size_t)mix->n * sizeof(bool));
      return;
    }
  }
  for (int i = 0; i < mix->n; i++)
    acc[i] = mix->shape[i].n_gpus > 0 && gp_share_model_ok(node, &mix->shape[i]);
  if (!mix->finished || mix->n == 0) return;
  int slot = mix->n_memo < GP_SHARE_MEMO ? mix->n_memo++ : mix->memo_next++ % GP_SHARE_MEMO;
  free(mix->memo_model[slot]);
  free(mix->memo_acc[slot]);
  mix->memo_model[slot] = gp_xstrdup(model);
  mix->memo_acc[slot] = gp_xmalloc((size_t)mix->n * sizeof(bool));
  memcpy(mix->memo_acc[slot], acc, (size_t)mix->n * sizeof(bool));
}

double gp_share_frag_acc(const gp_share_mix *mix, const bool *acc, int n_gpus,
                         const int *free_milli, int64_t cpu_free, double strand) {
  int64_t total = 0;
  for (int g = 0; g < n_gpus; g++) total += free_milli[g];
  if (total == 0 || !mix) return 0;
  double frag = 0;
  for (int i = 0; i < mix->n; i++) {
    const gp_share_req *s = &mix->shape[i];
    double p = mix->weight[i];
    if (!acc[i] || cpu_free < s->cpu_milli) {
      frag += p * (double)total; /* the shape cannot use any of it here */
      continue;
    }
    int fitting = 0;
    int64_t small = 0;
    for (int g = 0; g < n_gpus; g++) {
      if (free_milli[g] >= s->gpu_milli) fitting++;
      else small += free_milli[g];
    }
    if (fitting < s->n_gpus) {
      frag += p * (double)total;
      continue;
    }
    frag += p * (double)small;
    if (strand <= 0 || s->cpu_milli <= 0) continue;
    /* Copies of the shape the GPUs hold (a whole-GPU shape: sets of n_gpus idle GPUs)
       against copies the free CPU feeds: the GPU of the copies beyond is stranded. The
       GPUs hold at most total / (n_gpus x milli) copies; most nodes' CPU feeds that many,
       which spares the per-GPU divisions. */
    int64_t cpu_copies = cpu_free / s->cpu_milli;
    if (cpu_copies >= total / ((int64_t)s->n_gpus * s->gpu_milli)) continue;
    int64_t gpu_copies = 0;
    if (s->gpu_milli < GP_GPU_MILLI) {
      for (int g = 0; g < n_gpus; g++) gpu_copies += free_milli[g] / s->gpu_milli;
    } else {
      gpu_copies = fitting / s->n_gpus;
    }
    if (cpu_copies < gpu_copies)
      frag += p * strand * (double)(gpu_copies - cpu_copies) * s->n_gpus * s->gpu_milli;
  }
  return frag;
}

double gp_share_node_frag(const gp_share_mix *mix, const gp_share_node *node) {
  bool acc[GP_SHARE_MAX_SHAPES];
  gp_share_mix_access(mix, node, acc);
  return gp_share_frag_acc(mix, acc, node->n_gpus, node->gpu_free_milli, node->cpu_free_milli, 0);
}
