/* SPDX-License-Identifier: Apache-2.0 */
/* The server's config file: every key is read, and every mistake names file, line and key. */
#include <sys/stat.h>

#include "test.h"
#include "server/state/config.h"
#include "core/model.h"
#include "server/state/node_templates.h"

static gp_err parse_fail(const char *text) {
  gp_server_config *c = NULL;
  gp_err e = {0};
  int r = gp_server_config_parse("server.yaml", text, strlen(text), &c, &e);
  CHECK(r != 0);
  CHECK(c == NULL);
  gp_server_config_free(c);
  return e;
}

static void a_full_config_is_read(void) {
  const char *text =
      "listen: 0.0.0.0:9000\n"
      "data_dir: /var/lib/gpool\n"
      "tokens:\n"
      "  - {token: abcdefgh1, user: alice, role: admin}\n"
      "  - {token: abcdefgh2, user: node, role: agent}\n"
      "  - {token: abcdefgh3, user: bob}\n"
      "priority_classes:\n"
      "  - {name: urgent, priority: 90, preemptible: false}\n"
      "queues:\n"
      "  - {name: org/a, deserved: 8, limit: 16, weight: 2, users: [alice], default_priority: urgent, default_time_limit: 4h}\n"
      "  - {name: org/b, deserved: 4}\n"
      "policy: {placement: spread, backfill: false, min_runtime: 10m}\n"
      "pools:\n"
      "  - {name: inf, queue: org/a, selector: {pool: inference}, lend: false}\n"
      "default_queue: {alice: org/a, \"*\": org/b}\n"
      "node_timeout_s: 12\n"
      "heartbeat_s: 3\n"
      "schedule_interval_ms: 250\n"
      "schedule_min_gap_ms: 2\n"
      "http_threads: 8\n"
      "max_connections: 4096\n";
  gp_server_config *c = NULL;
  gp_err e = {0};
  REQUIRE(gp_server_config_parse("server.yaml", text, strlen(text), &c, &e) == 0);
  CHECK_EQ_STR("0.0.0.0", c->listen_host);
  CHECK_EQ_INT(9000, c->listen_port);
  CHECK_EQ_STR("/var/lib/gpool", c->data_dir);
  CHECK_EQ_INT(3, c->n_tokens);
  CHECK_EQ_INT(GP_ROLE_AGENT, c->tokens[1].role);
  CHECK_EQ_INT(GP_ROLE_USER, c->tokens[2].role);
  CHECK_EQ_INT(2, c->n_queues);
  CHECK_EQ_INT(1, c->queues[0].n_users);
  CHECK_EQ_STR("alice", c->queues[0].users[0]);
  CHECK_EQ_STR("*", c->queues[1].users[0]); /* no users: everyone */
  CHECK_EQ_INT(4 * 3600, c->queues[0].q.default_time_limit);
  CHECK_EQ_INT(GP_PLACE_SPREAD, c->policy.placement);
  CHECK(!c->policy.backfill);
  CHECK(gp_priority_class_find(&c->policy, "urgent") != NULL);
  CHECK_EQ_INT(1, c->n_pools);
  CHECK_EQ_INT(2, c->n_default_queues);
  CHECK_EQ_INT(12, c->node_timeout_s);
  CHECK_EQ_INT(250, c->schedule_interval_ms);
  CHECK_EQ_INT(8, c->http_threads);
  gp_server_config_free(c);
}

