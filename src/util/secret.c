/* SPDX-License-Identifier: Apache-2.0 */
/* Constant-time secret comparison (see secret.h). */
#include "util/secret.h"

#include <string.h>

bool gp_secret_equal(const char *given, const char *want) {
  size_t gl = strlen(given), wl = strlen(want);
  unsigned diff = (unsigned)(gl != wl);
  for (size_t k = 0; k < wl; k++) diff |= (unsigned)(want[k] ^ (k < gl ? given[k] : 0));
  return diff == 0;
}
