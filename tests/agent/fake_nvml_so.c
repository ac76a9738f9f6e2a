/* SPDX-License-Identifier: Apache-2.0 */
/* A fake libnvidia-ml.so.1 for the NVML backend's tests: two H100s joined by NVLink, GPU 1
 * partitioned (one 1g.10gb MIG instance), a compute process on each, fixed telemetry.
 * GPU 1's MIG layout can be changed through the MIG management calls (GPU and compute
 * instances with placements), as root could on a real H100.
 * It deliberately lacks entry points that older drivers lack (nvmlDeviceGetMemoryInfo_v2,
 * nvmlDeviceGetCurrentClocksEventReasons, nvmlDeviceGetFieldValues) so the backend's
 * fallbacks run. Behaviour is steered by environment variables read at call time:
 *   FAKE_NVML_MODE=nodriver|nogpu|lost1|noroot   FAKE_NVML_PID=<pid of the GPU 0 process>
 *   FAKE_NVML_IDLE=1  (no compute process on any GPU)
 *   FAKE_NVML_NPROCS=N  (GPU 0 runs N processes, pids PID..PID+N-1, two utilisation samples each)
 *   FAKE_NVML_XID=<code>  (one Xid event on GPU 1, then timeouts)
 * The ABI follows NVML's (checked against nvml.h); types come from gpool's own declarations. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/agent/nvml_api.h"

#define EXPORT __attribute__((visibility("default")))

typedef struct fake_dev {
  int index;       /* physical GPU */
  int mig;         /* 1 for a MIG device handle */
  int gi;          /* its GPU instance (index into gis) */
} fake_dev;

static fake_dev gpus[2] = {{0, 0, 0}, {1, 0, 0}};

/* GPU 1's GPU instance profiles, by NVML profile enumeration. */
static const struct {
  unsigned penum, id, slices, mem_slices;
  unsigned long long mem_mb;
  const char *name;
} profiles[] = {{0, 19, 1, 1, 9856, "1g.10gb"},  {9, 15, 1, 2, 19968, "1g.20gb"},
                {1, 14, 2, 2, 19968, "2g.20gb"}, {2, 9, 3, 4, 40192, "3g.40gb"},
                {3, 5, 4, 4, 40192, "4g.40gb"},  {4, 0, 7, 8, 80384, "7g.80gb"}};
#define N_PROFILES (sizeof profiles / sizeof profiles[0])

typedef struct fake_gi {
  int used;
  int profile;     /* index into profiles */
  unsigned start, size, id;
  int has_ci;
  fake_dev handle; /* its MIG device */
  int ci_token;
} fake_gi;

/* Starts with one 1g.10gb instance (id 5) at memory slice 2. */
static fake_gi gis[7] = {{1, 0, 2, 1, 5, 1, {1, 1, 0}, 0}};
static unsigned next_gi_id = 6;

static int profile_by_id(unsigned id) {
  for (unsigned i = 0; i < N_PROFILES; i++)
    if (profiles[i].id == id) return (int)i;
  return -1;
}
static int init_count;
static int xid_sent;
static unsigned long long util_clock;

static const char *mode(void) {
  const char *m = getenv("FAKE_NVML_MODE");
  return m ? m : "";
}

static fake_dev *D(gp_nvml_device d) { return (fake_dev *)d; }

EXPORT int fake_nvml_init_count(void) { return init_count; }

EXPORT gp_nvml_return nvmlInit_v2(void) {
  if (!strcmp(mode(), "nodriver")) return GP_NVML_ERROR_DRIVER_NOT_LOADED;
  init_count++;
  return 0;
}

EXPORT gp_nvml_return nvmlShutdown(void) {
  if (init_count <= 0) return GP_NVML_ERROR_UNINITIALIZED;
  init_count--;
  return 0;
}

EXPORT const char *nvmlErrorString(gp_nvml_return rc) {
  switch (rc) {
  case GP_NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
  case GP_NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
  case GP_NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
  default: return "Unknown Error";
  }
}

EXPORT gp_nvml_return nvmlDeviceGetCount_v2(unsigned *n) {
  if (!init_count) return GP_NVML_ERROR_UNINITIALIZED;
  *n = !strcmp(mode(), "nogpu") ? 0 : 2;
  return 0;
}

