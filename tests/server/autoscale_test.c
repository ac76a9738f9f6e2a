/* SPDX-License-Identifier: Apache-2.0 */
/* The server's autoscaler (src/server/autoscale*.c) with a real server on 127.0.0.1, a real
 * SQLite store and a provider script that records every call it gets: a pending gang makes
 * the server call `create` for the nodes it needs, and the nodes count once they register;
 * a template whose provider answers `capacity` backs off and the next one in order is used;
 * so does one whose provider is broken; max_nodes and max_hourly_cost are named in the
 * pending reason; an instance that never registers is deleted past resume_timeout; a node
 * that registers with fewer GPUs than promised is cordoned; instances a provider lists at
 * start are adopted, and a registered node is not waited for again after a restart; an
 * interrupted spot node is deleted and replaced; `autoscale:` errors name their key. */
#include <stdlib.h>
#include <sys/stat.h>

#include "test.h"
#include "srv_util.h"

/* Behaviour per template: $AS_DIR/<template>.fail holds an error answer to give `create`,
 * <template>.delfail one to give `delete`, <template>.listfail one to give `list`,
 * <template>.node the node name every created instance is answered with (else
 * <template>-<n>), <template>.list the answer to `list`. */
static const char *provider_script =
    "#!/bin/sh\n"
    "req=$(cat)\n"
    "echo \"$GPOOL_TEMPLATE $1 $(printf '%s' \"$req\" | jq -c '{count, instances}')\" >> \"$AS_DIR/calls.log\"\n"
    "case \"$1\" in\n"
    "list)\n"
    "  if [ -f \"$AS_DIR/$GPOOL_TEMPLATE.listfail\" ]; then cat \"$AS_DIR/$GPOOL_TEMPLATE.listfail\"; exit 1; fi\n"
    "  cat \"$AS_DIR/$GPOOL_TEMPLATE.list\" 2>/dev/null || echo '{\"instances\": []}' ;;\n"
    "create)\n"
    "  if [ -f \"$AS_DIR/$GPOOL_TEMPLATE.fail\" ]; then cat \"$AS_DIR/$GPOOL_TEMPLATE.fail\"; exit 1; fi\n"
    "  n=$(printf '%s' \"$req\" | jq .count); i=0; out=''\n"
    "  while [ $i -lt $n ]; do\n"
    "    k=$(( $(cat \"$AS_DIR/seq\" 2>/dev/null || echo 0) + 1 )); echo $k > \"$AS_DIR/seq\"\n"
    "    node=$(cat \"$AS_DIR/$GPOOL_TEMPLATE.node\" 2>/dev/null || echo \"$GPOOL_TEMPLATE-$k\")\n"
    "    out=\"$out${out:+,}{\\\"id\\\": \\\"i-$k\\\", \\\"node\\\": \\\"$node\\\"}\"\n"
    "    i=$((i + 1))\n"
    "  done\n"
    "  echo \"{\\\"instances\\\": [$out]}\" ;;\n"
    "delete)\n"
    "  if [ -f \"$AS_DIR/$GPOOL_TEMPLATE.delfail\" ]; then cat \"$AS_DIR/$GPOOL_TEMPLATE.delfail\"; exit 1; fi\n"
    "  printf '%s' \"$req\" | jq -c '{deleted: .instances}' ;;\n"
    "esac\n";

typedef struct as_env {
  char dir[64];
  char provider[128];
} as_env;

static void env_init(as_env *e) {
  snprintf(e->dir, sizeof e->dir, "/tmp/gp_as_XXXXXX");
  REQUIRE(mkdtemp(e->dir));
  snprintf(e->provider, sizeof e->provider, "%s/provider.sh", e->dir);
  FILE *f = fopen(e->provider, "w");
  REQUIRE(f);
  fputs(provider_script, f);
  fclose(f);
  REQUIRE(chmod(e->provider, 0755) == 0);
}

static void env_done(as_env *e) { tsrv_rm_dir(e->dir); }

/* A template line of the config. */
static int tmpl_yaml(char *buf, size_t size, const as_env *e, const char *name, const char *extra) {
  return snprintf(buf, size,
                  "  - {name: %s, provider: %s, model: H100-80GB, gpus: 8, env: {AS_DIR: %s}%s%s}\n",
                  name, e->provider, e->dir, extra ? ", " : "", extra ? extra : "");
}

static void write_file(const as_env *e, const char *name, const char *text) {
  char path[128];
  snprintf(path, sizeof path, "%s/%s", e->dir, name);
  FILE *f = fopen(path, "w");
  REQUIRE(f);
  fputs(text, f);
  fclose(f);
}

static char *calls(const as_env *e) {
  char path[128];
  snprintf(path, sizeof path, "%s/calls.log", e->dir);
  FILE *f = fopen(path, "r");
  static char buf[16384];
  buf[0] = '\0';
  if (!f) return buf;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

static int count_of(const char *hay, const char *needle) {
  int n = 0;
  for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle)) n++;
  return n;
}

/* Waits (5 s at most) for `needle` in the provider's call log. */
static bool wait_call(const as_env *e, const char *needle) {
  for (int i = 0; i < 250; i++) {
    if (strstr(calls(e), needle)) return true;
    usleep(20000);
  }
  fprintf(stderr, "calls so far:\n%s", calls(e));
  return false;
}

