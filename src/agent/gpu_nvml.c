/* SPDX-License-Identifier: Apache-2.0 */
/* The NVML backend declared in gpu_nvml.h. All NVML calls of gpool live here, behind the
 * gp_gpu_backend interface. Conventions: a figure NVML cannot give (missing entry point,
 * NOT_SUPPORTED, NO_PERMISSION) is -1; a GPU that answers GPU_IS_LOST fails the sample with
 * GP_EIO so the health policy sees it. NVML is thread-safe, but our per-GPU counters (NVLink
 * throughput deltas, last process-utilisation timestamp) are not, hence the mutex. */
#include "agent/gpu_nvml.h"

#include <ctype.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "agent/gpu_sim.h"
#include "agent/nvml_api.h"
#include "util/mem.h"

#define NVML_DEFAULT_LIB "libnvidia-ml.so.1"

typedef struct nvml {
  gp_gpu_backend base;
  void *dl;
  pthread_mutex_t mu;
#define GP_NVML_FIELD(sym, args) gp_nvml_return (*sym) args;
  GP_NVML_SYMBOLS(GP_NVML_FIELD)
#undef GP_NVML_FIELD
  const char *(*nvmlErrorString)(gp_nvml_return);
  char missing[1024];
  int n;
  gp_nvml_device dev[GP_GPU_MAX_DEVICES];
  gp_gpu_info info[GP_GPU_MAX_DEVICES];
  gp_nvml_event_set events;
  int64_t nvlink_kib[GP_GPU_MAX_DEVICES], nvlink_at_ms[GP_GPU_MAX_DEVICES];
  unsigned long long proc_util_ts[GP_GPU_MAX_DEVICES];
  int64_t energy_mj[GP_GPU_MAX_DEVICES], energy_at_ms[GP_GPU_MAX_DEVICES]; /* last counter read */
} nvml;

/* The energy counter costs about 2.7 ms per read (an H200, driver 580), more than the rest
 * of a GPU's sample together; it is read at most this often and reported as last read in
 * between (dcgm-exporter collects every 30 s by default). Per-job energy integrates power,
 * which every round reads. */
#define ENERGY_READ_MS 10000

static const gp_gpu_backend_ops nvml_ops;

static int64_t mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static const char *errstr(const nvml *m, gp_nvml_return rc) {
  static char buf[32];
  if (m->nvmlErrorString) {
    const char *s = m->nvmlErrorString(rc);
    if (s) return s;
  }
  snprintf(buf, sizeof buf, "NVML error %d", rc);
  return buf;
}

static void close_nvml(nvml *m) {
  if (m->events && m->nvmlEventSetFree) m->nvmlEventSetFree(m->events);
  if (m->nvmlShutdown) m->nvmlShutdown();
  if (m->dl) dlclose(m->dl);
  pthread_mutex_destroy(&m->mu);
  free(m);
}

/* "NVIDIA A100-SXM4-40GB MIG 3g.20gb" -> "3g.20gb". */
static void mig_profile_from_name(const char *name, char *out, size_t size) {
  const char *p = NULL;
  for (const char *q = name; (q = strstr(q, "MIG ")) != NULL; q++) p = q + 4;
  snprintf(out, size, "%s", p ? p : "");
  for (char *c = out; *c; c++)
    if (isspace((unsigned char)*c)) *c = '\0';
}

/* gpool's model name for a GPU the catalogue lacks: "NVIDIA GeForce RTX 4090" ->
 * "GeForce-RTX-4090". */
static void model_fallback(const char *name, char *out, size_t size) {
  if (!strncmp(name, "NVIDIA ", 7)) name += 7;
  snprintf(out, size, "%s", name);
  for (char *c = out; *c; c++)
    if (isspace((unsigned char)*c)) *c = '-';
}

static void discover_mig(nvml *m, int i, gp_gpu_info *in) {
  unsigned cur = 0, pend = 0, max = 0;
  if (!m->nvmlDeviceGetMigMode || m->nvmlDeviceGetMigMode(m->dev[i], &cur, &pend) != 0) return;
  in->mig_enabled = cur == GP_NVML_DEVICE_MIG_ENABLE;
  if (!in->mig_enabled || !m->nvmlDeviceGetMaxMigDeviceCount ||
      !m->nvmlDeviceGetMigDeviceHandleByIndex ||
      m->nvmlDeviceGetMaxMigDeviceCount(m->dev[i], &max) != 0)
    return;
  for (unsigned k = 0; k < max && in->n_mig < GP_GPU_MAX_MIG; k++) {
    gp_nvml_device md;
    if (m->nvmlDeviceGetMigDeviceHandleByIndex(m->dev[i], k, &md) != 0) continue; /* empty slot */
    gp_gpu_mig_info *mi = &in->mig[in->n_mig];
    memset(mi, 0, sizeof *mi);
    mi->start_slot = -1;
    if (m->nvmlDeviceGetUUID) m->nvmlDeviceGetUUID(md, mi->uuid, sizeof mi->uuid);
    char name[GP_NVML_DEVICE_NAME_BUFFER_SIZE] = "";
    if (m->nvmlDeviceGetName) m->nvmlDeviceGetName(md, name, sizeof name);
    mig_profile_from_name(name, mi->profile, sizeof mi->profile);
    unsigned gi = 0;
    if (m->nvmlDeviceGetGpuInstanceId && m->nvmlDeviceGetGpuInstanceId(md, &gi) == 0) {
      mi->gpu_instance_id = (int)gi;
      gp_nvml_gpu_instance inst;
      gp_nvml_gpu_instance_info ii;
      if (m->nvmlDeviceGetGpuInstanceById && m->nvmlGpuInstanceGetInfo &&
          m->nvmlDeviceGetGpuInstanceById(m->dev[i], gi, &inst) == 0 &&
          m->nvmlGpuInstanceGetInfo(inst, &ii) == 0)
        mi->start_slot = (int)ii.placement_start;
    }
    gp_nvml_memory mem;
    if (m->nvmlDeviceGetMemoryInfo && m->nvmlDeviceGetMemoryInfo(md, &mem) == 0)
      mi->mem_mib = (int64_t)(mem.total >> 20);
    in->n_mig++;
  }
}

