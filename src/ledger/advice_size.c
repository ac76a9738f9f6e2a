/* SPDX-License-Identifier: Apache-2.0 */
/* Right-sizing one task's request (advice_int.h): what it holds now as a part of one GPU,
 * and the cheapest request that still fits its memory and compute needs among what the
 * fleet offers: a MIG profile of the same model (its compute slices out of 7, as the ledger
 * counts it), a fraction of the same model's GPU, or a whole GPU of a cheaper model. */
#include <math.h>
#include <stdlib.h>
#include <strings.h>

#include "core/mig.h"
#include "ledger/advice_int.h"
#include "util/buf.h"

#define MIG_SLICES 7.0          /* compute slices of a MIG-capable GPU */
#define FRACTION_STEP 0.05      /* fractions are advised in 5% steps */

double gp__ledger_adv_share(const char *model, int gpus, int gpu_milli, const char *mig) {
  if (mig && *mig) {
    const gp_mig_profile *pr = gp_mig_profile_find(gp_mig_model_find(model), mig);
    return pr ? pr->compute_slices / MIG_SLICES : 0;
  }
  if (gpu_milli > 0) return gpu_milli / (double)GP_GPU_MILLI;
  return gpus;
}

static const gp_advice_model *fleet_model(const gp_advice *a, const char *name) {
  for (int i = 0; i < a->p.n_models; i++)
    if (a->p.models[i].name && strcasecmp(a->p.models[i].name, name) == 0) return &a->p.models[i];
  return NULL;
}

static void set_flag(gp__ledger_adv_fit *f, const char *text) {
  size_t n = 0;
  for (; text && text[n] && n + 1 < sizeof f->flag; n++) f->flag[n] = text[n];
  f->flag[n] = '\0';
}

/* The flag a user passes to `gpool submit` for this request. */
#define FLAG(f, ...)                    \
  do {                                  \
    gp_buf b_;                          \
    gp_buf_init(&b_, 0);                \
    gp_buf_printf(&b_, __VA_ARGS__);    \
    set_flag((f), b_.data);             \
    gp_buf_done(&b_);                   \
  } while (0)

bool gp__ledger_adv_fit_find(const gp_advice *a, const char *model, gp_capacity c, int64_t at,
                             double cur_share, double need_mem_mib, double need_gpu,
                             gp__ledger_adv_fit *ret) {
  const gp_advice_model *fm = fleet_model(a, model);
  if (!fm || !(cur_share > 0)) return false;
  gp__ledger_adv_fit best = {.ratio = 1.0 - GP_ADVICE_MIN_SAVING};
  bool found = false;
  /* A MIG profile of the same model: the fewest compute slices, then the least memory. */
  const gp_mig_model *mm = fm->mig ? gp_mig_model_find(model) : NULL;
  for (int i = 0; mm && i < mm->n_profiles; i++) {
    const gp_mig_profile *pr = &mm->profiles[i];
    double share = pr->compute_slices / MIG_SLICES;
    if ((double)pr->mem_mib < need_mem_mib || share < need_gpu) continue;
    if (share / cur_share <= best.ratio && !(found && share / cur_share == best.ratio)) {
      best = (gp__ledger_adv_fit){.model = fm->name, .share = share, .ratio = share / cur_share};
      FLAG(&best, "--mig %s", pr->name);
      found = true;
    }
  }
  /* A fraction of the same model's GPU. */
  if (fm->shared && fm->mem_mib > 0) {
    double need = fmax(need_mem_mib / (double)fm->mem_mib, need_gpu);
    double share = ceil(need / FRACTION_STEP - 1e-9) * FRACTION_STEP;
    if (share < FRACTION_STEP) share = FRACTION_STEP;
    if (share < 1.0 && share / cur_share < best.ratio) {
      best = (gp__ledger_adv_fit){.model = fm->name, .share = share, .ratio = share / cur_share};
      FLAG(&best, "--gpu-fraction %.2f", share);
      found = true;
    }
  }
  /* A whole GPU of a cheaper model with the memory: only from whole GPUs, and only where
   * both are priced (the cheaper one may be slower: the message says so). */
  double cur_rate = 0;
  if (a->p.prices && cur_share >= 1.0 && need_gpu <= 1.0 &&
      gp_prices_rate(a->p.prices, model, c, at, &cur_rate) && cur_rate > 0) {
    for (int i = 0; i < a->p.n_models; i++) {
      const gp_advice_model *m = &a->p.models[i];
      double rate = 0;
      if (m == fm || (double)m->mem_mib < need_mem_mib ||
          !gp_prices_rate(a->p.prices, m->name, c, at, &rate))
        continue;
      double ratio = rate / cur_rate / cur_share;
      if (ratio < best.ratio) {
        best = (gp__ledger_adv_fit){.model = m->name, .share = 1.0, .ratio = ratio,
                                    .model_change = true};
        FLAG(&best, "--gpu-type %s", m->name);
        found = true;
      }
    }
  }
  if (found) *ret = best;
  return found;
}
