/* SPDX-License-Identifier: Apache-2.0 */
/* Orders (protocol/order.h): each kind survives encode then decode, the bytes of the kinds
 * the server has always sent stay as they were, and a bad field is refused by its name. */
#include "protocol/order.h"

#include "test.h"

static json_t *parse(const char *text) {
  json_error_t je;
  json_t *o = json_loads(text, 0, &je);
  if (!o) fprintf(stderr, "bad test JSON: %s\n", je.text);
  REQUIRE(o);
  return o;
}

/* Encodes, checks the text, decodes into *ret. */
static void round_trip(const gp_proto_order *o, const char *want, gp_proto_order *ret) {
  json_t *doc = gp_proto_order_encode(o);
  REQUIRE(doc);
  char *text = json_dumps(doc, JSON_COMPACT);
  if (want) CHECK_EQ_STR(want, text);
  gp_err e = {0};
  int rc = gp_proto_order_decode(doc, ret, &e);
  if (rc) fprintf(stderr, "decode: %s: %s\n", e.field, e.message);
  CHECK_EQ_INT(0, rc);
  CHECK_EQ_INT(o->kind, ret->kind);
  CHECK_EQ_STR(o->id, ret->id);
  free(text);
  json_decref(doc);
}

/* Decodes `text` and expects GP_EINVAL naming `field`. */
static void refused(const char *text, const char *field, const char *message_part) {
  json_t *doc = parse(text);
  gp_proto_order o;
  gp_err e = {0};
  int rc = gp_proto_order_decode(doc, &o, &e);
  if (rc != GP_EINVAL) fprintf(stderr, "accepted: %s\n", text);
  CHECK_EQ_INT(GP_EINVAL, rc);
  CHECK_EQ_STR(field, e.field);
  if (message_part) CHECK_CONTAINS(e.message, message_part);
  json_decref(doc);
}

static void stop_round_trips_with_its_bytes(void) {
  gp_proto_order o = {.kind = GP_PROTO_STOP}, d;
  snprintf(o.u.stop.job, sizeof o.u.stop.job, "12");
  snprintf(o.u.stop.signal, sizeof o.u.stop.signal, "TERM");
  o.u.stop.grace_s = 30;
  snprintf(o.u.stop.reason, sizeof o.u.stop.reason, "preempted");
  round_trip(&o, "{\"kind\":\"stop\",\"job\":\"12\",\"signal\":\"TERM\",\"grace_s\":30,"
                 "\"reason\":\"preempted\"}", &d);
  CHECK_EQ_STR("12", d.u.stop.job);
  CHECK_EQ_STR("TERM", d.u.stop.signal);
  CHECK_EQ_INT(30, d.u.stop.grace_s);
  CHECK_EQ_STR("preempted", d.u.stop.reason);
  snprintf(o.id, sizeof o.id, "o7");
  o.u.stop.grace_s = -1;
  o.u.stop.reason[0] = '\0';
  round_trip(&o, "{\"kind\":\"stop\",\"job\":\"12\",\"signal\":\"TERM\",\"id\":\"o7\"}", &d);
  CHECK_EQ_INT(-1, d.u.stop.grace_s);
  CHECK_EQ_STR("", d.u.stop.reason);
}

static void mig_round_trips_with_its_bytes(void) {
  gp_proto_order o = {.kind = GP_PROTO_MIG}, d;
  o.u.mig.gpu = 2;
  o.u.mig.n = 2;
  snprintf(o.u.mig.profiles[0], sizeof o.u.mig.profiles[0], "3g.40gb");
  snprintf(o.u.mig.profiles[1], sizeof o.u.mig.profiles[1], "4g.40gb");
  o.u.mig.start_slots[0] = 4;
  o.u.mig.start_slots[1] = 0;
  round_trip(&o, "{\"kind\":\"mig\",\"gpu\":2,\"profiles\":[\"3g.40gb\",\"4g.40gb\"],"
                 "\"start_slots\":[4,0]}", &d);
  CHECK_EQ_INT(2, d.u.mig.gpu);
  CHECK_EQ_INT(2, d.u.mig.n);
  CHECK_EQ_STR("4g.40gb", d.u.mig.profiles[1]);
  CHECK_EQ_INT(4, d.u.mig.start_slots[0]);
  /* without start slots the agent places them */
  json_t *doc = parse("{\"kind\":\"mig\",\"id\":\"o1\",\"gpu\":0,\"profiles\":[\"7g.80gb\"]}");
  CHECK_EQ_INT(0, gp_proto_order_decode(doc, &d, NULL));
  CHECK_EQ_INT(-1, d.u.mig.start_slots[0]);
  json_decref(doc);
}

