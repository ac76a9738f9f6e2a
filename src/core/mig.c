/* SPDX-License-Identifier: Apache-2.0 */
/* MIG profile tables per GPU model, layout validation, free-instance lookup and the layout
 * search behind dynamic MIG (see mig.h).
 *
 * Sources for the tables (checked 2026-11):
 * - NVIDIA Multi-Instance GPU User Guide, "Supported MIG Profiles"
 *   (docs.nvidia.com/datacenter/tesla/mig-user-guide/supported-mig-profiles.html): the A100
 *   table (1g.5gb x7, 1g.10gb x4, 2g.10gb x3, 3g.20gb x2 using 4/8 of memory, 4g.20gb x1,
 *   7g.40gb x1) and its note that A100-80GB profiles are the same with doubled memory
 *   (1g.10gb, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb); the same page's H100, H100 94GB,
 *   H200 and B200 tables follow the A100 geometry with their own memory sizes; the placement
 *   diagrams give the start slots: 7g at 0, 4g at 0, 3g at 0 or 4, 2g at 0, 2 or 4, 1g at
 *   0..6, the double-memory 1g at 0, 2, 4 or 6.
 * - "Supported GPUs" of the same guide: 7 instances at most on all of these models.
 * - NVML's placement semantics (nvmlDeviceGetGpuInstancePossiblePlacements): an instance
 *   occupies the memory slices of its placement; instances may not overlap.
 * Media-extension profiles (+me) and the A30 (4 slices) are not in the table yet: a layout
 * naming them is rejected as an unknown profile rather than guessed. */
#include <string.h>

#include "core/mig.h"

#define GB(x) ((int64_t)(x) * 1024)
#define SLOTS_1G 0x7f  /* 0..6 */
#define SLOTS_1G2 0x55 /* 0, 2, 4, 6 */
#define SLOTS_2G 0x15  /* 0, 2, 4 */
#define SLOTS_3G 0x11  /* 0, 4 */
#define SLOTS_0 0x01   /* 0 */

/* One row per profile: name, compute slices, span (memory slices), memory, max, starts. */
#define MIG_TABLE(p1, m1, p1d, m1d, p2, m2, p3, m3, p4, m4, p7, m7)                   \
  {                                                                                  \
    {p1, 1, 1, GB(m1), 7, SLOTS_1G}, {p1d, 1, 2, GB(m1d), 4, SLOTS_1G2},             \
        {p2, 2, 2, GB(m2), 3, SLOTS_2G}, {p3, 3, 4, GB(m3), 2, SLOTS_3G},            \
        {p4, 4, 4, GB(m4), 1, SLOTS_0}, {p7, 7, 8, GB(m7), 1, SLOTS_0},              \
  }

static const gp_mig_profile a100_40[] =
    MIG_TABLE("1g.5gb", 5, "1g.10gb", 10, "2g.10gb", 10, "3g.20gb", 20, "4g.20gb", 20, "7g.40gb", 40);
static const gp_mig_profile a100_80[] =
    MIG_TABLE("1g.10gb", 10, "1g.20gb", 20, "2g.20gb", 20, "3g.40gb", 40, "4g.40gb", 40, "7g.80gb", 80);
static const gp_mig_profile h100_80[] =
    MIG_TABLE("1g.10gb", 10, "1g.20gb", 20, "2g.20gb", 20, "3g.40gb", 40, "4g.40gb", 40, "7g.80gb", 80);
static const gp_mig_profile h100_94[] =
    MIG_TABLE("1g.12gb", 12, "1g.24gb", 24, "2g.24gb", 24, "3g.47gb", 47, "4g.47gb", 47, "7g.94gb", 94);
static const gp_mig_profile h200_141[] =
    MIG_TABLE("1g.18gb", 18, "1g.35gb", 35, "2g.35gb", 35, "3g.71gb", 71, "4g.71gb", 71, "7g.141gb", 141);
static const gp_mig_profile b200[] =
    MIG_TABLE("1g.23gb", 23, "1g.45gb", 45, "2g.45gb", 45, "3g.90gb", 90, "4g.90gb", 90, "7g.180gb", 180);

static const gp_mig_model models[] = {
    {"A100-40GB", 6, a100_40}, {"A100-80GB", 6, a100_80}, {"H100-80GB", 6, h100_80},
    {"H100-94GB", 6, h100_94}, {"H200-141GB", 6, h200_141}, {"B200", 6, b200},
};
#define N_MODELS ((int)(sizeof(models) / sizeof(models[0])))

/* Normalised model names ("NVIDIA A100-SXM4-80GB" -> "A10080GB") and what they mean. */
static const struct {
  const char *key;
  int model;
} aliases[] = {
    {"A10040GB", 0}, {"A100", 0},     {"A10080GB", 1}, {"H10080GB", 2}, {"H100", 2},
    {"H10094GB", 3}, {"H100NVL", 3},  {"H100NVL94GB", 3}, {"H200141GB", 4}, {"H200", 4},
    {"H200NVL", 4},  {"H200NVL141GB", 4}, {"B200", 5}, {"B200180GB", 5},
};