static void mistakes_name_file_line_and_key(void) {
  gp_err e = parse_fail("listen: 127.0.0.1:0\ncolour: blue\n");
  CHECK_EQ_STR("server.yaml", e.file);
  CHECK_EQ_INT(2, e.line);
  CHECK_EQ_STR("colour", e.field);
  e = parse_fail("tokens:\n  - {token: abcdefgh1, user: a}\n  - {token: abcdefgh2, user: b, role: root}\n");
  CHECK_EQ_INT(3, e.line);
  CHECK_EQ_STR("tokens[1].role", e.field);
  e = parse_fail("tokens:\n  - {token: short, user: a}\n");
  CHECK_EQ_STR("tokens[0].token", e.field);
  e = parse_fail("tokens:\n  - {token: abcdefgh1, user: a}\n  - {token: abcdefgh1, user: b}\n");
  CHECK_CONTAINS(e.message, "twice");
  e = parse_fail("listen: nowhere\n");
  CHECK_EQ_STR("listen", e.field);
  e = parse_fail("queues:\n  - {name: a}\ndefault_queue: b\n");
  CHECK_EQ_INT(3, e.line);
  CHECK_EQ_STR("default_queue", e.field);
  e = parse_fail("queues:\n  - {name: a, users: alice}\n");
  CHECK_EQ_STR("queues[0].users", e.field);
  e = parse_fail("queues:\n  - {name: a, deserved: 4, limit: 2}\n");
  CHECK_EQ_INT(2, e.line);
  e = parse_fail("node_timeout_s: 0\n");
  CHECK_EQ_STR("node_timeout_s", e.field);
  e = parse_fail("policy: {placement: random}\n");
  CHECK_CONTAINS(e.field, "placement");
  e = parse_fail("token_file: /nonexistent/tokens.yaml\n");
  CHECK(e.message[0] != '\0');
}

