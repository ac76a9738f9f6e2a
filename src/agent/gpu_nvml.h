/* SPDX-License-Identifier: Apache-2.0 */
/* The NVML GPU backend: real NVIDIA GPUs through libnvidia-ml.so.1, loaded at run time with
 * dlopen so gpool builds and runs where no driver is installed. Each NVML entry point is
 * resolved on its own; one that an older driver lacks only turns its figures into "unknown"
 * (-1). A missing library, an unloaded driver or zero GPUs give one clear error: "no NVIDIA
 * GPU found: <why>". The simulated backend stands in only when the caller asks for it.
 * MIG layouts of an idle GPU already in MIG mode are changed through NVML's MIG management
 * calls (needs root; switching MIG mode on needs a GPU reset and stays with the operator). */
#ifndef GP_AGENT_GPU_NVML_H
#define GP_AGENT_GPU_NVML_H

#include <stdbool.h>
#include <stddef.h>

#include "agent/gpu.h"
#include "util/error.h"

/* Opens NVML from `lib_path`; NULL means $GPOOL_NVML_LIB when set, else "libnvidia-ml.so.1"
 * from the loader's search path. Errors: GP_EUNSUPP with "no NVIDIA GPU found: ..." (no
 * library, not an NVML library, driver not loaded, no device), GP_EIO for other NVML
 * failures at start. */
int gp_gpu_nvml_open(const char *lib_path, gp_gpu_backend **ret, gp_err *err);

/* Names of the optional NVML entry points the loaded library lacks, comma-separated ("" when
 * none), so `gpool nodes -v` and the logs can say which figures an old driver cannot give. */
void gp_gpu_nvml_missing(const gp_gpu_backend *b, char *buf, size_t size);

/* The agent's choice of backend: `sim_spec` non-NULL and `force_sim`: the simulated backend;
 * otherwise NVML, and when NVML finds no GPU, the simulated backend from `sim_spec` if one is
 * given (the caller asked for the fallback), else the NVML error. node_name seeds sim UUIDs. */
int gp_gpu_open_backend(const char *sim_spec, bool force_sim, const char *node_name,
                        gp_gpu_backend **ret, gp_err *err);

#endif