static void gpu_admin_and_inject_round_trip_with_their_bytes(void) {
  gp_proto_order o = {.kind = GP_PROTO_DRAIN_GPU}, d;
  o.u.gpu.gpu = 3;
  o.u.gpu.has_reason = true;
  snprintf(o.u.gpu.reason, sizeof o.u.gpu.reason, "fan");
  round_trip(&o, "{\"kind\":\"drain_gpu\",\"gpu\":3,\"reason\":\"fan\"}", &d);
  CHECK_EQ_INT(3, d.u.gpu.gpu);
  CHECK(d.u.gpu.has_reason);
  CHECK_EQ_STR("fan", d.u.gpu.reason);
  o.kind = GP_PROTO_RESUME_GPU;
  o.u.gpu.has_reason = false;
  round_trip(&o, "{\"kind\":\"resume_gpu\",\"gpu\":3,\"reason\":null}", &d);
  CHECK(!d.u.gpu.has_reason);
  gp_proto_order in = {.kind = GP_PROTO_INJECT};
  snprintf(in.u.inject.fault, sizeof in.u.inject.fault, "xid:79@gpu3,after=5s;power@gpu1");
  round_trip(&in, "{\"kind\":\"inject\",\"fault\":\"xid:79@gpu3,after=5s;power@gpu1\"}", &d);
  CHECK_EQ_INT(2, d.u.inject.n_faults);
  CHECK_EQ_INT(GP_PROTO_FAULT_XID, d.u.inject.faults[0].kind);
  CHECK_EQ_INT(5000, d.u.inject.faults[0].after_ms);
  CHECK_EQ_INT(1, d.u.inject.faults[1].gpu);
}

