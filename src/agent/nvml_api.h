/* SPDX-License-Identifier: Apache-2.0 */
/* The few NVML types, constants and function signatures gpool uses, declared by hand so the
 * agent builds where no NVIDIA driver or CUDA toolkit is installed. NVML is loaded at run
 * time with dlopen (gpu_nvml.c); nothing here links against it.
 * Layouts and values were checked against NVIDIA's nvml.h (NVML API version 12, CUDA 12.6)
 * and the NVML API reference. Only what gpool calls is declared; names carry a gp_nvml_
 * prefix so this header can never clash with the real one. Every struct below is a
 * stable ABI that NVIDIA keeps across driver versions (new layouts get new _vN names). */
#ifndef GP_AGENT_NVML_API_H
#define GP_AGENT_NVML_API_H

/* nvmlReturn_t values we act on. */
enum {
  GP_NVML_SUCCESS = 0,
  GP_NVML_ERROR_UNINITIALIZED = 1,
  GP_NVML_ERROR_INVALID_ARGUMENT = 2,
  GP_NVML_ERROR_NOT_SUPPORTED = 3,
  GP_NVML_ERROR_NO_PERMISSION = 4,
  GP_NVML_ERROR_NOT_FOUND = 6,
  GP_NVML_ERROR_INSUFFICIENT_SIZE = 7,
  GP_NVML_ERROR_DRIVER_NOT_LOADED = 9,
  GP_NVML_ERROR_TIMEOUT = 10,
  GP_NVML_ERROR_FUNCTION_NOT_FOUND = 13,
  GP_NVML_ERROR_GPU_IS_LOST = 15,
  GP_NVML_ERROR_RESET_REQUIRED = 16,
  GP_NVML_ERROR_NO_DATA = 21,
  GP_NVML_ERROR_UNKNOWN = 999,
};

/* Clock-event ("throttle") reason bits of nvmlDeviceGetCurrentClocksEventReasons. */
#define GP_NVML_CLOCKS_EVENT_GPU_IDLE 0x1ull
#define GP_NVML_CLOCKS_EVENT_APP_CLOCKS 0x2ull
#define GP_NVML_CLOCKS_EVENT_SW_POWER_CAP 0x4ull
#define GP_NVML_CLOCKS_EVENT_HW_SLOWDOWN 0x8ull
#define GP_NVML_CLOCKS_EVENT_SYNC_BOOST 0x10ull
#define GP_NVML_CLOCKS_EVENT_SW_THERMAL_SLOWDOWN 0x20ull
#define GP_NVML_CLOCKS_EVENT_HW_THERMAL_SLOWDOWN 0x40ull
#define GP_NVML_CLOCKS_EVENT_HW_POWER_BRAKE 0x80ull

/* Event types for nvmlDeviceRegisterEvents. */
#define GP_NVML_EVENT_SINGLE_BIT_ECC 0x1ull
#define GP_NVML_EVENT_DOUBLE_BIT_ECC 0x2ull
#define GP_NVML_EVENT_XID_CRITICAL 0x8ull

/* Enumerations passed by value (C enums are int-sized on the ABIs NVML supports). */
#define GP_NVML_TEMPERATURE_GPU 0
#define GP_NVML_CLOCK_SM 1
#define GP_NVML_CLOCK_MEM 2
#define GP_NVML_MEMORY_ERROR_CORRECTED 0
#define GP_NVML_MEMORY_ERROR_UNCORRECTED 1
#define GP_NVML_VOLATILE_ECC 0
#define GP_NVML_FEATURE_ENABLED 1
#define GP_NVML_DEVICE_MIG_ENABLE 1
#define GP_NVML_NVLINK_MAX_LINKS 18

/* Field ids for nvmlDeviceGetFieldValues. */
#define GP_NVML_FI_DEV_MEMORY_TEMP 82
#define GP_NVML_FI_DEV_PCIE_REPLAY_COUNTER 94
#define GP_NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX 138 /* KiB, cumulative */
#define GP_NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX 139
#define GP_NVML_SCOPE_ALL_LINKS 0xFFFFFFFFu