/* NVLink domains: GPUs joined by an active link (directly or through NVSwitches) share a
 * domain. A link whose far end is not one of our GPUs goes to a switch: all GPUs with such
 * links form one switched domain. */
static void discover_nvlink(nvml *m) {
  int parent[GP_GPU_MAX_DEVICES];
  bool linked[GP_GPU_MAX_DEVICES] = {false}, switched[GP_GPU_MAX_DEVICES] = {false};
  for (int i = 0; i < m->n; i++) parent[i] = i;
  if (m->nvmlDeviceGetNvLinkState && m->nvmlDeviceGetNvLinkRemotePciInfo_v2) {
    for (int i = 0; i < m->n; i++) {
      for (unsigned l = 0; l < GP_NVML_NVLINK_MAX_LINKS; l++) {
        int active = 0;
        if (m->nvmlDeviceGetNvLinkState(m->dev[i], l, &active) != 0 ||
            active != GP_NVML_FEATURE_ENABLED)
          continue;
        gp_nvml_pci_info pci;
        memset(&pci, 0, sizeof pci);
        if (m->nvmlDeviceGetNvLinkRemotePciInfo_v2(m->dev[i], l, &pci) != 0) continue;
        int peer = -1;
        for (int j = 0; j < m->n; j++)
          if (j != i && !strcasecmp(pci.bus_id, m->info[j].pci_bus_id)) peer = j;
        linked[i] = true;
        if (peer < 0) {
          switched[i] = true;
          continue;
        }
        int a = i, b = peer;
        while (parent[a] != a) a = parent[a];
        while (parent[b] != b) b = parent[b];
        if (a != b) parent[b] = a;
      }
    }
  }
  int first_switched = -1;
  for (int i = 0; i < m->n; i++) {
    if (!switched[i]) continue;
    if (first_switched < 0) {
      first_switched = i;
      continue;
    }
    int a = first_switched, b = i;
    while (parent[a] != a) a = parent[a];
    while (parent[b] != b) b = parent[b];
    if (a != b) parent[b] = a;
  }
  /* Number domains 0, 1, ... in order of their first GPU. */
  int domain_of_root[GP_GPU_MAX_DEVICES];
  for (int i = 0; i < m->n; i++) domain_of_root[i] = -1;
  int next = 0;
  for (int i = 0; i < m->n; i++) {
    int r = i;
    while (parent[r] != r) r = parent[r];
    if (!linked[i]) {
      m->info[i].nvlink_domain = -1;
      continue;
    }
    if (domain_of_root[r] < 0) domain_of_root[r] = next++;
    m->info[i].nvlink_domain = domain_of_root[r];
  }
}

static int nvml_discover_locked(nvml *m, gp_err *err) {
  for (int i = 0; i < m->n; i++) {
    gp_gpu_info *in = &m->info[i];
    memset(in, 0, sizeof *in);
    in->index = i;
    in->nvlink_domain = -1;
    if (m->nvmlDeviceGetName) m->nvmlDeviceGetName(m->dev[i], in->name, sizeof in->name);
    if (m->nvmlDeviceGetUUID) m->nvmlDeviceGetUUID(m->dev[i], in->uuid, sizeof in->uuid);
    gp_nvml_pci_info pci;
    memset(&pci, 0, sizeof pci);
    if (m->nvmlDeviceGetPciInfo_v3 && m->nvmlDeviceGetPciInfo_v3(m->dev[i], &pci) == 0)
      snprintf(in->pci_bus_id, sizeof in->pci_bus_id, "%.31s", pci.bus_id);
    gp_nvml_memory mem;
    if (m->nvmlDeviceGetMemoryInfo && m->nvmlDeviceGetMemoryInfo(m->dev[i], &mem) == 0)
      in->mem_mib = (int64_t)(mem.total >> 20);
    const gp_gpu_model *model = gp_gpu_model_from_driver_name(in->name, in->mem_mib);
    if (model) snprintf(in->model, sizeof in->model, "%s", model->model);
    else model_fallback(in->name, in->model, sizeof in->model);
    int cur = 0, pend = 0;
    if (m->nvmlDeviceGetEccMode && m->nvmlDeviceGetEccMode(m->dev[i], &cur, &pend) == 0)
      in->ecc_enabled = cur == GP_NVML_FEATURE_ENABLED;
    discover_mig(m, i, in);
  }
  discover_nvlink(m);
  (void)err;
  return 0;
}