static void start_round_trips(void) {
  gp_proto_order o = {.kind = GP_PROTO_START}, d;
  gp_proto_start *s = &o.u.start;
  char *argv[] = {"python", "train.py", NULL};
  char *keys[] = {"B", "A"}, *values[] = {"2", "1"};
  char *hosts[] = {"n1", "n2"}, *addrs[] = {"10.0.0.1", "10.0.0.2"};
  snprintf(s->id, sizeof s->id, "12");
  s->name = "train";
  s->queue = "org/a";
  s->user = "alice";
  s->workdir = "/home/alice";
  s->argv = argv;
  s->n_argv = 2;
  s->env_keys = keys;
  s->env_values = values;
  s->n_env = 2;
  s->gpu_milli = 500;
  s->gpu_mem_mib = 0;
  s->cpu_milli = 1500;
  s->mem_mib = 4096;
  snprintf(s->signal, sizeof s->signal, "USR1");
  s->grace_s = 60;
  s->tasks = 2;
  s->task_index = 1;
  s->hosts = hosts;
  s->n_hosts = 2;
  s->addrs = addrs;
  s->n_addrs = 2;
  s->master_port = 29501;
  s->has_placement = true;
  snprintf(s->placement.node, sizeof s->placement.node, "n2");
  s->placement.n_gpus = 2;
  s->placement.gpu_ids[0] = 3;
  s->placement.gpu_ids[1] = 1;
  snprintf(s->placement.gpu_uuids[0], GP_PROTO_UUID_MAX, "GPU-a");
  s->placement.gpu_milli = 500;
  s->placement.gpu_mem_mib = 1024;
  round_trip(&o, "{\"kind\":\"start\",\"job\":{\"id\":\"12\",\"name\":\"train\",\"queue\":\"org/a\","
                 "\"user\":\"alice\",\"command\":[\"python\",\"train.py\"],\"env\":{\"B\":\"2\","
                 "\"A\":\"1\"},\"workdir\":\"/home/alice\",\"tasks\":2,\"gpu_fraction\":0.5,"
                 "\"gpu_mem_mib\":0,\"cpus\":1.5,\"mem_mib\":4096,\"grace_s\":60,\"signal\":\"USR1\","
                 "\"placements\":[{\"node\":\"n2\",\"gpu_ids\":[3,1],\"gpu_uuids\":[\"GPU-a\",null],"
                 "\"gpu_milli\":500,\"gpu_mem_mib\":1024,\"mig_uuid\":null}],\"hosts\":[\"n1\",\"n2\"],"
                 "\"addrs\":[\"10.0.0.1\",\"10.0.0.2\"],\"master_port\":29501,\"task_index\":1}}", &d);
  const gp_proto_start *r = &d.u.start;
  CHECK_EQ_STR("12", r->id);
  CHECK_EQ_STR("train", r->name);
  CHECK_EQ_STR("org/a", r->queue);
  CHECK_EQ_STR("alice", r->user);
  CHECK_EQ_STR("/home/alice", r->workdir);
  REQUIRE(r->n_argv == 2);
  CHECK_EQ_STR("train.py", r->argv[1]);
  CHECK(r->argv[2] == NULL);
  REQUIRE(r->n_env == 2);
  CHECK_EQ_STR("B", r->env_keys[0]); /* the job's order */
  CHECK_EQ_STR("1", gp_proto_start_env(r, "A"));
  CHECK(gp_proto_start_env(r, "C") == NULL);
  CHECK_EQ_INT(500, r->gpu_milli);
  CHECK_EQ_INT(1500, r->cpu_milli);
  CHECK_EQ_INT(4096, r->mem_mib);
  CHECK_EQ_STR("USR1", r->signal);
  CHECK_EQ_INT(60, r->grace_s);
  CHECK_EQ_INT(2, r->tasks);
  CHECK_EQ_INT(1, r->task_index);
  REQUIRE(r->n_hosts == 2);
  CHECK_EQ_STR("n2", r->hosts[1]);
  REQUIRE(r->n_addrs == 2);
  CHECK_EQ_STR("10.0.0.2", r->addrs[1]);
  CHECK_EQ_INT(29501, r->master_port);
  REQUIRE(r->has_placement);
  CHECK_EQ_STR("n2", r->placement.node);
  CHECK_EQ_INT(2, r->placement.n_gpus);
  CHECK_EQ_INT(1, r->placement.gpu_ids[1]);
  CHECK_EQ_STR("GPU-a", r->placement.gpu_uuids[0]);
  CHECK_EQ_STR("", r->placement.gpu_uuids[1]);
  CHECK_EQ_INT(1024, r->placement.gpu_mem_mib);
  CHECK_EQ_STR("", r->placement.mig_uuid);
  gp_proto_order_done(&d);
  gp_proto_order_done(&d); /* done twice is harmless: it clears what it freed */
}

static void a_minimal_start_takes_the_defaults(void) {
  json_t *doc = parse("{\"kind\":\"start\",\"id\":\"o3\",\"job\":{\"id\":\"5\",\"command\":[\"true\"]}}");
  gp_proto_order d;
  CHECK_EQ_INT(0, gp_proto_order_decode(doc, &d, NULL));
  CHECK_EQ_STR("o3", d.id);
  CHECK_EQ_INT(1, d.u.start.tasks);
  CHECK_EQ_INT(0, d.u.start.task_index);
  CHECK_EQ_INT(-1, d.u.start.grace_s);
  CHECK_EQ_STR("", d.u.start.signal);
  CHECK(d.u.start.workdir == NULL && d.u.start.user == NULL);
  CHECK(!d.u.start.has_placement);
  gp_proto_order_done(&d);
  json_decref(doc);
}