/* Waits (6 s at most) until the job's pending message holds `needle`. */
static bool wait_message(tsrv *t, const char *id, const char *needle) {
  char path[64];
  snprintf(path, sizeof path, "/v1/jobs/%s", id);
  for (int i = 0; i < 300; i++) {
    tsrv_req(t, "GET", path, ADMIN, NULL);
    const char *m = job_str(t->last, "pending_message");
    if (m && strstr(m, needle)) return true;
    usleep(20000);
  }
  fprintf(stderr, "pending message: %s\n", job_str(t->last, "pending_message"));
  return false;
}

static const json_t *template_of(tsrv *t, const char *name) {
  tsrv_req(t, "GET", "/v1/templates", ALICE, NULL);
  size_t i;
  json_t *e;
  json_array_foreach(json_object_get(t->last, "templates"), i, e)
    if (strcmp(json_string_value(json_object_get(e, "name")), name) == 0) return e;
  return NULL;
}

static char *submit(tsrv *t, const char *body) {
  static char id[32];
  char *got = tsrv_submit(t, ALICE, body);
  REQUIRE(got);
  snprintf(id, sizeof id, "%s", got);
  free(got);
  return id;
}

static void start(tsrv *t, const as_env *e, const char *autoscale, const char *tmpls) {
  char cfg[4096];
  snprintf(cfg, sizeof cfg, "autoscale: {interval: 1s%s%s}\nnode_templates:\n%s",
           autoscale ? ", " : "", autoscale ? autoscale : "", tmpls);
  (void)e;
  tsrv_start_with(t, cfg, NULL);
}

static void a_pending_gang_asks_for_its_nodes_and_runs_once_they_register(void) {
  as_env e;
  env_init(&e);
  char tm[1024];
  tmpl_yaml(tm, sizeof tm, &e, "od", "max_nodes: 4, price_per_gpu_hour: 2.5");
  tsrv t = {0};
  start(&t, &e, NULL, tm);
  char *id = submit(&t, "{\"command\": [\"true\"], \"gpus\": 8, \"tasks\": 2}");
  char jid[32];
  snprintf(jid, sizeof jid, "%s", id);
  CHECK(wait_call(&e, "od create {\"count\":2"));
  CHECK(wait_message(&t, jid, "Waiting for 2 new nodes of template od (asked "));
  const json_t *o = template_of(&t, "od");
  REQUIRE(o);
  CHECK_EQ_INT(2, json_integer_value(json_object_get(o, "creating")));
  /* One create only: the nodes being created hold the gang while they come. */
  usleep(1500 * 1000);
  CHECK_EQ_INT(1, count_of(calls(&e), " create "));
  CHECK_EQ_INT(201, tsrv_register(&t, "od-1", 8, NULL));
  CHECK_EQ_INT(201, tsrv_register(&t, "od-2", 8, NULL));
  if (!tsrv_wait_state(&t, jid, "running")) {
    tsrv_req(&t, "GET", "/v1/jobs/1", ADMIN, NULL);
    char *d = json_dumps(t.last, JSON_INDENT(1));
    fprintf(stderr, "%s\n", d);
    free(d);
    CHECK(0);
  }
  json_t *hb = tsrv_heartbeat(&t, "od-1", 0, 0, NULL); /* the node is one like any other */
  CHECK(hb != NULL);
  json_decref(hb);
  tsrv_req(&t, "GET", "/v1/nodes", ADMIN, NULL);
  size_t i;
  json_t *n;
  int provided = 0;
  json_array_foreach(json_object_get(t.last, "nodes"), i, n) {
    const json_t *p = json_object_get(n, "provider");
    if (!json_is_object(p)) continue;
    provided++;
    CHECK_EQ_STR("od", json_string_value(json_object_get(p, "template")));
    CHECK_NEAR(2.5, json_number_value(json_object_get(p, "price")), 1e-9);
  }
  CHECK_EQ_INT(2, provided);
  char path[64];
  snprintf(path, sizeof path, "/v1/jobs/%s", jid);
  tsrv_req(&t, "GET", path, ADMIN, NULL);
  bool event = false;
  json_array_foreach(json_object_get(json_object_get(t.last, "job"), "timeline"), i, n)
    event = event || strcmp(json_string_value(json_object_get(n, "event")), "scale_up") == 0;
  CHECK(event);
  tsrv_req(&t, "GET", "/metrics", ADMIN, NULL);
  tsrv_stop(&t);
  env_done(&e);
}

