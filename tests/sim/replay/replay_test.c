/* SPDX-License-Identifier: Apache-2.0 */
/* Replays small hand-made traces through the real scheduler core and checks outcomes that
 * can be worked out on paper: strict FIFO against backfill, shortest-job-first, fair share
 * with reclaim against FIFO for two teams, checkpoints, time limits, static partitions; and
 * that a slice of the real Philly trace with node failures replays byte for byte the same. */
#include <unistd.h>

#include "sim/replay/replay.h"
#include "replay_util.h"
#include "test.h"

/* Replays `csv` on `fleet` with queues from YAML text (NULL: one per trace queue). */
static gp_replay_result *replay(const char *csv, const char *fleet, const char *queues_yaml,
                                gp_replay_preset preset, gp_replay_config *tweak) {
  gp_trace *t = trace_of(csv);
  gp_fleet *f = NULL;
  gp_err e = {0};
  REQUIRE(gp_fleet_load(fleet, false, &f, &e) == 0);
  gp_replay_queues *q = NULL;
  if (queues_yaml) {
    char *path = write_tmp("queues.yaml", queues_yaml);
    if (gp_replay_queues_load(path, &q, &e)) fprintf(stderr, "queues: %s\n", e.message);
    unlink(path);
    free(path);
    REQUIRE(q);
  } else {
    q = gp_replay_queues_from_trace(t);
  }
  gp_replay_config c;
  if (tweak) c = *tweak;
  else gp_replay_config_init(&c);
  gp_replay_preset_policy(preset, &c.policy);
  c.policy_name = gp_replay_preset_name(preset);
  c.oracle_limits = preset == GP_REPLAY_SJF;
  c.partition = c.partition || gp_replay_preset_partitioned(preset);
  gp_replay_result *r = NULL;
  if (gp_replay_run(&c, t, f, q, &r, &e)) fprintf(stderr, "replay: %s\n", e.message);
  REQUIRE(r);
  gp_trace_free(t);
  gp_fleet_free(f);
  gp_replay_queues_free(q);
  return r;
}

/* One 8-GPU node. A takes 6 GPUs for 100 s; B wants all 8; C wants 2 for 50 s.
 * FIFO: A 0-100, B waits for A: 100-200, C may not pass B: 200-250.
 *   waits 0 + 99 + 198 = 297 -> avg 99; JCTs 100, 199, 248 -> avg 182.33 (547 / 3).
 * Backfill: B reserves t=200 (A's limit: 2 x 100 s from start); C's limit is 100 s, so
 *   it ends by t=102 < 200 and starts at once on the 2 idle GPUs: C 2-52, B 100-200.
 *   waits 0 + 99 + 0 -> avg 33; JCTs 100, 199, 50 -> avg 116.33. */
static const char hol_trace[] =
    "submit_time,duration,gpus,queue\n"
    "0,100,6,q\n"
    "1,100,8,q\n"
    "2,50,2,q\n";

static void fifo_makes_everyone_wait_behind_a_big_job(void) {
  gp_replay_result *r = replay(hol_trace, "1x8", NULL, GP_REPLAY_FIFO, NULL);
  CHECK_EQ_INT(3, r->completed);
  CHECK_NEAR(99.0, r->avg_wait_s, 1e-9);
  CHECK_NEAR(547.0 / 3, r->avg_jct_s, 1e-9);
  CHECK_NEAR(198.0, r->p99_wait_s, 1e-9);
  CHECK_NEAR(250.0, r->makespan_s, 1e-9);
  /* GPU-seconds: 6x100 + 8x100 + 2x50 = 1500 of 8 x 250 = 2000. */
  CHECK_NEAR(0.75, r->gpu_utilization, 1e-9);
  gp_replay_result_free(r);
}

static void backfill_lets_a_short_job_through_without_delaying_the_big_one(void) {
  gp_replay_result *r = replay(hol_trace, "1x8", NULL, GP_REPLAY_BACKFILL, NULL);
  CHECK_EQ_INT(3, r->completed);
  CHECK_NEAR(33.0, r->avg_wait_s, 1e-9);
  CHECK_NEAR(349.0 / 3, r->avg_jct_s, 1e-9);
  CHECK_NEAR(200.0, r->makespan_s, 1e-9); /* B still starts at 100 */
  CHECK_EQ_INT(0, r->preemptions);
  gp_replay_result_free(r);
}

