/* SPDX-License-Identifier: Apache-2.0 */
/* Events (protocol/event.h): each kind survives encode then decode with the bytes the
 * server has always read; what the server must have is refused when missing, and any other
 * field outside its bounds reads as absent. */
#include "protocol/event.h"

#include "test.h"

static json_t *parse(const char *text) {
  json_t *o = json_loads(text, 0, NULL);
  REQUIRE(o);
  return o;
}

static void round_trip(const gp_proto_event *ev, const char *want, gp_proto_event *ret) {
  json_t *doc = gp_proto_event_encode(ev);
  REQUIRE(doc);
  char *text = json_dumps(doc, JSON_COMPACT);
  CHECK_EQ_STR(want, text);
  free(text);
  CHECK_EQ_INT(0, gp_proto_event_decode(doc, ret, NULL));
  CHECK_EQ_INT(ev->kind, ret->kind);
  json_decref(doc); /* ret->usage, borrowed, is not read after this */
}

static void job_events_round_trip(void) {
  gp_proto_event ev = {.kind = GP_PROTO_EV_STARTED, .at = 1700000000, .pid = 42,
                       .gpu_mem_limit_mib = 2048}, d;
  snprintf(ev.job, sizeof ev.job, "12");
  snprintf(ev.order, sizeof ev.order, "o5");
  snprintf(ev.enforcement, sizeof ev.enforcement, "watchdog");
  ev.task = 1;
  round_trip(&ev, "{\"kind\":\"started\",\"job\":\"12\",\"task\":1,\"at\":1700000000,\"pid\":42,\"order\":\"o5\","
                  "\"enforcement\":\"watchdog\",\"gpu_mem_limit_mib\":2048}", &d);
  CHECK_EQ_STR("12", d.job);
  CHECK_EQ_INT(1, d.task);
  CHECK_EQ_INT(42, d.pid);
  CHECK_EQ_STR("o5", d.order);
  CHECK_EQ_STR("watchdog", d.enforcement);
  CHECK_EQ_INT(2048, d.gpu_mem_limit_mib);

  gp_proto_event ex = {.kind = GP_PROTO_EV_EXITED, .at = 1700000001, .has_exit_code = true,
                       .exit_code = 3, .has_reason = true, .has_message = true};
  snprintf(ex.job, sizeof ex.job, "12");
  snprintf(ex.reason, sizeof ex.reason, "exited");
  snprintf(ex.order, sizeof ex.order, "o5");
  json_t *usage = parse("{\"energy_j\":10}");
  ex.usage = usage;
  round_trip(&ex, "{\"kind\":\"exited\",\"job\":\"12\",\"task\":0,\"at\":1700000001,\"exit_code\":3,\"signal\":null,"
                  "\"reason\":\"exited\",\"message\":\"\",\"order\":\"o5\",\"usage\":{\"energy_j\":10}}", &d);
  CHECK(d.has_exit_code);
  CHECK_EQ_INT(3, d.exit_code);
  CHECK_EQ_INT(0, d.signal);
  CHECK(d.has_reason && d.has_message);
  CHECK_EQ_STR("", d.message);
  ex.has_exit_code = false;
  ex.signal = 9;
  ex.order[0] = '\0';
  ex.usage = NULL;
  round_trip(&ex, "{\"kind\":\"exited\",\"job\":\"12\",\"task\":0,\"at\":1700000001,\"exit_code\":null,\"signal\":9,"
                  "\"reason\":\"exited\",\"message\":\"\"}", &d);
  CHECK(!d.has_exit_code);
  CHECK_EQ_INT(9, d.signal);
  CHECK(d.usage == NULL);
  json_decref(usage);

  gp_proto_event cp = {.kind = GP_PROTO_EV_CHECKPOINT, .at = 5, .task = 2};
  snprintf(cp.job, sizeof cp.job, "7");
  round_trip(&cp, "{\"kind\":\"checkpoint\",\"job\":\"7\",\"task\":2,\"at\":5}", &d);
  CHECK_EQ_STR("7", d.job);
  CHECK_EQ_INT(2, d.task);
  /* An event about no task in particular (task -1) carries none. */
  cp.task = -1;
  round_trip(&cp, "{\"kind\":\"checkpoint\",\"job\":\"7\",\"at\":5}", &d);
  CHECK_EQ_INT(-1, d.task);
}

/* Events from an agent that named no task read as task -1 (every task of the job on the
 * node, as the server has always read them); a task out of bounds reads the same. */