static void a_template_out_of_capacity_backs_off_and_the_next_one_is_used(void) {
  as_env e;
  env_init(&e);
  char tm[2048];
  int k = tmpl_yaml(tm, sizeof tm, &e, "cheap", "capacity: reserved, max_nodes: 2");
  tmpl_yaml(tm + k, sizeof tm - (size_t)k, &e, "dear", "capacity: on-demand, max_nodes: 2");
  char path[128];
  snprintf(path, sizeof path, "%s/cheap.fail", e.dir);
  FILE *f = fopen(path, "w");
  REQUIRE(f);
  fputs("{\"error\": {\"class\": \"capacity\", \"message\": \"no H100 in zone a\"}}\n", f);
  fclose(f);
  tsrv t = {0};
  start(&t, &e, "backoff: {initial: 60s}", tm);
  char jid[32];
  snprintf(jid, sizeof jid, "%s", submit(&t, "{\"command\": [\"true\"], \"gpus\": 8}"));
  CHECK(wait_call(&e, "cheap create"));
  CHECK(wait_call(&e, "dear create"));
  const char *c = calls(&e);
  CHECK(strstr(c, "cheap create") < strstr(c, "dear create"));
  CHECK_EQ_INT(1, count_of(c, "cheap create")); /* backing off: not asked again */
  const json_t *o = template_of(&t, "cheap");
  REQUIRE(o);
  const json_t *b = json_object_get(o, "last_error");
  CHECK_EQ_STR("capacity", json_string_value(json_object_get(b, "class")));
  CHECK_EQ_STR("no H100 in zone a", json_string_value(json_object_get(b, "message")));
  CHECK(wait_message(&t, jid, "template dear"));
  tsrv_req(&t, "GET", "/metrics", ADMIN, NULL);
  tsrv_stop(&t);
  env_done(&e);
}

/* Output that is no answer is the provider's fault (`broken`): the template backs off as
 * for any failure, and the job's reason says why. */
static void a_broken_provider_backs_off_with_its_reason(void) {
  as_env e;
  env_init(&e);
  char tm[1024];
  tmpl_yaml(tm, sizeof tm, &e, "junk", "max_nodes: 2");
  write_file(&e, "junk.fail", "this is not JSON\n");
  tsrv t = {0};
  start(&t, &e, "backoff: {initial: 60s}", tm);
  char jid[32];
  snprintf(jid, sizeof jid, "%s", submit(&t, "{\"command\": [\"true\"], \"gpus\": 8}"));
  CHECK(wait_call(&e, "junk create"));
  CHECK(wait_message(&t, jid, "Template junk would hold it; its provider failed (broken: "));
  const json_t *o = template_of(&t, "junk");
  REQUIRE(o);
  CHECK_EQ_STR("broken", json_string_value(json_object_get(json_object_get(o, "backoff"), "class")));
  CHECK(json_integer_value(json_object_get(json_object_get(o, "backoff"), "until")) > time(NULL) + 30);
  CHECK_EQ_INT(1, count_of(calls(&e), "junk create"));
  tsrv_stop(&t);
  env_done(&e);
}

static void max_nodes_and_the_cost_cap_are_named_in_the_pending_reason(void) {
  as_env e;
  env_init(&e);
  char tm[2048];
  int k = tmpl_yaml(tm, sizeof tm, &e, "one", "max_nodes: 1, price_per_gpu_hour: 0.5");
  tmpl_yaml(tm + k, sizeof tm - (size_t)k, &e, "dear",
            "max_nodes: 4, price_per_gpu_hour: 3, labels: {tier: dear}");
  tsrv t = {0};
  start(&t, &e, "max_hourly_cost: 20, resume_timeout: 1h", tm);
  /* The first job gets the only node of "one" (4/h); the second finds it at max_nodes (and
   * "dear" past the cap: 4 + 24 > 20); the third, for "dear" only, is past the cap. */
  char a[32], b[32], c[32];
  snprintf(a, sizeof a, "%s", submit(&t, "{\"command\": [\"true\"], \"gpus\": 8}"));
  CHECK(wait_call(&e, "one create"));
  snprintf(b, sizeof b, "%s", submit(&t, "{\"command\": [\"true\"], \"gpus\": 8}"));
  snprintf(c, sizeof c, "%s", submit(&t, "{\"command\": [\"true\"], \"gpus\": 8, "
                                          "\"node_selector\": {\"tier\": \"dear\"}}"));
  CHECK(wait_message(&t, a, "Waiting for 1 new node of template one (asked "));
  CHECK(wait_message(&t, b, "Template one would hold it; its max_nodes 1 reached."));
  CHECK(wait_message(&t, c, "Template dear would hold it; max_hourly_cost 20.00/h would be passed."));
  CHECK_EQ_INT(1, count_of(calls(&e), " create "));
  tsrv_stop(&t);
  env_done(&e);
}

static void an_instance_that_never_registers_is_deleted_past_resume_timeout(void) {
  as_env e;
  env_init(&e);
  char tm[1024];
  tmpl_yaml(tm, sizeof tm, &e, "slow", "max_nodes: 2");
  tsrv t = {0};
  start(&t, &e, "resume_timeout: 1s", tm);
  char jid[32];
  snprintf(jid, sizeof jid, "%s", submit(&t, "{\"command\": [\"true\"], \"gpus\": 8}"));
  CHECK(wait_call(&e, "slow create"));
  CHECK(wait_call(&e, "slow delete {\"count\":null,\"instances\":[\"i-1\"]}"));
  CHECK(wait_message(&t, jid, "did not register within resume_timeout 1s"));
  const json_t *o = template_of(&t, "slow");
  REQUIRE(o);
  CHECK_EQ_STR("timeout", json_string_value(json_object_get(json_object_get(o, "last_error"), "class")));
  tsrv_stop(&t);
  env_done(&e);
}