EXPORT gp_nvml_return nvmlDeviceGetHandleByIndex_v2(unsigned i, gp_nvml_device *d) {
  if (i > 1) return GP_NVML_ERROR_INVALID_ARGUMENT;
  *d = (gp_nvml_device)&gpus[i];
  return 0;
}

static gp_nvml_return copy(char *dst, unsigned len, const char *src) {
  if (strlen(src) + 1 > len) return GP_NVML_ERROR_INSUFFICIENT_SIZE;
  strcpy(dst, src);
  return 0;
}

EXPORT gp_nvml_return nvmlDeviceGetName(gp_nvml_device d, char *name, unsigned len) {
  char buf[96];
  if (!D(d)->mig) return copy(name, len, "NVIDIA H100 80GB HBM3");
  snprintf(buf, sizeof buf, "NVIDIA H100 80GB HBM3 MIG %s", profiles[gis[D(d)->gi].profile].name);
  return copy(name, len, buf);
}

EXPORT gp_nvml_return nvmlDeviceGetUUID(gp_nvml_device d, char *uuid, unsigned len) {
  char buf[96];
  snprintf(buf, sizeof buf, "MIG-11111111-2222-3333-4444-%012u", gis[D(d)->gi].id);
  if (D(d)->mig) return copy(uuid, len, buf);
  return copy(uuid, len, D(d)->index ? "GPU-bbbbbbbb-0000-0000-0000-000000000001"
                                     : "GPU-aaaaaaaa-0000-0000-0000-000000000000");
}

static void pci_of(int index, gp_nvml_pci_info *pci) {
  memset(pci, 0, sizeof *pci);
  strcpy(pci->bus_id, index ? "00000000:2A:00.0" : "00000000:18:00.0");
  strcpy(pci->bus_id_legacy, index ? "0000:2A:00.0" : "0000:18:00.0");
  pci->bus = index ? 0x2a : 0x18;
}

EXPORT gp_nvml_return nvmlDeviceGetPciInfo_v3(gp_nvml_device d, gp_nvml_pci_info *pci) {
  pci_of(D(d)->index, pci);
  return 0;
}

EXPORT gp_nvml_return nvmlDeviceGetMemoryInfo(gp_nvml_device d, gp_nvml_memory *m) {
  unsigned long long mib = 1ull << 20;
  if (D(d)->mig) {
    m->total = profiles[gis[D(d)->gi].profile].mem_mb * mib;
    m->used = 0;
  } else {
    m->total = 81559 * mib;
    m->used = (D(d)->index ? 2560 : 1536) * mib;
  }
  m->free = m->total - m->used;
  return 0;
}

EXPORT gp_nvml_return nvmlDeviceGetUtilizationRates(gp_nvml_device d, gp_nvml_utilization *u) {
  if (D(d)->index == 1 && !strcmp(mode(), "lost1")) return GP_NVML_ERROR_GPU_IS_LOST;
  if (D(d)->index == 1) return GP_NVML_ERROR_NOT_SUPPORTED; /* MIG mode: no device util */
  u->gpu = 63;
  u->memory = 21;
  return 0;
}

EXPORT gp_nvml_return nvmlDeviceGetPowerUsage(gp_nvml_device d, unsigned *mw) {
  *mw = D(d)->index ? 100000 : 312500;
  return 0;
}

/* How often the slow calls were made (the backend spares them where it can). */
static int energy_reads, util_reads;
EXPORT int fake_nvml_energy_reads(void) { return energy_reads; }
EXPORT int fake_nvml_util_reads(void) { return util_reads; }

EXPORT gp_nvml_return nvmlDeviceGetTotalEnergyConsumption(gp_nvml_device d, unsigned long long *mj) {
  energy_reads++;
  *mj = 123456789ull + (unsigned long long)D(d)->index;
  return 0;
}

EXPORT gp_nvml_return nvmlDeviceGetTemperature(gp_nvml_device d, int sensor, unsigned *t) {
  if (sensor != GP_NVML_TEMPERATURE_GPU) return GP_NVML_ERROR_INVALID_ARGUMENT;
  *t = 55;
  return 0;
}