static void tokens_can_live_in_their_own_file(void) {
  char dir[] = "/tmp/gp_cfg_test_XXXXXX";
  REQUIRE(mkdtemp(dir));
  char tok[300], cfg[300];
  snprintf(tok, sizeof tok, "%s/tokens.yaml", dir);
  snprintf(cfg, sizeof cfg, "%s/server.yaml", dir);
  FILE *f = fopen(tok, "w");
  fputs("tokens:\n  - {token: secret-admin-1, user: root, role: admin}\n", f);
  fclose(f);
  f = fopen(cfg, "w");
  fputs("token_file: tokens.yaml\n", f);
  fclose(f);
  gp_server_config *c = NULL;
  gp_err e = {0};
  /* Tokens are secrets: a token file others may read or write is refused. */
  REQUIRE(chmod(tok, 0640) == 0);
  CHECK_EQ_INT(GP_EPERM, gp_server_config_load(cfg, &c, &e));
  CHECK_EQ_STR(tok, e.file);
  CHECK_EQ_STR("token_file", e.field);
  CHECK_CONTAINS(e.message, "mode 0640 lets other users read it");
  REQUIRE(chmod(tok, 0600) == 0);
  /* A config anyone may change is refused. */
  REQUIRE(chmod(cfg, 0666) == 0);
  CHECK_EQ_INT(GP_EPERM, gp_server_config_load(cfg, &c, &e));
  CHECK_EQ_STR(cfg, e.file);
  CHECK_CONTAINS(e.message, "mode 0666 lets any user change it");
  REQUIRE(chmod(cfg, 0644) == 0);
  REQUIRE(gp_server_config_load(cfg, &c, &e) == 0);
  CHECK_EQ_INT(1, c->n_tokens);
  CHECK_EQ_STR("root", c->tokens[0].user);
  gp_server_config_free(c);
  f = fopen(tok, "w");
  fputs("tokens:\n  - {token: secret-admin-1, user: root, role: king}\n", f);
  fclose(f);
  CHECK(gp_server_config_load(cfg, &c, &e) != 0);
  CHECK_CONTAINS(e.file, "tokens.yaml");
  CHECK_EQ_INT(2, e.line);
  CHECK_EQ_STR("tokens[0].role", e.field);
  char cmd[200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  CHECK_EQ_INT(0, system(cmd));
}

static void the_example_config_is_valid(void) {
  gp_server_config *c = NULL;
  gp_err e = {0};
  int r = gp_server_config_load(GP_SOURCE_DIR "/examples/server.yaml", &c, &e);
  if (r) fprintf(stderr, "%s:%d: %s: %s\n", e.file, e.line, e.field, e.message);
  CHECK_EQ_INT(0, r);
  CHECK(c && c->n_queues == 4 && c->n_tokens == 4);
  gp_server_config_free(c);
}

/* node_templates: every key read (labels and env as the provider will see them), and each
 * mistake named by its key; /bin/sh stands in for a provider executable. */
static void node_templates_are_read_and_checked(void) {
  const char *text =
      "node_templates:\n"
      "  - name: a100-spot\n"
      "    provider: /bin/sh\n"
      "    model: A100\n"
      "    gpus: 8\n"
      "    gpu_mem: 80G\n"
      "    capacity: spot\n"
      "    price_per_gpu_hour: 1.25\n"
      "    max_nodes: 4\n"
      "    labels: {zone: a}\n"
      "    env: {AWS_PROFILE: gpool}\n"
      "    timeout: 2m\n"
      "  - {name: onprem, provider: /bin/sh, model: H100-80GB, gpus: 4}\n";
  gp_server_config *c = NULL;
  gp_err e = {0};
  REQUIRE(gp_server_config_parse("server.yaml", text, strlen(text), &c, &e) == 0);
  REQUIRE(c->n_node_templates == 2);
  const gp_node_template *t = &c->node_templates[0];
  CHECK_EQ_STR("a100-spot", t->t.name);
  CHECK_EQ_STR("/bin/sh", t->t.provider);
  CHECK_EQ_STR("A100", t->t.model);
  CHECK_EQ_INT(8, t->t.gpus);
  CHECK_EQ_INT(81920, (int)t->t.gpu_mem_mib);
  CHECK_EQ_STR("spot", t->t.capacity);
  CHECK_NEAR(1.25, t->t.price_per_gpu_hour, 1e-9);
  CHECK_EQ_INT(4, t->t.max_nodes);
  REQUIRE(t->t.n_labels == 1);
  CHECK_EQ_STR("zone", t->t.label_keys[0]);
  CHECK_EQ_STR("a", t->t.label_values[0]);
  REQUIRE(t->t.n_env == 1);
  CHECK_EQ_STR("AWS_PROFILE=gpool", t->t.env[0]);
  CHECK_EQ_INT(120, t->timeout_s);
  t = &c->node_templates[1];
  CHECK_EQ_STR("on-demand", t->t.capacity);
  CHECK_EQ_INT(1, t->t.max_nodes);
  CHECK_EQ_INT(60, t->timeout_s);
  CHECK(t->t.price_per_gpu_hour < 0);
  CHECK_EQ_INT(1, t->spec.disruption_budget);
  CHECK_EQ_INT(4, t->spec.t.node.n_gpus);
  CHECK_EQ_INT(81920, (int)t->spec.t.node.gpu_mem_mib); /* from the model's name */
  gp_server_config_free(c);

  static const struct { const char *yaml, *field, *says; } bad[] = {
      {"node_templates:\n  - {provider: /bin/sh, model: H100-80GB, gpus: 1}\n", "node_templates[0].name", "missing"},
      {"node_templates:\n  - {name: a, provider: sh, model: H100-80GB, gpus: 1}\n", "node_templates[0].provider", "absolute"},
      {"node_templates:\n  - {name: a, provider: /nonexistent/p, model: H100-80GB, gpus: 1}\n", "node_templates[0].provider", "not an executable"},
      {"node_templates:\n  - {name: a, provider: /bin/sh, model: H100-80GB, gpus: 33}\n", "node_templates[0].gpus", "0..32"},
      {"node_templates:\n  - {name: \"a b\", provider: /bin/sh, model: H100-80GB, gpus: 1}\n", "node_templates[0].name", "characters"},
      {"node_templates:\n  - {name: a, provider: /bin/sh, model: H100-80GB, gpus: 1, capacity: cheap}\n", "node_templates[0].capacity", "spot"},
      {"node_templates:\n  - {name: a, provider: /bin/sh, model: H100-80GB, gpus: 1, env: {PATH: /x}}\n", "node_templates[0].env.PATH", "PATH"},
      {"node_templates:\n  - {name: a, provider: /bin/sh, model: H100-80GB, gpus: 1, cost: 3}\n", "node_templates[0].cost", "unknown"},
      {"node_templates:\n  - {name: a, provider: /bin/sh, model: H100-80GB, gpus: 0}\n", "node_templates[0].gpus", "1..32"},
      {"node_templates:\n  - {name: a, provider: /bin/sh, model: Z9, gpus: 1}\n", "node_templates[0].gpu_mem", "not known"},
      {"node_templates:\n  - {name: a, provider: /bin/sh, model: H100-80GB, gpus: 1, state: up}\n", "node_templates[0].state", "no state"},
      {"node_templates:\n  - {name: a, provider: /bin/sh, model: H100-80GB, gpus: 1, disruption_budget: -1}\n", "node_templates[0].disruption_budget", "0..10000"},
      {"node_templates:\n  - {name: a, provider: /bin/sh, model: H100-80GB, gpus: 1}\n  - {name: a, provider: /bin/sh, model: H100-80GB, gpus: 1}\n",
       "node_templates[1].name", "defined twice"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    gp_err be = parse_fail(bad[i].yaml);
    CHECK_EQ_STR(bad[i].field, be.field);
    CHECK_CONTAINS(be.message, bad[i].says);
    CHECK(be.line > 0);
  }
}

/* `store:` takes a PostgreSQL URL; anything else is refused without echoing the value,
 * which may carry a password. */
static void the_store_is_a_postgresql_url(void) {
  gp_server_config *c = NULL;
  gp_err e = {0};
  const char *ok = "store: postgresql://gp:s3cret@db:5432/gpool?sslmode=require\n";
  REQUIRE(gp_server_config_parse("server.yaml", ok, strlen(ok), &c, &e) == 0);
  CHECK_EQ_STR("postgresql://gp:s3cret@db:5432/gpool?sslmode=require", c->store);
  gp_server_config_free(c);
  c = NULL;
  const char *none = "listen: 127.0.0.1:0\n";
  REQUIRE(gp_server_config_parse("server.yaml", none, strlen(none), &c, &e) == 0);
  CHECK(c->store == NULL);
  gp_server_config_free(c);
  e = parse_fail("store: mysql://gp:s3cret@db/gpool\n");
  CHECK_EQ_STR("store", e.field);
  CHECK_EQ_INT(1, e.line);
  CHECK(strstr(e.message, "s3cret") == NULL);
  e = parse_fail("store: \"postgresql://gp:s3 cret@db/gpool\"\n");
  CHECK_EQ_STR("store", e.field);
}

static void agents_may_have_a_listener_of_their_own(void) {
  gp_server_config *c = NULL;
  gp_err e = {0};
  const char *none = "listen: 127.0.0.1:0\n";
  REQUIRE(gp_server_config_parse("server.yaml", none, strlen(none), &c, &e) == 0);
  CHECK(c->agent_listen_host == NULL);
  CHECK_EQ_INT(100000, c->agent_max_connections);
  gp_server_config_free(c);
  c = NULL;
  const char *ok = "agent_listen: 0.0.0.0:8643\nagent_max_connections: 30000\n";
  REQUIRE(gp_server_config_parse("server.yaml", ok, strlen(ok), &c, &e) == 0);
  CHECK_EQ_STR("0.0.0.0", c->agent_listen_host);
  CHECK_EQ_INT(8643, c->agent_listen_port);
  CHECK_EQ_INT(30000, c->agent_max_connections);
  gp_server_config_free(c);
  e = parse_fail("listen: 127.0.0.1:0\nagent_listen: nowhere\n");
  CHECK_EQ_STR("agent_listen", e.field);
  CHECK_EQ_INT(2, e.line);
  e = parse_fail("agent_max_connections: 8\n");
  CHECK_EQ_STR("agent_max_connections", e.field);
}

GP_TESTS(agents_may_have_a_listener_of_their_own, the_store_is_a_postgresql_url, node_templates_are_read_and_checked, a_full_config_is_read, mistakes_name_file_line_and_key, tokens_can_live_in_their_own_file,
         the_example_config_is_valid)
