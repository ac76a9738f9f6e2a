/* SPDX-License-Identifier: Apache-2.0 */
/* Plans as people and scripts read them: the JSON has the documented keys in a fixed
 * order and a canonical list order (whatever order the core decided in), shares print as
 * short numbers, and the table shows every decision with its reason. */
#include "snapshot/plan_write.h"
#include "core/sched.h"
#include "snapshot/snapshot.h"
#include "test.h"
#include "util/mem.h"

static gp_snapshot *snap(void) {
  const char *text =
      "now: 1000\n"
      "queues: [{name: org/a, deserved: 4, limit: 8}, {name: org/b, deserved: 2}]\n"
      "nodes:\n"
      "  - {name: n1, model: H100-80GB, gpus: 8}\n"
      "  - {name: m1, model: A100-80GB, gpus: 1, gpu_mode: 'mig:3g.40gb,2g.20gb,1g.10gb,1g.10gb'}\n"
      "  - {name: s1, model: A100-80GB, gpus: 1, gpu_mode: shared}\n"
      "jobs:\n"
      "  - {id: j0, queue: org/a, gpus: 2, state: running, placements: [{node: n1, gpu_ids: [0, 1]}]}\n"
      "  - {id: j1, queue: org/a, gpus: 2}\n"
      "  - {id: j2, queue: org/b, mig: 1g.10gb}\n"
      "  - {id: j3, queue: org/b, gpu_fraction: 0.25}\n"
      "  - {id: j4, queue: org/b, gpus: 1, afterok: [x]}\n";
  gp_doc *d = NULL;
  gp_err e = {0};
  REQUIRE(gp_doc_load_string("t.yaml", text, strlen(text), &d, &e) == 0);
  gp_snapshot *s = NULL;
  int r = gp_snapshot_read(d, &s, &e);
  if (r) fprintf(stderr, "%s:%d: %s: %s\n", e.file, e.line, e.field, e.message);
  REQUIRE(r == 0);
  gp_doc_free(d);
  return s;
}

/* A plan made by hand, its lists deliberately in non-canonical order. */
static gp_plan *plan(void) {
  gp_plan *p = gp_xcalloc(1, sizeof *p);
  p->arena = gp_arena_new();
  p->now = 1000;
  p->n_starts = 3;
  p->starts = gp_arena_alloc(p->arena, 3 * sizeof *p->starts);
  gp_placement *pl = gp_arena_alloc(p->arena, 3 * sizeof *pl);
  pl[0] = (gp_placement){.node = 2, .gpu_mask = 1, .gpu_milli = 250, .gpu_mem_mib = 20480,
                         .mig_instance = -1};
  pl[1] = (gp_placement){.node = 1, .gpu_mask = 1, .gpu_milli = 0, .mig_instance = 3};
  pl[2] = (gp_placement){.node = 0, .gpu_mask = 0x0c, .gpu_milli = 1000, .mig_instance = -1};
  p->starts[0] = (gp_plan_start){.job = 3, .n_placements = 1, .placements = &pl[0]};
  p->starts[1] = (gp_plan_start){.job = 2, .n_placements = 1, .placements = &pl[1]};
  p->starts[2] = (gp_plan_start){.job = 1, .n_placements = 1, .placements = &pl[2]};
  p->n_preemptions = 1;
  p->preemptions = gp_arena_alloc(p->arena, sizeof *p->preemptions);
  p->preemptions[0] = (gp_plan_preemption){.job = 0, .for_job = 1, .kind = GP_PREEMPT_RECLAIM};
  p->n_reservations = 1;
  p->reservations = gp_arena_alloc(p->arena, sizeof *p->reservations);
  p->reservations[0] = (gp_plan_reservation){.job = 4, .at = 1800};
  p->n_pending = 1;
  p->pending = gp_arena_alloc(p->arena, sizeof *p->pending);
  p->pending[0] = (gp_plan_pending){.job = 4, .reason = GP_PEND_RESOURCES,
                                    .message = "needs 1 GPU; none is free"};
  p->n_ended = 0;
  p->n_queues = 3;
  p->queues = gp_arena_alloc(p->arena, 3 * sizeof *p->queues);
  p->queues[0] = (gp_plan_queue){.name = "org", .parent = -1, .deserved = 6, .limit = -1,
                                 .weight = 1, .fair_share = 10, .allocated = 4.25};
  p->queues[1] = (gp_plan_queue){.name = "org/a", .parent = 0, .deserved = 4, .limit = 8,
                                 .weight = 1, .fair_share = 20.0 / 3, .allocated = 4};
  p->queues[2] = (gp_plan_queue){.name = "org/b", .parent = 0, .deserved = 2, .limit = -1,
                                 .weight = 1, .fair_share = 10.0 / 3, .allocated = 0.25,
                                 .pending = 1, .pending_jobs = 1};
  return p;
}