static char upper(char c) {
  return c >= 'a' && c <= 'z' ? (char)(c - 'a' + 'A') : c;
}

static bool is_alnum(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

static void normalise(const char *in, char *out, size_t size) {
  size_t n = 0;
  char tmp[128];
  for (const char *p = in; *p && n + 1 < sizeof(tmp); p++) {
    char c = upper(*p);
    if (is_alnum(c)) tmp[n++] = c;
  }
  tmp[n] = 0;
  /* Drop the vendor and the form factor: they do not change the MIG geometry. */
  static const char *const drop[] = {"NVIDIA", "SXM5", "SXM4", "SXM", "PCIE", "HBM3E", "HBM3"};
  size_t o = 0;
  for (size_t i = 0; tmp[i] && o + 1 < size;) {
    bool skipped = false;
    for (size_t d = 0; d < sizeof(drop) / sizeof(drop[0]); d++) {
      size_t l = strlen(drop[d]);
      if (strncmp(tmp + i, drop[d], l) == 0) {
        i += l, skipped = true;
        break;
      }
    }
    if (!skipped) out[o++] = tmp[i++];
  }
  out[o] = 0;
}

static bool eq_nocase(const char *a, const char *b) {
  for (; *a && *b; a++, b++) {
    if (upper(*a) != upper(*b)) return false;
  }
  return *a == *b;
}

const gp_mig_model *gp_mig_model_find(const char *model) {
  if (!model) return NULL;
  for (int i = 0; i < N_MODELS; i++) {
    if (eq_nocase(model, models[i].name)) return &models[i];
  }
  char key[128];
  normalise(model, key, sizeof(key));
  for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++) {
    if (strcmp(key, aliases[i].key) == 0) return &models[aliases[i].model];
  }
  return NULL;
}

const gp_mig_profile *gp_mig_profile_find(const gp_mig_model *m, const char *profile) {
  if (!m || !profile) return NULL;
  for (int i = 0; i < m->n_profiles; i++) {
    if (eq_nocase(profile, m->profiles[i].name)) return &m->profiles[i];
  }
  return NULL;
}

int gp_mig_model_count(void) {
  return N_MODELS;
}

const gp_mig_model *gp_mig_model_at(int i) {
  return i >= 0 && i < N_MODELS ? &models[i] : NULL;
}

static uint8_t span_bits(const gp_mig_profile *p, int start) {
  return (uint8_t)(((1u << p->span) - 1u) << start);
}

static bool slot_ok(const gp_mig_profile *p, int start) {
  return start >= 0 && start < GP_MIG_SLOTS && (p->start_mask >> start & 1u) &&
         start + p->span <= GP_MIG_SLOTS;
}

/* Places instances order[k..] (those with start_slot < 0) into the free slots `used`;
 * backtracking, since largest-first greedy misses layouts like 3g@4 + 2g@0 + 1g@2 + 1g@3. */
static bool place(gp_mig_layout *l, const int *order, int k, uint8_t used) {
  if (k == l->n) return true;
  int i = order[k];
  const gp_mig_profile *p = l->profile[i];
  for (int s = 0; s < GP_MIG_SLOTS; s++) {
    if (!slot_ok(p, s) || (used & span_bits(p, s))) continue;
    l->start_slot[i] = s;
    if (place(l, order, k + 1, used | span_bits(p, s))) return true;
  }
  l->start_slot[i] = -1;
  return false;
}

