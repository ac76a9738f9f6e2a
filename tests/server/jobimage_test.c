/* SPDX-License-Identifier: Apache-2.0 */
/* A container task's pull as the server takes it from an agent (src/server/state/jobimage.c):
 * the `pulling_image` timeline entry gets the progress an agent reports, "pulling image REF
 * (3.1 of 9.8 GB)" with done_bytes and total_bytes; a figure that goes back, passes the
 * total, changes the total or is out of bounds is not taken, nor one after the pull ended. */
#include "test.h"
#include "srv_util.h"

static json_t *pulling_entry(tsrv *t, const char *id) {
  char path[64];
  snprintf(path, sizeof path, "/v1/jobs/%s", id);
  json_t *show = NULL;
  if (tsrv_call(t, "GET", path, ALICE, NULL, &show) != 200) return NULL;
  json_t *tl = json_object_get(json_object_get(show, "job"), "timeline"), *found = NULL;
  for (size_t i = 0; i < json_array_size(tl); i++) {
    json_t *e = json_array_get(tl, i);
    if (!strcmp(json_string_value(json_object_get(e, "event")), "pulling_image")) found = e;
  }
  if (found) json_incref(found);
  json_decref(show);
  return found;
}

static void report(tsrv *t, long long gen, const char *id, const char *fields) {
  char ev[600];
  snprintf(ev, sizeof ev,
           "[{\"kind\": \"image\", \"job\": \"%s\", \"task\": 0, \"reason\": \"progress\", "
           "\"message\": \"x\", %s}]", id, fields);
  json_t *r = tsrv_heartbeat(t, "n1", gen, 0, ev);
  CHECK(r != NULL);
  json_decref(r);
}

static void expect(tsrv *t, const char *id, long long done, long long total, const char *msg) {
  json_t *e = pulling_entry(t, id);
  REQUIRE(e);
  CHECK_EQ_INT(done, json_integer_value(json_object_get(e, "done_bytes")));
  CHECK_EQ_INT(total, json_integer_value(json_object_get(e, "total_bytes")));
  CHECK_EQ_STR(msg, json_string_value(json_object_get(e, "message")));
  json_decref(e);
}

static void a_pull_shows_its_progress_within_bounds(void) {
  tsrv t = {0};
  tsrv_start(&t);
  CHECK_EQ_INT(201, tsrv_register(&t, "n1", 8, NULL));
  char *id = tsrv_submit(&t, ALICE, "{\"queue\": \"org/a\", \"command\": [\"train\"], \"gpus\": 1, "
                                    "\"image\": \"reg:5000/team/pt:1\"}");
  REQUIRE(id);
  json_t *hb = tsrv_heartbeat(&t, "n1", 0, 3000, NULL);
  REQUIRE(hb);
  long long gen = (long long)json_integer_value(json_object_get(hb, "gen"));
  json_decref(hb);
  CHECK(tsrv_wait_state(&t, id, "running"));
  char ev[600];
  snprintf(ev, sizeof ev,
           "[{\"kind\": \"started\", \"job\": \"%s\", \"task\": 0, \"pid\": 42}, "
           "{\"kind\": \"image\", \"job\": \"%s\", \"task\": 0, \"reason\": \"pulling\", "
           "\"message\": \"pulling image reg:5000/team/pt:1\"}]", id, id);
  json_t *r = tsrv_heartbeat(&t, "n1", gen, 0, ev);
  REQUIRE(r);
  json_decref(r);
  /* No total yet: bytes so far. */
  report(&t, gen, id, "\"done_bytes\": 5000000, \"total_bytes\": 0");
  expect(&t, id, 5000000, 0, "pulling image reg:5000/team/pt:1 (5.0 MB so far)");
  report(&t, gen, id, "\"done_bytes\": 3100000000, \"total_bytes\": 9800000000");
  expect(&t, id, 3100000000, 9800000000, "pulling image reg:5000/team/pt:1 (3.1 of 9.8 GB)");
  static const char *const refused[] = {
      "\"done_bytes\": 1000, \"total_bytes\": 9800000000",           /* back */
      "\"done_bytes\": 9900000000, \"total_bytes\": 9800000000",     /* past the total */
      "\"done_bytes\": 4000000000, \"total_bytes\": 12000000000",    /* another total */
      "\"done_bytes\": 4000000000, \"total_bytes\": 0",              /* the total lost */
      "\"done_bytes\": 2251799813685248, \"total_bytes\": 9800000000", /* past 1 PiB */
      "\"done_bytes\": -4, \"total_bytes\": 9800000000",
      "\"done_bytes\": \"4000000000\", \"total_bytes\": 9800000000",
      "\"total_bytes\": 9800000000"};
  for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
    report(&t, gen, id, refused[i]);
    expect(&t, id, 3100000000, 9800000000, "pulling image reg:5000/team/pt:1 (3.1 of 9.8 GB)");
  }
  report(&t, gen, id, "\"done_bytes\": 9800000000, \"total_bytes\": 9800000000");
  expect(&t, id, 9800000000, 9800000000, "pulling image reg:5000/team/pt:1 (9.8 of 9.8 GB)");
  /* Ended: a late report changes nothing. */
  snprintf(ev, sizeof ev,
           "[{\"kind\": \"image\", \"job\": \"%s\", \"task\": 0, \"reason\": \"pulled\", "
           "\"message\": \"pulled image reg:5000/team/pt:1 in 3.0 s\"}]", id);
  r = tsrv_heartbeat(&t, "n1", gen, 0, ev);
  REQUIRE(r);
  json_decref(r);
  report(&t, gen, id, "\"done_bytes\": 9800000000, \"total_bytes\": 9800000000");
  expect(&t, id, 9800000000, 9800000000, "pulling image reg:5000/team/pt:1 (9.8 of 9.8 GB)");
  free(id);
  tsrv_stop(&t);
}

GP_TESTS(a_pull_shows_its_progress_within_bounds)