#define GP_NVML_VALUE_TYPE_DOUBLE 0
#define GP_NVML_VALUE_TYPE_UNSIGNED_INT 1
#define GP_NVML_VALUE_TYPE_UNSIGNED_LONG 2
#define GP_NVML_VALUE_TYPE_UNSIGNED_LONG_LONG 3
#define GP_NVML_VALUE_TYPE_SIGNED_LONG_LONG 4
#define GP_NVML_VALUE_TYPE_SIGNED_INT 5

#define GP_NVML_DEVICE_NAME_BUFFER_SIZE 96
#define GP_NVML_DEVICE_UUID_BUFFER_SIZE 96
#define GP_NVML_INVALID_INSTANCE_ID 0xFFFFFFFFu

typedef int gp_nvml_return;
typedef struct gp_nvml_device_st *gp_nvml_device;
typedef struct gp_nvml_event_set_st *gp_nvml_event_set;

typedef struct gp_nvml_pci_info {          /* nvmlPciInfo_t (v3) */
  char bus_id_legacy[16];
  unsigned int domain, bus, device, pci_device_id, pci_subsystem_id;
  char bus_id[32];                         /* "00000000:18:00.0" */
} gp_nvml_pci_info;

typedef struct gp_nvml_memory {            /* nvmlMemory_t: bytes */
  unsigned long long total, free, used;
} gp_nvml_memory;

typedef struct gp_nvml_memory_v2 {         /* nvmlMemory_v2_t: bytes */
  unsigned int version;                    /* GP_NVML_MEMORY_V2_VERSION */
  unsigned long long total, reserved, free, used;
} gp_nvml_memory_v2;
/* NVML_STRUCT_VERSION(Memory, 2): the struct size with the version in the top byte. */
#define GP_NVML_MEMORY_V2_VERSION ((unsigned int)(sizeof(gp_nvml_memory_v2) | (2u << 24)))

typedef struct gp_nvml_utilization {       /* nvmlUtilization_t: percent */
  unsigned int gpu, memory;
} gp_nvml_utilization;

typedef struct gp_nvml_process_info {      /* nvmlProcessInfo_t (v2 layout, for the _v3 call) */
  unsigned int pid;
  unsigned long long used_gpu_memory;      /* bytes */
  unsigned int gpu_instance_id, compute_instance_id; /* 0xFFFFFFFF without MIG */
} gp_nvml_process_info;

typedef struct gp_nvml_process_util {      /* nvmlProcessUtilizationSample_t */
  unsigned int pid;
  unsigned long long timestamp_us;
  unsigned int sm_util, mem_util, enc_util, dec_util;
} gp_nvml_process_util;

typedef struct gp_nvml_event_data {        /* nvmlEventData_t */
  gp_nvml_device device;
  unsigned long long event_type;
  unsigned long long event_data;           /* the Xid for GP_NVML_EVENT_XID_CRITICAL */
  unsigned int gpu_instance_id, compute_instance_id;
} gp_nvml_event_data;

typedef union gp_nvml_value {              /* nvmlValue_t */
  double d;
  int si;
  unsigned int ui;
  unsigned long ul;
  unsigned long long ull;
  long long sll;
  unsigned short us;
} gp_nvml_value;

typedef struct gp_nvml_field_value {       /* nvmlFieldValue_t */
  unsigned int field_id, scope_id;
  long long timestamp_us, latency_us;
  int value_type;
  gp_nvml_return nvml_return;
  gp_nvml_value value;
} gp_nvml_field_value;

typedef struct gp_nvml_gpu_instance_st *gp_nvml_gpu_instance;
typedef struct gp_nvml_compute_instance_st *gp_nvml_compute_instance;

