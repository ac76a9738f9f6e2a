/* SPDX-License-Identifier: Apache-2.0 */
/* A fake libnvidia-ml.so.1 for the NVML backend's tests: two H100s joined by NVLink, GPU 1
 * partitioned (one 1g.10gb MIG instance), a compute process on each, fixed telemetry.
 * It deliberately lacks entry points that older drivers lack (nvmlDeviceGetMemoryInfo_v2,
 * nvmlDeviceGetCurrentClocksEventReasons, nvmlDeviceGetFieldValues) so the backend's
 * fallbacks run. Behaviour is steered by environment variables read at call time:
 *   FAKE_NVML_MODE=nodriver|nogpu|lost1   FAKE_NVML_PID=<pid of the GPU 0 process>
 *   FAKE_NVML_XID=<code>  (one Xid event on GPU 1, then timeouts)
 * The ABI follows NVML's (checked against nvml.h); types come from gpool's own declarations. */
#include <stdlib.h>
#include <string.h>

#include "../../src/agent/nvml_api.h"

#define EXPORT __attribute__((visibility("default")))

typedef struct fake_dev {
  int index;       /* physical GPU */
  int mig;         /* 1 for the MIG device handle */
} fake_dev;

static fake_dev gpus[2] = {{0, 0}, {1, 0}};
static fake_dev mig_dev = {1, 1};
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
  return copy(name, len, D(d)->mig ? "NVIDIA H100 80GB HBM3 MIG 1g.10gb" : "NVIDIA H100 80GB HBM3");
}

EXPORT gp_nvml_return nvmlDeviceGetUUID(gp_nvml_device d, char *uuid, unsigned len) {
  if (D(d)->mig) return copy(uuid, len, "MIG-11111111-2222-3333-4444-555555555555");
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
    m->total = 9856 * mib;
    m->used = 2048 * mib;
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

EXPORT gp_nvml_return nvmlDeviceGetTotalEnergyConsumption(gp_nvml_device d, unsigned long long *mj) {
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

EXPORT gp_nvml_return nvmlDeviceGetMigDeviceHandleByIndex(gp_nvml_device d, unsigned i,
                                                          gp_nvml_device *out) {
  if (D(d)->index != 1 || i != 0) return GP_NVML_ERROR_NOT_FOUND;
  *out = (gp_nvml_device)&mig_dev;
  return 0;
}

EXPORT gp_nvml_return nvmlDeviceGetGpuInstanceId(gp_nvml_device d, unsigned *id) {
  if (!D(d)->mig) return GP_NVML_ERROR_INVALID_ARGUMENT;
  *id = 5;
  return 0;
}

static int gi_token;
EXPORT gp_nvml_return nvmlDeviceGetGpuInstanceById(gp_nvml_device d, unsigned id,
                                                   gp_nvml_gpu_instance *gi) {
  if (D(d)->index != 1 || id != 5) return GP_NVML_ERROR_NOT_FOUND;
  *gi = (gp_nvml_gpu_instance)&gi_token;
  return 0;
}

EXPORT gp_nvml_return nvmlGpuInstanceGetInfo(gp_nvml_gpu_instance gi, gp_nvml_gpu_instance_info *info) {
  memset(info, 0, sizeof *info);
  info->device = (gp_nvml_device)&gpus[1];
  info->id = 5;
  info->placement_start = 2;
  info->placement_size = 1;
  return 0;
}

EXPORT gp_nvml_return nvmlDeviceGetComputeRunningProcesses_v3(gp_nvml_device d, unsigned *n,
                                                              gp_nvml_process_info *p) {
  const char *pid_s = getenv("FAKE_NVML_PID");
  unsigned pid = pid_s ? (unsigned)atoi(pid_s) : 4242;
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

/* Samples newer than `last`: two per call for the GPU 0 process (peak 42%). */
EXPORT gp_nvml_return nvmlDeviceGetProcessUtilization(gp_nvml_device d, gp_nvml_process_util *u,
                                                      unsigned *n, unsigned long long last) {
  if (D(d)->index != 0) return GP_NVML_ERROR_NOT_FOUND; /* nothing ran kernels */
  if (!u) {
    *n = 2;
    return GP_NVML_ERROR_INSUFFICIENT_SIZE;
  }
  if (*n < 2) return GP_NVML_ERROR_INSUFFICIENT_SIZE;
  const char *pid_s = getenv("FAKE_NVML_PID");
  unsigned pid = pid_s ? (unsigned)atoi(pid_s) : 4242;
  util_clock += 1000000;
  if (last >= util_clock) return GP_NVML_ERROR_NOT_FOUND;
  memset(u, 0, 2 * sizeof *u);
  u[0].pid = pid;
  u[0].timestamp_us = util_clock - 500000;
  u[0].sm_util = 30;
  u[1].pid = pid;
  u[1].timestamp_us = util_clock;
  u[1].sm_util = 42;
  *n = 2;
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
