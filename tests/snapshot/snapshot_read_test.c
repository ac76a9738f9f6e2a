/* SPDX-License-Identifier: Apache-2.0 */
/* Reading cluster snapshots: the issue's example reads exactly, every feature key lands in
 * the model, and every kind of bad input is refused with file, line and key, never a
 * crash. */
#include "snapshot/snapshot.h"
#include "test.h"

static int read_text(const char *text, gp_snapshot **ret, gp_err *e) {
  gp_doc *d = NULL;
  memset(e, 0, sizeof *e);
  int r = gp_doc_load_string("snap.yaml", text, strlen(text), &d, e);
  if (r) return r;
  r = gp_snapshot_read(d, ret, e);
  gp_doc_free(d);
  return r;
}

/* The example of issue 2, verbatim. */
static const char *issue_example =
    "now: 1000                                  # seconds\n"
    "policy: {placement: binpack, backfill: true, reclaim: true, min_runtime: 0}\n"
    "priority_classes:                          # optional; defaults as in DESIGN.md\n"
    "  - {name: inference, priority: 100, preemptible: false}\n"
    "queues:\n"
    "  - {name: org/a, deserved: 4, limit: 8, weight: 1}\n"
    "nodes:\n"
    "  - {name: n1, model: H100-80GB, gpus: 8, cpus: 96, mem_gib: 1024,\n"
    "     nvlink_domains: [[0,1,2,3],[4,5,6,7]], labels: {topology.block: b1},\n"
    "     capacity: on-demand, state: up}       # state: up | down | drain | cordon\n"
    "jobs:\n"
    "  - {id: j1, queue: org/a, user: alice, priority: training, gpus: 2, tasks: 1,\n"
    "     gpu_type: [H100-80GB], time_limit: 3600, submitted_at: 0,\n"
    "     state: running, placements: [{node: n1, gpu_ids: [0, 1]}],\n"
    "     started_at: 10, last_checkpoint_at: 500}\n"
    "  - {id: j2, queue: org/a, user: bob, gpus: 8, tasks: 2, after_ok: [j1],\n"
    "     submitted_at: 20, state: pending}     # state: pending|running|held|completed|failed\n"
    "  - {id: j0, queue: org/a, user: bob, gpus: 1, submitted_at: 0, state: failed, exit_code: 1,\n"
    "     afternotok: [j1], name: solo, singleton: true}\n";

static void the_issue_example_reads_exactly(void) {
  gp_snapshot *s = NULL;
  gp_err e;
  /* Its class list adds to the defaults, so j1's "training" is still there. */
  int r = read_text(issue_example, &s, &e);
  if (r) fprintf(stderr, "%s:%d: %s: %s\n", e.file, e.line, e.field, e.message);
  REQUIRE(r == 0);
  CHECK_EQ_INT(1000, s->now);
  CHECK_EQ_INT(GP_PLACE_BINPACK, s->policy.placement);
  CHECK(s->policy.backfill && s->policy.reclaim);
  REQUIRE(s->view.n_nodes == 1);
  const gp_node *n = &s->view.nodes[0];
  CHECK_EQ_STR("n1", n->name);
  CHECK_EQ_INT(8, n->n_gpus);
  CHECK_EQ_INT(80 * 1024, n->gpu_mem_mib);
  CHECK_EQ_INT(96000, n->cpu_milli);
  CHECK_EQ_INT(1024 * 1024, n->mem_mib);
  CHECK_EQ_INT(0, n->gpus[3].nvlink_domain);
  CHECK_EQ_INT(1, n->gpus[4].nvlink_domain);
  CHECK_EQ_INT(1, n->n_labels);
  CHECK_EQ_STR("topology.block", n->labels[0].key);
  CHECK_EQ_STR("b1", n->labels[0].value);
  REQUIRE(s->view.n_jobs == 3);
  const gp_job *j1 = &s->view.jobs[0], *j2 = &s->view.jobs[1], *j0 = &s->view.jobs[2];
  CHECK_EQ_INT(GP_JOB_RUNNING, j1->state);
  CHECK_EQ_INT(2, j1->req.gpus_per_task);
  REQUIRE(j1->n_placements == 1);
  CHECK_EQ_INT(0, j1->placements[0].node);
  CHECK_EQ_INT(0x3, j1->placements[0].gpu_mask);
  CHECK_EQ_INT(1000, j1->placements[0].gpu_milli);
  CHECK_EQ_INT(10, j1->started_at);
  CHECK_EQ_INT(500, j1->last_checkpoint_at);
  CHECK_EQ_INT(3600, j1->time_limit);
  CHECK_EQ_STR("H100-80GB", j1->req.gpu_models[0]);
  CHECK_EQ_INT(2, j2->req.tasks);
  CHECK_EQ_INT(8, j2->req.gpus_per_task);
  REQUIRE(j2->n_after_ok == 1);
  CHECK_EQ_STR("j1", j2->after_ok[0]);
  CHECK_EQ_INT(GP_JOB_FAILED, j0->state);
  CHECK_EQ_INT(1, j0->exit_code);
  REQUIRE(j0->n_after_not_ok == 1);
  CHECK_EQ_STR("j1", j0->after_not_ok[0]);
  CHECK(j0->singleton);
  CHECK_EQ_STR("solo", j0->name);
  gp_snapshot_free(s);
}