/* J holds the node 0-100. At t=1 a long job L (300 s) and a short one S (10 s) arrive,
 * L first. FIFO: L 100-400, S 400-410: waits 0, 99, 399 -> avg 166.
 * SJF (true durations): S 100-110, L 110-410: waits 0, 109, 99 -> avg 69.33. */
static const char sjf_trace[] =
    "submit_time,duration,gpus,queue\n"
    "0,100,8,q\n"
    "1,300,8,q\n"
    "1,10,8,q\n";

static void sjf_runs_the_short_job_first(void) {
  gp_replay_result *f = replay(sjf_trace, "1x8", NULL, GP_REPLAY_FIFO, NULL);
  gp_replay_result *s = replay(sjf_trace, "1x8", NULL, GP_REPLAY_SJF, NULL);
  CHECK_NEAR(166.0, f->avg_wait_s, 1e-9);
  CHECK_NEAR(208.0 / 3, s->avg_wait_s, 1e-9);
  CHECK_NEAR(410.0, s->makespan_s, 1e-9);
  gp_replay_result_free(f);
  gp_replay_result_free(s);
}

/* Two teams deserve 4 GPUs each of one 8-GPU node. Team a submits eight 2-GPU jobs of
 * 100 s at t=0; team b two 2-GPU jobs of 100 s at t=1. */
static const char teams_trace[] =
    "submit_time,duration,gpus,queue\n"
    "0,100,2,a\n0,100,2,a\n0,100,2,a\n0,100,2,a\n"
    "0,100,2,a\n0,100,2,a\n0,100,2,a\n0,100,2,a\n"
    "1,100,2,b\n1,100,2,b\n";
static const char teams_queues[] =
    "queues:\n"
    "  - {name: a, deserved: 4}\n"
    "  - {name: b, deserved: 4}\n";

/* FIFO: a's first four run 0-100 on all 8 GPUs, a's next four 100-200, b's two 200-300.
 * b waits 199 each; all: (4 x 0 + 4 x 100 + 2 x 199) / 10 = 79.8. */
static void fifo_lets_one_team_take_everything(void) {
  gp_replay_result *r = replay(teams_trace, "1x8", teams_queues, GP_REPLAY_FIFO, NULL);
  CHECK_EQ_INT(10, r->completed);
  CHECK_NEAR(79.8, r->avg_wait_s, 1e-9);
  REQUIRE(r->n_queues == 2);
  CHECK_EQ_STR("b", r->queues[1].name);
  CHECK_NEAR(199.0, r->queues[1].avg_wait_s, 1e-9);
  CHECK_NEAR(300.0, r->makespan_s, 1e-9);
  gp_replay_result_free(r);
}

/* gpool: a borrows b's idle half at t=0 (four jobs on 8 GPUs). At t=1 b is below its fair
 * share (0 of 4) and a above (8 of 4): the core reclaims two of a's jobs; they keep their
 * GPUs for the 30 s grace, so b's jobs start at t=31: b waits 30 each. The two victims ran
 * 31 s each on 2 GPUs with no checkpoint (the first is due after 30 min): 124 GPU-seconds
 * lost. Every job still finishes. */
static void fair_share_reclaims_lent_gpus_for_the_team_below_its_share(void) {
  gp_replay_result *r = replay(teams_trace, "1x8", teams_queues, GP_REPLAY_GPOOL, NULL);
  CHECK_EQ_INT(10, r->completed);
  CHECK_NEAR(30.0, r->queues[1].avg_wait_s, 1e-9);
  CHECK_EQ_INT(2, r->preemptions);
  CHECK_EQ_INT(2, r->queues[0].preempted);
  CHECK_NEAR(124.0 / 3600, r->gpu_hours_lost, 1e-9);
  gp_replay_result_free(r);
}

/* The same with b arriving at t=50 and a checkpoint every 20 s: the victims are told at
 * t=50 (50 s of progress, 40 s of it checkpointed) and let go at t=80, so each loses
 * 2 GPUs x (80 - 40) s = 80 GPU-seconds: 160 in all. b waits 30 each. */
