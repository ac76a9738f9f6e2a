/* SPDX-License-Identifier: Apache-2.0 */
/* The agent's registration settles only what it reported: a job that ends while the
 * register call is in flight (the server frozen, a slow store) was reported running, so
 * its end must still reach the server afterwards; and every heartbeat lists what the node
 * holds (running jobs, and ended ones whose end is on its way) for the server to check
 * against what it believes runs there. The real agent against a stand-in server. */
#include "agent_harness.h"

static bool listed_as(json_t *reg, const char *id, const char *state) {
  size_t i;
  json_t *e;
  json_array_foreach(json_object_get(reg, "jobs"), i, e) {
    if (strcmp(json_string_value(json_object_get(e, "id")), id) == 0)
      return strcmp(json_string_value(json_object_get(e, "state")), state) == 0;
  }
  return false;
}

static void an_exit_during_the_register_call_still_reaches_the_server(void) {
  fake_server *s = fs_start();
  agent_proc ap;
  agent_new(&ap, s, "2xH100-80GB", "--personal");
  json_t *reg = fs_wait_register(s, 1, 10000);
  REQUIRE(reg);
  json_decref(reg);
  fs_order(s, start_order("7", "sleep 3", 0));
  fs_order(s, start_order("8", "exit 3", 1));
  json_t *ev = fs_wait_event(s, "started", "7", 5000);
  REQUIRE(ev);
  json_decref(ev);
  ev = fs_wait_event(s, "exited", "8", 5000);
  REQUIRE(ev);
  json_decref(ev);
  agent_kill9(&ap);
  REQUIRE(fs_count_events(s, "exited", "7") == 0); /* still running */
  /* The server freezes: the restarted agent's register call waits 5 s for its answer,
   * and job 7 ends meanwhile. */
  s->register_delay_ms = 5000;
  agent_spawn(&ap, s, "2xH100-80GB", "--personal", NULL);
  reg = fs_wait_register(s, 2, 10000);
  REQUIRE(reg);
  CHECK(listed_as(reg, "7", "running"));
  json_decref(reg);
  s->register_delay_ms = 0;
  /* Its end, with its exit code (not a report that it was lost). */
  bool ended = false;
  for (int64_t until = fs_now_ms() + 10000; fs_now_ms() < until && !ended;) {
    pthread_mutex_lock(&s->lock);
    size_t i;
    json_t *e;
    json_array_foreach(s->events, i, e) {
      ended = ended || (strcmp(json_string_value(json_object_get(e, "kind")), "exited") == 0 &&
                        strcmp(json_string_value(json_object_get(e, "job")), "7") == 0 &&
                        json_is_integer(json_object_get(e, "exit_code")) &&
                        json_integer_value(json_object_get(e, "exit_code")) == 0);
    }
    pthread_mutex_unlock(&s->lock);
    if (!ended) usleep(20000);
  }
  CHECK(ended);
  /* Settled once the server has it: no longer listed in heartbeats. */
  int64_t until = fs_now_ms() + 5000;
  bool clean = false;
  while (fs_now_ms() < until && !clean) {
    pthread_mutex_lock(&s->lock);
    json_t *hb = json_incref(s->last_heartbeat);
    pthread_mutex_unlock(&s->lock);
    clean = hb && json_array_size(json_object_get(hb, "jobs")) == 0 &&
            json_array_size(json_object_get(hb, "ended")) == 0;
    json_decref(hb);
    if (!clean) usleep(50000);
  }
  CHECK(clean);
  agent_stop(&ap);
  rm_rf(ap.data);
  fs_stop(s);
}

static bool has_id(json_t *list, const char *id) {
  size_t i;
  json_t *e;
  json_array_foreach(list, i, e) {
    const char *v = json_is_string(e) ? json_string_value(e) : json_string_value(json_object_get(e, "id"));
    if (v && strcmp(v, id) == 0) return true;
  }
  return false;
}

/* The heartbeat that carried the "exited" event of `id` (a new reference), or NULL. */
static json_t *carrier(fake_server *s, const char *id) {
  json_t *found = NULL;
  pthread_mutex_lock(&s->lock);
  size_t i, k;
  json_t *hb, *ev;
  json_array_foreach(s->heartbeat_bodies, i, hb) {
    json_array_foreach(json_object_get(hb, "events"), k, ev) {
      if (!found && strcmp(json_string_value(json_object_get(ev, "kind")), "exited") == 0 &&
          strcmp(json_string_value(json_object_get(ev, "job")), id) == 0)
        found = json_incref(hb);
    }
  }
  pthread_mutex_unlock(&s->lock);
  return found;
}

static bool last_lists(fake_server *s, const char *key, const char *id) {
  pthread_mutex_lock(&s->lock);
  bool has = s->last_heartbeat && has_id(json_object_get(s->last_heartbeat, key), id);
  pthread_mutex_unlock(&s->lock);
  return has;
}

static void heartbeats_list_running_jobs_and_ends_on_their_way(void) {
  fake_server *s = fs_start();
  agent_proc ap;
  agent_new(&ap, s, "2xH100-80GB", "--personal");
  json_t *reg = fs_wait_register(s, 1, 10000);
  REQUIRE(reg);
  json_decref(reg);
  fs_order(s, start_order("21", "sleep 30", 0));
  json_t *ev = fs_wait_event(s, "started", "21", 5000);
  REQUIRE(ev);
  json_decref(ev);
  fs_order(s, start_order("22", "exit 0", 1));
  ev = fs_wait_event(s, "exited", "22", 5000);
  REQUIRE(ev);
  json_decref(ev);
  /* The call that carries an end lists it as ended; the running job is listed. */
  json_t *hb = carrier(s, "22");
  REQUIRE(hb);
  CHECK(has_id(json_object_get(hb, "ended"), "22"));
  CHECK(!has_id(json_object_get(hb, "jobs"), "22"));
  CHECK(has_id(json_object_get(hb, "jobs"), "21"));
  json_decref(hb);
  /* Once the server has it, it is no longer listed. */
  int64_t until = fs_now_ms() + 5000;
  while (fs_now_ms() < until && (last_lists(s, "ended", "22") || !last_lists(s, "jobs", "21")))
    usleep(20000);
  CHECK(!last_lists(s, "ended", "22"));
  CHECK(last_lists(s, "jobs", "21"));
  /* An end the server refuses is dropped, and the job with it: it is listed nowhere, so
   * the server ends it rather than wait for it for ever. */
  s->reject_kind = "exited";
  fs_order(s, start_order("23", "exit 0", 1));
  until = fs_now_ms() + 8000;
  while (fs_now_ms() < until && __atomic_load_n(&s->rejected, __ATOMIC_SEQ_CST) == 0) usleep(20000);
  CHECK(s->rejected > 0);
  usleep(300000);
  int rejected = s->rejected;
  /* The next heartbeats lists neither, and no end of 23 is sent again. */
  int beats = s->heartbeats;
  until = fs_now_ms() + 5000;
  while (fs_now_ms() < until && __atomic_load_n(&s->heartbeats, __ATOMIC_SEQ_CST) < beats + 2) usleep(20000);
  CHECK(!last_lists(s, "ended", "23"));
  CHECK(!last_lists(s, "jobs", "23"));
  CHECK_EQ_INT(rejected, s->rejected);
  agent_stop(&ap);
  rm_rf(ap.data);
  fs_stop(s);
}

GP_TESTS(an_exit_during_the_register_call_still_reaches_the_server,
         heartbeats_list_running_jobs_and_ends_on_their_way)