static int nvml_discover(gp_gpu_backend *b, gp_gpu_info *out, int max, int *ret_n, gp_err *err) {
  nvml *m = b->impl;
  pthread_mutex_lock(&m->mu);
  int rc = nvml_discover_locked(m, err);
  int n = m->n < max ? m->n : max;
  if (!rc) memcpy(out, m->info, sizeof *out * (size_t)n);
  pthread_mutex_unlock(&m->mu);
  if (!rc) *ret_n = n;
  return rc;
}

static const char *mig_uuid_of(const gp_gpu_info *in, unsigned gi) {
  if (gi == GP_NVML_INVALID_INSTANCE_ID) return "";
  for (int k = 0; k < in->n_mig; k++)
    if (in->mig[k].gpu_instance_id == (int)gi) return in->mig[k].uuid;
  return "";
}

#define NVML_MAX_LIST 4096 /* bound on what a driver's list may make us allocate */

/* Calls an NVML list function with a stack buffer, and once more with a heap buffer of the
 * size the driver asked for when it answers INSUFFICIENT_SIZE. Returns the NVML code; on
 * success *ret_buf is `stack` or a heap buffer the caller frees. */
static int nvml_list(int (*call)(void *ctx, void *buf, unsigned *n), void *ctx, void *stack,
                     unsigned stack_n, size_t elem, void **ret_buf, unsigned *ret_n) {
  unsigned n = stack_n;
  int rc = call(ctx, stack, &n);
  *ret_buf = stack;
  if (rc == GP_NVML_ERROR_INSUFFICIENT_SIZE && n > stack_n && n <= NVML_MAX_LIST) {
    unsigned want = n + 8; /* processes may start between the two calls */
    void *heap = gp_xcalloc(want, elem);
    n = want;
    rc = call(ctx, heap, &n);
    if (rc == 0) *ret_buf = heap;
    else free(heap);
  }
  if (rc == 0) *ret_n = n;
  return rc;
}

typedef struct list_ctx {
  nvml *m;
  int g;
} list_ctx;

static int call_procs(void *ctx, void *buf, unsigned *n) {
  list_ctx *c = ctx;
  return c->m->nvmlDeviceGetComputeRunningProcesses_v3(c->m->dev[c->g], n, buf);
}

static int call_mps_procs(void *ctx, void *buf, unsigned *n) {
  list_ctx *c = ctx;
  return c->m->nvmlDeviceGetMPSComputeRunningProcesses_v3(c->m->dev[c->g], n, buf);
}

static int call_util(void *ctx, void *buf, unsigned *n) {
  list_ctx *c = ctx;
  return c->m->nvmlDeviceGetProcessUtilization(c->m->dev[c->g], buf, n, c->m->proc_util_ts[c->g]);
}

static bool listed(const gp_nvml_process_info *list, unsigned n, unsigned pid) {
  for (unsigned k = 0; k < n; k++)
    if (list[k].pid == pid) return true;
  return false;
}

static void sample_procs(nvml *m, int g, gp_gpu_sample *s) {
  gp_nvml_process_info stack_procs[GP_GPU_MAX_PROCS];
  gp_nvml_process_util stack_util[GP_GPU_MAX_PROCS * 4];
  void *pbuf = NULL, *ubuf = NULL;
  unsigned n = 0, nu = 0;
  list_ctx ctx = {m, g};
  s->n_procs = 0;
  if (!m->nvmlDeviceGetComputeRunningProcesses_v3 ||
      nvml_list(call_procs, &ctx, stack_procs, GP_GPU_MAX_PROCS, sizeof stack_procs[0], &pbuf, &n) != 0)
    return;
  const gp_nvml_process_info *procs = pbuf;
  if (n > GP_GPU_MAX_PROCS) n = GP_GPU_MAX_PROCS; /* the sample holds that many */
  if (n == 0) { /* nobody to attribute: spare the utilisation list (ms per call) */
    if (pbuf != stack_procs) free(pbuf);
    return;
  }
  /* Per-process SM utilisation over the samples since our last read. NOT_FOUND means no
   * process ran kernels in that time: all zero. Any other failure: unknown (-1). */
  int util_rc = GP_NVML_ERROR_FUNCTION_NOT_FOUND;
  if (m->nvmlDeviceGetProcessUtilization)
    util_rc = nvml_list(call_util, &ctx, stack_util, sizeof stack_util / sizeof stack_util[0],
                        sizeof stack_util[0], &ubuf, &nu);
  const gp_nvml_process_util *util = util_rc == 0 ? ubuf : stack_util;
  /* MPS clients: the driver counts their kernels against the MPS server, so a client
   * without samples of its own has an unknown utilisation, not zero. */
  gp_nvml_process_info stack_mps[GP_GPU_MAX_PROCS];
  void *mbuf = NULL;
  unsigned nm = 0;
  if (!m->nvmlDeviceGetMPSComputeRunningProcesses_v3 ||
      nvml_list(call_mps_procs, &ctx, stack_mps, GP_GPU_MAX_PROCS, sizeof stack_mps[0], &mbuf, &nm) != 0)
    nm = 0;
  const gp_nvml_process_info *mps = mbuf;
  if (util_rc == 0) {
    for (unsigned k = 0; k < nu; k++)
      if (util[k].timestamp_us > m->proc_util_ts[g]) m->proc_util_ts[g] = util[k].timestamp_us;
  }
  for (unsigned i = 0; i < n; i++) {
    gp_gpu_proc *p = &s->procs[s->n_procs++];
    memset(p, 0, sizeof *p);
    p->pid = (pid_t)procs[i].pid;
    /* Under some virtualisation NVML reports "not available" as all ones. */
    p->used_mib = procs[i].used_gpu_memory == ~0ull ? -1 : (int64_t)(procs[i].used_gpu_memory >> 20);
    snprintf(p->mig_uuid, sizeof p->mig_uuid, "%s", mig_uuid_of(&m->info[g], procs[i].gpu_instance_id));
    if (util_rc == 0 || util_rc == GP_NVML_ERROR_NOT_FOUND) {
      /* The mean of the process's samples since the last read: its share over the round. */
      unsigned sum = 0, cnt = 0;
      for (unsigned k = 0; util_rc == 0 && k < nu; k++)
        if (util[k].pid == procs[i].pid) {
          sum += util[k].sm_util > 100 ? 100 : util[k].sm_util;
          cnt++;
        }
      p->sm_util_pct = cnt ? (int)((sum + cnt / 2) / cnt) : listed(mps, nm, procs[i].pid) ? -1 : 0;
    } else {
      p->sm_util_pct = -1;
    }
  }
  if (pbuf != stack_procs) free(pbuf);
  if (ubuf && ubuf != stack_util) free(ubuf);
  if (mbuf && mbuf != stack_mps) free(mbuf);
}