EXPORT gp_nvml_return nvmlDeviceGetClockInfo(gp_nvml_device d, int type, unsigned *mhz) {
  if (type == GP_NVML_CLOCK_SM) *mhz = 1755;
  else if (type == GP_NVML_CLOCK_MEM) *mhz = 2619;
  else return GP_NVML_ERROR_INVALID_ARGUMENT;
  return 0;
}

/* Only the old name, as a pre-530 driver has it. */
EXPORT gp_nvml_return nvmlDeviceGetCurrentClocksThrottleReasons(gp_nvml_device d, unsigned long long *r) {
  *r = D(d)->index ? 0 : GP_NVML_CLOCKS_EVENT_SW_POWER_CAP;
  return 0;
}

EXPORT gp_nvml_return nvmlDeviceGetEccMode(gp_nvml_device d, int *cur, int *pend) {
  *cur = *pend = GP_NVML_FEATURE_ENABLED;
  return 0;
}

EXPORT gp_nvml_return nvmlDeviceGetTotalEccErrors(gp_nvml_device d, int type, int counter,
                                                  unsigned long long *n) {
  if (counter != GP_NVML_VOLATILE_ECC) return GP_NVML_ERROR_INVALID_ARGUMENT;
  *n = type == GP_NVML_MEMORY_ERROR_CORRECTED ? 7 : 0;
  return 0;
}

EXPORT gp_nvml_return nvmlDeviceGetRemappedRows(gp_nvml_device d, unsigned *corr, unsigned *unc,
                                                unsigned *pending, unsigned *failed) {
  *corr = 1;
  *unc = 0;
  *pending = 0;
  *failed = 0;
  return 0;
}

EXPORT gp_nvml_return nvmlDeviceGetPcieReplayCounter(gp_nvml_device d, unsigned *n) {
  *n = 2;
  return 0;
}

EXPORT gp_nvml_return nvmlDeviceGetNvLinkState(gp_nvml_device d, unsigned link, int *active) {
  if (link >= GP_NVML_NVLINK_MAX_LINKS) return GP_NVML_ERROR_INVALID_ARGUMENT;
  *active = link == 0 ? GP_NVML_FEATURE_ENABLED : 0;
  return 0;
}

EXPORT gp_nvml_return nvmlDeviceGetNvLinkRemotePciInfo_v2(gp_nvml_device d, unsigned link,
                                                          gp_nvml_pci_info *pci) {
  if (link != 0) return GP_NVML_ERROR_NOT_SUPPORTED;
  pci_of(1 - D(d)->index, pci);
  return 0;
}

EXPORT gp_nvml_return nvmlDeviceGetMigMode(gp_nvml_device d, unsigned *cur, unsigned *pend) {
  *cur = *pend = D(d)->index == 1 ? GP_NVML_DEVICE_MIG_ENABLE : 0;
  return 0;
}

EXPORT gp_nvml_return nvmlDeviceGetMaxMigDeviceCount(gp_nvml_device d, unsigned *n) {
  *n = D(d)->index == 1 ? 7 : 0;
  return 0;
}

/* The i-th MIG device: GPU instances that have a compute instance, in slot order. */
EXPORT gp_nvml_return nvmlDeviceGetMigDeviceHandleByIndex(gp_nvml_device d, unsigned i,
                                                          gp_nvml_device *out) {
  if (D(d)->index != 1) return GP_NVML_ERROR_NOT_FOUND;
  unsigned k = 0;
  for (int g = 0; g < 7; g++) {
    if (!gis[g].used || !gis[g].has_ci) continue;
    if (k++ == i) {
      gis[g].handle = (fake_dev){1, 1, g};
      *out = (gp_nvml_device)&gis[g].handle;
      return 0;
    }
  }
  return GP_NVML_ERROR_NOT_FOUND;
}

EXPORT gp_nvml_return nvmlDeviceGetGpuInstanceId(gp_nvml_device d, unsigned *id) {
  if (!D(d)->mig) return GP_NVML_ERROR_INVALID_ARGUMENT;
  *id = gis[D(d)->gi].id;
  return 0;
}

