/* SPDX-License-Identifier: Apache-2.0 */
/* The policy readers: an admin's policy, classes, queues and pools come out as the core
 * structs, and every mistake is named by file, line and key. */
#include "snapshot/policy_read.h"
#include "test.h"

static gp_doc *load(const char *text) {
  gp_doc *d = NULL;
  gp_err e = {0};
  if (gp_doc_load_string("cfg.yaml", text, strlen(text), &d, &e)) {
    fprintf(stderr, "load failed: %s\n", e.message);
    return NULL;
  }
  return d;
}

static void policy_keys_override_the_defaults(void) {
  gp_doc *d = load("policy:\n  placement: spread\n  sharing: fgd\n  order: fifo\n"
                   "  backfill: false\n  reclaim: no\n  preemption: false\n"
                   "  dynamic_mig: off\n  min_runtime: 10m\n  default_time_limit: 4h\n"
                   "  default_priority: batch\n  seed: 42\n");
  REQUIRE(d);
  gp_arena *a = gp_arena_new();
  gp_policy p;
  gp_policy_init(&p);
  gp_err e = {0};
  REQUIRE(gp_policy_read(d, gp_doc_get(d->root, "policy"), "policy", NULL, a, &p, &e) == 0);
  CHECK_EQ_INT(GP_PLACE_SPREAD, p.placement);
  CHECK_EQ_INT(GP_SHARE_POLICY_FGD, p.share);
  CHECK_EQ_INT(GP_ORDER_FIFO, p.order);
  CHECK(!p.backfill && !p.reclaim && !p.preemption && !p.dynamic_mig);
  CHECK_EQ_INT(600, p.min_runtime);
  CHECK_EQ_INT(14400, p.default_time_limit);
  CHECK_EQ_STR("batch", p.default_priority);
  CHECK_EQ_INT(42, p.seed);
  gp_doc_free(d);
  CHECK_EQ_STR("batch", p.default_priority); /* copied: outlives the document */
  CHECK_EQ_INT(0, gp_policy_check(&p, NULL, 0, NULL, NULL, NULL, &e));
  gp_arena_free(a);
}

static void policy_mistakes_name_line_and_key(void) {
  gp_doc *d = load("policy:\n  placement: binpack\n  order: lottery\n");
  REQUIRE(d);
  gp_arena *a = gp_arena_new();
  gp_policy p;
  gp_policy_init(&p);
  gp_err e = {0};
  CHECK_EQ_INT(GP_EINVAL, gp_policy_read(d, gp_doc_get(d->root, "policy"), "policy", NULL, a,
                                         &p, &e));
  CHECK_EQ_INT(3, e.line);
  CHECK_EQ_STR("policy.order", e.field);
  CHECK_CONTAINS(e.message, "fairshare, fifo, priority, sjf");
  CHECK_EQ_STR("cfg.yaml", e.file);
  CHECK_EQ_INT(GP_ORDER_FAIRSHARE, p.order); /* untouched on failure */
  gp_doc_free(d);

  d = load("policy:\n  backfil: true\n");
  REQUIRE(d);
  CHECK_EQ_INT(GP_EINVAL, gp_policy_read(d, gp_doc_get(d->root, "policy"), "policy", NULL, a,
                                         &p, &e));
  CHECK_EQ_STR("policy.backfil", e.field);
  CHECK_EQ_STR("unknown key", e.message);
  CHECK_EQ_INT(2, e.line);
  /* A caller that reads more keys itself allows them. */
  static const char *const extra[] = {"backfil", NULL};
  CHECK_EQ_INT(0, gp_policy_read(d, gp_doc_get(d->root, "policy"), "policy", extra, a, &p, &e));
  gp_doc_free(d);

  d = load("policy: {default_time_limit: 99999999999999}\n");
  REQUIRE(d);
  CHECK_EQ_INT(GP_EINVAL, gp_policy_read(d, gp_doc_get(d->root, "policy"), "policy", NULL, a,
                                         &p, &e));
  CHECK_EQ_STR("policy.default_time_limit", e.field);
  CHECK_CONTAINS(e.message, "longer than");
  gp_doc_free(d);

  d = load("policy: {min_runtime: soon}\n");
  REQUIRE(d);
  CHECK_EQ_INT(GP_EINVAL, gp_policy_read(d, gp_doc_get(d->root, "policy"), "policy", NULL, a,
                                         &p, &e));
  CHECK_EQ_STR("policy.min_runtime", e.field);
  gp_doc_free(d);
  gp_arena_free(a);
}