static int nvml_sample(gp_gpu_backend *b, int g, gp_gpu_sample *s, gp_err *err) {
  nvml *m = b->impl;
  if (g < 0 || g >= m->n)
    return gp_err_set(err, GP_ENOENT, NULL, 0, "gpu", "no GPU %d on this node", g);
  memset(s, 0, sizeof *s);
  pthread_mutex_lock(&m->mu);
  gp_nvml_device d = m->dev[g];
  s->at_ms = mono_ms();
  s->gpu_util_pct = s->mem_copy_util_pct = -1;
  gp_nvml_utilization u;
  int rc = m->nvmlDeviceGetUtilizationRates ? m->nvmlDeviceGetUtilizationRates(d, &u)
                                            : GP_NVML_ERROR_FUNCTION_NOT_FOUND;
  if (rc == GP_NVML_ERROR_GPU_IS_LOST) {
    pthread_mutex_unlock(&m->mu);
    return gp_err_set(err, GP_EIO, NULL, 0, "gpu", "GPU %d has fallen off the bus (%s)", g,
                      errstr(m, rc));
  }
  if (rc == 0) {
    s->gpu_util_pct = (int)u.gpu;
    s->mem_copy_util_pct = (int)u.memory;
  }
  s->fb_used_mib = s->fb_free_mib = s->fb_reserved_mib = -1;
  gp_nvml_memory_v2 m2;
  memset(&m2, 0, sizeof m2);
  m2.version = GP_NVML_MEMORY_V2_VERSION;
  gp_nvml_memory m1;
  if (m->nvmlDeviceGetMemoryInfo_v2 && m->nvmlDeviceGetMemoryInfo_v2(d, &m2) == 0) {
    s->fb_used_mib = (int64_t)(m2.used >> 20);
    s->fb_free_mib = (int64_t)(m2.free >> 20);
    s->fb_reserved_mib = (int64_t)(m2.reserved >> 20);
  } else if (m->nvmlDeviceGetMemoryInfo && m->nvmlDeviceGetMemoryInfo(d, &m1) == 0) {
    s->fb_used_mib = (int64_t)(m1.used >> 20);
    s->fb_free_mib = (int64_t)(m1.free >> 20);
  }
  unsigned v;
  unsigned long long ull;
  s->power_w = -1;
  if (m->nvmlDeviceGetPowerUsage && m->nvmlDeviceGetPowerUsage(d, &v) == 0) s->power_w = v / 1000.0;
  if (m->nvmlDeviceGetTotalEnergyConsumption &&
      (!m->energy_at_ms[g] || s->at_ms - m->energy_at_ms[g] >= ENERGY_READ_MS)) {
    m->energy_mj[g] = m->nvmlDeviceGetTotalEnergyConsumption(d, &ull) == 0 ? (int64_t)ull : -1;
    m->energy_at_ms[g] = s->at_ms;
  }
  s->energy_mj = m->energy_at_ms[g] ? m->energy_mj[g] : -1;
  s->temp_c = -1;
  if (m->nvmlDeviceGetTemperature && m->nvmlDeviceGetTemperature(d, GP_NVML_TEMPERATURE_GPU, &v) == 0)
    s->temp_c = (int)v;
  s->sm_clock_mhz = s->mem_clock_mhz = -1;
  if (m->nvmlDeviceGetClockInfo && m->nvmlDeviceGetClockInfo(d, GP_NVML_CLOCK_SM, &v) == 0)
    s->sm_clock_mhz = (int)v;
  if (m->nvmlDeviceGetClockInfo && m->nvmlDeviceGetClockInfo(d, GP_NVML_CLOCK_MEM, &v) == 0)
    s->mem_clock_mhz = (int)v;
  /* Renamed in newer drivers: prefer the new name, fall back to the old one. */
  if (m->nvmlDeviceGetCurrentClocksEventReasons && m->nvmlDeviceGetCurrentClocksEventReasons(d, &ull) == 0)
    s->throttle_reasons = ull;
  else if (m->nvmlDeviceGetCurrentClocksThrottleReasons &&
           m->nvmlDeviceGetCurrentClocksThrottleReasons(d, &ull) == 0)
    s->throttle_reasons = ull;
  s->ecc_sbe_volatile = s->ecc_dbe_volatile = -1;
  if (m->nvmlDeviceGetTotalEccErrors) {
    if (m->nvmlDeviceGetTotalEccErrors(d, GP_NVML_MEMORY_ERROR_CORRECTED, GP_NVML_VOLATILE_ECC, &ull) == 0)
      s->ecc_sbe_volatile = (int64_t)ull;
    if (m->nvmlDeviceGetTotalEccErrors(d, GP_NVML_MEMORY_ERROR_UNCORRECTED, GP_NVML_VOLATILE_ECC, &ull) == 0)
      s->ecc_dbe_volatile = (int64_t)ull;
  }
  s->remapped_rows_correctable = s->remapped_rows_uncorrectable = -1;
  unsigned corr, unc, pending, failed;
  if (m->nvmlDeviceGetRemappedRows &&
      m->nvmlDeviceGetRemappedRows(d, &corr, &unc, &pending, &failed) == 0) {
    s->remapped_rows_correctable = corr;
    s->remapped_rows_uncorrectable = unc;
    s->row_remap_pending = pending != 0;
    s->row_remap_failure = failed != 0;
  }
  s->pcie_replay_counter = -1;
  if (m->nvmlDeviceGetPcieReplayCounter && m->nvmlDeviceGetPcieReplayCounter(d, &v) == 0)
    s->pcie_replay_counter = v;
  /* Memory temperature and NVLink throughput come from field values. */
  s->mem_temp_c = -1;
  s->nvlink_bandwidth_total = -1;
  if (m->nvmlDeviceGetFieldValues) {
    gp_nvml_field_value f[3];
    memset(f, 0, sizeof f);
    f[0].field_id = GP_NVML_FI_DEV_MEMORY_TEMP;
    f[1].field_id = GP_NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX;
    f[1].scope_id = GP_NVML_SCOPE_ALL_LINKS;
    f[2].field_id = GP_NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX;
    f[2].scope_id = GP_NVML_SCOPE_ALL_LINKS;
    int nf = m->info[g].nvlink_domain >= 0 ? 3 : 1;
    if (m->nvmlDeviceGetFieldValues(d, nf, f) == 0) {
      if (f[0].nvml_return == 0) s->mem_temp_c = f[0].value_type == GP_NVML_VALUE_TYPE_UNSIGNED_INT
                                                     ? (int)f[0].value.ui : (int)f[0].value.ull;
      if (nf == 3 && f[1].nvml_return == 0 && f[2].nvml_return == 0) {
        int64_t kib = (int64_t)(f[1].value.ull + f[2].value.ull);
        int64_t now = s->at_ms;
        if (m->nvlink_at_ms[g] && now > m->nvlink_at_ms[g] && kib >= m->nvlink_kib[g])
          s->nvlink_bandwidth_total =
              (kib - m->nvlink_kib[g]) * 1024 * 1000 / (now - m->nvlink_at_ms[g]);
        m->nvlink_kib[g] = kib;
        m->nvlink_at_ms[g] = now;
      }
    }
  }
  sample_procs(m, g, s);
  pthread_mutex_unlock(&m->mu);
  return 0;
}

