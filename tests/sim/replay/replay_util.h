/* SPDX-License-Identifier: Apache-2.0 */
/* Shared by the replay tests: a temp file writer, a trace from text, one replay of it, and a
 * command runner. */
#ifndef GP_TESTS_SIM_REPLAY_UTIL_H
#define GP_TESTS_SIM_REPLAY_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <string.h>
#include <unistd.h>

#include "sim/replay/replay.h"
#include "sim/trace/trace.h"
#include "test.h"

/* Writes `text` to a file under /tmp named for this process and `suffix`, and returns its
 * path (the caller unlinks and frees it). */
static inline char *write_tmp(const char *suffix, const char *text) {
  char *path = malloc(256);
  snprintf(path, 256, "/tmp/gp_replay_%d_%s", (int)getpid(), suffix);
  FILE *f = fopen(path, "w");
  REQUIRE(f);
  fputs(text, f);
  fclose(f);
  return path;
}

/* A trace read from `text` as a file called `name` (its extension picks the format). */
static inline gp_trace *trace_named(const char *name, const char *text) {
  gp_trace *t = NULL;
  gp_err e = {0};
  if (gp_trace_read_string(name, text, strlen(text), NULL, &t, &e))
    fprintf(stderr, "trace: %s\n", e.message);
  REQUIRE(t);
  return t;
}

/* A trace read from CSV text. */
static inline gp_trace *trace_of(const char *csv) { return trace_named("t.csv", csv); }

/* Replays CSV text on a fleet spec (`shared`: its GPUs shared) with the config `c`, with one
 * queue per trace queue. */
static inline gp_replay_result *replay_csv(const char *csv, const char *fleet, bool shared,
                                           const gp_replay_config *c) {
  gp_trace *t = trace_of(csv);
  gp_err e = {0};
  gp_fleet *f = NULL;
  REQUIRE(gp_fleet_load(fleet, shared, &f, &e) == 0);
  gp_replay_queues *q = gp_replay_queues_from_trace(t);
  gp_replay_result *r = NULL;
  if (gp_replay_run(c, t, f, q, &r, &e)) fprintf(stderr, "replay: %s\n", e.message);
  REQUIRE(r);
  gp_trace_free(t);
  gp_fleet_free(f);
  gp_replay_queues_free(q);
  return r;
}

/* Runs a shell command line; returns its exit status and its stdout (malloc'd). */
static inline int run_cmd(const char *cmd, char **ret_out) {
  FILE *p = popen(cmd, "r");
  REQUIRE(p);
  size_t cap = 1 << 16, len = 0, n;
  char *out = malloc(cap);
  while ((n = fread(out + len, 1, cap - len - 1, p)) > 0) {
    len += n;
    if (len + 1 >= cap) out = realloc(out, cap *= 2);
  }
  out[len] = '\0';
  int st = pclose(p);
  *ret_out = out;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

#endif
