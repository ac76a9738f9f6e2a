/* SPDX-License-Identifier: Apache-2.0 */
/* A metadata service's answer as the spot watcher reads it (gp__agent_spot_parse): the
 * first byte picks the cloud and the status, the rest is the body. Whatever the body, the
 * answer is a notice, none or an error; an error says why, and a notice has a deadline
 * within the bounds the parser promises. */
#include "agent/agent_int.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  static const gp_agent_spot_provider providers[] = {GP_SPOT_AWS, GP_SPOT_GCP, GP_SPOT_AZURE};
  static const long statuses[] = {200, 404, 500, 401};
  gp_agent_spot_provider p = providers[data[0] % 3];
  long status = statuses[(data[0] / 3) % 4];
  const int64_t now = 1796119200;
  gp__agent_spot_notice n;
  char why[300];
  int rc = gp__agent_spot_parse(p, status, (const char *)data + 1, size - 1, now, &n, why,
                                sizeof why);
  fuzz_check(rc == GP__AGENT_SPOT_NOTICE || rc == GP__AGENT_SPOT_NONE || rc == GP__AGENT_SPOT_ERROR);
  if (rc == GP__AGENT_SPOT_ERROR) fuzz_check(why[0] != '\0');
  if (rc == GP__AGENT_SPOT_NOTICE) {
    fuzz_check(status == 200);
    fuzz_check(n.deadline >= now - 3600 && n.deadline <= now + 7 * 86400);
    fuzz_check(memchr(n.detail, '\0', sizeof n.detail) != NULL);
  }
  return 0;
}
