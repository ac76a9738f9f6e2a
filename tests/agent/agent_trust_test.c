/* SPDX-License-Identifier: Apache-2.0 */
/* The real `gpool agent` against a stand-in server, on what ties it to its node and store
 * and what it does with an answer it cannot read: it makes its node's credential once,
 * keeps it private and presents it on every call; it tells the server when an answer was
 * too large to read, and goes on; and when the server serves another store, it kills the
 * old store's job, runs the new store's orders although their ids repeat the old ones, and
 * never shows the old job's output under the new job's id. */
#include <sys/stat.h>

#include "agent_harness.h"

static bool all_hex(const char *s, size_t len) { return s && strlen(s) == len && strspn(s, "0123456789abcdef") == len; }

static void the_node_credential_is_made_once_and_kept_private(void) {
  fake_server *s = fs_start();
  agent_proc ap;
  agent_new(&ap, s, "1xH100-80GB", "--personal", NULL, NULL, NULL);
  json_t *reg = fs_wait_register(s, 1, 10000);
  REQUIRE(reg);
  const char *cred = json_string_value(json_object_get(reg, "credential"));
  CHECK(all_hex(cred, 32));
  char path[400];
  snprintf(path, sizeof path, "%s/credential.json", ap.data);
  struct stat st;
  REQUIRE(stat(path, &st) == 0);
  CHECK_EQ_INT(0600, st.st_mode & 0777);
  /* Every heartbeat carries it. */
  for (int i = 0; i < 300; i++) {
    pthread_mutex_lock(&s->lock);
    bool seen = s->last_heartbeat != NULL;
    pthread_mutex_unlock(&s->lock);
    if (seen) break;
    usleep(10000);
  }
  pthread_mutex_lock(&s->lock);
  CHECK_EQ_STR(cred, json_string_value(json_object_get(s->last_heartbeat, "credential")));
  pthread_mutex_unlock(&s->lock);
  /* A restart presents the same one. */
  agent_stop(&ap);
  agent_spawn(&ap, s, "1xH100-80GB", "--personal", NULL);
  json_t *again = fs_wait_register(s, 2, 10000);
  REQUIRE(again);
  CHECK_EQ_STR(cred, json_string_value(json_object_get(again, "credential")));
  json_decref(again);
  json_decref(reg);
  agent_stop(&ap);
  fs_stop(s);
  rm_rf(ap.data);
}

static void an_answer_too_large_to_read_is_reported(void) {
  fake_server *s = fs_start();
  s->pad = (size_t)17 << 20; /* every answer, until the agent reports one */
  agent_proc ap;
  agent_new(&ap, s, "1xH100-80GB", "--personal", NULL, NULL, NULL);
  json_decref(fs_wait_register(s, 1, 10000));
  char said[300] = "";
  /* A loaded machine may take longer than the poll's timeout to move 17 MiB: such an answer
   * is a timeout, not an unreadable one, and the next one is tried. */
  for (int i = 0; i < 3000 && !said[0]; i++) {
    pthread_mutex_lock(&s->lock);
    snprintf(said, sizeof said, "%s", s->answer_error);
    if (said[0]) s->pad = 0;
    pthread_mutex_unlock(&s->lock);
    if (!said[0]) usleep(10000);
  }
  CHECK_CONTAINS(said, "larger than");
  /* The next answers are read again. */
  fs_order(s, start_order("9", "exit 0", -1));
  json_t *ended = fs_wait_event(s, "exited", "9", 20000);
  CHECK(ended != NULL);
  json_decref(ended);
  agent_stop(&ap);
  fs_stop(s);
  rm_rf(ap.data);
}

static void another_store_runs_its_orders_and_never_shows_old_logs(void) {
  fake_server *s = fs_start();
  snprintf(s->store, sizeof s->store, "%s", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
  agent_proc ap;
  agent_new(&ap, s, "1xH100-80GB", "--personal", NULL, NULL, NULL);
  json_decref(fs_wait_register(s, 1, 10000));
  fs_order(s, start_order("7", "echo old-store-output; exec sleep 60", -1));
  json_t *started = fs_wait_event(s, "started", "7", 10000);
  REQUIRE(started);
  pid_t old_pid = (pid_t)json_integer_value(json_object_get(started, "pid"));
  json_decref(started);
  CHECK(old_pid > 0 && kill(old_pid, 0) == 0);
  /* The server comes back on another store: its numbering starts again at o1 and job 7. */
  pthread_mutex_lock(&s->lock);
  snprintf(s->store, sizeof s->store, "%s", "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb");
  json_array_clear(s->orders);
  json_array_clear(s->events);
  pthread_mutex_unlock(&s->lock);
  fs_order(s, start_order("7", "echo new-store-output", -1));
  json_t *reg = fs_wait_register(s, 2, 10000);
  REQUIRE(reg);
  CHECK_EQ_STR("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", json_string_value(json_object_get(reg, "store")));
  json_decref(reg);
  json_t *ended = fs_wait_event(s, "exited", "7", 10000);
  REQUIRE(ended);
  CHECK_EQ_INT(0, json_integer_value(json_object_get(ended, "exit_code")));
  json_decref(ended);
  bool gone = false;
  for (int i = 0; i < 300 && !gone; i++) {
    gone = kill(old_pid, 0) != 0;
    if (!gone) usleep(10000);
  }
  CHECK(gone);
  char *out = job_file(&ap, "7", "stdout");
  CHECK_EQ_STR("new-store-output\n", out ? out : "(none)");
  free(out);
  char path[400];
  snprintf(path, sizeof path, "%s/retired/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/7/stdout", ap.data);
  out = read_text(path);
  CHECK_EQ_STR("old-store-output\n", out ? out : "(none)");
  free(out);
  agent_stop(&ap);
  fs_stop(s);
  rm_rf(ap.data);
}

GP_TESTS(the_node_credential_is_made_once_and_kept_private, an_answer_too_large_to_read_is_reported,
         another_store_runs_its_orders_and_never_shows_old_logs)
