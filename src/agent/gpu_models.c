/* SPDX-License-Identifier: Apache-2.0 */
/* The GPU model catalogue declared in gpu_sim.h: each model's memory, SMs, power and clocks
 * and its MIG profiles, lookup by name, alias or driver name, and the check and placement
 * of MIG layouts. Shared by the simulated backend (gpu_sim.c) and the agent's real GPUs,
 * whose driver names it maps to models. */
#include "agent/gpu_sim.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* ---- Catalogue ---- */

#define MIG7(a, b, c, d, e, f, ga, gb, gc, gd, ge, gf)                                   \
  6, {{a, 1, 1, (ga) * 1024, 0x7f}, {b, 1, 2, (gb) * 1024, 0x55}, {c, 2, 2, (gc) * 1024, 0x15}, \
      {d, 3, 4, (gd) * 1024, 0x11}, {e, 4, 4, (ge) * 1024, 0x01}, {f, 7, 8, (gf) * 1024, 0x01}}

static const gp_gpu_model models[] = {
    {"A100-40GB", "NVIDIA A100-SXM4-40GB", 40960, 8, 55, 400, 1410, 1215,
     MIG7("1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb", 5, 10, 10, 20, 20, 40)},
    {"A100-80GB", "NVIDIA A100-SXM4-80GB", 81920, 8, 60, 400, 1410, 1593,
     MIG7("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb", 10, 20, 20, 40, 40, 80)},
    {"H100-80GB", "NVIDIA H100 80GB HBM3", 81920, 8, 70, 700, 1980, 2619,
     MIG7("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb", 10, 20, 20, 40, 40, 80)},
    {"H100-NVL", "NVIDIA H100 NVL", 96256, 2, 60, 400, 1785, 2619,
     MIG7("1g.12gb", "1g.24gb", "2g.24gb", "3g.47gb", "4g.47gb", "7g.94gb", 12, 24, 24, 47, 47, 94)},
    {"H200-141GB", "NVIDIA H200", 144384, 8, 75, 700, 1980, 3201,
     MIG7("1g.18gb", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb", 18, 35, 35, 71, 71, 141)},
    {"B200-180GB", "NVIDIA B200", 184320, 8, 120, 1000, 1965, 3996,
     MIG7("1g.23gb", "1g.45gb", "2g.45gb", "3g.90gb", "4g.90gb", "7g.180gb", 23, 45, 45, 90, 90, 180)},
    {"L40S", "NVIDIA L40S", 49152, 0, 35, 350, 2520, 9001, 0, {{0}}},
    {"A10", "NVIDIA A10", 24576, 0, 20, 150, 1695, 6251, 0, {{0}}},
    {"T4", "Tesla T4", 16384, 0, 10, 70, 1590, 5001, 0, {{0}}},
    {"V100-16GB", "Tesla V100-SXM2-16GB", 16384, 4, 40, 300, 1530, 877, 0, {{0}}},
    {"V100-32GB", "Tesla V100-SXM2-32GB", 32768, 4, 40, 300, 1530, 877, 0, {{0}}},
};
#define N_MODELS (sizeof models / sizeof models[0])

static const struct {
  const char *alias, *model;
} aliases[] = {
    {"H100", "H100-80GB"}, {"H100-SXM", "H100-80GB"}, {"H100-94GB", "H100-NVL"},
    {"H200", "H200-141GB"}, {"B200", "B200-180GB"}, {"L40S-48GB", "L40S"},
    {"A10-24GB", "A10"}, {"T4-16GB", "T4"},
};

const gp_gpu_model *gp_gpu_model_find(const char *name) {
  if (!name) return NULL;
  for (size_t i = 0; i < N_MODELS; i++)
    if (!strcasecmp(name, models[i].model)) return &models[i];
  for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
    if (!strcasecmp(name, aliases[i].alias)) return gp_gpu_model_find(aliases[i].model);
  return NULL;
}

/* True when `token` occurs in `s` as a whole word (not followed by a digit or letter), so
 * "A10" does not match "A100" and "T4" does not match "GT40". */
static bool has_token(const char *s, const char *token) {
  size_t n = strlen(token);
  for (const char *p = s; (p = strcasestr(p, token)) != NULL; p++) {
    bool start_ok = p == s || !isalnum((unsigned char)p[-1]);
    bool end_ok = !isalnum((unsigned char)p[n]);
    if (start_ok && end_ok) return true;
  }
  return false;
}

const gp_gpu_model *gp_gpu_model_from_driver_name(const char *name, int64_t mem_mib) {
  if (!name) return NULL;
  if (has_token(name, "H100") || strcasestr(name, "H100-")) {
    if (strcasestr(name, "NVL") || mem_mib > 90000) return gp_gpu_model_find("H100-NVL");
    return gp_gpu_model_find("H100-80GB");
  }
  if (strcasestr(name, "H200")) return gp_gpu_model_find("H200-141GB");
  if (strcasestr(name, "B200")) return gp_gpu_model_find("B200-180GB");
  if (strcasestr(name, "A100"))
    return gp_gpu_model_find(mem_mib > 60000 ? "A100-80GB" : "A100-40GB");
  if (strcasestr(name, "L40S")) return gp_gpu_model_find("L40S");
  if (strcasestr(name, "V100"))
    return gp_gpu_model_find(mem_mib > 20000 ? "V100-32GB" : "V100-16GB");
  if (has_token(name, "A10")) return gp_gpu_model_find("A10");
  if (has_token(name, "T4")) return gp_gpu_model_find("T4");
  return NULL;
}

const gp_gpu_mig_profile *gp_gpu_model_mig_profile(const gp_gpu_model *m, const char *profile) {
  if (!m || !profile) return NULL;
  for (int i = 0; i < m->n_mig; i++)
    if (!strcasecmp(m->mig[i].name, profile)) return &m->mig[i];
  return NULL;
}

int gp_gpu_model_check_mig(const gp_gpu_model *m, const char *const *profiles,
                           const int *start_slots, int n, gp_err *err) {
  char field[32];
  if (!m->n_mig)
    return gp_err_set(err, GP_EINVAL, NULL, 0, "profiles", "%s does not support MIG", m->model);
  if (n < 0 || n > GP_GPU_MAX_MIG)
    return gp_err_set(err, GP_EINVAL, NULL, 0, "profiles",
                      "a MIG layout has at most %d instances, got %d", GP_GPU_MAX_MIG, n);
  unsigned used = 0; /* memory slots taken */
  int compute = 0;
  for (int i = 0; i < n; i++) {
    snprintf(field, sizeof field, "profiles[%d]", i);
    const gp_gpu_mig_profile *p = gp_gpu_model_mig_profile(m, profiles[i]);
    if (!p) {
      char known[256] = "";
      for (int k = 0; k < m->n_mig; k++)
        snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", k ? ", " : "",
                 m->mig[k].name);
      return gp_err_set(err, GP_EINVAL, NULL, 0, field, "%s has no MIG profile '%s' (known: %s)",
                        m->model, profiles[i] ? profiles[i] : "", known);
    }
    int s = start_slots[i];
    if (s < 0 || s > 7 || !(p->start_mask & (1u << s)))
      return gp_err_set(err, GP_EINVAL, NULL, 0, field, "%s cannot start at slot %d", p->name, s);
    unsigned span = ((1u << p->mem_slices) - 1) << s;
    if (span & used)
      return gp_err_set(err, GP_EINVAL, NULL, 0, field,
                        "%s at slot %d overlaps another instance", p->name, s);
    used |= span;
    compute += p->compute_slices;
    if (compute > 7)
      return gp_err_set(err, GP_EINVAL, NULL, 0, field,
                        "the layout needs more than 7 compute slices");
  }
  return 0;
}

/* Depth-first search over start slots; n <= 7 and at most 8 slots, so it is tiny. */
static bool place_from(const gp_gpu_mig_profile *const *ps, int n, int i, unsigned used,
                       int compute, int *slots) {
  if (i == n) return true;
  for (int s = 0; s < 8; s++) {
    if (!(ps[i]->start_mask & (1u << s))) continue;
    unsigned span = ((1u << ps[i]->mem_slices) - 1) << s;
    if ((span & used) || compute + ps[i]->compute_slices > 7) continue;
    slots[i] = s;
    if (place_from(ps, n, i + 1, used | span, compute + ps[i]->compute_slices, slots))
      return true;
  }
  return false;
}

int gp_gpu_model_place_mig(const gp_gpu_model *m, const char *const *profiles, int n,
                           int *ret_slots, gp_err *err) {
  const gp_gpu_mig_profile *ps[GP_GPU_MAX_MIG];
  int slots[GP_GPU_MAX_MIG];
  if (n < 0 || n > GP_GPU_MAX_MIG)
    return gp_err_set(err, GP_EINVAL, NULL, 0, "profiles",
                      "a MIG layout has at most %d instances, got %d", GP_GPU_MAX_MIG, n);
  for (int i = 0; i < n; i++) {
    if (!(ps[i] = gp_gpu_model_mig_profile(m, profiles[i]))) {
      char field[32];
      snprintf(field, sizeof field, "profiles[%d]", i);
      return gp_err_set(err, GP_EINVAL, NULL, 0, field, "%s has no MIG profile '%s'", m->model,
                        profiles[i] ? profiles[i] : "");
    }
  }
  if (!place_from(ps, n, 0, 0, 0, slots))
    return gp_err_set(err, GP_EINVAL, NULL, 0, "profiles",
                      "the MIG profiles do not fit together on one %s", m->model);
  memcpy(ret_slots, slots, sizeof(int) * (size_t)n);
  return 0;
}

void gp_gpu_model_list(char *buf, size_t size) {
  size_t n = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < N_MODELS && n < size; i++)
    n += (size_t)snprintf(buf + n, size - n, "%s%s", i ? ", " : "", models[i].model);
}