/* MIG management: profile enumerations (not the profile ids the driver returns for them). */
#define GP_NVML_GPU_INSTANCE_PROFILE_1_SLICE 0x0
#define GP_NVML_GPU_INSTANCE_PROFILE_2_SLICE 0x1
#define GP_NVML_GPU_INSTANCE_PROFILE_3_SLICE 0x2
#define GP_NVML_GPU_INSTANCE_PROFILE_4_SLICE 0x3
#define GP_NVML_GPU_INSTANCE_PROFILE_7_SLICE 0x4
#define GP_NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2 0x9 /* the double-memory 1g profile */
#define GP_NVML_GPU_INSTANCE_PROFILE_COUNT 0xA
#define GP_NVML_COMPUTE_INSTANCE_PROFILE_COUNT 0x8
#define GP_NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED 0x0

typedef struct gp_nvml_gpu_instance_profile_info { /* nvmlGpuInstanceProfileInfo_t */
  unsigned int id, is_p2p_supported, slice_count, instance_count, multiprocessor_count;
  unsigned int copy_engine_count, decoder_count, encoder_count, jpeg_count, ofa_count;
  unsigned long long memory_size_mb;
} gp_nvml_gpu_instance_profile_info;

typedef struct gp_nvml_compute_instance_profile_info { /* nvmlComputeInstanceProfileInfo_t */
  unsigned int id, slice_count, instance_count, multiprocessor_count;
  unsigned int shared_copy_engine_count, shared_decoder_count, shared_encoder_count;
  unsigned int shared_jpeg_count, shared_ofa_count;
} gp_nvml_compute_instance_profile_info;

typedef struct gp_nvml_gpu_instance_placement { /* nvmlGpuInstancePlacement_t */
  unsigned int start, size;                /* memory slices */
} gp_nvml_gpu_instance_placement;
typedef struct gp_nvml_gpu_instance_info { /* nvmlGpuInstanceInfo_t */
  gp_nvml_device device;
  unsigned int id, profile_id;
  unsigned int placement_start, placement_size; /* memory slices */
} gp_nvml_gpu_instance_info;

/* The NVML entry points gpool resolves with dlsym: X(symbol, parameter list); all return
 * nvmlReturn_t (nvmlErrorString, which returns a string, is resolved on its own). Each one
 * may be missing from an older driver's library; callers check for NULL. */