static void a_missing_or_bad_task_reads_as_none(void) {
  gp_proto_event d;
  const char *docs[] = {
      "{\"kind\":\"exited\",\"job\":\"3\",\"exit_code\":0}",
      "{\"kind\":\"exited\",\"job\":\"3\",\"task\":-1,\"exit_code\":0}",
      "{\"kind\":\"exited\",\"job\":\"3\",\"task\":1024,\"exit_code\":0}",
      "{\"kind\":\"exited\",\"job\":\"3\",\"task\":\"1\",\"exit_code\":0}",
      "{\"kind\":\"started\",\"job\":\"3\",\"task\":1.5}",
  };
  for (size_t i = 0; i < sizeof docs / sizeof docs[0]; i++) {
    json_t *o = parse(docs[i]);
    CHECK_EQ_INT(0, gp_proto_event_decode(o, &d, NULL));
    CHECK_EQ_INT(-1, d.task);
    CHECK_EQ_STR("3", d.job);
    json_decref(o);
  }
  json_t *o = parse("{\"kind\":\"exited\",\"job\":\"3\",\"task\":1023}");
  CHECK_EQ_INT(0, gp_proto_event_decode(o, &d, NULL));
  CHECK_EQ_INT(1023, d.task);
  json_decref(o);
}

static void gpu_events_round_trip(void) {
  gp_proto_event f = {.kind = GP_PROTO_EV_GPU_FAULT, .gpu = 3, .xid = 79, .n_jobs = 1}, d;
  snprintf(f.action, sizeof f.action, "fail_job,drain_gpu");
  snprintf(f.fault, sizeof f.fault, "fell off the bus");
  snprintf(f.jobs[0], sizeof f.jobs[0], "12");
  round_trip(&f, "{\"kind\":\"gpu_fault\",\"gpu\":3,\"xid\":79,\"action\":\"fail_job,drain_gpu\","
                 "\"reason\":\"fell off the bus\",\"jobs\":[\"12\"]}", &d);
  CHECK_EQ_INT(3, d.gpu);
  CHECK_EQ_INT(79, d.xid);
  CHECK_EQ_STR("fail_job,drain_gpu", d.action);
  CHECK_EQ_STR("fell off the bus", d.fault);
  CHECK_EQ_STR("", d.reason);
  CHECK_EQ_INT(1, d.n_jobs);

  gp_proto_event m = {.kind = GP_PROTO_EV_MIG_DONE, .gpu = 1, .ok = true, .has_mig = true, .n_mig = 1};
  snprintf(m.order, sizeof m.order, "o2");
  snprintf(m.message, sizeof m.message, "MIG layout applied");
  snprintf(m.mig[0].uuid, sizeof m.mig[0].uuid, "MIG-1");
  snprintf(m.mig[0].profile, sizeof m.mig[0].profile, "7g.80gb");
  m.mig[0].gpu_instance_id = 0;
  m.mig[0].mem_mib = 81920;
  round_trip(&m, "{\"kind\":\"mig_done\",\"gpu\":1,\"order\":\"o2\",\"ok\":true,\"message\":\"MIG layout "
                 "applied\",\"mig\":[{\"uuid\":\"MIG-1\",\"profile\":\"7g.80gb\",\"start_slot\":0,"
                 "\"gpu_instance_id\":0,\"mem_mib\":81920}]}", &d);
  CHECK(d.ok && d.has_mig);
  CHECK_EQ_INT(1, d.n_mig);
  CHECK_EQ_STR("7g.80gb", d.mig[0].profile);
  CHECK_EQ_INT(81920, d.mig[0].mem_mib);

  gp_proto_event in = {.kind = GP_PROTO_EV_INJECT_DONE};
  snprintf(in.order, sizeof in.order, "o3");
  snprintf(in.message, sizeof in.message, "no GPU 9");
  round_trip(&in, "{\"kind\":\"inject_done\",\"order\":\"o3\",\"ok\":false,\"message\":\"no GPU 9\"}", &d);
  CHECK(!d.ok);
}