static void checkpoints_bound_the_work_a_preemption_loses(void) {
  static const char trace[] =
      "submit_time,duration,gpus,queue\n"
      "0,100,2,a\n0,100,2,a\n0,100,2,a\n0,100,2,a\n"
      "0,100,2,a\n0,100,2,a\n0,100,2,a\n0,100,2,a\n"
      "50,100,2,b\n50,100,2,b\n";
  gp_replay_config c;
  gp_replay_config_init(&c);
  c.checkpoint_interval = 20;
  gp_replay_result *r = replay(trace, "1x8", teams_queues, GP_REPLAY_GPOOL, &c);
  CHECK_EQ_INT(10, r->completed);
  CHECK_EQ_INT(2, r->preemptions);
  CHECK_NEAR(160.0 / 3600, r->gpu_hours_lost, 1e-9);
  CHECK_NEAR(30.0, r->queues[1].avg_wait_s, 1e-9);
  gp_replay_result_free(r);
}

/* A time limit from the trace is enforced: x needs 100 s but may run 60 s (TIMEOUT at
 * t=60); y needs 50 s of its 60. JCTs 60 and 50. */
static void trace_time_limits_end_jobs_as_timeout(void) {
  static const char trace[] =
      "submit_time,duration,gpus,queue,time_limit\n"
      "0,100,4,q,60\n"
      "0,50,4,q,1m\n";
  gp_replay_result *r = replay(trace, "1x8", NULL, GP_REPLAY_BACKFILL, NULL);
  CHECK_EQ_INT(1, r->timeouts);
  CHECK_EQ_INT(1, r->completed);
  CHECK_NEAR(55.0, r->avg_jct_s, 1e-9);
  CHECK_NEAR(60.0, r->makespan_s, 1e-9);
  gp_replay_result_free(r);
}

/* A job no node could ever hold does not block the replay: it is refused (or left
 * unfinished) and the rest run. */
static void impossible_jobs_do_not_block_the_rest(void) {
  static const char trace[] =
      "submit_time,duration,gpus,queue\n"
      "0,100,16,q\n"
      "1,10,8,q\n";
  gp_replay_result *r = replay(trace, "1x8", NULL, GP_REPLAY_BACKFILL, NULL);
  CHECK_EQ_INT(1, r->completed);
  CHECK_EQ_INT(1, r->rejected + r->unfinished);
  gp_replay_result_free(r);
}

/* Static partitions: VCs a and b own one 8-GPU node each. Team a runs two 8-GPU jobs of
 * 100 s at t=0. Pooled backfill runs both at once (waits 0); inside a's partition the
 * second waits for the first: avg wait 50. */
static void static_partitions_keep_a_team_off_idle_nodes(void) {
  static const char trace[] = "submit_time,duration,gpus,queue\n0,100,8,a\n0,100,8,a\n";
  char *vc = write_tmp("vc.csv", "vc,node num\na,1\nb,1\n");
  gp_trace *t = trace_of(trace);
  gp_fleet *f = NULL;
  gp_replay_queues *q = NULL;
  gp_err e = {0};
  REQUIRE(gp_fleet_from_vc_file(vc, &f, &e) == 0);
  REQUIRE(gp_replay_queues_from_vc_file(vc, 8, t, &q, &e) == 0);
  CHECK_EQ_INT(16, f->total_gpus);
  CHECK_NEAR(8.0, q->queues[0].deserved_gpus, 1e-9);
  double waits[2];
  for (int k = 0; k < 2; k++) {
    gp_replay_config c;
    gp_replay_config_init(&c);
    gp_replay_preset p = k ? GP_REPLAY_BACKFILL_VC : GP_REPLAY_BACKFILL;
    gp_replay_preset_policy(p, &c.policy);
    c.partition = gp_replay_preset_partitioned(p);
    c.policy_name = gp_replay_preset_name(p);
    gp_replay_result *r = NULL;
    if (gp_replay_run(&c, t, f, q, &r, &e)) fprintf(stderr, "replay: %s\n", e.message);
    REQUIRE(r);
    CHECK_EQ_INT(2, r->completed);
    waits[k] = r->avg_wait_s;
    gp_replay_result_free(r);
  }
  CHECK_NEAR(0.0, waits[0], 1e-9);
  CHECK_NEAR(50.0, waits[1], 1e-9);
  unlink(vc);
  free(vc);
  gp_trace_free(t);
  gp_fleet_free(f);
  gp_replay_queues_free(q);
}