static void json_has_the_documented_shape(void) {
  gp_snapshot *s = snap();
  gp_plan *p = plan();
  gp_buf b;
  gp_buf_init(&b, 0);
  gp_plan_write_json(p, &s->view, &b);
  const char *want =
      "{\n"
      "  \"now\": 1000,\n"
      "  \"starts\": [\n"
      "    {\n"
      "      \"job\": \"j1\",\n"
      "      \"placements\": [\n"
      "        {\n"
      "          \"node\": \"n1\",\n"
      "          \"gpu_ids\": [\n"
      "            2,\n"
      "            3\n"
      "          ]\n"
      "        }\n"
      "      ]\n"
      "    },\n"
      "    {\n"
      "      \"job\": \"j2\",\n"
      "      \"placements\": [\n"
      "        {\n"
      "          \"node\": \"m1\",\n"
      "          \"gpu_ids\": [\n"
      "            0\n"
      "          ],\n"
      "          \"mig_instance\": 3,\n"
      "          \"mig_profile\": \"1g.10gb\"\n"
      "        }\n"
      "      ]\n"
      "    },\n"
      "    {\n"
      "      \"job\": \"j3\",\n"
      "      \"placements\": [\n"
      "        {\n"
      "          \"node\": \"s1\",\n"
      "          \"gpu_ids\": [\n"
      "            0\n"
      "          ],\n"
      "          \"gpu_milli\": 250,\n"
      "          \"gpu_mem_mib\": 20480\n"
      "        }\n"
      "      ]\n"
      "    }\n"
      "  ],\n"
      "  \"preemptions\": [\n"
      "    {\n"
      "      \"job\": \"j0\",\n"
      "      \"for\": \"j1\",\n"
      "      \"kind\": \"reclaim\"\n"
      "    }\n"
      "  ],\n"
      "  \"reservations\": [\n"
      "    {\n"
      "      \"job\": \"j4\",\n"
      "      \"at\": 1800\n"
      "    }\n"
      "  ],\n"
      "  \"pending\": [\n"
      "    {\n"
      "      \"job\": \"j4\",\n"
      "      \"reason\": \"Resources\",\n"
      "      \"message\": \"needs 1 GPU; none is free\"\n"
      "    }\n"
      "  ],\n"
      "  \"ended\": [],\n"
      "  \"queues\": [\n"
      "    {\n"
      "      \"name\": \"org\",\n"
      "      \"deserved\": 6,\n"
      "      \"fair_share\": 10,\n"
      "      \"allocated\": 4.25,\n"
      "      \"pending\": 0,\n"
      "      \"limit\": null,\n"
      "      \"weight\": 1,\n"
      "      \"running_jobs\": 0,\n"
      "      \"pending_jobs\": 0\n"
      "    },\n"
      "    {\n"
      "      \"name\": \"org/a\",\n"
      "      \"deserved\": 4,\n"
      "      \"fair_share\": 6.667,\n"
      "      \"allocated\": 4,\n"
      "      \"pending\": 0,\n"
      "      \"limit\": 8,\n"
      "      \"weight\": 1,\n"
      "      \"running_jobs\": 0,\n"
      "      \"pending_jobs\": 0\n"
      "    },\n"
      "    {\n"
      "      \"name\": \"org/b\",\n"
      "      \"deserved\": 2,\n"
      "      \"fair_share\": 3.333,\n"
      "      \"allocated\": 0.25,\n"
      "      \"pending\": 1,\n"
      "      \"limit\": null,\n"
      "      \"weight\": 1,\n"
      "      \"running_jobs\": 0,\n"
      "      \"pending_jobs\": 1\n"
      "    }\n"
      "  ],\n"
      "  \"mig\": []\n"
      "}\n";
  CHECK_EQ_STR(want, b.data);
  /* The same plan prints the same bytes. */
  gp_buf b2;
  gp_buf_init(&b2, 0);
  gp_plan_write_json(p, &s->view, &b2);
  CHECK_EQ_STR(b.data, b2.data);
  gp_buf_done(&b);
  gp_buf_done(&b2);
  gp_plan_free(p);
  gp_snapshot_free(s);
}