static void a_node_with_fewer_gpus_than_promised_is_cordoned(void) {
  as_env e;
  env_init(&e);
  char tm[1024];
  tmpl_yaml(tm, sizeof tm, &e, "short", "max_nodes: 2");
  tsrv t = {0};
  start(&t, &e, NULL, tm);
  char jid[32];
  snprintf(jid, sizeof jid, "%s", submit(&t, "{\"command\": [\"true\"], \"gpus\": 8}"));
  CHECK(wait_call(&e, "short create"));
  usleep(300 * 1000);
  CHECK_EQ_INT(201, tsrv_register(&t, "short-1", 4, NULL));
  const char *reason = NULL;
  for (int i = 0; i < 200 && !reason; i++) {
    tsrv_req(&t, "GET", "/v1/nodes", ADMIN, NULL);
    const json_t *n = json_array_get(json_object_get(t.last, "nodes"), 0);
    if (n && strcmp(json_string_value(json_object_get(n, "state")), "cordon") == 0)
      reason = json_string_value(json_object_get(n, "reason"));
    else usleep(20000);
  }
  REQUIRE(reason);
  CHECK_CONTAINS(reason, "promised 8 x H100-80GB");
  tsrv_req(&t, "GET", "/v1/jobs/1", ADMIN, NULL);
  CHECK_EQ_STR("pending", job_str(t.last, "state"));
  const json_t *o = template_of(&t, "short");
  REQUIRE(o);
  CHECK_EQ_STR("short", json_string_value(json_object_get(json_object_get(o, "last_error"), "class")));
  tsrv_stop(&t);
  env_done(&e);
}

/* A provider that answers the name of a node that was there before its call (a fixed
 * node) never makes that node the autoscaler's: it gets no provider fields and is never
 * removed; the template backs off, and the instance the provider made is given back. */
static void a_provider_naming_a_fixed_node_cannot_take_it(void) {
  as_env e;
  env_init(&e);
  char tm[1024];
  tmpl_yaml(tm, sizeof tm, &e, "liar", "max_nodes: 2");
  write_file(&e, "liar.node", "fixed\n");
  tsrv t = {0};
  start(&t, &e, "resume_timeout: 1s", tm);
  CHECK_EQ_INT(201, tsrv_register(&t, "fixed", 4, NULL));
  char jid[32];
  snprintf(jid, sizeof jid, "%s", submit(&t, "{\"command\": [\"true\"], \"gpus\": 8}"));
  CHECK(wait_call(&e, "liar create"));
  usleep(1500 * 1000); /* past resume_timeout */
  CHECK(wait_call(&e, "liar delete {\"count\":null,\"instances\":[\"i-1\"]}"));
  usleep(300 * 1000);
  tsrv_req(&t, "GET", "/v1/nodes", ADMIN, NULL);
  const json_t *n = json_array_get(json_object_get(t.last, "nodes"), 0);
  REQUIRE(n);
  CHECK_EQ_STR("fixed", json_string_value(json_object_get(n, "name")));
  CHECK(!json_object_get(n, "template") || json_is_null(json_object_get(n, "template")));
  CHECK_EQ_INT(1, count_of(calls(&e), "liar create")); /* backing off, not asking again */
  const json_t *o = template_of(&t, "liar");
  REQUIRE(o);
  CHECK_EQ_STR("invalid", json_string_value(json_object_get(json_object_get(o, "last_error"), "class")));
  (void)jid;
  tsrv_stop(&t);
  env_done(&e);
}

/* The instances a provider lists at start that have not registered are waited for; after
 * a restart a registered node keeps its provider fields and is not waited for again. */
static void instances_listed_at_start_are_adopted_and_survive_a_restart(void) {
  as_env e;
  env_init(&e);
  write_file(&e, "od.list", "{\"instances\": [{\"id\": \"i-7\", \"node\": \"od-7\"}]}\n");
  char tm[1024];
  tmpl_yaml(tm, sizeof tm, &e, "od", "max_nodes: 2, price_per_gpu_hour: 1");
  tsrv t = {0};
  start(&t, &e, NULL, tm);
  int creating = 0;
  for (int i = 0; i < 250 && creating != 1; i++) {
    const json_t *o = template_of(&t, "od");
    creating = o ? (int)json_integer_value(json_object_get(o, "creating")) : 0;
    if (creating != 1) usleep(20000);
  }
  CHECK_EQ_INT(1, creating);
  CHECK_EQ_INT(201, tsrv_register(&t, "od-7", 8, NULL));
  bool set = false;
  for (int i = 0; i < 250 && !set; i++) {
    tsrv_req(&t, "GET", "/v1/nodes/od-7", ADMIN, NULL);
    const char *id = json_string_value(json_object_get(
        json_object_get(json_object_get(t.last, "node"), "provider"), "instance_id"));
    set = id && strcmp(id, "i-7") == 0;
    if (!set) usleep(20000);
  }
  CHECK(set);
  t.keep_dir = true;
  tsrv_stop(&t);
  char extra[2048];
  snprintf(extra, sizeof extra, "autoscale: {interval: 1s}\nnode_templates:\n%s", tm);
  tsrv_start_with(&t, extra, NULL);
  CHECK(wait_call(&e, "od list"));
  bool listed = false;
  for (int i = 0; i < 250 && !listed; i++) {
    const json_t *o = template_of(&t, "od");
    listed = o && json_is_true(json_object_get(o, "listed"));
    if (!listed) usleep(20000);
  }
  CHECK(listed);
  const json_t *o = template_of(&t, "od");
  REQUIRE(o);
  CHECK_EQ_INT(0, json_integer_value(json_object_get(o, "creating")));
  CHECK_EQ_INT(1, json_integer_value(json_object_get(o, "nodes")));
  tsrv_stop(&t);
  env_done(&e);
}