static void what_the_server_needs_is_required(void) {
  static const struct {
    const char *text, *field, *message;
  } bad[] = {
      {"[]", "kind", "an event is an object with a kind"},
      {"{\"job\":\"1\"}", "kind", "an event is an object with a kind"},
      {"{\"kind\":\"exited\"}", "job", "a exited event needs a job id"},
      {"{\"kind\":\"started\",\"job\":5}", "job", "a started event needs a job id"},
      {"{\"kind\":\"gpu_fault\",\"gpu\":\"1\"}", "gpu", "a gpu_fault event needs a gpu index"},
      {"{\"kind\":\"mig_done\"}", "gpu", "a mig_done event needs a gpu index"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    json_t *doc = parse(bad[i].text);
    gp_proto_event d;
    gp_err e = {0};
    CHECK_EQ_INT(GP_EINVAL, gp_proto_event_decode(doc, &d, &e));
    CHECK_EQ_STR(bad[i].field, e.field);
    CHECK_EQ_STR(bad[i].message, e.message);
    json_decref(doc);
  }
  json_t *doc = parse("{\"kind\":\"rebooted\"}");
  gp_proto_event d;
  CHECK_EQ_INT(GP_ENOENT, gp_proto_event_decode(doc, &d, NULL)); /* a newer agent's: skipped */
  json_decref(doc);
}

static void other_fields_out_of_bounds_read_as_absent(void) {
  gp_proto_event d;
  json_t *doc = parse("{\"kind\":\"exited\",\"job\":\"1\",\"at\":-5,\"exit_code\":\"0\",\"signal\":999,"
                      "\"reason\":\"a reason longer than thirty-one bytes\",\"usage\":[1]}");
  CHECK_EQ_INT(0, gp_proto_event_decode(doc, &d, NULL));
  CHECK_EQ_INT(0, d.at);
  CHECK(!d.has_exit_code);
  CHECK_EQ_INT(0, d.signal);
  CHECK(!d.has_reason && !d.has_message);
  CHECK(d.usage == NULL);
  json_decref(doc);
  doc = parse("{\"kind\":\"gpu_fault\",\"gpu\":40}");
  CHECK_EQ_INT(0, gp_proto_event_decode(doc, &d, NULL));
  CHECK_EQ_INT(-1, d.gpu); /* no GPU of any node: the server ignores the event */
  json_decref(doc);
  doc = parse("{\"kind\":\"mig_done\",\"gpu\":0,\"ok\":true,\"mig\":[{\"uuid\":\"x\"},{\"profile\":"
              "\"1g.10gb\",\"start_slot\":2},1,2,3,4,5]}");
  CHECK_EQ_INT(0, gp_proto_event_decode(doc, &d, NULL));
  CHECK(d.has_mig);
  CHECK_EQ_INT(1, d.n_mig); /* an instance without a profile is skipped */
  CHECK_EQ_INT(2, d.mig[0].start_slot);
  json_decref(doc);
  doc = parse("{\"kind\":\"mig_done\",\"gpu\":0,\"ok\":true,\"mig\":[1,2,3,4,5,6,7,8]}");
  CHECK_EQ_INT(0, gp_proto_event_decode(doc, &d, NULL));
  CHECK(!d.has_mig);
  json_decref(doc);
}

static void interruption_round_trips(void) {
  gp_proto_event ev = {.kind = GP_PROTO_EV_INTERRUPTION, .at = 1796119200,
                       .at_ms = 1796119200123, .deadline = 1796119320, .has_message = true}, d;
  snprintf(ev.source, sizeof ev.source, "aws");
  snprintf(ev.message, sizeof ev.message, "aws instance-action terminate");
  round_trip(&ev, "{\"kind\":\"interruption\",\"at\":1796119200,\"at_ms\":1796119200123,"
                  "\"deadline\":1796119320,\"source\":\"aws\",\"message\":\"aws instance-action "
                  "terminate\"}", &d);
  CHECK_EQ_INT(1796119320, d.deadline);
  CHECK(d.at_ms == 1796119200123);
  CHECK_EQ_STR("aws", d.source);
  /* A deadline or source out of bounds reads as absent; the event stays. */
  json_t *o = parse("{\"kind\":\"interruption\",\"deadline\":-4,\"source\":\"a-source-name-too-long\"}");
  CHECK_EQ_INT(0, gp_proto_event_decode(o, &d, NULL));
  CHECK_EQ_INT(0, d.deadline);
  CHECK_EQ_STR("", d.source);
  json_decref(o);
}

/* A pre-pull's progress names its order; bytes past the bound read as not given (-1), and
 * the server then keeps what it had. */
static void pull_progress_round_trips(void) {
  gp_proto_event ev = {.kind = GP_PROTO_EV_PULL_PROGRESS, .done_bytes = 3100000000,
                       .total_bytes = 9800000000}, d;
  snprintf(ev.order, sizeof ev.order, "o7");
  round_trip(&ev, "{\"kind\":\"pull_progress\",\"order\":\"o7\",\"done_bytes\":3100000000,"
                  "\"total_bytes\":9800000000}", &d);
  CHECK_EQ_STR("o7", d.order);
  CHECK(d.done_bytes == 3100000000 && d.total_bytes == 9800000000);
  json_t *o = parse("{\"kind\":\"pull_progress\",\"order\":\"o7\",\"done_bytes\":-5,"
                    "\"total_bytes\":1e300}");
  CHECK_EQ_INT(0, gp_proto_event_decode(o, &d, NULL));
  CHECK(d.done_bytes == -1 && d.total_bytes == -1);
  json_decref(o);
}

GP_TESTS(pull_progress_round_trips, interruption_round_trips, job_events_round_trip, gpu_events_round_trip, what_the_server_needs_is_required,
         other_fields_out_of_bounds_read_as_absent, a_missing_or_bad_task_reads_as_none)