static void every_feature_key_reaches_the_model(void) {
  const char *text =
      "now: 50\n"
      "policy: {sharing: bestfit, default_priority: batch, default_time_limit: 2h}\n"
      "queues: [{name: org/a, deserved: 2}, {name: org/b}]\n"
      "pools: [{name: inf, queue: org/b, selector: {pool: inference}, lend: false}]\n"
      "nodes:\n"
      "  - name: a1\n"
      "    model: A100-80GB\n"
      "    gpus: 4\n"
      "    mem: 512G\n"
      "    capacity: spot\n"
      "    state: drain\n"
      "    gpu_mode: shared\n"
      "    gpu_list:\n"
      "      - {index: 1, health: failed, uuid: GPU-1}\n"
      "      - {index: 2, mode: 'timeslice:4'}\n"
      "      - {index: 3, mode: 'mig:3g.40gb,2g.20gb,1g.10gb,1g.10gb'}\n"
      "  - {name: l1, model: L40S, gpus: 2, gpu_mem: 46G}\n"
      "jobs:\n"
      "  - {id: f, queue: org/a, gpu_fraction: 0.25, state: running, started_at: 40,\n"
      "     placements: [{node: a1, gpu_ids: [0]}]}\n"
      "  - {id: m, queue: org/a, mig: 1g.10gb, state: running,\n"
      "     placements: [{node: a1, gpu_ids: [3], mig_instance: 2}]}\n"
      "  - {id: g, queue: org/b, gpu_mem: 20G, cpus: 2.5, mem_gib: 16, allow_spot: true,\n"
      "     node_selector: {pool: inference}, gpu_type: L40S, min_gpu_mem: 40G,\n"
      "     afterok: [f], afterany: [m], after: [x], requeue: false, restarts: 2,\n"
      "     state: held, time_limit: '1:00:00'}\n";
  gp_snapshot *s = NULL;
  gp_err e;
  int r = read_text(text, &s, &e);
  if (r) fprintf(stderr, "%s:%d: %s: %s\n", e.file, e.line, e.field, e.message);
  REQUIRE(r == 0);
  CHECK_EQ_INT(GP_SHARE_POLICY_BESTFIT, s->policy.share);
  CHECK_EQ_INT(7200, s->policy.default_time_limit);
  CHECK(!s->view.pools[0].lend);
  const gp_node *a1 = &s->view.nodes[0];
  CHECK_EQ_INT(GP_CAP_SPOT, a1->capacity);
  CHECK_EQ_INT(GP_NODE_DRAIN, a1->state);
  CHECK_EQ_INT(512 * 1024, a1->mem_mib);
  CHECK_EQ_INT(GP_UNTRACKED_CPU_MILLI, a1->cpu_milli);
  CHECK_EQ_INT(GP_SHARE_SHARED, a1->gpus[0].mode);
  CHECK_EQ_INT(GP_GPU_FAILED, a1->gpus[1].health);
  CHECK_EQ_STR("GPU-1", a1->gpus[1].uuid);
  CHECK_EQ_INT(GP_SHARE_TIMESLICE, a1->gpus[2].mode);
  CHECK_EQ_INT(4, a1->gpus[2].timeslice_replicas);
  CHECK_EQ_INT(GP_SHARE_MIG, a1->gpus[3].mode);
  CHECK_EQ_INT(4, a1->gpus[3].n_mig);
  CHECK_EQ_INT(-1, a1->gpus[0].nvlink_domain);
  CHECK_EQ_INT(46 * 1024, s->view.nodes[1].gpu_mem_mib);
  const gp_job *f = &s->view.jobs[0], *m = &s->view.jobs[1], *g = &s->view.jobs[2];
  CHECK_EQ_INT(250, f->req.gpu_milli);
  CHECK_EQ_INT(0, f->req.gpus_per_task);
  CHECK_EQ_INT(250, f->placements[0].gpu_milli);
  CHECK_EQ_INT(20 * 1024, f->placements[0].gpu_mem_mib);
  CHECK_EQ_INT(40, f->started_at);
  CHECK_EQ_STR("1g.10gb", m->req.mig_profile);
  CHECK_EQ_INT(2, m->placements[0].mig_instance);
  CHECK_EQ_INT(20 * 1024, g->req.gpu_mem_mib);
  CHECK_EQ_INT(2500, g->req.cpu_milli);
  CHECK_EQ_INT(16 * 1024, g->req.mem_mib);
  CHECK(g->req.allow_spot);
  CHECK_EQ_INT(40 * 1024, g->req.min_gpu_mem_mib);
  CHECK_EQ_INT(1, g->req.n_gpu_models);
  CHECK_EQ_STR("pool", g->req.node_selector[0].key);
  CHECK_EQ_STR("f", g->after_ok[0]);
  CHECK_EQ_STR("m", g->after_any[0]);
  CHECK_EQ_STR("x", g->after[0]);
  CHECK(!g->requeue);
  CHECK_EQ_INT(2, g->restarts);
  CHECK_EQ_INT(GP_JOB_HELD, g->state);
  CHECK_EQ_INT(3600, g->time_limit);
  CHECK(f->requeue);
  CHECK_EQ_STR("unknown", f->user);
  gp_snapshot_free(s);
}