static void classes_extend_and_override_the_defaults(void) {
  gp_doc *d = load("priority_classes:\n  - {name: prod, priority: 90, preemptible: false}\n"
                   "  - {name: batch, priority: 10}\n");
  REQUIRE(d);
  gp_arena *a = gp_arena_new();
  gp_priority_class *c = NULL;
  int n = 0;
  gp_err e = {0};
  REQUIRE(gp_priority_classes_read(d, gp_doc_get(d->root, "priority_classes"),
                                   "priority_classes", a, &c, &n, &e) == 0);
  CHECK_EQ_INT(6, n); /* five defaults, batch replaced, prod added */
  gp_policy p;
  gp_policy_init(&p);
  p.priority_classes = c;
  p.n_priority_classes = n;
  const gp_priority_class *prod = gp_priority_class_find(&p, "prod");
  REQUIRE(prod);
  CHECK(!prod->preemptible);
  CHECK_EQ_INT(90, prod->priority);
  const gp_priority_class *batch = gp_priority_class_find(&p, "batch");
  REQUIRE(batch);
  CHECK_EQ_INT(10, batch->priority);
  CHECK(batch->preemptible);
  CHECK(gp_priority_class_find(&p, "training") != NULL);
  CHECK(gp_priority_class_find(&p, "urgent") == NULL);
  CHECK_EQ_INT(0, gp_policy_check(&p, NULL, 0, d, NULL, NULL, &e));
  p.default_priority = "urgent";
  CHECK_EQ_INT(GP_EINVAL, gp_policy_check(&p, NULL, 0, d, NULL, NULL, &e));
  CHECK_EQ_STR("policy.default_priority", e.field);
  gp_doc_free(d);

  d = load("priority_classes:\n  - {name: a, priority: 1}\n  - {name: a, priority: 2}\n");
  REQUIRE(d);
  CHECK_EQ_INT(GP_EEXIST, gp_priority_classes_read(d, gp_doc_get(d->root, "priority_classes"),
                                                   "priority_classes", a, &c, &n, &e));
  CHECK_EQ_INT(3, e.line);
  CHECK_EQ_STR("priority_classes[1].name", e.field);
  gp_doc_free(d);

  d = load("priority_classes:\n  - {name: a}\n");
  REQUIRE(d);
  CHECK_EQ_INT(GP_EINVAL, gp_priority_classes_read(d, gp_doc_get(d->root, "priority_classes"),
                                                   "priority_classes", a, &c, &n, &e));
  CHECK_EQ_STR("priority_classes[0].priority", e.field);
  CHECK_EQ_STR("missing", e.message);
  gp_doc_free(d);
  gp_arena_free(a);
}