/* Validates l (profiles set; start_slot[i] < 0 = to assign). */
static int check_layout(const gp_mig_model *m, gp_mig_layout *l, gp_err *err) {
  if (l->n == 0) return gp_err_set(err, GP_EINVAL, NULL, 0, "mig", "empty MIG layout");
  int compute = 0;
  for (int i = 0; i < l->n; i++) {
    compute += l->profile[i]->compute_slices;
    int same = 0;
    for (int j = 0; j < l->n; j++) same += l->profile[j] == l->profile[i];
    if (same > l->profile[i]->max_instances)
      return gp_err_set(err, GP_EINVAL, NULL, 0, "mig",
                        "%s allows at most %d instance(s) of %s, the layout has %d", m->name,
                        l->profile[i]->max_instances, l->profile[i]->name, same);
  }
  if (compute > 7)
    return gp_err_set(err, GP_EINVAL, NULL, 0, "mig",
                      "the layout uses %d compute slices; a %s has 7", compute, m->name);
  uint8_t used = 0;
  int order[GP_MAX_MIG_INSTANCES], n_auto = 0;
  for (int i = 0; i < l->n; i++) {
    const gp_mig_profile *p = l->profile[i];
    int s = l->start_slot[i];
    if (s < 0) continue;
    if (!slot_ok(p, s))
      return gp_err_set(err, GP_EINVAL, NULL, 0, "mig", "%s cannot start at slot %d on %s",
                        p->name, s, m->name);
    if (used & span_bits(p, s))
      return gp_err_set(err, GP_EINVAL, NULL, 0, "mig",
                        "%s at slot %d overlaps another instance", p->name, s);
    used |= span_bits(p, s);
  }
  /* Auto-placed instances: largest span first, then try every allowed start. */
  for (int i = 0; i < l->n; i++) {
    if (l->start_slot[i] < 0) order[n_auto++] = i;
  }
  for (int a = 1; a < n_auto; a++) {
    int v = order[a], b = a - 1;
    while (b >= 0 && l->profile[order[b]]->span < l->profile[v]->span) order[b + 1] = order[b], b--;
    order[b + 1] = v;
  }
  /* place() fills a compact list of the instances to assign, in that order. */
  gp_mig_layout compact = {.n = n_auto};
  int idx[GP_MAX_MIG_INSTANCES];
  for (int k = 0; k < n_auto; k++) {
    compact.profile[k] = l->profile[order[k]];
    compact.start_slot[k] = -1;
    idx[k] = k;
  }
  if (!place(&compact, idx, 0, used))
    return gp_err_set(err, GP_EINVAL, NULL, 0, "mig",
                      "the instances do not fit a %s together: no placement of their slots "
                      "avoids overlap (e.g. 4g+4g, or more memory slices than 8)",
                      m->name);
  for (int k = 0; k < n_auto; k++) l->start_slot[order[k]] = compact.start_slot[k];
  return 0;
}

int gp_mig_layout_parse(const char *model, const char *spec, gp_mig_layout *ret, gp_err *err) {
  const gp_mig_model *m = gp_mig_model_find(model);
  if (!m)
    return gp_err_set(err, GP_EINVAL, NULL, 0, "mig", "GPU model \"%s\" does not support MIG",
                      model ? model : "");
  if (!spec) return gp_err_set(err, GP_EINVAL, NULL, 0, "mig", "no MIG layout given");
  if (strncmp(spec, "mig:", 4) == 0) spec += 4;
  gp_mig_layout l = {.n = 0};
  const char *p = spec;
  while (*p) {
    while (*p == ' ') p++;
    const char *end = p;
    while (*end && *end != ',') end++;
    const char *tok_end = end;
    while (tok_end > p && tok_end[-1] == ' ') tok_end--;
    size_t len = (size_t)(tok_end - p);
    if (len == 0) return gp_err_set(err, GP_EINVAL, NULL, 0, "mig", "empty entry in MIG layout");
    if (l.n >= GP_MAX_MIG_INSTANCES)
      return gp_err_set(err, GP_EINVAL, NULL, 0, "mig", "a GPU holds at most %d MIG instances",
                        GP_MAX_MIG_INSTANCES);
    char name[32];
    const char *at = memchr(p, '@', len);
    size_t nlen = at ? (size_t)(at - p) : len;
    if (nlen >= sizeof(name))
      return gp_err_set(err, GP_EINVAL, NULL, 0, "mig", "MIG profile name too long");
    memcpy(name, p, nlen);
    name[nlen] = 0;
    const gp_mig_profile *prof = gp_mig_profile_find(m, name);
    if (!prof)
      return gp_err_set(err, GP_EINVAL, NULL, 0, "mig", "%s has no MIG profile \"%s\"", m->name,
                        name);
    int slot = -1;
    if (at) {
      const char *s = at + 1;
      if (s >= tok_end || tok_end - s > 1 || *s < '0' || *s > '9')
        return gp_err_set(err, GP_EINVAL, NULL, 0, "mig", "bad start slot for %s (want 0..7)",
                          name);
      slot = *s - '0';
    }
    l.profile[l.n] = prof;
    l.start_slot[l.n] = slot;
    l.n++;
    p = *end ? end + 1 : end;
    if (*end == ',' && !*p) return gp_err_set(err, GP_EINVAL, NULL, 0, "mig", "trailing comma");
  }
  int rc = check_layout(m, &l, err);
  if (rc) return rc;
  *ret = l;
  return 0;
}