static void json_snapshots_read_too(void) {
  const char *text = "{\"now\": 5, \"queues\": [{\"name\": \"q\"}],"
                     " \"nodes\": [{\"name\": \"n\", \"model\": \"H100-80GB\", \"gpus\": 2}],"
                     " \"jobs\": [{\"id\": \"1\", \"queue\": \"q\", \"gpus\": 1}]}";
  gp_snapshot *s = NULL;
  gp_err e;
  REQUIRE(read_text(text, &s, &e) == 0);
  CHECK_EQ_STR("1", s->view.jobs[0].id);
  CHECK_EQ_INT(GP_JOB_PENDING, s->view.jobs[0].state);
  gp_snapshot_free(s);
}

/* Each bad snapshot and what the user is told: line, key, and words of the problem. */
static void bad_snapshots_name_line_and_key(void) {
  static const char *head = "now: 1\nqueues: [{name: org/a}]\n"
                            "nodes: [{name: n1, model: H100-80GB, gpus: 8}]\n";
  static const struct {
    const char *jobs_or_more, *field, *msg;
    int line;
  } bad[] = {
      {"jobs: [{id: a, queue: org/a, gpus: 1, colour: red}]\n", "jobs[0].colour",
       "unknown key", 4},
      {"jobs: [{id: a, queue: org/a, gpus: two}]\n", "jobs[0].gpus", "integer", 4},
      {"jobs: [{id: a, queue: org/b, gpus: 1}]\n", "jobs[0].queue", "no queue 'org/b'", 4},
      {"jobs:\n  - {id: a, queue: org/a, gpus: 1, state: running,\n"
       "     placements: [{node: n9, gpu_ids: [0]}]}\n",
       "jobs[0].placements[0].node", "no node 'n9'", 6},
      {"jobs:\n  - {id: a, queue: org/a, gpus: 1, state: running,\n"
       "     placements: [{node: n1, gpu_ids: [8]}]}\n",
       "jobs[0].placements[0].gpu_ids[0]", "out of range", 6},
      {"jobs:\n  - {id: a, queue: org/a, gpus: 2, state: running,\n"
       "     placements: [{node: n1, gpu_ids: [0]}]}\n",
       "jobs[0].placements[0].gpu_ids", "asks for 2 GPUs", 6},
      {"jobs:\n  - {id: a, queue: org/a, gpus: 1, state: running,\n"
       "     placements: [{node: n1, gpu_ids: [0]}]}\n"
       "  - {id: b, queue: org/a, gpus: 1, state: running,\n"
       "     placements: [{node: n1, gpu_ids: [0]}]}\n",
       "jobs[1].placements[0]", "already held", 8},
      {"jobs: [{id: a, queue: org/a, gpus: 1, state: running}]\n", "jobs[0].placements",
       "missing", 4},
      {"jobs: [{id: a, queue: org/a, gpus: 1, placements: [{node: n1, gpu_ids: [0]}]}]\n",
       "jobs[0].placements", "only running or stopping", 4},
      {"jobs:\n  - {id: a, queue: org/a, gpus: 1}\n  - {id: a, queue: org/a, gpus: 1}\n",
       "jobs[1].id", "defined twice", 6},
      {"jobs: [{id: a, queue: org/a, gpus: 1, priority: urgent}]\n", "jobs[0].priority",
       "not a priority class", 4},
      {"jobs: [{id: a, queue: org/a, gpus: 1, state: lost}]\n", "jobs[0].state",
       "not one of", 4},
      {"jobs: [{id: a, queue: org/a, gpus: 1, gpu_fraction: 0.5}]\n", "jobs[0].gpu_fraction",
       "give one of", 4},
      {"jobs: [{id: a, queue: org/a, gpu_fraction: 1.5}]\n", "jobs[0].gpu_fraction",
       "below 1", 4},
      {"jobs: [{id: a, queue: org/a, gpus: 1, after_ok: [x], afterok: [y]}]\n",
       "jobs[0].afterok", "not both", 4},
      {"jobs: [{id: a, queue: org/a, gpus: 1, time_limit: forever}]\n", "jobs[0].time_limit",
       "duration", 4},
      {"jobs: [{id: a, queue: org/a, gpus: 1, tasks: 0}]\n", "jobs[0].tasks", "1..", 4},
      {"jobs: [{id: a, queue: org/a, gpus: 1, time_limit: 99999999999999}]\n",
       "jobs[0].time_limit", "longer than", 4},
      {"jobs: [{id: a, queue: org/a, gpus: 1, submitted_at: -5}]\n", "jobs[0].submitted_at",
       "must be 0..", 4},
      {"jobs: [{id: a, queue: org/a, gpus: 1}]\ncolour: red\n", "colour", "unknown key", 5},
      {"jobs: [{id: '', queue: org/a, gpus: 1}]\n", "jobs[0].id", "empty", 4},
      {"jobs: {id: a}\n", "jobs", "a list", 4},
      {"jobs: [{queue: org/a, gpus: 1}]\n", "jobs[0].id", "missing", 4},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char text[2048];
    snprintf(text, sizeof text, "%s%s", head, bad[i].jobs_or_more);
    gp_snapshot *s = NULL;
    gp_err e;
    int r = read_text(text, &s, &e);
    CHECK(r != 0);
    if (r == 0) {
      fprintf(stderr, "  case %zu was accepted\n", i);
      gp_snapshot_free(s);
      continue;
    }
    CHECK_EQ_STR("snap.yaml", e.file);
    CHECK_EQ_STR(bad[i].field, e.field);
    CHECK_CONTAINS(e.message, bad[i].msg);
    if (e.line != bad[i].line) fprintf(stderr, "  case %zu: line %d\n", i, e.line);
    CHECK_EQ_INT(bad[i].line, e.line);
  }
}

