/* SPDX-License-Identifier: Apache-2.0 */
/* The agent's config file (agent.yaml) as gp_agent_config_load reads it: GPU sharing modes,
 * labels, CPU and memory overrides, the health policy. The loader takes a path, so each
 * input is written to one file in the temporary directory first. */
#include "agent/config.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *path = fuzz_write_file("agent.yaml", data, size);
  gp_agent_config cfg;
  gp_agent_config_init(&cfg);
  gp_err err = {0};
  if (gp_agent_config_load(path, &cfg, &err) == 0) {
    /* What the agent reads next: every GPU's effective mode. */
    for (int i = 0; i < GP_GPU_MAX_DEVICES; i++) {
      const gp_gpu_mode *m = gp_agent_config_gpu_mode(&cfg, i);
      fuzz_check(m != NULL && gp_agent_mode_name(m->mode) != NULL);
      fuzz_check(m->replicas >= 1);
    }
  } else {
    fuzz_check(err.message[0] != '\0');
  }
  return 0;
}