static void queues_have_defaults_and_checked_numbers(void) {
  gp_doc *d = load("queues:\n  - {name: org/a, deserved: 4, limit: 8, weight: 2}\n"
                   "  - name: org/b\n    users: [bob]\n    default_time_limit: 1h\n");
  REQUIRE(d);
  gp_arena *a = gp_arena_new();
  gp_queue *q = NULL;
  int n = 0;
  gp_err e = {0};
  const gp_doc_node *seq = gp_doc_get(d->root, "queues");
  /* "users" is the server's key, not ours: unknown unless the caller allows it. */
  CHECK_EQ_INT(GP_EINVAL, gp_queues_read(d, seq, "queues", NULL, a, &q, &n, &e));
  CHECK_EQ_STR("queues[1].users", e.field);
  CHECK_EQ_INT(4, e.line);
  static const char *const extra[] = {"users", NULL};
  REQUIRE(gp_queues_read(d, seq, "queues", extra, a, &q, &n, &e) == 0);
  CHECK_EQ_INT(2, n);
  CHECK_NEAR(4, q[0].deserved_gpus, 1e-9);
  CHECK_NEAR(8, q[0].limit_gpus, 1e-9);
  CHECK_NEAR(2, q[0].weight, 1e-9);
  CHECK_NEAR(GP_NO_LIMIT, q[1].limit_gpus, 1e-9);
  CHECK_NEAR(1, q[1].weight, 1e-9);
  CHECK_EQ_INT(3600, q[1].default_time_limit);
  gp_doc_free(d);

  static const struct {
    const char *text, *field, *msg;
    int line;
  } bad[] = {
      {"queues:\n  - {name: org/a, deserved: -1}\n", "queues[0].deserved", "between 0", 2},
      {"queues:\n  - {name: org/a, deserved: 4, limit: 2}\n", "queues[0].limit", "below", 2},
      {"queues:\n  - {name: org/a, weight: -1}\n", "queues[0].weight", "from 0 to", 2},
      {"queues:\n  - {name: org//a}\n", "queues[0].name", "queue name is a path", 2},
      {"queues:\n  - {name: '..'}\n", "queues[0].name", "queue name is a path", 2},
      {"queues:\n  - {name: org/./a}\n", "queues[0].name", "queue name is a path", 2},
      {"queues:\n  - {name: '*'}\n", "queues[0].name", "queue name is a path", 2},
      {"queues:\n  - {name: 'a\"b'}\n", "queues[0].name", "queue name is a path", 2},
      {"queues:\n  - {name: 'team a'}\n", "queues[0].name", "queue name is a path", 2},
      {"queues:\n  - {name: org/a}\n  - {name: org/a}\n", "queues[1].name", "twice", 3},
      {"queues:\n  - {deserved: 1}\n", "queues[0].name", "missing", 2},
      {"queues:\n  - {name: org/a, deserved: lots}\n", "queues[0].deserved", "a number", 2},
      {"queues: {name: org/a}\n", "queues", "a list", 1},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    d = load(bad[i].text);
    REQUIRE(d);
    memset(&e, 0, sizeof e);
    CHECK(gp_queues_read(d, gp_doc_get(d->root, "queues"), "queues", NULL, a, &q, &n, &e) != 0);
    CHECK_EQ_STR(bad[i].field, e.field);
    CHECK_CONTAINS(e.message, bad[i].msg);
    CHECK_EQ_INT(bad[i].line, e.line);
    gp_doc_free(d);
  }
  gp_arena_free(a);
}

static void pools_name_a_known_queue_and_one_label(void) {
  gp_doc *d = load("queues:\n  - {name: org/prod}\npools:\n"
                   "  - {name: inf, queue: org, selector: {pool: inference}, lend: false}\n"
                   "  - {name: x, queue: org/none, selector: {pool: x}}\n");
  REQUIRE(d);
  gp_arena *a = gp_arena_new();
  gp_queue *q = NULL;
  gp_pool *p = NULL;
  int nq = 0, np = 0;
  gp_err e = {0};
  REQUIRE(gp_queues_read(d, gp_doc_get(d->root, "queues"), "queues", NULL, a, &q, &nq, &e) == 0);
  CHECK_EQ_INT(GP_ENOENT, gp_pools_read(d, gp_doc_get(d->root, "pools"), "pools", NULL, q, nq,
                                        a, &p, &np, &e));
  CHECK_EQ_STR("pools[1].queue", e.field);
  CHECK_EQ_INT(5, e.line);
  CHECK(p == NULL);
  gp_doc_free(d);

  d = load("pools:\n  - {name: inf, queue: org, selector: {pool: inference}, lend: false}\n");
  REQUIRE(d);
  REQUIRE(gp_pools_read(d, gp_doc_get(d->root, "pools"), "pools", NULL, q, nq, a, &p, &np, &e) ==
          0);
  CHECK_EQ_INT(1, np);
  CHECK_EQ_STR("pool", p[0].selector.key);
  CHECK_EQ_STR("inference", p[0].selector.value);
  CHECK(!p[0].lend);
  gp_doc_free(d);

  d = load("pools:\n  - {name: inf, queue: org, selector: {a: b, c: d}}\n");
  REQUIRE(d);
  CHECK_EQ_INT(GP_EINVAL, gp_pools_read(d, gp_doc_get(d->root, "pools"), "pools", NULL, NULL, 0,
                                        a, &p, &np, &e));
  CHECK_EQ_STR("pools[0].selector", e.field);
  gp_doc_free(d);
  gp_arena_free(a);
}

GP_TESTS(policy_keys_override_the_defaults, policy_mistakes_name_line_and_key,
         classes_extend_and_override_the_defaults, queues_have_defaults_and_checked_numbers,
         pools_name_a_known_queue_and_one_label)