static void bad_nodes_name_line_and_key(void) {
  static const struct {
    const char *nodes, *field, *msg;
    int line;
  } bad[] = {
      {"nodes: [{name: n1, model: H100-80GB, gpus: 33}]\n", "nodes[0].gpus", "0..32", 3},
      {"nodes: [{name: n1, gpus: 8}]\n", "nodes[0].model", "missing", 3},
      {"nodes: [{name: n1, model: Mystery, gpus: 8}]\n", "nodes[0].gpu_mem", "not known", 3},
      {"nodes: [{name: n1, model: H100-80GB, gpus: 4, nvlink_domains: [[0,1],[1,2]]}]\n",
       "nodes[0].nvlink_domains[1][0]", "two NVLink domains", 3},
      {"nodes: [{name: n1, model: H100-80GB, gpus: 4, nvlink_domains: [[0,4]]}]\n",
       "nodes[0].nvlink_domains[0][1]", "out of range", 3},
      {"nodes: [{name: n1, model: H100-80GB, gpus: 4, state: broken}]\n", "nodes[0].state",
       "up, down, drain, cordon", 3},
      {"nodes: [{name: n1, model: H100-80GB, gpus: 4, capacity: free}]\n", "nodes[0].capacity",
       "spot", 3},
      {"nodes:\n  - {name: n1, model: H100-80GB, gpus: 4}\n  - {name: n1, model: H100-80GB}\n",
       "nodes[1].name", "defined twice", 5},
      {"nodes: [{name: n1, model: H100-80GB, gpus: 4, gpu_list: [{index: 4}]}]\n",
       "nodes[0].gpu_list[0].index", "out of range", 3},
      {"nodes: [{name: n1, model: H100-80GB, gpus: 4, gpu_mode: 'mig:7g.80gb,1g.10gb'}]\n",
       "nodes[0].gpu_mode", "", 3},
      {"nodes: [{name: n1, model: H100-80GB, gpus: 4, gpu_mode: 'timeslice:1'}]\n",
       "nodes[0].gpu_mode", "between 2 and 64", 3},
      {"nodes: [{name: n1, model: H100-80GB, gpus: 4, mem_gib: 1, mem: 1G}]\n", "nodes[0].mem",
       "not both", 3},
      {"nodes: [{name: n1, model: H100-80GB, gpus: 4, labels: [a]}]\n", "nodes[0].labels",
       "a map", 3},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char text[2048];
    snprintf(text, sizeof text, "now: 1\nqueues: [{name: org/a}]\n%s", bad[i].nodes);
    gp_snapshot *s = NULL;
    gp_err e;
    int r = read_text(text, &s, &e);
    CHECK(r != 0);
    if (r == 0) {
      fprintf(stderr, "  case %zu was accepted\n", i);
      gp_snapshot_free(s);
      continue;
    }
    CHECK_EQ_STR(bad[i].field, e.field);
    CHECK_CONTAINS(e.message, bad[i].msg);
    if (e.line != bad[i].line) fprintf(stderr, "  case %zu: line %d\n", i, e.line);
    CHECK_EQ_INT(bad[i].line, e.line);
  }
}