/* A spot node whose interruption came is deleted once its job left, and the requeued job
 * gets a replacement although the template's max_nodes is 1. */
static void an_interrupted_spot_node_is_deleted_and_replaced(void) {
  as_env e;
  env_init(&e);
  char tm[1024];
  tmpl_yaml(tm, sizeof tm, &e, "sp", "capacity: spot, max_nodes: 1");
  tsrv t = {0};
  start(&t, &e, NULL, tm);
  char jid[32];
  snprintf(jid, sizeof jid, "%s", submit(&t, "{\"command\": [\"true\"], \"gpus\": 8, "
                                             "\"allow_spot\": true, \"requeue\": true}"));
  CHECK(wait_call(&e, "sp create"));
  usleep(200 * 1000);
  CHECK_EQ_INT(201, tsrv_register(&t, "sp-1", 8, NULL));
  REQUIRE(tsrv_wait_state(&t, jid, "running"));
  CHECK_EQ_INT(200, tsrv_req(&t, "POST", "/v1/nodes/sp-1/interrupt", ADMIN, "{\"notice_s\": 60}"));
  char ev[256];
  snprintf(ev, sizeof ev, "[{\"kind\": \"exited\", \"job\": \"%s\", \"exit_code\": 143, \"signal\": 15}]", jid);
  json_decref(tsrv_heartbeat(&t, "sp-1", 0, 0, ev));
  CHECK(wait_call(&e, "sp delete {\"count\":null,\"instances\":[\"i-1\"]}"));
  bool gone = false;
  for (int i = 0; i < 250 && !gone; i++) {
    gone = tsrv_req(&t, "GET", "/v1/nodes/sp-1", ADMIN, NULL) == 404;
    if (!gone) usleep(20000);
  }
  CHECK(gone);
  for (int i = 0; i < 250 && count_of(calls(&e), "sp create") < 2; i++) usleep(20000);
  CHECK_EQ_INT(2, count_of(calls(&e), "sp create"));
  tsrv_stop(&t);
  env_done(&e);
}

static int template_int(tsrv *t, const char *name, const char *key) {
  const json_t *o = template_of(t, name);
  return o ? (int)json_integer_value(json_object_get(o, key)) : -1;
}

static bool wait_template_int(tsrv *t, const char *name, const char *key, int want) {
  for (int i = 0; i < 300; i++) {
    if (template_int(t, name, key) == want) return true;
    usleep(20000);
  }
  fprintf(stderr, "template %s: %s is %d, not %d\n", name, key, template_int(t, name, key), want);
  return false;
}

static const char *node_instance(tsrv *t, const char *node) {
  char path[96];
  snprintf(path, sizeof path, "/v1/nodes/%s", node);
  tsrv_req(t, "GET", path, ADMIN, NULL);
  return json_string_value(json_object_get(
      json_object_get(json_object_get(t->last, "node"), "provider"), "instance_id"));
}

/* A create answered with the node an earlier call made (and that registered) is an
 * orphan: deleted, with a delete that fails tried again later and later; counted against
 * max_nodes (run 0) and max_hourly_cost (run 1) meanwhile, so no more is asked for; the
 * node stays its first instance's. */
static void a_create_answering_a_node_an_earlier_call_made_is_deleted_and_counted(void) {
  for (int run = 0; run < 2; run++) {
    as_env e;
    env_init(&e);
    char tm[1024];
    tmpl_yaml(tm, sizeof tm, &e, "dup", run == 0 ? "max_nodes: 2" : "max_nodes: 4, price_per_gpu_hour: 1");
    write_file(&e, "dup.node", "dup-x\n");
    write_file(&e, "dup.delfail", "{\"error\": {\"class\": \"transient\", \"message\": \"API throttled\"}}\n");
    tsrv t = {0};
    start(&t, &e, run == 0 ? "backoff: {initial: 1s}, resume_timeout: 1h"
                           : "backoff: {initial: 1s}, resume_timeout: 1h, max_hourly_cost: 16", tm);
    char a[32], b[32];
    snprintf(a, sizeof a, "%s", submit(&t, "{\"command\": [\"true\"], \"gpus\": 8}"));
    CHECK(wait_call(&e, "dup create"));
    usleep(200 * 1000);
    CHECK_EQ_INT(201, tsrv_register(&t, "dup-x", 8, NULL));
    REQUIRE(tsrv_wait_state(&t, a, "running"));
    snprintf(b, sizeof b, "%s", submit(&t, "{\"command\": [\"true\"], \"gpus\": 8}"));
    CHECK(wait_call(&e, "dup delete {\"count\":null,\"instances\":[\"i-2\"]}"));
    int64_t first = tsrv_now_ms();
    CHECK(wait_template_int(&t, "dup", "orphans", 1));
    CHECK_EQ_INT(1, template_int(&t, "dup", "deleting"));
    const json_t *o = template_of(&t, "dup");
    REQUIRE(o);
    const json_t *le = json_object_get(o, "last_error");
    CHECK_EQ_STR("invalid", json_string_value(json_object_get(le, "class")));
    CHECK_CONTAINS(json_string_value(json_object_get(le, "message")),
                   "create: it answered node dup-x for instance i-2, but instance i-1 holds that node");
    CHECK(wait_message(&t, b, run == 0 ? "Template dup would hold it; its max_nodes 2 reached."
                                       : "Template dup would hold it; max_hourly_cost 16.00/h would be passed."));
    if (run == 0) {
      /* Failed deletes back off from 1 s, doubling: the 4th comes 4 s after the 1st at
       * the earliest (one a second would make 4 in about 3 s). */
      while (tsrv_now_ms() - first < 3800) usleep(20000);
      int deletes = count_of(calls(&e), "dup delete");
      CHECK(deletes >= 2 && deletes <= 3);
    }
    CHECK_EQ_INT(2, count_of(calls(&e), "dup create"));
    CHECK_EQ_STR("i-1", node_instance(&t, "dup-x"));
    tsrv_stop(&t);
    env_done(&e);
  }
}

