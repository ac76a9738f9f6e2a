/* SPDX-License-Identifier: Apache-2.0 */
/* An agent killed between taking a start order (its id written to orders.log) and starting
 * the job: when the order comes again after the restart, the job is reported lost, not left
 * for the server to count as running forever, and it is not started a second time. */
#include <stdio.h>

#include "agent_harness.h"

static void a_start_taken_before_a_crash_is_reported_lost(void) {
  fake_server *s = fs_start();
  agent_proc ap;
  agent_new(&ap, s, "1xH100-80GB", "--personal", NULL, NULL, NULL);
  json_decref(fs_wait_register(s, 1, 10000));
  agent_kill9(&ap);
  /* What the agent left on disk had it died right after taking order o1. */
  char path[400];
  snprintf(path, sizeof path, "%s/orders.log", ap.data);
  FILE *f = fopen(path, "a");
  REQUIRE(f);
  fputs("o1\n", f);
  fclose(f);
  CHECK_EQ_STR("o1", fs_order(s, start_order("5", "exec sleep 60", -1)));
  agent_spawn(&ap, s, "1xH100-80GB", "--personal", NULL);
  json_t *ev = fs_wait_event(s, "exited", "5", 10000);
  REQUIRE(ev);
  CHECK_EQ_STR("lost", json_string_value(json_object_get(ev, "reason")));
  json_decref(ev);
  CHECK_EQ_INT(0, fs_count_events(s, "started", "5"));
  agent_stop(&ap);
  fs_stop(s);
  rm_rf(ap.data);
}

GP_TESTS(a_start_taken_before_a_crash_is_reported_lost)