static void bad_fields_are_refused_by_name(void) {
  refused("{\"kind\":\"stop\",\"job\":\"../x\"}", "job", "valid job id");
  refused("{\"kind\":\"stop\",\"job\":\"1\",\"grace_s\":-1}", "grace_s", NULL);
  refused("{\"kind\":\"stop\",\"job\":\"1\",\"signal\":\"A_SIGNAL_NAME_TOO_LONG\"}", "signal", NULL);
  refused("{\"kind\":\"mig\",\"gpu\":32,\"profiles\":[\"1g.10gb\"]}", "gpu", NULL);
  refused("{\"kind\":\"mig\",\"profiles\":[\"1g.10gb\"]}", "gpu", "missing");
  refused("{\"kind\":\"mig\",\"gpu\":0,\"profiles\":[]}", "profiles", NULL);
  refused("{\"kind\":\"mig\",\"gpu\":0,\"profiles\":[\"a\",\"b\",\"c\",\"d\",\"e\",\"f\",\"g\",\"h\"]}",
          "profiles", NULL);
  refused("{\"kind\":\"mig\",\"gpu\":0,\"profiles\":[\"1g.10gb\",3]}", "profiles[1]", NULL);
  refused("{\"kind\":\"mig\",\"gpu\":0,\"profiles\":[\"1g.10gb\"],\"start_slots\":[1,2]}",
          "start_slots", NULL);
  refused("{\"kind\":\"mig\",\"gpu\":0,\"profiles\":[\"1g.10gb\"],\"start_slots\":[8]}",
          "start_slots[0]", NULL);
  refused("{\"kind\":\"drain_gpu\",\"gpu\":\"3\"}", "gpu", NULL);
  refused("{\"kind\":\"inject\"}", "fault", "no fault spec");
  refused("{\"kind\":\"inject\",\"fault\":\"xid@gpu1\"}", "inject", NULL);
  refused("{\"kind\":\"start\",\"job\":[]}", "job", NULL);
  refused("{\"kind\":\"start\",\"job\":{\"command\":[\"true\"]}}", "job.id", NULL);
  refused("{\"kind\":\"start\",\"job\":{\"id\":\"1\",\"command\":[\"x\"],\"workdir\":\"tmp\"}}",
          "job.workdir", "workdir 'tmp' is not an absolute path");
  refused("{\"kind\":\"start\",\"job\":{\"id\":\"1\",\"command\":[]}}", "job.command",
          "the command must be a list of 1 to 4096 strings");
  refused("{\"kind\":\"start\",\"job\":{\"id\":\"1\",\"command\":[\"\"]}}", "job.command",
          "command[0] is not a string");
  refused("{\"kind\":\"start\",\"job\":{\"id\":\"1\",\"command\":[\"x\"],\"env\":{\"A-B\":\"1\"}}}",
          "job.env", "env: 'A-B' is not a valid variable name with a string value");
  refused("{\"kind\":\"start\",\"job\":{\"id\":\"1\",\"command\":[\"x\"],\"cpus\":\"2\"}}",
          "job.cpus", NULL);
  refused("{\"kind\":\"start\",\"job\":{\"id\":\"1\",\"command\":[\"x\"],\"tasks\":2,"
          "\"task_index\":2}}", "job.task_index", NULL);
  refused("{\"kind\":\"start\",\"job\":{\"id\":\"1\",\"command\":[\"x\"],\"gpu_fraction\":1.5}}",
          "job.gpu_fraction", NULL);
  refused("{\"kind\":\"start\",\"job\":{\"id\":\"1\",\"command\":[\"x\"],\"hosts\":[\"n1\",2]}}",
          "job.hosts", NULL);
  /* Addresses go into host files: one word each, bounded; a port is a port. */
  refused("{\"kind\":\"start\",\"job\":{\"id\":\"1\",\"command\":[\"x\"],\"addrs\":[\"10.0.0.1 x\"]}}",
          "job.addrs", "addrs[0] is not a node address");
  refused("{\"kind\":\"start\",\"job\":{\"id\":\"1\",\"command\":[\"x\"],\"addrs\":[\"\"]}}",
          "job.addrs", NULL);
  refused("{\"kind\":\"start\",\"job\":{\"id\":\"1\",\"command\":[\"x\"],\"addrs\":[\"a\\nb\"]}}",
          "job.addrs", NULL);
  refused("{\"kind\":\"start\",\"job\":{\"id\":\"1\",\"command\":[\"x\"],\"master_port\":65536}}",
          "job.master_port", NULL);
  refused("{\"kind\":\"start\",\"job\":{\"id\":\"1\",\"command\":[\"x\"],\"master_port\":-1}}",
          "job.master_port", NULL);
  refused("{\"kind\":\"start\",\"job\":{\"id\":\"1\",\"command\":[\"x\"],\"placements\":[{},{}]}}",
          "job.placements", NULL);
  refused("{\"kind\":\"start\",\"job\":{\"id\":\"1\",\"command\":[\"x\"],\"placements\":"
          "[{\"gpu_ids\":[1,32]}]}}", "job.placements[0].gpu_ids[1]", NULL);
  refused("{\"kind\":\"start\",\"job\":{\"id\":\"1\",\"command\":[\"x\"],\"placements\":"
          "[{\"gpu_ids\":[1,1]}]}}", "job.placements[0].gpu_ids[1]", "placement names GPU 1 twice");
  refused("{\"kind\":\"start\",\"job\":{\"id\":\"1\",\"command\":[\"x\"],\"placements\":"
          "[{\"gpu_ids\":[1],\"gpu_milli\":1001}]}}", "job.placements[0].gpu_milli", NULL);
}