static int nvml_poll_events(gp_gpu_backend *b, gp_gpu_event *out, int max, int timeout_ms,
                            int *ret_n) {
  nvml *m = b->impl;
  int n = 0;
  if (!m->events || !m->nvmlEventSetWait_v2) {
    /* No event API: nothing to wait on; honour the timeout so callers do not spin. */
    if (timeout_ms > 0) {
      struct timespec ts = {timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000};
      nanosleep(&ts, NULL);
    }
    *ret_n = 0;
    return 0;
  }
  while (n < max) {
    gp_nvml_event_data e;
    memset(&e, 0, sizeof e);
    int rc = m->nvmlEventSetWait_v2(m->events, &e, n == 0 && timeout_ms > 0 ? (unsigned)timeout_ms : 0);
    if (rc != 0) break; /* TIMEOUT: no more events */
    if (!(e.event_type & GP_NVML_EVENT_XID_CRITICAL)) continue;
    int g = -1;
    for (int i = 0; i < m->n; i++)
      if (m->dev[i] == e.device) g = i;
    gp_gpu_event *ev = &out[n++];
    memset(ev, 0, sizeof *ev);
    ev->gpu = g;
    ev->xid = (int)e.event_data;
    ev->at_ms = mono_ms();
    if (g >= 0) snprintf(ev->mig_uuid, sizeof ev->mig_uuid, "%s", mig_uuid_of(&m->info[g], e.gpu_instance_id));
  }
  *ret_n = n;
  return 0;
}

