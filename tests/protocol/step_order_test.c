/* SPDX-License-Identifier: Apache-2.0 */
/* The step and step_stop orders and the step_exited event (protocol/step_order.c,
 * event.c): what the server encodes the agent decodes field for field, and a bad field is
 * refused by its name, never cut or guessed. */
#include "test.h"

#include <jansson.h>

#include "protocol/event.h"
#include "protocol/order.h"

static char *hosts[] = {"n2", "n3"};
static char *addrs[] = {"127.0.0.2", "127.0.0.3"};
static char *argv_[] = {"python3", "rdv.py", NULL};
static char *keys[] = {"MINE"};
static char *vals[] = {"1"};

static json_t *step_doc(void) {
  gp_proto_order o = {.kind = GP_PROTO_STEP};
  snprintf(o.id, sizeof o.id, "o9");
  gp_proto_step *s = &o.u.step;
  snprintf(s->job, sizeof s->job, "12");
  s->step = 3;
  s->task = 1;
  s->tasks = 2;
  s->alloc_task = 2;
  s->n_hosts = s->n_addrs = 2;
  s->hosts = hosts;
  s->addrs = addrs;
  s->master_port = 23456;
  s->n_argv = 2;
  s->argv = argv_;
  s->n_env = 1;
  s->env_keys = keys;
  s->env_values = vals;
  s->own_gpus = true;
  s->n_gpus = 1;
  s->gpus[0] = 5;
  return gp_proto_order_encode(&o);
}

static void a_step_round_trips(void) {
  json_t *doc = step_doc();
  gp_proto_order o;
  gp_err err = {0};
  REQUIRE(gp_proto_order_decode(doc, &o, &err) == 0);
  CHECK_EQ_INT(GP_PROTO_STEP, o.kind);
  CHECK_EQ_STR("o9", o.id);
  CHECK_EQ_STR("12", o.u.step.job);
  CHECK_EQ_INT(3, o.u.step.step);
  CHECK_EQ_INT(1, o.u.step.task);
  CHECK_EQ_INT(2, o.u.step.alloc_task);
  CHECK_EQ_STR("127.0.0.3", o.u.step.addrs[1]);
  CHECK_EQ_INT(23456, o.u.step.master_port);
  CHECK_EQ_STR("rdv.py", o.u.step.argv[1]);
  CHECK_EQ_STR("MINE", o.u.step.env_keys[0]);
  CHECK(o.u.step.own_gpus);
  CHECK_EQ_INT(5, o.u.step.gpus[0]);
  gp_proto_order_done(&o);
  json_decref(doc);
}

static void bad_fields_are_named(void) {
  static const struct {
    const char *key, *json, *field;
  } cases[] = {
      {"task", "2", "step.task"},            /* not below tasks */
      {"hosts", "[\"n2\"]", "step.hosts"},   /* one per step task */
      {"addrs", "[\"a b\", \"c\"]", "step.addrs"},
      {"command", "[]", "step.command"},
      {"env", "{\"1X\": \"v\"}", "step.env"},
      {"master_port", "0", "step.master_port"},
      {"gpus", "[32]", "step.gpus"},
      {"job", "\"../x\"", "step.job"},
      {"step", "-1", "step.step"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    json_t *doc = step_doc();
    json_object_set_new(json_object_get(doc, "step"), cases[i].key, json_loads(cases[i].json, JSON_DECODE_ANY, NULL));
    gp_proto_order o;
    gp_err err = {0};
    CHECK(gp_proto_order_decode(doc, &o, &err) != 0);
    CHECK_EQ_STR(cases[i].field, err.field);
    json_decref(doc);
  }
}

static void a_step_stop_and_a_step_exit(void) {
  gp_proto_order o = {.kind = GP_PROTO_STEP_STOP};
  snprintf(o.u.step_stop.job, sizeof o.u.step_stop.job, "12");
  o.u.step_stop.step = 4;
  snprintf(o.u.step_stop.reason, sizeof o.u.step_stop.reason, "cancelled");
  json_t *doc = gp_proto_order_encode(&o);
  gp_proto_order back;
  gp_err err = {0};
  REQUIRE(gp_proto_order_decode(doc, &back, &err) == 0);
  CHECK_EQ_INT(4, back.u.step_stop.step);
  CHECK_EQ_STR("cancelled", back.u.step_stop.reason);
  json_decref(doc);
  gp_proto_event ev = {.kind = GP_PROTO_EV_STEP_EXITED, .step = 4, .task = 1, .has_exit_code = true,
                       .exit_code = 7, .out_bytes = 10};
  snprintf(ev.job, sizeof ev.job, "12");
  snprintf(ev.reason, sizeof ev.reason, "exited");
  doc = gp_proto_event_encode(&ev);
  gp_proto_event got;
  REQUIRE(gp_proto_event_decode(doc, &got, &err) == 0);
  CHECK_EQ_INT(GP_PROTO_EV_STEP_EXITED, got.kind);
  CHECK_EQ_INT(4, got.step);
  CHECK_EQ_INT(1, got.task);
  CHECK_EQ_INT(7, got.exit_code);
  CHECK_EQ_INT(10, (int)got.out_bytes);
  CHECK_EQ_STR("exited", got.reason);
  json_decref(doc);
}

GP_TESTS(a_step_round_trips, bad_fields_are_named, a_step_stop_and_a_step_exit)