static void a_queue_missing_from_the_queue_file_is_named_with_its_line(void) {
  static const char trace[] = "submit_time,duration,gpus,queue\n0,100,1,a\n5,10,1,zz\n";
  gp_trace *t = trace_of(trace);
  gp_fleet *f = NULL;
  gp_replay_queues *q = NULL;
  gp_err e = {0};
  REQUIRE(gp_fleet_load("2x8xH100", false, &f, &e) == 0);
  char *path = write_tmp("q.yaml", "- {name: a, deserved: 8}\n");
  REQUIRE(gp_replay_queues_load(path, &q, &e) == 0);
  gp_replay_config c;
  gp_replay_config_init(&c);
  gp_replay_result *r = NULL;
  CHECK_EQ_INT(GP_EINVAL, gp_replay_run(&c, t, f, q, &r, &e));
  CHECK_EQ_INT(3, e.line);
  CHECK_CONTAINS(e.message, "'zz'");
  unlink(path);
  free(path);
  gp_trace_free(t);
  gp_fleet_free(f);
  gp_replay_queues_free(q);
}

/* A slice of the real Philly trace on the Helios fleet, with node failures: two runs with
 * one seed give the same bytes (summary and per-minute series); another seed does not. */
static char *philly_run(uint64_t seed, char **ret_csv) {
  char path[1024];
  snprintf(path, sizeof path, "%s/tests/data/philly_head2000.csv", GP_SOURCE_DIR);
  gp_trace_opts o = {.max_jobs = 1500};
  gp_trace *t = NULL;
  gp_err e = {0};
  REQUIRE(gp_trace_read_file(path, &o, &t, &e) == 0);
  snprintf(path, sizeof path, "%s/tests/data/philly_vc_nodes.csv", GP_SOURCE_DIR);
  gp_fleet *f = NULL;
  gp_replay_queues *q = NULL;
  REQUIRE(gp_fleet_from_vc_file(path, &f, &e) == 0);
  REQUIRE(gp_replay_queues_from_vc_file(path, 8, t, &q, &e) == 0);
  CHECK_EQ_INT(2816, f->total_gpus);
  gp_replay_config c;
  gp_replay_config_init(&c);
  c.seed = seed;
  c.mtbf_hours = 1000;
  c.time_scale = 20; /* twenty times the load, so queues form and reclaim happens */
  char *buf = NULL;
  size_t len = 0;
  c.csv = open_memstream(&buf, &len);
  gp_replay_result *r = NULL;
  if (gp_replay_run(&c, t, f, q, &r, &e)) fprintf(stderr, "replay: %s\n", e.message);
  REQUIRE(r);
  fclose(c.csv);
  CHECK(r->node_failures > 0);
  CHECK_EQ_INT(1500, r->completed + r->timeouts + r->rejected + r->unfinished);
  char *json = gp_replay_result_json(r, false);
  gp_replay_result_free(r);
  gp_trace_free(t);
  gp_fleet_free(f);
  gp_replay_queues_free(q);
  *ret_csv = buf;
  return json;
}

static void same_input_and_seed_give_byte_identical_output(void) {
  char *csv1, *csv2, *csv3;
  char *a = philly_run(7, &csv1), *b = philly_run(7, &csv2), *c = philly_run(8, &csv3);
  CHECK_EQ_STR(a, b);
  CHECK(strcmp(csv1, csv2) == 0);
  CHECK(strcmp(a, c) != 0);
  CHECK_CONTAINS(a, "\"wall_seconds\": 0.0");
  CHECK(strlen(csv1) > 1000);
  free(a), free(b), free(c), free(csv1), free(csv2), free(csv3);
}

/* The replay skips core calls that provably start nothing. Calling after every event
 * batch instead must give the very same jobs' fates (only call counts and the freshness
 * of fair shares may differ), for strict FIFO and for backfill, on a loaded Philly slice. */