#define GP_NVML_SYMBOLS(X)                                                                    \
  X(nvmlInit_v2, (void))                                                                      \
  X(nvmlShutdown, (void))                                                                     \
  X(nvmlDeviceGetCount_v2, (unsigned int *))                                                  \
  X(nvmlDeviceGetHandleByIndex_v2, (unsigned int, gp_nvml_device *))                          \
  X(nvmlDeviceGetName, (gp_nvml_device, char *, unsigned int))                                \
  X(nvmlDeviceGetUUID, (gp_nvml_device, char *, unsigned int))                                \
  X(nvmlDeviceGetPciInfo_v3, (gp_nvml_device, gp_nvml_pci_info *))                            \
  X(nvmlDeviceGetMemoryInfo, (gp_nvml_device, gp_nvml_memory *))                              \
  X(nvmlDeviceGetMemoryInfo_v2, (gp_nvml_device, gp_nvml_memory_v2 *))                        \
  X(nvmlDeviceGetUtilizationRates, (gp_nvml_device, gp_nvml_utilization *))                   \
  X(nvmlDeviceGetPowerUsage, (gp_nvml_device, unsigned int *))                                \
  X(nvmlDeviceGetTotalEnergyConsumption, (gp_nvml_device, unsigned long long *))              \
  X(nvmlDeviceGetTemperature, (gp_nvml_device, int, unsigned int *))                          \
  X(nvmlDeviceGetClockInfo, (gp_nvml_device, int, unsigned int *))                            \
  X(nvmlDeviceGetCurrentClocksEventReasons, (gp_nvml_device, unsigned long long *))           \
  X(nvmlDeviceGetCurrentClocksThrottleReasons, (gp_nvml_device, unsigned long long *))        \
  X(nvmlDeviceGetEccMode, (gp_nvml_device, int *, int *))                                     \
  X(nvmlDeviceGetTotalEccErrors, (gp_nvml_device, int, int, unsigned long long *))            \
  X(nvmlDeviceGetRemappedRows,                                                                \
    (gp_nvml_device, unsigned int *, unsigned int *, unsigned int *, unsigned int *))         \
  X(nvmlDeviceGetPcieReplayCounter, (gp_nvml_device, unsigned int *))                         \
  X(nvmlDeviceGetFieldValues, (gp_nvml_device, int, gp_nvml_field_value *))                   \
  X(nvmlDeviceGetNvLinkState, (gp_nvml_device, unsigned int, int *))                          \
  X(nvmlDeviceGetNvLinkRemotePciInfo_v2, (gp_nvml_device, unsigned int, gp_nvml_pci_info *))  \
  X(nvmlDeviceGetMigMode, (gp_nvml_device, unsigned int *, unsigned int *))                   \
  X(nvmlDeviceGetMaxMigDeviceCount, (gp_nvml_device, unsigned int *))                         \
  X(nvmlDeviceGetMigDeviceHandleByIndex, (gp_nvml_device, unsigned int, gp_nvml_device *))    \
  X(nvmlDeviceGetGpuInstanceId, (gp_nvml_device, unsigned int *))                             \
  X(nvmlDeviceGetGpuInstanceById, (gp_nvml_device, unsigned int, gp_nvml_gpu_instance *))     \
  X(nvmlGpuInstanceGetInfo, (gp_nvml_gpu_instance, gp_nvml_gpu_instance_info *))              \
  X(nvmlDeviceGetComputeRunningProcesses_v3,                                                  \
    (gp_nvml_device, unsigned int *, gp_nvml_process_info *))                                 \
  X(nvmlDeviceGetMPSComputeRunningProcesses_v3,                                               \
    (gp_nvml_device, unsigned int *, gp_nvml_process_info *))                                 \
  X(nvmlDeviceGetProcessUtilization,                                                          \
    (gp_nvml_device, gp_nvml_process_util *, unsigned int *, unsigned long long))             \
  X(nvmlDeviceGetGpuInstanceProfileInfo,                                                      \
    (gp_nvml_device, unsigned int, gp_nvml_gpu_instance_profile_info *))                      \
  X(nvmlDeviceGetGpuInstances, (gp_nvml_device, unsigned int, gp_nvml_gpu_instance *, unsigned int *)) \
  X(nvmlDeviceCreateGpuInstanceWithPlacement,                                                 \
    (gp_nvml_device, unsigned int, const gp_nvml_gpu_instance_placement *, gp_nvml_gpu_instance *)) \
  X(nvmlGpuInstanceDestroy, (gp_nvml_gpu_instance))                                           \
  X(nvmlGpuInstanceGetComputeInstanceProfileInfo,                                             \
    (gp_nvml_gpu_instance, unsigned int, unsigned int, gp_nvml_compute_instance_profile_info *)) \
  X(nvmlGpuInstanceGetComputeInstances,                                                       \
    (gp_nvml_gpu_instance, unsigned int, gp_nvml_compute_instance *, unsigned int *))         \
  X(nvmlGpuInstanceCreateComputeInstance,                                                     \
    (gp_nvml_gpu_instance, unsigned int, gp_nvml_compute_instance *))                         \
  X(nvmlComputeInstanceDestroy, (gp_nvml_compute_instance))                                   \
  X(nvmlEventSetCreate, (gp_nvml_event_set *))                                                \
  X(nvmlDeviceRegisterEvents, (gp_nvml_device, unsigned long long, gp_nvml_event_set))        \
  X(nvmlEventSetWait_v2, (gp_nvml_event_set, gp_nvml_event_data *, unsigned int))             \
  X(nvmlEventSetFree, (gp_nvml_event_set))

#endif
