/* SPDX-License-Identifier: Apache-2.0 */
/* The simulated GPU backend declared in gpu_sim.h (the GPU model catalogue is gpu_models.c).
 * The model is deterministic (no random noise) so tests can state exact figures: a GPU's
 * utilisation is the sum of its processes' declared loads (capped at 100%, shared
 * proportionally when over-subscribed, as time-slicing would), power moves linearly between
 * the model's idle and maximum power with utilisation, and energy integrates power over the
 * monotonic clock between state changes. */
#include "agent/gpu_sim.h"

#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/nvml_api.h"
#include "util/mem.h"
#include "util/units.h"

/* ---- The simulated node ---- */

typedef struct sim_proc {
  pid_t pid;
  int util_pct;           /* declared, of the GPU or of its MIG instance */
  int64_t mem_mib;
  int mig;                /* index into info.mig, or -1 */
} sim_proc;

typedef struct sim_gpu {
  const gp_gpu_model *m;
  gp_gpu_info info;
  int n_procs;
  sim_proc procs[GP_GPU_MAX_PROCS];
  bool lost;              /* fell off the bus (Xid 79) until reset */
  bool mps;               /* an MPS server holds the clients' kernels: no per-process util */
  int64_t sbe, dbe, rr_correctable, rr_uncorrectable, pcie_replay;
  bool remap_failure, remap_pending;
  uint64_t throttle;      /* injected clock-event reasons */
  int64_t throttle_until_ms; /* 0: until reset */
  double energy_mj;
  int64_t energy_at_ms;
  double power_w;         /* current modelled power */
} sim_gpu;

typedef struct pending_fault {
  gp_proto_fault f;
  int64_t due_ms;
} pending_fault;

#define EVENT_RING 256

typedef struct sim {
  gp_gpu_backend base;
  pthread_mutex_t mu;
  pthread_cond_t cond;     /* signalled when a fault is injected */
  char node[64];
  int64_t (*clock_ms)(void *);
  void *clock_ctx;
  int n;
  sim_gpu gpus[GP_GPU_MAX_DEVICES];
  int n_faults;
  pending_fault faults[GP_PROTO_MAX_FAULTS];
  int ev_head, ev_n;
  gp_gpu_event events[EVENT_RING];
} sim;

static const gp_gpu_backend_ops sim_ops;

