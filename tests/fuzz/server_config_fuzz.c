/* SPDX-License-Identifier: Apache-2.0 */
/* The server's config file (server.yaml) as gp_server_config_parse reads it: YAML or JSON,
 * tokens, queues, priority classes, policy, pools, default queues, timeouts. Every input is
 * read or refused with a message; a refusal names where (a line or a key). */
#include "fuzz.h"
#include "server/state/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  gp_server_config *cfg = NULL;
  gp_err err = {0};
  if (gp_server_config_parse("fuzz.yaml", (const char *)data, size, &cfg, &err) == 0) {
    fuzz_check(cfg != NULL);
    gp_server_config_free(cfg);
  } else {
    fuzz_check(cfg == NULL);
    fuzz_check(err.message[0] != '\0');
  }
  return 0;
}