/* The NVML profile enumeration for the catalogue's profile at index k (the catalogue lists
 * 1g, double-memory 1g, 2g, 3g, 4g, 7g in that order). */
static const unsigned gi_profile_enum[GP_GPU_MODEL_MAX_MIG_PROFILES] = {
    GP_NVML_GPU_INSTANCE_PROFILE_1_SLICE, GP_NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2,
    GP_NVML_GPU_INSTANCE_PROFILE_2_SLICE, GP_NVML_GPU_INSTANCE_PROFILE_3_SLICE,
    GP_NVML_GPU_INSTANCE_PROFILE_4_SLICE, GP_NVML_GPU_INSTANCE_PROFILE_7_SLICE};

/* Compute-instance profile enumeration using all of a GPU instance's slices. */
static int ci_profile_enum(int slices) {
  switch (slices) {
  case 1: return 0;
  case 2: return 1;
  case 3: return 2;
  case 4: return 3;
  case 7: return 4;
  default: return -1;
  }
}

static int mig_fail(const nvml *m, int nrc, gp_err *err, const char *what, int gpu) {
  if (nrc == GP_NVML_ERROR_NO_PERMISSION)
    return gp_err_set(err, GP_EPERM, NULL, 0, "gpu",
                      "%s on GPU %d needs root (NVML: %s)", what, gpu, errstr(m, nrc));
  return gp_err_set(err, GP_EIO, NULL, 0, "gpu", "%s on GPU %d failed: %s", what, gpu,
                    errstr(m, nrc));
}

/* Destroys every compute and GPU instance of the GPU. Caller holds the lock. */
static int destroy_instances(nvml *m, int gpu, gp_err *err) {
  gp_nvml_device d = m->dev[gpu];
  for (unsigned pe = 0; pe < GP_NVML_GPU_INSTANCE_PROFILE_COUNT; pe++) {
    gp_nvml_gpu_instance_profile_info pi;
    memset(&pi, 0, sizeof pi);
    if (m->nvmlDeviceGetGpuInstanceProfileInfo(d, pe, &pi) != 0) continue; /* not on this GPU */
    gp_nvml_gpu_instance gis[GP_GPU_MAX_MIG + 1];
    unsigned n = GP_GPU_MAX_MIG + 1;
    if (m->nvmlDeviceGetGpuInstances(d, pi.id, gis, &n) != 0) continue;
    for (unsigned i = 0; i < n && i < GP_GPU_MAX_MIG + 1; i++) {
      for (unsigned ce = 0; ce < GP_NVML_COMPUTE_INSTANCE_PROFILE_COUNT; ce++) {
        gp_nvml_compute_instance_profile_info ci;
        memset(&ci, 0, sizeof ci);
        if (m->nvmlGpuInstanceGetComputeInstanceProfileInfo(
                gis[i], ce, GP_NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &ci) != 0)
          continue;
        gp_nvml_compute_instance cis[8];
        unsigned cn = 8;
        if (m->nvmlGpuInstanceGetComputeInstances(gis[i], ci.id, cis, &cn) != 0) continue;
        for (unsigned c = 0; c < cn && c < 8; c++) {
          int nrc = m->nvmlComputeInstanceDestroy(cis[c]);
          if (nrc) return mig_fail(m, nrc, err, "destroying a compute instance", gpu);
        }
      }
      int nrc = m->nvmlGpuInstanceDestroy(gis[i]);
      if (nrc) return mig_fail(m, nrc, err, "destroying a GPU instance", gpu);
    }
  }
  return 0;
}

/* Re-partitions an idle MIG-mode GPU: every instance is destroyed, then each requested
 * profile gets a GPU instance at its placement and one compute instance spanning it.
 * MIG mode itself is not switched here: that needs a GPU reset (nvidia-smi -mig 1). */