static int64_t mono_ms(void *ctx) {
  (void)ctx;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t now_ms(sim *s) { return s->clock_ms(s->clock_ctx); }

static uint64_t fnv1a(uint64_t h, const void *data, size_t n) {
  const unsigned char *p = data;
  for (size_t i = 0; i < n; i++) {
    h ^= p[i];
    h *= 1099511628211ull;
  }
  return h;
}

/* splitmix64's finaliser: FNV alone leaves ids of "gpu0" and "gpu1" sharing most digits,
 * and tools match GPU UUIDs by prefix. */
static uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/* A UUID-shaped id derived from the node name and a key, so it is stable across restarts. */
static void make_uuid(char *out, size_t size, const char *prefix, const char *node,
                      const char *key) {
  uint64_t h1 = fnv1a(14695981039346656037ull, node, strlen(node) + 1);
  h1 = mix64(fnv1a(h1, key, strlen(key)));
  uint64_t h2 = fnv1a(h1 ^ 0x9e3779b97f4a7c15ull, key, strlen(key));
  h2 = mix64(fnv1a(h2, node, strlen(node)));
  snprintf(out, size, "%s%08x-%04x-%04x-%04x-%012llx", prefix, (unsigned)(h1 >> 32),
           (unsigned)((h1 >> 16) & 0xffff), (unsigned)(h1 & 0xffff), (unsigned)(h2 >> 48),
           (unsigned long long)(h2 & 0xffffffffffffull));
}

/* Device utilisation: the processes' loads, capped at 100%; under MIG each instance's load
 * counts for its share of the 7 compute slices. */
static int device_util(const sim_gpu *g) {
  if (!g->info.mig_enabled) {
    int sum = 0;
    for (int i = 0; i < g->n_procs; i++) sum += g->procs[i].util_pct;
    return sum > 100 ? 100 : sum;
  }
  double total = 0;
  for (int k = 0; k < g->info.n_mig; k++) {
    int sum = 0;
    for (int i = 0; i < g->n_procs; i++)
      if (g->procs[i].mig == k) sum += g->procs[i].util_pct;
    if (sum > 100) sum = 100;
    const gp_gpu_mig_profile *p = gp_gpu_model_mig_profile(g->m, g->info.mig[k].profile);
    total += sum * (p ? p->compute_slices : 1) / 7.0;
  }
  return (int)(total + 0.5);
}

/* A process's share: its declared load, scaled down when its GPU (or instance) is
 * over-subscribed, as time-slicing would share it. */
static int proc_util(const sim_gpu *g, const sim_proc *p) {
  int sum = 0;
  for (int i = 0; i < g->n_procs; i++)
    if (g->procs[i].mig == p->mig) sum += g->procs[i].util_pct;
  if (sum <= 100) return p->util_pct;
  return (int)((int64_t)p->util_pct * 100 / sum);
}

static uint64_t active_throttle(const sim_gpu *g, int64_t now) {
  if (g->throttle && g->throttle_until_ms && now >= g->throttle_until_ms) return 0;
  return g->throttle;
}

/* Integrates energy up to `now` at the current power, then recomputes power from the load,
 * so energy is exact for piecewise-constant load. Caller holds the lock. */
static void advance(sim_gpu *g, int64_t now) {
  /* W * ms = mJ. A late-applied fault (due before the last update) does not rewind time. */
  if (now > g->energy_at_ms) {
    g->energy_mj += g->power_w * (double)(now - g->energy_at_ms);
    g->energy_at_ms = now;
  }
  int util = device_util(g);
  double w = g->m->idle_w + (g->m->max_w - g->m->idle_w) * util / 100.0;
  if (active_throttle(g, now) & GP_NVML_CLOCKS_EVENT_SW_POWER_CAP) w = g->m->max_w;
  g->power_w = g->lost ? 0 : w;
}

static void push_event(sim *s, int gpu, int xid, int64_t at) {
  if (s->ev_n == EVENT_RING) { /* drop the oldest: the newest faults matter more */
    s->ev_head = (s->ev_head + 1) % EVENT_RING;
    s->ev_n--;
  }
  gp_gpu_event *e = &s->events[(s->ev_head + s->ev_n) % EVENT_RING];
  memset(e, 0, sizeof *e);
  e->gpu = gpu;
  e->xid = xid;
  e->at_ms = at;
  s->ev_n++;
}

static void apply_fault(sim *s, const gp_proto_fault *f, int64_t now) {
  sim_gpu *g = &s->gpus[f->gpu];
  advance(g, now);
  switch (f->kind) {
  case GP_PROTO_FAULT_XID:
    if (f->value == 79) g->lost = true;
    if (f->value == 48 || f->value == 94 || f->value == 95) g->dbe++;
    if (f->value == 63) {
      g->rr_uncorrectable++;
      g->remap_pending = true;
    }
    if (f->value == 64) g->remap_failure = true;
    push_event(s, f->gpu, (int)f->value, now);
    break;
  case GP_PROTO_FAULT_ECC_SBE: g->sbe += f->value; break;
  case GP_PROTO_FAULT_ECC_DBE:
    g->dbe += f->value;
    push_event(s, f->gpu, 48, now); /* the driver reports a DBE as Xid 48 */
    break;
  case GP_PROTO_FAULT_REMAP_FAILURE:
    g->remap_failure = true;
    g->rr_uncorrectable++;
    break;
  case GP_PROTO_FAULT_THERMAL:
  case GP_PROTO_FAULT_POWER:
    if (active_throttle(g, now) == 0) g->throttle = 0;
    g->throttle |= f->kind == GP_PROTO_FAULT_THERMAL ? GP_NVML_CLOCKS_EVENT_HW_THERMAL_SLOWDOWN
                                                   : GP_NVML_CLOCKS_EVENT_SW_POWER_CAP;
    g->throttle_until_ms = f->for_ms ? now + f->for_ms : 0;
    break;
  case GP_PROTO_FAULT_PCIE_REPLAY: g->pcie_replay += f->value; break;
  }
  advance(g, now);
}

/* Applies the faults that are due. Caller holds the lock. */
static void fire_due(sim *s, int64_t now) {
  int k = 0;
  for (int i = 0; i < s->n_faults; i++) {
    if (s->faults[i].due_ms <= now) apply_fault(s, &s->faults[i].f, s->faults[i].due_ms);
    else s->faults[k++] = s->faults[i];
  }
  s->n_faults = k;
}

static sim *as_sim(gp_gpu_backend *b) {
  return b && b->ops == &sim_ops ? (sim *)b->impl : NULL;
}


static int parse_term(const char *term, int *ret_count, const gp_gpu_model **ret_model,
                      gp_err *err) {
  int count = 1;
  const char *p = term;
  if (isdigit((unsigned char)*p)) {
    const char *x = p;
    while (isdigit((unsigned char)*x)) x++;
    if (*x == 'x' || *x == 'X') {
      if (x - p > 3) count = 1000;
      else count = atoi(p);
      p = x + 1;
    }
  }
  const gp_gpu_model *m = gp_gpu_model_find(p);
  if (!m) {
    char known[512];
    gp_gpu_model_list(known, sizeof known);
    return gp_err_set(err, GP_EINVAL, NULL, 0, "sim",
                      "unknown GPU model '%s' in '%s' (known: %s)", p, term, known);
  }
  if (count < 1 || count > GP_GPU_SIM_MAX_COUNT)
    return gp_err_set(err, GP_EINVAL, NULL, 0, "sim",
                      "'%s': a term has 1 to %d GPUs", term, GP_GPU_SIM_MAX_COUNT);
  *ret_count = count;
  *ret_model = m;
  return 0;
}

int gp_gpu_sim_open(const char *spec, const gp_gpu_sim_opts *opts, gp_gpu_backend **ret,
                    gp_err *err) {
  if (!spec || !*spec)
    return gp_err_set(err, GP_EINVAL, NULL, 0, "sim",
                      "empty GPU spec (expected e.g. \"8xH100-80GB\" or \"4xA100-40GB,2xL40S\")");
  if (strlen(spec) > 512)
    return gp_err_set(err, GP_EINVAL, NULL, 0, "sim", "GPU spec longer than 512 characters");
  const char *node = opts && opts->node_name && *opts->node_name ? opts->node_name : "sim";
  /* Parse everything before allocating, so a bad spec costs nothing. */
  int counts[GP_GPU_MAX_DEVICES];
  const gp_gpu_model *ms[GP_GPU_MAX_DEVICES];
  int n_terms = 0, total = 0;
  char copy[513];
  snprintf(copy, sizeof copy, "%s", spec);
  for (char *save = NULL, *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    while (isspace((unsigned char)*t)) t++;
    for (char *e = t + strlen(t); e > t && isspace((unsigned char)e[-1]);) *--e = '\0';
    if (n_terms == GP_GPU_MAX_DEVICES)
      return gp_err_set(err, GP_EINVAL, NULL, 0, "sim", "too many terms in '%s'", spec);
    int rc = parse_term(t, &counts[n_terms], &ms[n_terms], err);
    if (rc) return rc;
    total += counts[n_terms++];
    if (total > GP_GPU_MAX_DEVICES)
      return gp_err_set(err, GP_EINVAL, NULL, 0, "sim", "'%s' has more than %d GPUs", spec,
                        GP_GPU_MAX_DEVICES);
  }
  if (!n_terms) return gp_err_set(err, GP_EINVAL, NULL, 0, "sim", "empty GPU spec '%s'", spec);

  sim *s = gp_xcalloc(1, sizeof *s);
  s->base.ops = &sim_ops;
  s->base.impl = s;
  pthread_mutex_init(&s->mu, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&s->cond, &ca);
  pthread_condattr_destroy(&ca);
  snprintf(s->node, sizeof s->node, "%s", node);
  s->clock_ms = opts && opts->clock_ms ? opts->clock_ms : mono_ms;
  s->clock_ctx = opts ? opts->clock_ctx : NULL;
  int64_t now = now_ms(s);
  int domain = 0;
  for (int t = 0; t < n_terms; t++) {
    const gp_gpu_model *m = ms[t];
    for (int i = 0; i < counts[t]; i++) {
      sim_gpu *g = &s->gpus[s->n];
      g->m = m;
      gp_gpu_info *in = &g->info;
      in->index = s->n;
      char key[32];
      snprintf(key, sizeof key, "gpu%d", s->n);
      make_uuid(in->uuid, sizeof in->uuid, "GPU-", s->node, key);
      snprintf(in->name, sizeof in->name, "%s", m->driver_name);
      snprintf(in->model, sizeof in->model, "%s", m->model);
      snprintf(in->pci_bus_id, sizeof in->pci_bus_id, "%08X:%02X:00.0", s->n / 16,
               0x10 + (s->n % 16) * 0x0f);
      in->mem_mib = m->mem_mib;
      in->nvlink_domain = m->nvlink_group ? domain + i / m->nvlink_group : -1;
      in->ecc_enabled = true;
      g->energy_at_ms = now;
      g->power_w = m->idle_w;
      s->n++;
    }
    if (m->nvlink_group) domain += (counts[t] + m->nvlink_group - 1) / m->nvlink_group;
  }
  *ret = &s->base;
  return 0;
}

static int sim_discover(gp_gpu_backend *b, gp_gpu_info *out, int max, int *ret_n, gp_err *err) {
  sim *s = as_sim(b);
  pthread_mutex_lock(&s->mu);
  int n = s->n < max ? s->n : max;
  for (int i = 0; i < n; i++) out[i] = s->gpus[i].info;
  pthread_mutex_unlock(&s->mu);
  *ret_n = n;
  return 0;
}

static int sim_sample(gp_gpu_backend *b, int gpu, gp_gpu_sample *out, gp_err *err) {
  sim *s = as_sim(b);
  if (gpu < 0 || gpu >= s->n)
    return gp_err_set(err, GP_ENOENT, NULL, 0, "gpu", "no GPU %d on this node", gpu);
  pthread_mutex_lock(&s->mu);
  int64_t now = now_ms(s);
  fire_due(s, now);
  sim_gpu *g = &s->gpus[gpu];
  if (g->lost) {
    pthread_mutex_unlock(&s->mu);
    return gp_err_set(err, GP_EIO, NULL, 0, "gpu", "GPU %d has fallen off the bus", gpu);
  }
  advance(g, now);
  const gp_gpu_model *m = g->m;
  memset(out, 0, sizeof *out);
  out->at_ms = now;
  int util = device_util(g);
  uint64_t thr = active_throttle(g, now);
  out->gpu_util_pct = util;
  out->mem_copy_util_pct = util * 2 / 5;
  out->fb_reserved_mib = m->mem_mib / 100;
  int64_t used = 0;
  for (int i = 0; i < g->n_procs; i++) used += g->procs[i].mem_mib;
  if (used > m->mem_mib - out->fb_reserved_mib) used = m->mem_mib - out->fb_reserved_mib;
  out->fb_used_mib = used;
  out->fb_free_mib = m->mem_mib - out->fb_reserved_mib - used;
  out->power_w = g->power_w;
  out->energy_mj = (int64_t)g->energy_mj;
  out->temp_c = (thr & GP_NVML_CLOCKS_EVENT_HW_THERMAL_SLOWDOWN) ? 92 : 32 + util / 2;
  out->mem_temp_c = out->temp_c + 4;
  int sm = g->n_procs ? m->max_sm_mhz : 345;
  if (thr & GP_NVML_CLOCKS_EVENT_HW_THERMAL_SLOWDOWN) sm = m->max_sm_mhz * 6 / 10;
  else if (thr & GP_NVML_CLOCKS_EVENT_SW_POWER_CAP) sm = m->max_sm_mhz * 8 / 10;
  out->sm_clock_mhz = sm;
  out->mem_clock_mhz = m->mem_mhz;
  out->throttle_reasons = thr | (g->n_procs ? 0 : GP_NVML_CLOCKS_EVENT_GPU_IDLE);
  out->ecc_sbe_volatile = g->sbe;
  out->ecc_dbe_volatile = g->dbe;
  out->remapped_rows_correctable = g->rr_correctable;
  out->remapped_rows_uncorrectable = g->rr_uncorrectable;
  out->row_remap_failure = g->remap_failure;
  out->row_remap_pending = g->remap_pending;
  out->pcie_replay_counter = g->pcie_replay;
  /* NVLink traffic modelled as proportional to load: 4 GB/s per utilisation point. */
  out->nvlink_bandwidth_total = g->info.nvlink_domain >= 0 ? (int64_t)util * 4000000000ll : 0;
  out->n_procs = g->n_procs;
  for (int i = 0; i < g->n_procs; i++) {
    gp_gpu_proc *p = &out->procs[i];
    p->pid = g->procs[i].pid;
    p->used_mib = g->procs[i].mem_mib;
    p->sm_util_pct = g->mps ? -1 : proc_util(g, &g->procs[i]);
    if (g->procs[i].mig >= 0)
      snprintf(p->mig_uuid, sizeof p->mig_uuid, "%s", g->info.mig[g->procs[i].mig].uuid);
  }
  pthread_mutex_unlock(&s->mu);
  return 0;
}

static int sim_poll_events(gp_gpu_backend *b, gp_gpu_event *out, int max, int timeout_ms,
                           int *ret_n) {
  sim *s = as_sim(b);
  pthread_mutex_lock(&s->mu);
  struct timespec deadline;
  clock_gettime(CLOCK_MONOTONIC, &deadline);
  int64_t dl_ns = deadline.tv_nsec + (int64_t)(timeout_ms > 0 ? timeout_ms : 0) * 1000000;
  deadline.tv_sec += dl_ns / 1000000000;
  deadline.tv_nsec = dl_ns % 1000000000;
  for (;;) {
    fire_due(s, now_ms(s));
    if (s->ev_n || timeout_ms <= 0) break;
    /* Wake early for the next due fault (real time; a virtual clock only wakes on
     * injection or timeout). */
    struct timespec until = deadline;
    if (s->n_faults && s->clock_ms == mono_ms) {
      int64_t next = s->faults[0].due_ms;
      for (int i = 1; i < s->n_faults; i++)
        if (s->faults[i].due_ms < next) next = s->faults[i].due_ms;
      struct timespec t = {(time_t)(next / 1000), (long)(next % 1000) * 1000000};
      if (t.tv_sec < until.tv_sec || (t.tv_sec == until.tv_sec && t.tv_nsec < until.tv_nsec))
        until = t;
    }
    int rc = pthread_cond_timedwait(&s->cond, &s->mu, &until);
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (rc && (now.tv_sec > deadline.tv_sec ||
               (now.tv_sec == deadline.tv_sec && now.tv_nsec >= deadline.tv_nsec))) {
      fire_due(s, now_ms(s));
      break;
    }
  }
  int n = 0;
  while (n < max && s->ev_n) {
    out[n++] = s->events[s->ev_head];
    s->ev_head = (s->ev_head + 1) % EVENT_RING;
    s->ev_n--;
  }
  pthread_mutex_unlock(&s->mu);
  *ret_n = n;
  return 0;
}

static int sim_set_mig_layout(gp_gpu_backend *b, int gpu, const char *const *profiles,
                              const int *start_slots, int n, gp_err *err) {
  sim *s = as_sim(b);
  if (gpu < 0 || gpu >= s->n)
    return gp_err_set(err, GP_ENOENT, NULL, 0, "gpu", "no GPU %d on this node", gpu);
  pthread_mutex_lock(&s->mu);
  sim_gpu *g = &s->gpus[gpu];
  int rc = 0;
  if (g->n_procs) {
    rc = gp_err_set(err, GP_ESTATE, NULL, 0, "gpu",
                    "GPU %d is busy (%d process%s): drain it before re-partitioning", gpu,
                    g->n_procs, g->n_procs == 1 ? "" : "es");
    goto out;
  }
  if (!g->m->n_mig) {
    rc = gp_err_set(err, GP_EUNSUPP, NULL, 0, "gpu", "%s does not support MIG", g->m->model);
    goto out;
  }
  if ((rc = gp_gpu_model_check_mig(g->m, profiles, start_slots, n, err))) goto out;
  g->info.mig_enabled = n > 0;
  g->info.n_mig = n;
  memset(g->info.mig, 0, sizeof g->info.mig);
  for (int i = 0; i < n; i++) {
    const gp_gpu_mig_profile *p = gp_gpu_model_mig_profile(g->m, profiles[i]);
    gp_gpu_mig_info *mi = &g->info.mig[i];
    char key[64];
    snprintf(key, sizeof key, "gpu%d/%s@%d", gpu, p->name, start_slots[i]);
    make_uuid(mi->uuid, sizeof mi->uuid, "MIG-", s->node, key);
    snprintf(mi->profile, sizeof mi->profile, "%s", p->name);
    mi->gpu_instance_id = i + 1;
    mi->start_slot = start_slots[i];
    mi->mem_mib = p->mem_mib;
  }
out:
  pthread_mutex_unlock(&s->mu);
  return rc;
}

static void sim_close(gp_gpu_backend *b) {
  sim *s = as_sim(b);
  if (!s) return;
  pthread_mutex_destroy(&s->mu);
  pthread_cond_destroy(&s->cond);
  free(s);
}

static void sim_missing_readings(const gp_gpu_backend *b, char *buf, size_t size) {
  snprintf(buf, size, "%s", ""); /* the model gives every reading */
}

static int sim_job_load(gp_gpu_backend *b, const char *util, const char *mem, int *ret_util_pct,
                        int64_t *ret_mem_mib, gp_err *err) {
  return gp_gpu_sim_parse_load(util, mem, ret_util_pct, ret_mem_mib, err);
}

static const gp_gpu_backend_ops sim_ops = {
    .name = "sim",
    .has_driver = false,
    .discover = sim_discover,
    .sample = sim_sample,
    .poll_events = sim_poll_events,
    .set_mig_layout = sim_set_mig_layout,
    .missing_readings = sim_missing_readings,
    .job_load = sim_job_load,
    .attach = gp_gpu_sim_attach,
    .detach = gp_gpu_sim_detach,
    .inject = gp_gpu_sim_inject,
    .reset = gp_gpu_sim_reset,
    .close = sim_close,
};

int gp_gpu_sim_attach(gp_gpu_backend *b, int gpu, pid_t pid, const char *mig_uuid,
                      int util_pct, int64_t mem_mib, gp_err *err) {
  sim *s = as_sim(b);
  if (!s) return gp_err_set(err, GP_EUNSUPP, NULL, 0, NULL, "not a simulated GPU backend");
  if (gpu < 0 || gpu >= s->n)
    return gp_err_set(err, GP_ENOENT, NULL, 0, "gpu", "no GPU %d on this node", gpu);
  if (pid <= 0) return gp_err_set(err, GP_EINVAL, NULL, 0, "pid", "invalid pid %d", (int)pid);
  if (util_pct < -1 || util_pct > 100)
    return gp_err_set(err, GP_EINVAL, NULL, 0, "GPOOL_SIM_UTIL",
                      "simulated utilisation must be 0 to 100, got %d", util_pct);
  if (mem_mib < -1)
    return gp_err_set(err, GP_EINVAL, NULL, 0, "GPOOL_SIM_MEM", "negative simulated memory");
  pthread_mutex_lock(&s->mu);
  sim_gpu *g = &s->gpus[gpu];
  int rc = 0, mig = -1;
  if (mig_uuid && *mig_uuid) {
    for (int k = 0; k < g->info.n_mig; k++)
      if (!strcmp(g->info.mig[k].uuid, mig_uuid)) mig = k;
    if (mig < 0) {
      rc = gp_err_set(err, GP_ENOENT, NULL, 0, "mig_uuid", "GPU %d has no MIG instance %s",
                      gpu, mig_uuid);
      goto out;
    }
  }
  int64_t cap = mig >= 0 ? g->info.mig[mig].mem_mib : g->info.mem_mib;
  if (util_pct < 0) util_pct = 80;
  if (mem_mib < 0) mem_mib = cap / 10;
  int slot = -1;
  for (int i = 0; i < g->n_procs; i++)
    if (g->procs[i].pid == pid) slot = i;
  if (slot < 0) {
    if (g->n_procs == GP_GPU_MAX_PROCS) {
      rc = gp_err_set(err, GP_ELIMIT, NULL, 0, "pid", "GPU %d already runs %d processes", gpu,
                      GP_GPU_MAX_PROCS);
      goto out;
    }
    slot = g->n_procs++;
  }
  advance(g, now_ms(s));
  g->procs[slot] = (sim_proc){pid, util_pct, mem_mib, mig};
  advance(g, now_ms(s));
out:
  pthread_mutex_unlock(&s->mu);
  return rc;
}

int gp_gpu_sim_set_mps(gp_gpu_backend *b, int gpu, bool on) {
  sim *s = as_sim(b);
  if (!s) return GP_EUNSUPP;
  if (gpu < 0 || gpu >= s->n) return GP_ENOENT;
  pthread_mutex_lock(&s->mu);
  s->gpus[gpu].mps = on;
  pthread_mutex_unlock(&s->mu);
  return 0;
}

int gp_gpu_sim_detach(gp_gpu_backend *b, pid_t pid) {
  sim *s = as_sim(b);
  if (!s) return GP_EUNSUPP;
  int removed = 0;
  pthread_mutex_lock(&s->mu);
  int64_t now = now_ms(s);
  for (int gi = 0; gi < s->n; gi++) {
    sim_gpu *g = &s->gpus[gi];
    for (int i = 0; i < g->n_procs; i++) {
      if (g->procs[i].pid != pid) continue;
      advance(g, now);
      g->procs[i] = g->procs[--g->n_procs];
      advance(g, now);
      removed++;
      break;
    }
  }
  pthread_mutex_unlock(&s->mu);
  return removed;
}

int gp_gpu_sim_parse_load(const char *util, const char *mem, int *ret_util_pct,
                          int64_t *ret_mem_mib, gp_err *err) {
  int u = -1;
  int64_t m = -1;
  if (util) {
    int64_t v;
    if (gp_parse_int64(util, &v) || v < 0 || v > 100)
      return gp_err_set(err, GP_EINVAL, NULL, 0, "GPOOL_SIM_UTIL",
                        "expected a percentage 0 to 100, got '%.32s'", util);
    u = (int)v;
  }
  if (mem) {
    if (gp_parse_mem_mib(mem, &m) || m > 16ll * 1024 * 1024)
      return gp_err_set(err, GP_EINVAL, NULL, 0, "GPOOL_SIM_MEM",
                        "expected a memory size such as 9G or 512M, got '%.32s'", mem);
  }
  *ret_util_pct = u;
  *ret_mem_mib = m;
  return 0;
}

/* ---- Faults ---- */

int gp_gpu_sim_inject(gp_gpu_backend *b, const gp_proto_fault *faults, int n, gp_err *err) {
  sim *s = as_sim(b);
  if (!s) return gp_err_set(err, GP_EUNSUPP, NULL, 0, "inject",
                            "fault injection needs the simulated GPU backend (--sim)");
  for (int i = 0; i < n; i++)
    if (faults[i].gpu < 0 || faults[i].gpu >= s->n)
      return gp_err_set(err, GP_ENOENT, NULL, 0, "inject", "no GPU %d on this node (it has %d)",
                        faults[i].gpu, s->n);
  pthread_mutex_lock(&s->mu);
  int rc = 0;
  if (s->n_faults + n > GP_PROTO_MAX_FAULTS) {
    rc = gp_err_set(err, GP_ELIMIT, NULL, 0, "inject", "more than %d faults pending",
                    GP_PROTO_MAX_FAULTS);
  } else {
    int64_t now = now_ms(s);
    for (int i = 0; i < n; i++)
      s->faults[s->n_faults++] = (pending_fault){faults[i], now + faults[i].after_ms};
    fire_due(s, now);
    pthread_cond_broadcast(&s->cond);
  }
  pthread_mutex_unlock(&s->mu);
  return rc;
}

int gp_gpu_sim_inject_spec(gp_gpu_backend *b, const char *spec, gp_err *err) {
  gp_proto_fault f[GP_PROTO_MAX_FAULTS];
  int n = 0;
  int rc = gp_proto_fault_parse(spec, f, GP_PROTO_MAX_FAULTS, &n, err);
  return rc ? rc : b->ops->inject(b, f, n, err);
}

int gp_gpu_sim_reset(gp_gpu_backend *b, int gpu, gp_err *err) {
  sim *s = as_sim(b);
  if (!s) return gp_err_set(err, GP_EUNSUPP, NULL, 0, NULL, "not a simulated GPU backend");
  if (gpu < 0 || gpu >= s->n)
    return gp_err_set(err, GP_ENOENT, NULL, 0, "gpu", "no GPU %d on this node", gpu);
  pthread_mutex_lock(&s->mu);
  sim_gpu *g = &s->gpus[gpu];
  int rc = 0;
  if (g->n_procs) {
    rc = gp_err_set(err, GP_ESTATE, NULL, 0, "gpu", "GPU %d is busy: cannot reset it", gpu);
  } else {
    int64_t now = now_ms(s);
    advance(g, now);
    g->lost = false;
    g->sbe = g->dbe = 0;
    g->remap_pending = false;
    g->throttle = 0;
    g->throttle_until_ms = 0;
    int k = 0;
    for (int i = 0; i < s->n_faults; i++)
      if (s->faults[i].f.gpu != gpu) s->faults[k++] = s->faults[i];
    s->n_faults = k;
    advance(g, now);
  }
  pthread_mutex_unlock(&s->mu);
  return rc;
}