static void missing_sections_and_garbage_are_refused(void) {
  gp_snapshot *s = NULL;
  gp_err e;
  CHECK(read_text("", &s, &e) != 0);
  CHECK(read_text("queues: []\n", &s, &e) != 0);
  CHECK_EQ_STR("now", e.field);
  CHECK(read_text("now: 1\n", &s, &e) != 0);
  CHECK_EQ_STR("queues", e.field);
  CHECK(read_text("now: -5\nqueues: []\n", &s, &e) != 0);
  CHECK(read_text("- 1\n- 2\n", &s, &e) != 0);
  CHECK(read_text("now: 1\nqueues: [{name: a}]\nnodes: [{name: n\n", &s, &e) != 0);
  CHECK(e.line > 0);
  CHECK(read_text("now: 1\nqueues: [{name: org}, {name: org/a}]\n"
                  "jobs: [{id: j, queue: org, gpus: 1}]\n", &s, &e) != 0);
  CHECK_EQ_STR("jobs[0].queue", e.field);
  CHECK_CONTAINS(e.message, "not a leaf queue (it has org/a)");
  CHECK(gp_snapshot_load("/nonexistent/snap.yaml", &s, &e) != 0);
  CHECK_CONTAINS(e.message, "cannot open");
  gp_snapshot_free(NULL);
}

static void gpu_memory_comes_from_the_model_name(void) {
  int64_t m = 0;
  CHECK_EQ_INT(0, gp_gpu_model_mem_mib("H100-80GB", &m));
  CHECK_EQ_INT(80 * 1024, m);
  CHECK_EQ_INT(0, gp_gpu_model_mem_mib("A100-SXM4-40GB", &m));
  CHECK_EQ_INT(40 * 1024, m);
  CHECK_EQ_INT(0, gp_gpu_model_mem_mib("H200-141GB", &m));
  CHECK_EQ_INT(141 * 1024, m);
  CHECK_EQ_INT(0, gp_gpu_model_mem_mib("L40S", &m));
  CHECK_EQ_INT(48 * 1024, m);
  CHECK_EQ_INT(0, gp_gpu_model_mem_mib("NVIDIA H100 NVL", &m));
  CHECK_EQ_INT(94 * 1024, m);
  CHECK_EQ_INT(GP_ENOENT, gp_gpu_model_mem_mib("Mystery", &m));
}

GP_TESTS(the_issue_example_reads_exactly, every_feature_key_reaches_the_model,
         json_snapshots_read_too, bad_snapshots_name_line_and_key, bad_nodes_name_line_and_key,
         missing_sections_and_garbage_are_refused, gpu_memory_comes_from_the_model_name)