static void skipped_calls_change_no_job_outcome(void) {
  char path[1024], vc[1024];
  snprintf(path, sizeof path, "%s/tests/data/philly_head2000.csv", GP_SOURCE_DIR);
  snprintf(vc, sizeof vc, "%s/tests/data/philly_vc_nodes.csv", GP_SOURCE_DIR);
  gp_trace_opts o = {.max_jobs = 1000};
  gp_trace *t = NULL;
  gp_fleet *f = NULL;
  gp_replay_queues *q = NULL;
  gp_err e = {0};
  REQUIRE(gp_trace_read_file(path, &o, &t, &e) == 0);
  REQUIRE(gp_fleet_load("40x8", false, &f, &e) == 0);
  REQUIRE(gp_replay_queues_from_vc_file(vc, 8, t, &q, &e) == 0);
  gp_replay_preset presets[] = {GP_REPLAY_FIFO, GP_REPLAY_BACKFILL};
  for (int k = 0; k < 2; k++) {
    gp_replay_result *r[2];
    for (int every = 0; every < 2; every++) {
      gp_replay_config c;
      gp_replay_config_init(&c);
      gp_replay_preset_policy(presets[k], &c.policy);
      c.policy_name = gp_replay_preset_name(presets[k]);
      c.time_scale = 10;
      c.every_event = every;
      r[every] = NULL;
      if (gp_replay_run(&c, t, f, q, &r[every], &e)) fprintf(stderr, "replay: %s\n", e.message);
      REQUIRE(r[every]);
    }
    CHECK(r[0]->sched_calls < r[1]->sched_calls);
    CHECK(r[0]->avg_wait_s > 60); /* queues did form */
    CHECK_EQ_INT(r[1]->completed, r[0]->completed);
    CHECK_NEAR(r[1]->avg_wait_s, r[0]->avg_wait_s, 1e-9);
    CHECK_NEAR(r[1]->p99_wait_s, r[0]->p99_wait_s, 1e-9);
    CHECK_NEAR(r[1]->avg_jct_s, r[0]->avg_jct_s, 1e-9);
    CHECK_NEAR(r[1]->makespan_s, r[0]->makespan_s, 1e-9);
    CHECK_NEAR(r[1]->gpu_utilization, r[0]->gpu_utilization, 1e-12);
    gp_replay_result_free(r[0]);
    gp_replay_result_free(r[1]);
  }
  gp_trace_free(t);
  gp_fleet_free(f);
  gp_replay_queues_free(q);
}

/* Three 8-GPU nodes. A, B and D take 5 GPUs each, one per node (bin-packing fills the
 * fullest node that fits); F1..F3 (1 GPU, 10/20/30 s) fill the rest of A's node. C wants
 * one task of 8 GPUs and waits at the head of strict FIFO. When F2 and F3 end, 8 and then
 * 9 GPUs are idle, but 3 + 3 + 2 or 3: no node has 8, so no call can start C and the
 * replay does not make one. The core is called at t=0 (arrivals), t=10 (first event after
 * C arrived: the core has not seen C) and t=100 (A ends: its node is idle, C starts). */
static void fifo_skips_calls_while_no_node_can_take_the_head(void) {
  static const char csv[] =
      "submit_time,duration,gpus,queue\n"
      "0,100,5,q\n0,200,5,q\n0,300,5,q\n"
      "0,10,1,q\n0,20,1,q\n0,30,1,q\n"
      "1,50,8,q\n";
  gp_replay_result *r = replay(csv, "3x8", NULL, GP_REPLAY_FIFO, NULL);
  CHECK_EQ_INT(7, r->completed);
  CHECK_NEAR(99.0 / 7, r->avg_wait_s, 1e-9); /* only C waits: 1 -> 100 */
  CHECK_EQ_INT(3, r->sched_calls);
  gp_replay_result_free(r);
  gp_replay_config every;
  gp_replay_config_init(&every);
  every.every_event = true;
  r = replay(csv, "3x8", NULL, GP_REPLAY_FIFO, &every);
  CHECK_NEAR(99.0 / 7, r->avg_wait_s, 1e-9);
  CHECK(r->sched_calls > 3);
  gp_replay_result_free(r);
}

GP_TESTS(fifo_makes_everyone_wait_behind_a_big_job,
         backfill_lets_a_short_job_through_without_delaying_the_big_one,
         sjf_runs_the_short_job_first, fifo_lets_one_team_take_everything,
         fair_share_reclaims_lent_gpus_for_the_team_below_its_share,
         checkpoints_bound_the_work_a_preemption_loses, trace_time_limits_end_jobs_as_timeout,
         impossible_jobs_do_not_block_the_rest, static_partitions_keep_a_team_off_idle_nodes,
         a_queue_missing_from_the_queue_file_is_named_with_its_line,
         same_input_and_seed_give_byte_identical_output, skipped_calls_change_no_job_outcome,
         fifo_skips_calls_while_no_node_can_take_the_head)