static fake_gi *G(gp_nvml_gpu_instance gi) { return (fake_gi *)gi; }

EXPORT gp_nvml_return nvmlDeviceGetGpuInstanceById(gp_nvml_device d, unsigned id,
                                                   gp_nvml_gpu_instance *gi) {
  if (D(d)->index != 1) return GP_NVML_ERROR_NOT_FOUND;
  for (int g = 0; g < 7; g++)
    if (gis[g].used && gis[g].id == id) {
      *gi = (gp_nvml_gpu_instance)&gis[g];
      return 0;
    }
  return GP_NVML_ERROR_NOT_FOUND;
}

EXPORT gp_nvml_return nvmlGpuInstanceGetInfo(gp_nvml_gpu_instance gi, gp_nvml_gpu_instance_info *info) {
  memset(info, 0, sizeof *info);
  info->device = (gp_nvml_device)&gpus[1];
  info->id = G(gi)->id;
  info->profile_id = profiles[G(gi)->profile].id;
  info->placement_start = G(gi)->start;
  info->placement_size = G(gi)->size;
  return 0;
}

EXPORT gp_nvml_return nvmlDeviceGetGpuInstanceProfileInfo(gp_nvml_device d, unsigned penum,
                                                          gp_nvml_gpu_instance_profile_info *info) {
  if (D(d)->index != 1) return GP_NVML_ERROR_NOT_SUPPORTED; /* MIG mode off */
  for (unsigned i = 0; i < N_PROFILES; i++)
    if (profiles[i].penum == penum) {
      memset(info, 0, sizeof *info);
      info->id = profiles[i].id;
      info->slice_count = profiles[i].slices;
      info->memory_size_mb = profiles[i].mem_mb;
      return 0;
    }
  return GP_NVML_ERROR_NOT_SUPPORTED;
}

EXPORT gp_nvml_return nvmlDeviceGetGpuInstances(gp_nvml_device d, unsigned profile_id,
                                                gp_nvml_gpu_instance *out, unsigned *count) {
  if (D(d)->index != 1) return GP_NVML_ERROR_NOT_SUPPORTED;
  unsigned n = 0;
  for (int g = 0; g < 7; g++)
    if (gis[g].used && profiles[gis[g].profile].id == profile_id) {
      if (n == *count) return GP_NVML_ERROR_INSUFFICIENT_SIZE;
      out[n++] = (gp_nvml_gpu_instance)&gis[g];
    }
  *count = n;
  return 0;
}

EXPORT gp_nvml_return nvmlDeviceCreateGpuInstanceWithPlacement(gp_nvml_device d, unsigned profile_id,
                                                               const gp_nvml_gpu_instance_placement *pl,
                                                               gp_nvml_gpu_instance *out) {
  if (!strcmp(mode(), "noroot")) return GP_NVML_ERROR_NO_PERMISSION;
  int p = profile_by_id(profile_id);
  if (D(d)->index != 1 || p < 0) return GP_NVML_ERROR_INVALID_ARGUMENT;
  if (pl->size != profiles[p].mem_slices || pl->start + pl->size > 8) return GP_NVML_ERROR_INVALID_ARGUMENT;
  int free_slot = -1;
  for (int g = 0; g < 7; g++) {
    if (!gis[g].used) {
      if (free_slot < 0) free_slot = g;
      continue;
    }
    if (pl->start < gis[g].start + gis[g].size && gis[g].start < pl->start + pl->size)
      return 23; /* NVML_ERROR_INSUFFICIENT_RESOURCES: overlaps */
  }
  if (free_slot < 0) return 23;
  gis[free_slot] = (fake_gi){1, p, pl->start, pl->size, next_gi_id++, 0, {1, 1, free_slot}, 0};
  *out = (gp_nvml_gpu_instance)&gis[free_slot];
  return 0;
}

EXPORT gp_nvml_return nvmlGpuInstanceDestroy(gp_nvml_gpu_instance gi) {
  if (!strcmp(mode(), "noroot")) return GP_NVML_ERROR_NO_PERMISSION;
  if (G(gi)->has_ci) return 19; /* NVML_ERROR_IN_USE */
  G(gi)->used = 0;
  return 0;
}