/* One answer naming one node for three instances: the first gets the node, the other two
 * are deleted at once; the node registers as the first's. */
static void three_instances_answered_with_one_node_leave_none_behind(void) {
  as_env e;
  env_init(&e);
  char tm[1024];
  tmpl_yaml(tm, sizeof tm, &e, "one", "max_nodes: 4");
  write_file(&e, "one.node", "same\n");
  tsrv t = {0};
  start(&t, &e, "resume_timeout: 1h", tm);
  char jid[32];
  snprintf(jid, sizeof jid, "%s", submit(&t, "{\"command\": [\"true\"], \"gpus\": 8, \"tasks\": 3}"));
  CHECK(wait_call(&e, "one create {\"count\":3"));
  CHECK(wait_call(&e, "one delete {\"count\":null,\"instances\":[\"i-2\"]}"));
  CHECK(wait_call(&e, "one delete {\"count\":null,\"instances\":[\"i-3\"]}"));
  CHECK(wait_template_int(&t, "one", "orphans", 0));
  CHECK_EQ_INT(0, template_int(&t, "one", "deleting"));
  CHECK_EQ_INT(201, tsrv_register(&t, "same", 8, NULL));
  const char *id = NULL;
  for (int i = 0; i < 250 && !id; i++) {
    id = node_instance(&t, "same");
    if (!id) usleep(20000);
  }
  CHECK_EQ_STR("i-1", id);
  usleep(300 * 1000); /* a few steps: still the first's */
  CHECK_EQ_STR("i-1", node_instance(&t, "same"));
  CHECK_EQ_INT(0, count_of(calls(&e), "one delete {\"count\":null,\"instances\":[\"i-1\"]}"));
  tsrv_stop(&t);
  env_done(&e);
}

/* After a restart, a list that names a registered node under a made-up instance id does
 * not move the node to it: the made-up id is deleted, and scale-down later deletes the
 * node's real instance. */
static void a_list_cannot_move_a_node_to_another_instance(void) {
  as_env e;
  env_init(&e);
  write_file(&e, "od.list", "{\"instances\": [{\"id\": \"i-1\", \"node\": \"od-1\"}]}\n");
  char tm[1024];
  tmpl_yaml(tm, sizeof tm, &e, "od", "max_nodes: 2");
  tsrv t = {0};
  start(&t, &e, NULL, tm);
  CHECK(wait_template_int(&t, "od", "creating", 1));
  CHECK_EQ_INT(201, tsrv_register(&t, "od-1", 8, NULL));
  const char *id = NULL;
  for (int i = 0; i < 250 && !id; i++) {
    id = node_instance(&t, "od-1");
    if (!id) usleep(20000);
  }
  CHECK_EQ_STR("i-1", id);
  t.keep_dir = true;
  tsrv_stop(&t);
  write_file(&e, "od.list", "{\"instances\": [{\"id\": \"i-666\", \"node\": \"od-1\"}]}\n");
  char cfg[2048];
  snprintf(cfg, sizeof cfg, "autoscale: {interval: 1s, scale_down_after: 1s}\nnode_templates:\n%s", tm);
  tsrv_start_with(&t, cfg, NULL);
  CHECK_EQ_INT(200, tsrv_register(&t, "od-1", 8, NULL)); /* known from the store */
  CHECK(wait_call(&e, "od delete {\"count\":null,\"instances\":[\"i-666\"]}"));
  CHECK_EQ_STR("i-1", node_instance(&t, "od-1"));
  const json_t *o = template_of(&t, "od");
  REQUIRE(o);
  CHECK_CONTAINS(json_string_value(json_object_get(json_object_get(o, "last_error"), "message")),
                 "list: it answered node od-1 for instance i-666, but instance i-1 holds that node");
  CHECK(wait_call(&e, "od delete {\"count\":null,\"instances\":[\"i-1\"]}"));
  tsrv_stop(&t);
  env_done(&e);
}