static void bounds_hold(void) {
  /* the command's total size */
  json_t *doc = parse("{\"kind\":\"start\",\"job\":{\"id\":\"1\",\"command\":[]}}");
  json_t *cmd = json_object_get(json_object_get(doc, "job"), "command");
  char *big = malloc(70000);
  memset(big, 'a', 69999);
  big[69999] = '\0';
  for (int i = 0; i < 4; i++) json_array_append_new(cmd, json_string(big));
  gp_proto_order d;
  gp_err e = {0};
  CHECK_EQ_INT(GP_EINVAL, gp_proto_order_decode(doc, &d, &e));
  CHECK_EQ_STR("the command is longer than 262144 bytes", e.message);
  free(big);
  json_decref(doc);
  /* grace periods are cut to a day, ids to their table */
  doc = parse("{\"kind\":\"stop\",\"job\":\"1\",\"grace_s\":999999}");
  CHECK_EQ_INT(0, gp_proto_order_decode(doc, &d, NULL));
  CHECK_EQ_INT(GP_PROTO_MAX_GRACE_S, d.u.stop.grace_s);
  json_decref(doc);
  char id[GP_PROTO_ID_MAX + 1];
  memset(id, '7', GP_PROTO_ID_MAX);
  id[GP_PROTO_ID_MAX] = '\0';
  CHECK(!gp_proto_job_id_valid(id));
  id[GP_PROTO_ID_MAX - 1] = '\0';
  CHECK(gp_proto_job_id_valid(id));
  CHECK(!gp_proto_job_id_valid(".hidden"));
  CHECK(!gp_proto_job_id_valid("a/b"));
}

