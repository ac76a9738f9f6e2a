/* SPDX-License-Identifier: Apache-2.0 */
/* Shared by the replay tests: writes `text` to a file under /tmp named for this process
 * and `suffix`, and returns its path (the caller unlinks and frees it). */
#ifndef GP_TESTS_SIM_REPLAY_UTIL_H
#define GP_TESTS_SIM_REPLAY_UTIL_H

#include <unistd.h>

#include "test.h"

static char *write_tmp(const char *suffix, const char *text) {
  char *path = malloc(256);
  snprintf(path, 256, "/tmp/gp_replay_%d_%s", (int)getpid(), suffix);
  FILE *f = fopen(path, "w");
  REQUIRE(f);
  fputs(text, f);
  fclose(f);
  return path;
}

#endif