/* Compute profiles: only the one spanning the whole GPU instance (enumeration = slices). */
static unsigned ci_enum_of(const fake_gi *g) {
  unsigned s = profiles[g->profile].slices;
  return s == 7 ? 4 : s - 1;
}

EXPORT gp_nvml_return nvmlGpuInstanceGetComputeInstanceProfileInfo(
    gp_nvml_gpu_instance gi, unsigned penum, unsigned eng, gp_nvml_compute_instance_profile_info *info) {
  if (eng != GP_NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED || penum != ci_enum_of(G(gi)))
    return GP_NVML_ERROR_NOT_SUPPORTED;
  memset(info, 0, sizeof *info);
  info->id = 100 + penum;
  info->slice_count = profiles[G(gi)->profile].slices;
  return 0;
}

EXPORT gp_nvml_return nvmlGpuInstanceGetComputeInstances(gp_nvml_gpu_instance gi, unsigned ci_id,
                                                         gp_nvml_compute_instance *out, unsigned *count) {
  unsigned n = 0;
  if (G(gi)->has_ci && ci_id == 100 + ci_enum_of(G(gi))) {
    if (*count < 1) return GP_NVML_ERROR_INSUFFICIENT_SIZE;
    out[n++] = (gp_nvml_compute_instance)&G(gi)->ci_token;
  }
  *count = n;
  return 0;
}

EXPORT gp_nvml_return nvmlGpuInstanceCreateComputeInstance(gp_nvml_gpu_instance gi, unsigned ci_id,
                                                           gp_nvml_compute_instance *out) {
  if (!strcmp(mode(), "noroot")) return GP_NVML_ERROR_NO_PERMISSION;
  if (ci_id != 100 + ci_enum_of(G(gi))) return GP_NVML_ERROR_INVALID_ARGUMENT;
  if (G(gi)->has_ci) return 23;
  G(gi)->has_ci = 1;
  *out = (gp_nvml_compute_instance)&G(gi)->ci_token;
  return 0;
}

EXPORT gp_nvml_return nvmlComputeInstanceDestroy(gp_nvml_compute_instance ci) {
  if (!strcmp(mode(), "noroot")) return GP_NVML_ERROR_NO_PERMISSION;
  for (int g = 0; g < 7; g++)
    if ((void *)&gis[g].ci_token == (void *)ci && gis[g].has_ci) {
      gis[g].has_ci = 0;
      return 0;
    }
  return GP_NVML_ERROR_INVALID_ARGUMENT;
}

EXPORT gp_nvml_return nvmlDeviceGetComputeRunningProcesses_v3(gp_nvml_device d, unsigned *n,
                                                              gp_nvml_process_info *p) {
  const char *pid_s = getenv("FAKE_NVML_PID");
  unsigned pid = pid_s ? (unsigned)atoi(pid_s) : 4242;
  if (getenv("FAKE_NVML_IDLE")) {
    *n = 0;
    return 0;
  }
  const char *np_s = getenv("FAKE_NVML_NPROCS");
  unsigned np = np_s ? (unsigned)atoi(np_s) : 0;
  if (D(d)->index == 0 && np > 1) {
    if (*n < np) {
      *n = np;
      return GP_NVML_ERROR_INSUFFICIENT_SIZE;
    }
    for (unsigned i = 0; i < np; i++) {
      memset(&p[i], 0, sizeof p[i]);
      p[i].pid = pid + i;
      p[i].used_gpu_memory = 256ull << 20;
      p[i].gpu_instance_id = p[i].compute_instance_id = GP_NVML_INVALID_INSTANCE_ID;
    }
    *n = np;
    return 0;
  }
  if (*n < 1) {
    *n = 1;
    return GP_NVML_ERROR_INSUFFICIENT_SIZE;
  }
  *n = 1;
  memset(p, 0, sizeof *p);
  if (D(d)->index == 0) {
    p->pid = pid;
    p->used_gpu_memory = 1024ull << 20;
    p->gpu_instance_id = p->compute_instance_id = GP_NVML_INVALID_INSTANCE_ID;
  } else {
    p->pid = pid + 1;
    p->used_gpu_memory = 2048ull << 20;
    p->gpu_instance_id = 5;
    p->compute_instance_id = 0;
  }
  return 0;
}