/* A broken create may have made machines it did not say (here an instance beside an exit
 * status of 1): the template lists its instances again before it creates more, and adopts
 * the one made, whose node then registers as that instance's. */
static void a_broken_create_is_followed_by_a_list_that_adopts_what_it_made(void) {
  as_env e;
  env_init(&e);
  char tm[1024];
  tmpl_yaml(tm, sizeof tm, &e, "half", "max_nodes: 2");
  write_file(&e, "half.fail", "{\"instances\": [{\"id\": \"i-9\", \"node\": \"half-9\"}]}\n");
  tsrv t = {0};
  start(&t, &e, "backoff: {initial: 1s}, resume_timeout: 1h", tm);
  CHECK(wait_call(&e, "half list"));
  bool listed = false;
  for (int i = 0; i < 250 && !listed; i++) {
    const json_t *o = template_of(&t, "half");
    listed = o && json_is_true(json_object_get(o, "listed"));
    if (!listed) usleep(20000);
  }
  REQUIRE(listed);
  char jid[32];
  snprintf(jid, sizeof jid, "%s", submit(&t, "{\"command\": [\"true\"], \"gpus\": 8}"));
  CHECK(wait_call(&e, "half create"));
  write_file(&e, "half.list", "{\"instances\": [{\"id\": \"i-9\", \"node\": \"half-9\"}]}\n");
  for (int i = 0; i < 250 && count_of(calls(&e), "half list") < 2; i++) usleep(20000);
  CHECK_EQ_INT(2, count_of(calls(&e), "half list"));
  listed = false;
  for (int i = 0; i < 250 && !listed; i++) {
    const json_t *o = template_of(&t, "half");
    listed = o && json_is_true(json_object_get(o, "listed"));
    if (!listed) usleep(20000);
  }
  CHECK(listed);
  CHECK_EQ_INT(1, template_int(&t, "half", "creating"));
  CHECK_EQ_INT(1, count_of(calls(&e), "half create")); /* the adopted one holds the job */
  CHECK_EQ_INT(201, tsrv_register(&t, "half-9", 8, NULL));
  CHECK(tsrv_wait_state(&t, jid, "running"));
  CHECK_EQ_STR("i-9", node_instance(&t, "half-9"));
  tsrv_stop(&t);
  env_done(&e);
}

/* A provider's message is UTF-8 of up to 512 bytes; with the autoscaler's prefix
 * ("list: ") it is cut to fit on a character boundary, so it stays a JSON string. */
static void a_long_provider_message_is_cut_on_a_character_boundary(void) {
  as_env e;
  env_init(&e);
  char msg[600] = "a";
  for (int i = 0; i < 255; i++) strcat(msg, "\xc3\xa9"); /* 511 bytes */
  char fail[800];
  snprintf(fail, sizeof fail, "{\"error\": {\"class\": \"transient\", \"message\": \"%s\"}}\n", msg);
  write_file(&e, "lf.listfail", fail);
  char tm[1024];
  tmpl_yaml(tm, sizeof tm, &e, "lf", "max_nodes: 1");
  tsrv t = {0};
  start(&t, &e, NULL, tm);
  CHECK(wait_call(&e, "lf list"));
  const char *got = NULL;
  for (int i = 0; i < 250 && !got; i++) {
    const json_t *o = template_of(&t, "lf");
    got = o ? json_string_value(json_object_get(json_object_get(o, "last_error"), "message")) : NULL;
    if (!got) usleep(20000);
  }
  REQUIRE(got);
  CHECK(strncmp(got, "list: a\xc3\xa9", 9) == 0);
  CHECK_EQ_INT(511, (int)strlen(got)); /* 512 would split the last character */
  tsrv_stop(&t);
  env_done(&e);
}

/* A job whose new node did not register within resume_timeout hears of it: its reason
 * names that template and the timeout, not the first template in order (which backs off
 * for its own reason), and its timeline has a `scale_failed` event. */
static void a_resume_timeout_is_named_in_the_job_reason_and_timeline(void) {
  as_env e;
  env_init(&e);
  char tm[2048];
  int k = tmpl_yaml(tm, sizeof tm, &e, "first", "capacity: reserved, max_nodes: 2");
  tmpl_yaml(tm + k, sizeof tm - (size_t)k, &e, "second", "capacity: on-demand, max_nodes: 2");
  write_file(&e, "first.fail", "{\"error\": {\"class\": \"capacity\", \"message\": \"no H100 in zone a\"}}\n");
  tsrv t = {0};
  start(&t, &e, "resume_timeout: 1s, backoff: {initial: 60s}", tm);
  char jid[32];
  snprintf(jid, sizeof jid, "%s", submit(&t, "{\"command\": [\"true\"], \"gpus\": 8}"));
  CHECK(wait_call(&e, "second create"));
  CHECK(wait_call(&e, "second delete {\"count\":null,\"instances\":[\"i-1\"]}"));
  CHECK(wait_message(&t, jid, "Template second would hold it; its provider failed (timeout: node "
                              "second-1 (instance i-1) did not register within resume_timeout 1s"));
  char path[64];
  snprintf(path, sizeof path, "/v1/jobs/%s", jid);
  tsrv_req(&t, "GET", path, ADMIN, NULL);
  size_t i;
  json_t *ev;
  bool failed = false;
  json_array_foreach(json_object_get(json_object_get(t.last, "job"), "timeline"), i, ev) {
    const char *name = json_string_value(json_object_get(ev, "event"));
    const char *tmpl = json_string_value(json_object_get(ev, "template"));
    const char *cls = json_string_value(json_object_get(ev, "class"));
    failed = failed || (strcmp(name, "scale_failed") == 0 && tmpl && strcmp(tmpl, "second") == 0 &&
                        cls && strcmp(cls, "timeout") == 0);
  }
  CHECK(failed);
  tsrv_stop(&t);
  env_done(&e);
}