int gp_mig_layout_check(const char *model, const gp_mig_instance *inst, int n, gp_mig_layout *ret,
                        gp_err *err) {
  const gp_mig_model *m = gp_mig_model_find(model);
  if (!m)
    return gp_err_set(err, GP_EINVAL, NULL, 0, "mig", "GPU model \"%s\" does not support MIG",
                      model ? model : "");
  if (n < 0 || n > GP_MAX_MIG_INSTANCES || (n > 0 && !inst))
    return gp_err_set(err, GP_EINVAL, NULL, 0, "mig", "a GPU holds 1..%d MIG instances",
                      GP_MAX_MIG_INSTANCES);
  gp_mig_layout l = {.n = n};
  for (int i = 0; i < n; i++) {
    l.profile[i] = gp_mig_profile_find(m, inst[i].profile);
    if (!l.profile[i])
      return gp_err_set(err, GP_EINVAL, NULL, 0, "mig", "%s has no MIG profile \"%s\"", m->name,
                        inst[i].profile ? inst[i].profile : "");
    l.start_slot[i] = inst[i].start_slot;
  }
  int rc = check_layout(m, &l, err);
  if (rc) return rc;
  if (ret) *ret = l;
  return 0;
}

int gp_mig_find_free(const gp_mig_instance *inst, int n, uint32_t busy_mask, const char *profile) {
  if (!inst || !profile) return -1;
  for (int i = 0; i < n && i < 32; i++) {
    if (!(busy_mask >> i & 1u) && inst[i].profile && eq_nocase(inst[i].profile, profile)) return i;
  }
  return -1;
}

/* Dynamic MIG search state: how many of each demanded profile to include. */
typedef struct plan_search {
  const gp_mig_model *m;
  const gp_mig_profile *prof[16];
  int want[16];
  int n;
  int take[16];
  int best_take[16];
  int best_served, best_compute;
  bool found;
  gp_mig_layout best;
} plan_search;

static void plan_try(plan_search *ps, int e, int served, int compute, int instances) {
  if (e == ps->n) {
    if (served == 0) return;
    if (ps->found && (served < ps->best_served ||
                      (served == ps->best_served && compute <= ps->best_compute)))
      return;
    gp_mig_layout l = {.n = 0};
    for (int i = 0; i < ps->n; i++) {
      for (int k = 0; k < ps->take[i]; k++) {
        l.profile[l.n] = ps->prof[i];
        l.start_slot[l.n] = -1;
        l.n++;
      }
    }
    if (check_layout(ps->m, &l, NULL) == 0) {
      ps->found = true, ps->best_served = served, ps->best_compute = compute, ps->best = l;
    }
    return;
  }
  /* More of the earlier entries first, so on equal merit earlier demand wins. */
  int max = ps->want[e];
  if (max > ps->prof[e]->max_instances) max = ps->prof[e]->max_instances;
  for (int k = max; k >= 0; k--) {
    int c = compute + k * ps->prof[e]->compute_slices;
    if (c > 7 || instances + k > GP_MAX_MIG_INSTANCES) continue;
    ps->take[e] = k;
    plan_try(ps, e + 1, served + k, c, instances + k);
  }
  ps->take[e] = 0;
}

int gp_mig_plan_layout(const char *model, const gp_mig_demand *demand, int n_demand,
                       gp_mig_layout *ret, gp_err *err) {
  const gp_mig_model *m = gp_mig_model_find(model);
  if (!m)
    return gp_err_set(err, GP_EINVAL, NULL, 0, "mig", "GPU model \"%s\" does not support MIG",
                      model ? model : "");
  plan_search ps = {.m = m};
  for (int i = 0; i < n_demand && demand; i++) {
    const gp_mig_profile *p = gp_mig_profile_find(m, demand[i].profile);
    if (!p || demand[i].count <= 0) continue;
    int j = 0;
    while (j < ps.n && ps.prof[j] != p) j++;
    if (j == ps.n) {
      if (ps.n == 16) continue; /* more distinct profiles than a model has: cannot happen */
      ps.prof[ps.n] = p, ps.want[ps.n] = 0, ps.n++;
    }
    ps.want[j] += demand[i].count > 7 ? 7 : demand[i].count;
  }
  if (ps.n == 0) return gp_err_set(err, GP_ENOENT, NULL, 0, "mig", "no pending MIG demand fits a %s", m->name);
  plan_try(&ps, 0, 0, 0, 0);
  if (!ps.found)
    return gp_err_set(err, GP_ENOENT, NULL, 0, "mig", "no pending MIG demand fits a %s", m->name);
  *ret = ps.best;
  return 0;
}

void gp_mig_layout_format(const gp_mig_layout *l, char *buf, unsigned long size) {
  if (!buf || size == 0) return;
  buf[0] = 0;
  size_t o = 0;
  for (int i = 0; l && i < l->n; i++) {
    const char *name = l->profile[i]->name;
    size_t need = strlen(name) + 4;
    if (o + need >= size) break;
    if (i) buf[o++] = ',';
    size_t nl = strlen(name);
    memcpy(buf + o, name, nl);
    o += nl;
    buf[o++] = '@';
    buf[o++] = (char)('0' + (l->start_slot[i] < 0 ? 0 : l->start_slot[i]));
    buf[o] = 0;
  }
}