static void table_shows_each_decision(void) {
  gp_snapshot *s = snap();
  gp_plan *p = plan();
  gp_buf b;
  gp_buf_init(&b, 0);
  gp_plan_write_table(p, &s->view, &b);
  CHECK_CONTAINS(b.data, "Plan at t=1000: 3 starts, 1 preemption, 1 reservation, 1 pending, 0 ended");
  CHECK_CONTAINS(b.data, "n1:2,3");
  CHECK_CONTAINS(b.data, "m1:0/mig3");
  CHECK_CONTAINS(b.data, "s1:0@250m");
  CHECK_CONTAINS(b.data, "reclaim");
  CHECK_CONTAINS(b.data, "t=1800 (in 800s)");
  CHECK_CONTAINS(b.data, "Resources");
  CHECK_CONTAINS(b.data, "needs 1 GPU; none is free");
  CHECK_CONTAINS(b.data, "  org/b ");
  CHECK_CONTAINS(b.data, "6.67");
  /* j1 (a start) is listed before j2 and j3 although the core decided them later. */
  const char *j1 = strstr(b.data, "j1 "), *j3 = strstr(b.data, "j3 ");
  CHECK(j1 && j3 && j1 < j3);
  gp_buf_done(&b);
  gp_plan_free(p);
  gp_snapshot_free(s);
}

/* A snapshot's node_templates reach the step and the proposal, and both outputs show what
 * would be created and why each job waits. */
static void templates_show_what_would_be_created(void) {
  const char *text =
      "now: 100\n"
      "queues: [{name: lab}]\n"
      "nodes: [{name: n0, model: H100-80GB, gpus: 8}]\n"
      "node_templates:\n"
      "  - {name: h100-spot, model: H100-80GB, gpus: 8, capacity: spot, price_per_gpu_hour: 2, max_nodes: 4}\n"
      "  - {name: h100-od, model: H100-80GB, gpus: 8, price_per_gpu_hour: 7, max_nodes: 2}\n"
      "jobs:\n"
      "  - {id: big, queue: lab, gpus: 8, tasks: 2}\n"
      "  - {id: spot, queue: lab, gpus: 8, tasks: 2, allow_spot: true}\n";
  gp_doc *d = NULL;
  gp_err e = {0};
  REQUIRE(gp_doc_load_string("t.yaml", text, strlen(text), &d, &e) == 0);
  gp_snapshot *s = NULL;
  REQUIRE(gp_snapshot_read(d, &s, &e) == 0);
  gp_doc_free(d);
  gp_plan *p = NULL;
  REQUIRE(gp_sched_step(&s->policy, &s->view, s->now, &p, &e) == 0);
  REQUIRE(gp_scale_propose(&s->policy, &s->view, &s->scale, p, &e) == 0);
  gp_buf b;
  gp_buf_init(&b, 1 << 20);
  gp_plan_write_table(p, &s->view, &b);
  /* Neither 2 x 8 gang fits the one node: big (no spot) gets 2 on-demand nodes, the
   * other 2 spot nodes; each waits for them. */
  CHECK(strstr(b.data, "create  h100-od            2      big") != NULL);
  CHECK(strstr(b.data, "create  h100-spot          2      spot") != NULL);
  CHECK(strstr(b.data, "big                waiting      h100-od") != NULL);
  CHECK(strstr(b.data, "waits for nodes a provider can add") != NULL);
  gp_buf_done(&b);
  gp_buf_init(&b, 1 << 20);
  gp_plan_write_json(p, &s->view, &b);
  CHECK(strstr(b.data, "\"for_job\": \"spot\"") != NULL);
  gp_buf_done(&b);
  gp_plan_free(p);
  gp_snapshot_free(s);
}

GP_TESTS(json_has_the_documented_shape, table_shows_each_decision, templates_show_what_would_be_created)