/* Every `autoscale:` key is checked and an error names it. */
static void autoscale_config_errors_name_the_key(void) {
  static const struct {
    const char *yaml, *field;
  } bad[] = {
      {"autoscale: {order: [spot, cheap]}", "autoscale.order[1]"},
      {"autoscale: {order: [spot, spot]}", "autoscale.order[1]"},
      {"autoscale: {order: []}", "autoscale.order"},
      {"autoscale: {max_hourly_cost: -1}", "autoscale.max_hourly_cost"},
      {"autoscale: {resume_timeout: 0}", "autoscale.resume_timeout"},
      {"autoscale: {scale_down_after: 8d}", "autoscale.scale_down_after"},
      {"autoscale: {backoff: {initial: 60s, max: 10s}}", "autoscale.backoff.max"},
      {"autoscale: {backoff: {start: 1s}}", "autoscale.backoff.start"},
      {"autoscale: {interval: soon}", "autoscale.interval"},
      {"autoscale: {later: 1}", "autoscale.later"},
      {"autoscale: [1]", "autoscale"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    gp_server_config *c = NULL;
    gp_err e = {0};
    CHECK_EQ_INT(GP_EINVAL, gp_server_config_parse("t.yaml", bad[i].yaml, strlen(bad[i].yaml), &c, &e));
    CHECK_EQ_STR(bad[i].field, e.field);
    gp_server_config_free(c);
  }
  const char *good = "autoscale: {order: [spot, on-demand], max_hourly_cost: 40, resume_timeout: 5m, "
                     "scale_down_after: 0, backoff: {initial: 10s, max: 1h}, interval: 2s}";
  gp_server_config *c = NULL;
  gp_err e = {0};
  REQUIRE(gp_server_config_parse("t.yaml", good, strlen(good), &c, &e) == 0);
  CHECK_EQ_INT(0, c->autoscale.class_rank[GP_CAP_SPOT]);
  CHECK_EQ_INT(1, c->autoscale.class_rank[GP_CAP_ON_DEMAND]);
  CHECK_EQ_INT(-1, c->autoscale.class_rank[GP_CAP_ON_PREM]);
  CHECK_NEAR(40, c->autoscale.max_hourly_cost, 1e-9);
  CHECK_EQ_INT(300, c->autoscale.resume_timeout_s);
  CHECK_EQ_INT(0, c->autoscale.scale_down_after_s);
  CHECK_EQ_INT(10, c->autoscale.backoff_initial_s);
  CHECK_EQ_INT(3600, c->autoscale.backoff_max_s);
  CHECK_EQ_INT(2000, c->autoscale.interval_ms);
  gp_server_config_free(c);
  c = gp_server_config_new();
  CHECK_EQ_INT(900, c->autoscale.resume_timeout_s);
  CHECK_EQ_INT(600, c->autoscale.scale_down_after_s);
  CHECK_EQ_INT(60, c->autoscale.backoff_initial_s);
  CHECK_EQ_INT(1800, c->autoscale.backoff_max_s);
  CHECK_EQ_INT(1000, c->autoscale.interval_ms);
  CHECK(c->autoscale.max_hourly_cost < 0);
  CHECK_EQ_INT(0, c->autoscale.class_rank[GP_CAP_ON_PREM]);
  CHECK_EQ_INT(3, c->autoscale.class_rank[GP_CAP_ON_DEMAND]);
  gp_server_config_free(c);
}

GP_TESTS(autoscale_config_errors_name_the_key, a_provider_naming_a_fixed_node_cannot_take_it,
         a_pending_gang_asks_for_its_nodes_and_runs_once_they_register,
         a_template_out_of_capacity_backs_off_and_the_next_one_is_used,
         a_broken_provider_backs_off_with_its_reason,
         max_nodes_and_the_cost_cap_are_named_in_the_pending_reason,
         an_instance_that_never_registers_is_deleted_past_resume_timeout,
         a_node_with_fewer_gpus_than_promised_is_cordoned,
         instances_listed_at_start_are_adopted_and_survive_a_restart,
         an_interrupted_spot_node_is_deleted_and_replaced,
         a_create_answering_a_node_an_earlier_call_made_is_deleted_and_counted,
         three_instances_answered_with_one_node_leave_none_behind,
         a_list_cannot_move_a_node_to_another_instance,
         a_resume_timeout_is_named_in_the_job_reason_and_timeline,
         a_broken_create_is_followed_by_a_list_that_adopts_what_it_made,
         a_long_provider_message_is_cut_on_a_character_boundary)