static int nvml_set_mig_layout(gp_gpu_backend *b, int gpu, const char *const *profiles,
                               const int *start_slots, int n, gp_err *err) {
  nvml *m = b->impl;
  if (gpu < 0 || gpu >= m->n)
    return gp_err_set(err, GP_ENOENT, NULL, 0, "gpu", "no GPU %d on this node", gpu);
  gp_gpu_sample s;
  if (nvml_sample(b, gpu, &s, err) == 0 && s.n_procs > 0)
    return gp_err_set(err, GP_ESTATE, NULL, 0, "gpu",
                      "GPU %d is busy (%d processes): drain it before re-partitioning", gpu,
                      s.n_procs);
  pthread_mutex_lock(&m->mu);
  int rc = 0;
  const gp_gpu_model *model = gp_gpu_model_find(m->info[gpu].model);
  if (!model || !model->n_mig) {
    rc = gp_err_set(err, GP_EUNSUPP, NULL, 0, "gpu", "GPU %d (%s) has no MIG profiles gpool knows",
                    gpu, m->info[gpu].name);
    goto out;
  }
  if ((rc = gp_gpu_model_check_mig(model, profiles, start_slots, n, err))) goto out;
  if (!m->info[gpu].mig_enabled) {
    rc = gp_err_set(err, GP_ESTATE, NULL, 0, "gpu",
                    "MIG mode is off on GPU %d: enable it with 'nvidia-smi -i %d -mig 1' (it "
                    "needs a GPU reset) and restart the agent", gpu, gpu);
    goto out;
  }
  if (!m->nvmlDeviceGetGpuInstanceProfileInfo || !m->nvmlDeviceGetGpuInstances ||
      !m->nvmlDeviceCreateGpuInstanceWithPlacement || !m->nvmlGpuInstanceDestroy ||
      !m->nvmlGpuInstanceGetComputeInstanceProfileInfo || !m->nvmlGpuInstanceGetComputeInstances ||
      !m->nvmlGpuInstanceCreateComputeInstance || !m->nvmlComputeInstanceDestroy) {
    rc = gp_err_set(err, GP_EUNSUPP, NULL, 0, "gpu",
                    "this driver's NVML lacks the MIG management calls (missing: %s)", m->missing);
    goto out;
  }
  if ((rc = destroy_instances(m, gpu, err))) goto rediscover;
  for (int i = 0; i < n; i++) {
    const gp_gpu_mig_profile *p = gp_gpu_model_mig_profile(model, profiles[i]);
    int k = (int)(p - model->mig);
    gp_nvml_gpu_instance_profile_info pi;
    memset(&pi, 0, sizeof pi);
    int nrc = m->nvmlDeviceGetGpuInstanceProfileInfo(m->dev[gpu], gi_profile_enum[k], &pi);
    if (nrc) {
      rc = mig_fail(m, nrc, err, "looking up MIG profile", gpu);
      goto rediscover;
    }
    gp_nvml_gpu_instance_placement pl = {(unsigned)start_slots[i], (unsigned)p->mem_slices};
    gp_nvml_gpu_instance gi;
    if ((nrc = m->nvmlDeviceCreateGpuInstanceWithPlacement(m->dev[gpu], pi.id, &pl, &gi))) {
      rc = mig_fail(m, nrc, err, "creating a GPU instance", gpu);
      goto rediscover;
    }
    gp_nvml_compute_instance_profile_info ci;
    memset(&ci, 0, sizeof ci);
    int ce = ci_profile_enum(p->compute_slices);
    if (ce < 0 || (nrc = m->nvmlGpuInstanceGetComputeInstanceProfileInfo(
                       gi, (unsigned)ce, GP_NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &ci))) {
      rc = mig_fail(m, nrc ? nrc : GP_NVML_ERROR_NOT_SUPPORTED, err,
                    "looking up the compute profile", gpu);
      goto rediscover;
    }
    gp_nvml_compute_instance cinst;
    if ((nrc = m->nvmlGpuInstanceCreateComputeInstance(gi, ci.id, &cinst))) {
      rc = mig_fail(m, nrc, err, "creating a compute instance", gpu);
      goto rediscover;
    }
  }
rediscover:
  /* Whatever happened, report the layout the GPU really has now. */
  nvml_discover_locked(m, NULL);
out:
  pthread_mutex_unlock(&m->mu);
  return rc;
}

static void nvml_close(gp_gpu_backend *b) {
  if (b) close_nvml(b->impl);
}

/* The driver accounts for every process on its GPUs by itself: the agent's word about its
 * jobs' processes and their declared load changes nothing here. */
static int nvml_job_load(gp_gpu_backend *b, const char *util, const char *mem, int *ret_util_pct,
                         int64_t *ret_mem_mib, gp_err *err) {
  *ret_util_pct = -1;
  *ret_mem_mib = -1;
  return 0;
}

static int nvml_attach(gp_gpu_backend *b, int gpu, pid_t pid, const char *mig_uuid,
                       int util_pct, int64_t mem_mib, gp_err *err) {
  return 0;
}

static int nvml_detach(gp_gpu_backend *b, pid_t pid) { return 0; }

static int nvml_inject(gp_gpu_backend *b, const gp_proto_fault *faults, int n,
                       gp_err *err) {
  return gp_err_set(err, GP_EUNSUPP, NULL, 0, "inject",
                    "fault injection needs the simulated GPU backend (--sim)");
}

/* A reset of a real GPU stays with an operator (nvidia-smi -r): it needs every process off
 * the GPU, including ones gpool does not know about. */
static int nvml_reset(gp_gpu_backend *b, int gpu, gp_err *err) { return 0; }

static const gp_gpu_backend_ops nvml_ops = {
    .name = "nvml",
    .has_driver = true,
    .discover = nvml_discover,
    .sample = nvml_sample,
    .poll_events = nvml_poll_events,
    .set_mig_layout = nvml_set_mig_layout,
    .missing_readings = gp_gpu_nvml_missing,
    .job_load = nvml_job_load,
    .attach = nvml_attach,
    .detach = nvml_detach,
    .inject = nvml_inject,
    .reset = nvml_reset,
    .close = nvml_close,
};