/* With FAKE_NVML_MPS, GPU 0's process is an MPS client and its kernels are sampled under
 * the MPS server's pid (its own + 100), as the driver does. */
EXPORT gp_nvml_return nvmlDeviceGetMPSComputeRunningProcesses_v3(gp_nvml_device d, unsigned *n,
                                                                 gp_nvml_process_info *p) {
  if (D(d)->index != 0 || !getenv("FAKE_NVML_MPS")) {
    *n = 0;
    return 0;
  }
  if (*n < 1) {
    *n = 1;
    return GP_NVML_ERROR_INSUFFICIENT_SIZE;
  }
  const char *pid_s = getenv("FAKE_NVML_PID");
  memset(p, 0, sizeof *p);
  p->pid = pid_s ? (unsigned)atoi(pid_s) : 4242;
  p->used_gpu_memory = 1024ull << 20;
  p->gpu_instance_id = p->compute_instance_id = GP_NVML_INVALID_INSTANCE_ID;
  *n = 1;
  return 0;
}

/* Samples newer than `last`: two per call for the GPU 0 process (peak 42%). */
EXPORT gp_nvml_return nvmlDeviceGetProcessUtilization(gp_nvml_device d, gp_nvml_process_util *u,
                                                      unsigned *n, unsigned long long last) {
  util_reads++;
  if (D(d)->index != 0) return GP_NVML_ERROR_NOT_FOUND; /* nothing ran kernels */
  if (!u) {
    *n = 2;
    return GP_NVML_ERROR_INSUFFICIENT_SIZE;
  }
  const char *pid_s = getenv("FAKE_NVML_PID");
  unsigned pid = (pid_s ? (unsigned)atoi(pid_s) : 4242) + (getenv("FAKE_NVML_MPS") ? 100 : 0);
  const char *np_s = getenv("FAKE_NVML_NPROCS");
  unsigned np = np_s && atoi(np_s) > 1 ? (unsigned)atoi(np_s) : 1;
  if (*n < 2 * np) {
    *n = 2 * np;
    return GP_NVML_ERROR_INSUFFICIENT_SIZE;
  }
  util_clock += 1000000;
  if (last >= util_clock) return GP_NVML_ERROR_NOT_FOUND;
  memset(u, 0, 2 * np * sizeof *u);
  for (unsigned i = 0; i < np; i++) {
    u[2 * i].pid = pid + i;
    u[2 * i].timestamp_us = util_clock - 500000;
    u[2 * i].sm_util = 30;
    u[2 * i + 1].pid = pid + i;
    u[2 * i + 1].timestamp_us = util_clock;
    u[2 * i + 1].sm_util = 42;
  }
  *n = 2 * np;
  return 0;
}

static int event_set_token;
EXPORT gp_nvml_return nvmlEventSetCreate(gp_nvml_event_set *set) {
  *set = (gp_nvml_event_set)&event_set_token;
  return 0;
}

EXPORT gp_nvml_return nvmlDeviceRegisterEvents(gp_nvml_device d, unsigned long long types,
                                               gp_nvml_event_set set) {
  return types & GP_NVML_EVENT_XID_CRITICAL ? 0 : GP_NVML_ERROR_NOT_SUPPORTED;
}

EXPORT gp_nvml_return nvmlEventSetWait_v2(gp_nvml_event_set set, gp_nvml_event_data *e,
                                          unsigned timeout_ms) {
  const char *xid = getenv("FAKE_NVML_XID");
  if (!xid || xid_sent) return GP_NVML_ERROR_TIMEOUT;
  xid_sent = 1;
  memset(e, 0, sizeof *e);
  e->device = (gp_nvml_device)&gpus[1];
  e->event_type = GP_NVML_EVENT_XID_CRITICAL;
  e->event_data = (unsigned long long)atoi(xid);
  e->gpu_instance_id = 5;
  e->compute_instance_id = 0;
  return 0;
}

EXPORT gp_nvml_return nvmlEventSetFree(gp_nvml_event_set set) { return 0; }