static void heads_and_kinds(void) {
  const char *id = NULL, *kind = NULL;
  json_t *doc = parse("{\"kind\":\"reboot\",\"id\":\"o9\"}");
  CHECK_EQ_INT(0, gp_proto_order_head(doc, &id, &kind, NULL));
  CHECK_EQ_STR("o9", id);
  CHECK_EQ_STR("reboot", kind);
  gp_proto_order d;
  gp_err e = {0};
  CHECK_EQ_INT(GP_ENOENT, gp_proto_order_decode(doc, &d, &e)); /* a newer server's kind */
  CHECK_EQ_STR("kind", e.field);
  json_decref(doc);
  doc = parse("{\"kind\":\"stop\"}");
  CHECK_EQ_INT(GP_EINVAL, gp_proto_order_head(doc, &id, &kind, &e));
  CHECK_EQ_STR("id", e.field);
  json_decref(doc);
  for (int k = GP_PROTO_START; k <= GP_PROTO_INJECT; k++)
    CHECK_EQ_INT(k, gp_proto_order_kind_parse(gp_proto_order_kind_name((gp_proto_order_kind)k)));
  CHECK(gp_proto_order_kind_name((gp_proto_order_kind)99) == NULL);
}

/* A batch job's order: `batch` and the batch task's node GPUs round-trip; node_gpus is for
 * task 0 of a batch job only, distinct indexes below the bound. An order without them
 * (an older server) runs the command in every task. */
static void a_batch_start_round_trips(void) {
  gp_proto_order o = {.kind = GP_PROTO_START};
  snprintf(o.id, sizeof o.id, "o9");
  gp_proto_start *s = &o.u.start;
  snprintf(s->id, sizeof s->id, "12");
  char *argv[] = {(char *)"job.sh", NULL};
  s->argv = argv;
  s->n_argv = 1;
  s->tasks = 4;
  s->grace_s = -1;
  s->batch = true;
  s->n_node_gpus = 2;
  s->node_gpus[0] = 3;
  s->node_gpus[1] = 5;
  gp_proto_order d;
  round_trip(&o, NULL, &d);
  CHECK(d.u.start.batch);
  CHECK_EQ_INT(2, d.u.start.n_node_gpus);
  CHECK_EQ_INT(3, d.u.start.node_gpus[0]);
  CHECK_EQ_INT(5, d.u.start.node_gpus[1]);
  gp_proto_order_done(&d);
  s->n_node_gpus = 0;
  s->task_index = 2;
  round_trip(&o, NULL, &d);
  CHECK(d.u.start.batch);
  CHECK_EQ_INT(2, d.u.start.task_index);
  gp_proto_order_done(&d);

  json_t *doc = parse("{\"kind\":\"start\",\"id\":\"o3\",\"job\":{\"id\":\"5\",\"command\":[\"true\"]}}");
  CHECK_EQ_INT(0, gp_proto_order_decode(doc, &d, NULL));
  CHECK(!d.u.start.batch);
  gp_proto_order_done(&d);
  json_decref(doc);
  refused("{\"kind\":\"start\",\"job\":{\"id\":\"1\",\"command\":[\"x\"],\"batch\":1}}", "job.batch", NULL);
  refused("{\"kind\":\"start\",\"job\":{\"id\":\"1\",\"command\":[\"x\"],\"node_gpus\":[0]}}",
          "job.node_gpus", "batch job's task 0 only");
  refused("{\"kind\":\"start\",\"job\":{\"id\":\"1\",\"command\":[\"x\"],\"tasks\":2,\"task_index\":1,"
          "\"batch\":true,\"node_gpus\":[0]}}", "job.node_gpus", NULL);
  refused("{\"kind\":\"start\",\"job\":{\"id\":\"1\",\"command\":[\"x\"],\"batch\":true,\"node_gpus\":[1,1]}}",
          "job.node_gpus", "node_gpus[1]");
  refused("{\"kind\":\"start\",\"job\":{\"id\":\"1\",\"command\":[\"x\"],\"batch\":true,\"node_gpus\":[32]}}",
          "job.node_gpus", NULL);
}

GP_TESTS(a_batch_start_round_trips, stop_round_trips_with_its_bytes, mig_round_trips_with_its_bytes,
         gpu_admin_and_inject_round_trip_with_their_bytes, start_round_trips,
         a_minimal_start_takes_the_defaults, bad_fields_are_refused_by_name, bounds_hold,
         heads_and_kinds)