int gp_gpu_nvml_open(const char *lib_path, gp_gpu_backend **ret, gp_err *err) {
  const char *path = lib_path;
  if (!path) path = getenv("GPOOL_NVML_LIB");
  if (!path || !*path) path = NVML_DEFAULT_LIB;
  void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!dl) {
    const char *why = dlerror();
    return gp_err_set(err, GP_EUNSUPP, NULL, 0, "nvml",
                      "no NVIDIA GPU found: cannot load %s (%.200s)", path, why ? why : "");
  }
  nvml *m = gp_xcalloc(1, sizeof *m);
  pthread_mutex_init(&m->mu, NULL);
  m->dl = dl;
  m->base.ops = &nvml_ops;
  m->base.impl = m;
  size_t len = 0;
#define GP_NVML_RESOLVE(sym, args)                                                           \
  *(void **)&m->sym = dlsym(dl, #sym);                                                      \
  if (!m->sym && len < sizeof m->missing - 64)                                              \
    len += (size_t)snprintf(m->missing + len, sizeof m->missing - len, "%s%s", len ? "," : "", #sym);
  GP_NVML_SYMBOLS(GP_NVML_RESOLVE)
#undef GP_NVML_RESOLVE
  *(void **)&m->nvmlErrorString = dlsym(dl, "nvmlErrorString");
  int rc;
  if (!m->nvmlInit_v2 || !m->nvmlShutdown || !m->nvmlDeviceGetCount_v2 ||
      !m->nvmlDeviceGetHandleByIndex_v2) {
    rc = gp_err_set(err, GP_EUNSUPP, NULL, 0, "nvml",
                    "no NVIDIA GPU found: %s is not a usable NVML library (missing %s)", path,
                    !m->nvmlInit_v2 ? "nvmlInit_v2"
                    : !m->nvmlDeviceGetCount_v2 ? "nvmlDeviceGetCount_v2"
                    : !m->nvmlShutdown ? "nvmlShutdown" : "nvmlDeviceGetHandleByIndex_v2");
    m->nvmlShutdown = NULL; /* never initialised */
    close_nvml(m);
    return rc;
  }
  int nrc = m->nvmlInit_v2();
  if (nrc != 0) {
    rc = gp_err_set(err, GP_EUNSUPP, NULL, 0, "nvml", "no NVIDIA GPU found: %s%s",
                    nrc == GP_NVML_ERROR_DRIVER_NOT_LOADED ? "the NVIDIA driver is not loaded: "
                                                           : "NVML did not start: ",
                    errstr(m, nrc));
    m->nvmlShutdown = NULL;
    close_nvml(m);
    return rc;
  }
  unsigned count = 0;
  nrc = m->nvmlDeviceGetCount_v2(&count);
  if (nrc != 0 || count == 0) {
    rc = gp_err_set(err, GP_EUNSUPP, NULL, 0, "nvml", "no NVIDIA GPU found: %s",
                    nrc ? errstr(m, nrc) : "the driver lists no device");
    close_nvml(m);
    return rc;
  }
  if (count > GP_GPU_MAX_DEVICES) count = GP_GPU_MAX_DEVICES;
  for (unsigned i = 0; i < count; i++) {
    nrc = m->nvmlDeviceGetHandleByIndex_v2(i, &m->dev[m->n]);
    if (nrc != 0) {
      /* A GPU we may not use (cgroup device rules) or one that is lost: stop here so the
       * indexes stay those of the driver. */
      rc = gp_err_set(err, GP_EIO, NULL, 0, "nvml", "GPU %u cannot be opened: %s", i, errstr(m, nrc));
      close_nvml(m);
      return rc;
    }
    m->n++;
  }
  nvml_discover_locked(m, err);
  if (m->nvmlEventSetCreate && m->nvmlDeviceRegisterEvents && m->nvmlEventSetCreate(&m->events) == 0) {
    int registered = 0;
    for (int i = 0; i < m->n; i++)
      if (m->nvmlDeviceRegisterEvents(m->dev[i], GP_NVML_EVENT_XID_CRITICAL, m->events) == 0)
        registered++;
    if (!registered) {
      if (m->nvmlEventSetFree) m->nvmlEventSetFree(m->events);
      m->events = NULL;
    }
  }
  *ret = &m->base;
  return 0;
}

void gp_gpu_nvml_missing(const gp_gpu_backend *b, char *buf, size_t size) {
  if (!b || b->ops != &nvml_ops) {
    snprintf(buf, size, "%s", "");
    return;
  }
  const nvml *m = b->impl;
  snprintf(buf, size, "%s", m->missing);
}

int gp_gpu_open_backend(const char *sim_spec, bool force_sim, const char *node_name,
                        gp_gpu_backend **ret, gp_err *err) {
  gp_gpu_sim_opts so = {.node_name = node_name};
  if (sim_spec && force_sim) return gp_gpu_sim_open(sim_spec, &so, ret, err);
  gp_err nerr = {0};
  int rc = gp_gpu_nvml_open(NULL, ret, &nerr);
  if (rc == 0) return 0;
  if (rc == GP_EUNSUPP && sim_spec) return gp_gpu_sim_open(sim_spec, &so, ret, err);
  if (err) *err = nerr;
  return rc;
}
