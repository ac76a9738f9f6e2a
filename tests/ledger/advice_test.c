/* SPDX-License-Identifier: Apache-2.0 */
/* The advice engine on seeded histories whose answers can be worked out on paper: the MIG
 * profile a recurring job fits and its saving, the headroom's edge, a fraction, unknown use
 * giving no advice, spot only for checkpointing requeueable jobs, idle sums by queue and
 * user, quota and the utilisation band, the user filter and bad parameters. */
#include "ledger/advice.h"
#include "ledger/advice_int.h"

#include "test.h"

#define H 3600
#define T0 INT64_C(1767225600) /* 2026-01-01T00:00:00Z */
#define GIB 1024

static gp_prices *prices_of(const char *yaml) {
  gp_doc *d = NULL;
  gp_prices *p = NULL;
  gp_err err = {0};
  REQUIRE(gp_doc_load_string("p.yaml", yaml, strlen(yaml), &d, &err) == 0);
  if (gp_prices_read(d, gp_doc_get(d->root, "prices"), "prices", &p, &err))
    fprintf(stderr, "%s: %s\n", err.field, err.message);
  REQUIRE(p);
  gp_doc_free(d);
  return p;
}

static const char catalogue[] =
    "prices:\n"
    "  currency: USD\n"
    "  gpu_hour:\n"
    "    - {model: \"*\", capacity: on-demand, price: 4.0}\n"
    "    - {model: \"*\", capacity: spot, price: 1.5}\n";

static const gp_advice_model fleet[] = {
    {"A100-80GB", 80 * GIB, true, false},
    {"L40S-48GB", 48 * GIB, false, true},
};

static gp_advice_params params(const gp_prices *prices) {
  return (gp_advice_params){.from = T0, .to = T0 + 7 * 24 * H, .now = T0 + 7 * 24 * H,
                            .headroom = GP_ADVICE_HEADROOM, .checkpoint_s = GP_ADVICE_CHECKPOINT_S,
                            .prices = prices, .n_models = 2, .models = fleet};
}

/* A one-task job that held `share` of one GPU for `hours` from `start`, with its use. */
static void ran(gp_advice *a, int64_t job, const char *name, const char *user, const char *model,
                gp_capacity cap, double share, int64_t start, double hours, int gpus, int milli,
                const char *mig, int64_t peak_mib, double util_pct) {
  int64_t end = start + (int64_t)(hours * H);
  /* As the agent measures it: SM use of the MIG slice, or of the whole GPU (a fraction's
   * processes run on the whole device). */
  double part = milli > 0 ? 1.0 : share;
  double used = util_pct < 0 ? -1 : util_pct / 100.0 * part * (double)(end - start);
  gp_ledger_job_iv iv = {job, 1, "org/a", user, "n1", model, cap, share, start, end, used, -1, NULL};
  gp_advice_add_interval(a, &iv);
  gp_advice_run r = {.job = job, .name = name, .user = user, .queue = "org/a", .tasks = 1,
                     .gpus = gpus, .gpu_milli = milli, .mig = mig, .submitted_at = start,
                     .started_at = start, .peak_mem_mib = peak_mib, .avg_sm_util_pct = util_pct};
  gp_advice_add_run(a, &r);
}

static const gp_advice_item *items_of(gp_advice *a, int *n) {
  const gp_advice_item *items = NULL;
  gp_err err = {0};
  bool cut = true;
  REQUIRE(gp_advice_finish(a, &items, n, &cut, &err) == 0);
  CHECK(!cut);
  return items;
}

static const gp_advice_item *find(const gp_advice_item *items, int n, gp_advice_kind k) {
  for (int i = 0; i < n; i++)
    if (items[i].kind == k) return &items[i];
  return NULL;
}

static int count(const gp_advice_item *items, int n, gp_advice_kind k) {
  int c = 0;
  for (int i = 0; i < n; i++) c += items[i].kind == k;
  return c;
}

static double evidence(const gp_advice_item *it, const char *key) {
  for (int i = 0; i < it->n_evidence; i++)
    if (strcmp(it->evidence[i].key, key) == 0) return it->evidence[i].value;
  return -1;
}

#define NEAR(want, got) CHECK(fabs((double)(want) - (double)(got)) < 1e-6)

/* Ten runs of train-7b on whole 80 GB A100s peaking at 15 GiB and 20% SM: with 20% headroom
 * they need 18 GiB and 0.24 of a GPU, which 2g.20gb (2 of 7 slices) holds and 1g.20gb (1 of
 * 7) does not: 71% less, 5/7 of the ten GPU-hours and of their 40 USD. */
static void a_recurring_job_fits_a_smaller_mig_profile(void) {
  gp_prices *pr = prices_of(catalogue);
  gp_advice_params p = params(pr);
  gp_advice *a = gp_advice_new(&p);
  for (int i = 0; i < 10; i++)
    ran(a, 100 + i, "train-7b", "alice", "A100-80GB", GP_CAP_ON_DEMAND, 1.0, T0 + i * 10 * H, 1,
        1, 0, NULL, 15 * GIB, 20);
  int n = 0;
  const gp_advice_item *items = items_of(a, &n);
  CHECK_EQ_INT(1, count(items, n, GP_ADVICE_RIGHT_SIZE));
  const gp_advice_item *it = find(items, n, GP_ADVICE_RIGHT_SIZE);
  REQUIRE(it);
  CHECK_EQ_STR("--mig 2g.20gb", it->suggestion);
  CHECK_EQ_STR("train-7b", it->name);
  CHECK_EQ_STR("alice", it->user);
  CHECK_EQ_INT(0, it->job);
  NEAR(10.0 * 5 / 7, it->saving_gpu_h);
  CHECK(it->cost_known);
  NEAR(40.0 * 5 / 7, it->saving_cost);
  NEAR(10, evidence(it, "runs"));
  NEAR(15 * GIB, evidence(it, "peak_mem_mib"));
  CHECK(strstr(it->message, "the last 10 runs of `train-7b` (alice) peaked at 15.0 GiB"));
  CHECK(strstr(it->message, "`--mig 2g.20gb` would cost 71% less"));
  gp_advice_free(a);
  gp_prices_free(pr);
}

static const char *advised(double headroom, int64_t peak_mib, double util) {
  static char got[64];
  gp_advice_params p = params(NULL);
  p.headroom = headroom;
  gp_advice *a = gp_advice_new(&p);
  ran(a, 1, "j", "alice", "A100-80GB", GP_CAP_ON_DEMAND, 1.0, T0, 2, 1, 0, NULL, peak_mib, util);
  int n = 0;
  const gp_advice_item *items = items_of(a, &n);
  const gp_advice_item *it = find(items, n, GP_ADVICE_RIGHT_SIZE);
  snprintf(got, sizeof got, "%s", it ? it->suggestion : "none");
  gp_advice_free(a);
  return got;
}

/* 2g.20gb has 20 GiB: 16 GiB x 1.2 = 19.2 fits, 17.5 GiB x 1.2 = 21 does not (3g.40gb does),
 * and without headroom 17.5 fits again. Memory close to the whole GPU gets no advice. */
static void headroom_decides_the_profile(void) {
  CHECK_EQ_STR("--mig 2g.20gb", advised(0.2, 16 * GIB, 20));
  CHECK_EQ_STR("--mig 3g.40gb", advised(0.2, 17 * GIB + GIB / 2, 20));
  CHECK_EQ_STR("--mig 2g.20gb", advised(0.0, 17 * GIB + GIB / 2, 20));
  CHECK_EQ_STR("--mig 1g.10gb", advised(0.2, 4 * GIB, 5));
  CHECK_EQ_STR("none", advised(0.2, 70 * GIB, 20));
  CHECK_EQ_STR("none", advised(0.2, 10 * GIB, 95));
}

/* On a model that shares GPUs but has no MIG: 8 GiB x 1.2 of 48 GiB is 0.2 of the GPU. */
static void a_fraction_where_the_model_shares(void) {
  gp_advice_params p = params(NULL);
  gp_advice *a = gp_advice_new(&p);
  ran(a, 1, "eval", "bob", "L40S-48GB", GP_CAP_ON_DEMAND, 1.0, T0, 10, 1, 0, NULL, 8 * GIB, 10);
  int n = 0;
  const gp_advice_item *items = items_of(a, &n);
  const gp_advice_item *it = find(items, n, GP_ADVICE_RIGHT_SIZE);
  REQUIRE(it);
  CHECK_EQ_STR("--gpu-fraction 0.20", it->suggestion);
  NEAR(8.0, it->saving_gpu_h);
  CHECK(!it->cost_known);
  gp_advice_free(a);
}

/* Where the model has neither MIG nor sharing in the fleet, a whole GPU of a cheaper model
 * with the memory: 20 GiB x 1.2 fits the L40S's 48; 10 h at 4.0 against 1.9 a GPU-hour
 * saves no GPU-hours; the A100's price changes at midnight inside the run (5 h at 6.0,
 * then 5 h at 4.0), so it saves 50 - 19 = 31 USD. */
static void a_cheaper_model_with_the_memory(void) {
  gp_prices *pr = prices_of("prices:\n"
                            "  currency: USD\n"
                            "  gpu_hour:\n"
                            "    - {model: \"*\", capacity: on-demand, price: 6.0, from: 2025-01-01}\n"
                            "    - {model: \"*\", capacity: on-demand, price: 4.0, from: 2026-01-01}\n"
                            "    - {model: L40S-48GB, capacity: on-demand, price: 1.9, from: 2025-01-01}\n");
  static const gp_advice_model whole[] = {{"A100-80GB", 80 * GIB, false, false},
                                          {"L40S-48GB", 48 * GIB, false, false}};
  gp_advice_params p = params(pr);
  p.models = whole;
  p.from = T0 - 24 * H;
  gp_advice *a = gp_advice_new(&p);
  ran(a, 1, "big", "alice", "A100-80GB", GP_CAP_ON_DEMAND, 1.0, T0 - 5 * H, 10, 1, 0, NULL, 20 * GIB, 50);
  int n = 0;
  const gp_advice_item *items = items_of(a, &n);
  const gp_advice_item *it = find(items, n, GP_ADVICE_RIGHT_SIZE);
  REQUIRE(it);
  CHECK_EQ_STR("--gpu-type L40S-48GB", it->suggestion);
  NEAR(0, it->saving_gpu_h);
  CHECK(it->cost_known);
  NEAR(5 * 6.0 + 5 * 4.0 - 10 * 1.9, it->saving_cost);
  CHECK(strstr(it->message, "if it runs fast enough"));
  gp_advice_free(a);
  gp_prices_free(pr);
}

/* Use not measured (MPS) in one run of a group, or no peak: no right-size advice at all. */
static void unknown_use_gets_no_right_size(void) {
  gp_advice_params p = params(NULL);
  gp_advice *a = gp_advice_new(&p);
  ran(a, 1, "mps-job", "alice", "A100-80GB", GP_CAP_ON_DEMAND, 1.0, T0, 5, 1, 0, NULL, 4 * GIB, 10);
  ran(a, 2, "mps-job", "alice", "A100-80GB", GP_CAP_ON_DEMAND, 1.0, T0 + 6 * H, 5, 1, 0, NULL, 4 * GIB, -1);
  ran(a, 3, "", "alice", "A100-80GB", GP_CAP_ON_DEMAND, 1.0, T0, 5, 1, 0, NULL, -1, 10);
  int n = 0;
  const gp_advice_item *items = items_of(a, &n);
  CHECK_EQ_INT(0, count(items, n, GP_ADVICE_RIGHT_SIZE));
  gp_advice_free(a);
  CHECK_EQ_STR("none", advised(0.2, 4 * GIB, -1));
}

/* A requeueable job that checkpointed and held on-demand GPUs for 2 h (over the 30 min
 * interval): spot saves 2 x (4.0 - 1.5) USD. Without a checkpoint, without requeue, or in
 * runs shorter than the interval: nothing. */
static void spot_for_checkpointing_requeueable_jobs(void) {
  gp_prices *pr = prices_of(catalogue);
  gp_advice_params p = params(pr);
  gp_advice *a = gp_advice_new(&p);
  struct { int64_t job; const char *name; bool requeue; int64_t ckpt; double hours; } jobs[] = {
      {1, "ckpt", true, T0 + 600, 2}, {2, "no-ckpt", true, 0, 2},
      {3, "no-requeue", false, T0 + 600, 2}, {4, "short", true, T0 + 600, 0.25}};
  for (int i = 0; i < 4; i++) {
    int64_t start = T0, end = start + (int64_t)(jobs[i].hours * H);
    gp_ledger_job_iv iv = {jobs[i].job, 1, "org/a", "alice", "n1", "A100-80GB", GP_CAP_ON_DEMAND,
                           2.0 / 2, start, end, -1, -1, NULL};
    gp_advice_add_interval(a, &iv);
    gp_advice_run r = {.job = jobs[i].job, .name = jobs[i].name, .user = "alice", .queue = "org/a",
                       .tasks = 1, .gpus = 1, .requeue = jobs[i].requeue,
                       .last_checkpoint_at = jobs[i].ckpt, .started_at = start,
                       .peak_mem_mib = -1, .avg_sm_util_pct = -1};
    gp_advice_add_run(a, &r);
  }
  int n = 0;
  const gp_advice_item *items = items_of(a, &n);
  CHECK_EQ_INT(1, count(items, n, GP_ADVICE_SPOT));
  const gp_advice_item *it = find(items, n, GP_ADVICE_SPOT);
  REQUIRE(it);
  CHECK_EQ_STR("ckpt", it->name);
  CHECK(it->cost_known);
  NEAR(2 * (4.0 - 1.5), it->saving_cost);
  CHECK(strstr(it->message, "62% less"));
  gp_advice_free(a);
  gp_prices_free(pr);
}

/* alice held 10 GPU-hours using 4 and half a GPU for 4 h using 1: 7 idle of 12 measured,
 * priced 4 USD: 28 USD. bob's use was never measured: no idle item for him. */
static void idle_week_sums_by_queue_and_user(void) {
  gp_prices *pr = prices_of(catalogue);
  gp_advice_params p = params(pr);
  gp_advice *a = gp_advice_new(&p);
  gp_ledger_job_iv ivs[] = {
      {1, 1, "org/a", "alice", "n1", "A100-80GB", GP_CAP_ON_DEMAND, 1.0, T0, T0 + 10 * H, 4.0 * H, -1, NULL},
      {2, 1, "org/a", "alice", "n1", "A100-80GB", GP_CAP_ON_DEMAND, 0.5, T0, T0 + 4 * H, 1.0 * H, -1, NULL},
      {3, 1, "org/a", "bob", "n1", "A100-80GB", GP_CAP_ON_DEMAND, 1.0, T0, T0 + 4 * H, -1, -1, NULL},
      /* Half of it before the period: half its use counts. */
      {4, 1, "org/b", "alice", "n1", "A100-80GB", GP_CAP_ON_DEMAND, 1.0, T0 - 2 * H, T0 + 2 * H, 2.0 * H, -1, NULL},
  };
  for (size_t i = 0; i < sizeof ivs / sizeof *ivs; i++) gp_advice_add_interval(a, &ivs[i]);
  int n = 0;
  const gp_advice_item *items = items_of(a, &n);
  CHECK_EQ_INT(2, count(items, n, GP_ADVICE_IDLE_WEEK));
  const gp_advice_item *it = find(items, n, GP_ADVICE_IDLE_WEEK);
  REQUIRE(it); /* the largest first */
  CHECK_EQ_STR("org/a", it->queue);
  CHECK_EQ_STR("alice", it->user);
  NEAR(7.0, it->saving_gpu_h);
  NEAR(28.0, it->saving_cost);
  NEAR(12.0, evidence(it, "measured_gpu_hours"));
  const gp_advice_item *b = &items[1];
  CHECK_EQ_STR("org/b", b->queue);
  NEAR(1.0, b->saving_gpu_h);
  gp_advice_free(a);
  gp_prices_free(pr);
}

/* One node of 8 GPUs up for the 10 h period, 40 GPU-hours allocated (8 GPUs for the last
 * 5 h): 50%, under the band; at 90% 44.4 GPU-hours would do, so 35.6 were not needed. org/a
 * (4 deserved: 40 GPU-hours) used its 40 and its jobs waited 8 GPUs x 5 h = 40 while it left
 * none idle: too little quota; org/b used none of its 40 and nothing waited: too much. */
static void quota_and_the_utilisation_band(void) {
  gp_advice_queue queues[] = {{"org/a", 4}, {"org/b", 4}};
  gp_advice_params p = params(NULL);
  p.to = T0 + 10 * H;
  p.fleet = true;
  p.n_queues = 2;
  p.queues = queues;
  gp_advice *a = gp_advice_new(&p);
  gp_ledger_node_iv node = {"n1", "A100-80GB", GP_CAP_ON_DEMAND, 8, GP_LEDGER_UP, T0 - H, T0 + 20 * H};
  gp_advice_add_node(a, &node);
  for (int g = 0; g < 8; g++) {
    gp_ledger_job_iv iv = {1, 1, "org/a", "alice", "n1", "A100-80GB", GP_CAP_ON_DEMAND, 1.0,
                           T0 + 5 * H, T0 + 15 * H, -1, -1, NULL};
    gp_advice_add_interval(a, &iv);
  }
  gp_advice_run r = {.job = 1, .name = "big", .user = "alice", .queue = "org/a", .tasks = 1,
                     .gpus = 8, .submitted_at = T0, .started_at = T0 + 5 * H,
                     .peak_mem_mib = -1, .avg_sm_util_pct = -1};
  gp_advice_add_run(a, &r);
  int n = 0;
  const gp_advice_item *items = items_of(a, &n);
  const gp_advice_item *u = find(items, n, GP_ADVICE_UTILISATION);
  REQUIRE(u);
  NEAR(50.0, evidence(u, "allocated_pct"));
  NEAR(80 - 40.0 / 0.9, u->saving_gpu_h);
  CHECK_EQ_INT(2, count(items, n, GP_ADVICE_QUOTA));
  for (int i = 0; i < n; i++) {
    if (items[i].kind != GP_ADVICE_QUOTA) continue;
    bool is_a = strcmp(items[i].queue, "org/a") == 0;
    CHECK(strstr(items[i].message, is_a ? "too little quota" : "too much quota"));
    NEAR(is_a ? 40.0 : 0.0, evidence(&items[i], "waited_gpu_hours"));
    NEAR(is_a ? 0.0 : 40.0, evidence(&items[i], "idle_quota_gpu_hours"));
  }
  gp_advice_free(a);
  /* Without `fleet` (a user's advice) neither kind appears. */
  p.fleet = false;
  a = gp_advice_new(&p);
  gp_advice_add_node(a, &node);
  gp_advice_add_run(a, &r);
  items = items_of(a, &n);
  CHECK_EQ_INT(0, count(items, n, GP_ADVICE_UTILISATION) + count(items, n, GP_ADVICE_QUOTA));
  gp_advice_free(a);
}

/* A user filter keeps only that user's jobs; a running idle job is advised with its
 * GPU-hours idle so far; a name filter keeps only that name's job items. */
static void filters_and_idle_now(void) {
  gp_advice_params p = params(NULL);
  p.user = "bob";
  gp_advice *a = gp_advice_new(&p);
  ran(a, 1, "train-7b", "alice", "A100-80GB", GP_CAP_ON_DEMAND, 1.0, T0, 1, 1, 0, NULL, 15 * GIB, 20);
  gp_advice_idle idle[] = {
      {7, "nb", "bob", "org/a", "A100-80GB", GP_CAP_ON_DEMAND, 2.0, p.now - 1800, 1.0, 5.0},
      {8, "nb", "alice", "org/a", "A100-80GB", GP_CAP_ON_DEMAND, 2.0, p.now - 1800, 1.0, 5.0}};
  gp_advice_add_idle(a, &idle[0]);
  gp_advice_add_idle(a, &idle[1]);
  int n = 0;
  const gp_advice_item *items = items_of(a, &n);
  CHECK_EQ_INT(1, n);
  CHECK_EQ_INT(GP_ADVICE_IDLE_NOW, items[0].kind);
  CHECK_EQ_INT(7, items[0].job);
  NEAR(1.0, items[0].saving_gpu_h);
  CHECK(strstr(items[0].message, "idle for 30 min"));
  gp_advice_free(a);
  p.user = NULL;
  p.name = "other";
  a = gp_advice_new(&p);
  ran(a, 1, "train-7b", "alice", "A100-80GB", GP_CAP_ON_DEMAND, 1.0, T0, 1, 1, 0, NULL, 15 * GIB, 20);
  items = items_of(a, &n);
  CHECK_EQ_INT(0, n);
  gp_advice_free(a);
}

static void bad_parameters_are_named(void) {
  struct { double headroom; int64_t ckpt; int64_t span; const char *field; } cases[] = {
      {5.0, 1800, H, "headroom"}, {-0.1, 1800, H, "headroom"}, {NAN, 1800, H, "headroom"},
      {0.2, 0, H, "checkpoint"}, {0.2, 1800, 0, "from"}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    gp_advice_params p = params(NULL);
    p.headroom = cases[i].headroom;
    p.checkpoint_s = cases[i].ckpt;
    p.to = p.from + cases[i].span;
    gp_advice *a = gp_advice_new(&p);
    const gp_advice_item *items = NULL;
    int n = 0;
    gp_err err = {0};
    CHECK_EQ_INT(GP_EINVAL, gp_advice_finish(a, &items, &n, NULL, &err));
    CHECK_EQ_STR(cases[i].field, err.field);
    gp_advice_free(a);
  }
}

/* A fraction's SM figure is the whole GPU's, as the agent reports it: a 0.5 job at 60% SM
 * needs 0.6 of a GPU, 0.72 with headroom, so it is not told to shrink (it was, to 0.40, when
 * 60% was read as 60% of its half); a 0.5 job at 20% needs 0.24: 0.25, not 0.20. */
static void a_fractions_sm_is_a_share_of_the_whole_gpu(void) {
  gp_advice_params p = params(NULL);
  gp_advice *a = gp_advice_new(&p);
  ran(a, 1, "busy", "bob", "L40S-48GB", GP_CAP_ON_DEMAND, 0.5, T0, 10, 0, 500, NULL, 8 * GIB, 60);
  ran(a, 2, "light", "bob", "L40S-48GB", GP_CAP_ON_DEMAND, 0.5, T0, 10, 0, 500, NULL, 8 * GIB, 20);
  int n = 0;
  const gp_advice_item *items = items_of(a, &n);
  CHECK_EQ_INT(1, count(items, n, GP_ADVICE_RIGHT_SIZE));
  const gp_advice_item *it = find(items, n, GP_ADVICE_RIGHT_SIZE);
  REQUIRE(it);
  CHECK_EQ_STR("light", it->name);
  CHECK_EQ_STR("--gpu-fraction 0.25", it->suggestion);
  NEAR(0.24, evidence(it, "needed_share"));
  NEAR(50, evidence(it, "less_pct")); /* the last figure, after needed_share, still there */
  NEAR(5 * (1 - 0.25 / 0.5), it->saving_gpu_h);
  CHECK(strstr(it->message, "20% of the whole GPU's SM, holding 0.50 of L40S-48GB"));
  gp_advice_free(a);
}

/* Deserved GPUs count only while the fleet had GPUs up, and never more than were up: over a
 * week, n2 (2 GPUs) up for the last 3 h and n1 (8) for the last hour give org/b (4
 * deserved, unused) 2 x 2 + 4 x 1 = 8 GPU-hours, not 4 x 168 = 672. A queue filter keeps
 * the quota of that queue and drops the fleet's band, which its allocation is not. */
static void quota_counts_only_while_the_fleet_was_up(void) {
  gp_advice_queue queues[] = {{"org/a", 1}, {"org/b", 4}};
  gp_advice_params p = params(NULL);
  p.fleet = true;
  p.n_queues = 2;
  p.queues = queues;
  for (int filtered = 0; filtered < 2; filtered++) {
    p.queue = filtered ? "org/b" : NULL;
    gp_advice *a = gp_advice_new(&p);
    gp_ledger_node_iv n2 = {"n2", "A100-80GB", GP_CAP_ON_DEMAND, 2, GP_LEDGER_UP, p.to - 3 * H, p.to};
    gp_ledger_node_iv n1 = {"n1", "A100-80GB", GP_CAP_ON_DEMAND, 8, GP_LEDGER_UP, p.to - H, p.to + H};
    gp_advice_add_node(a, &n1);
    gp_advice_add_node(a, &n2);
    /* org/a keeps its one GPU busy while anything is up: no quota item for it. */
    gp_ledger_job_iv iv = {1, 1, "org/a", "alice", "n2", "A100-80GB", GP_CAP_ON_DEMAND, 1.0,
                           p.to - 3 * H, p.to, -1, -1, NULL};
    gp_advice_add_interval(a, &iv);
    int n = 0;
    const gp_advice_item *items = items_of(a, &n);
    CHECK_EQ_INT(1, count(items, n, GP_ADVICE_QUOTA));
    const gp_advice_item *q = find(items, n, GP_ADVICE_QUOTA);
    REQUIRE(q);
    CHECK_EQ_STR("org/b", q->queue);
    NEAR(8, evidence(q, "deserved_gpu_hours"));
    NEAR(8, evidence(q, "idle_quota_gpu_hours"));
    NEAR(3, evidence(q, "fleet_up_hours"));
    NEAR(8, q->saving_gpu_h);
    CHECK(strstr(q->message, "its 8 deserved GPU-hours (over the 3 h the fleet was up)"));
    CHECK(strstr(q->message, "8 GPU-hours could be promised"));
    CHECK_EQ_INT(filtered ? 0 : 1, count(items, n, GP_ADVICE_UTILISATION));
    gp_advice_free(a);
  }
  /* No GPU up in the period: nothing promised, nothing to advise on quota. */
  p.queue = NULL;
  gp_advice *a = gp_advice_new(&p);
  int n = 0;
  const gp_advice_item *items = items_of(a, &n);
  CHECK_EQ_INT(0, count(items, n, GP_ADVICE_QUOTA));
  gp_advice_free(a);
}

/* Sentences carry the figures the table shows: 0.03 idle GPU-hours is "0.03", never "0.0". */
static void small_figures_keep_their_digits(void) {
  gp_advice_params p = params(NULL);
  gp_advice *a = gp_advice_new(&p);
  gp_ledger_job_iv iv = {1, 1, "org/a", "alice", "n1", "A100-80GB", GP_CAP_ON_DEMAND, 0.5,
                         T0, T0 + 360, 0.02 * H, -1, NULL};
  gp_advice_add_interval(a, &iv);
  int n = 0;
  const gp_advice_item *items = items_of(a, &n);
  const gp_advice_item *it = find(items, n, GP_ADVICE_IDLE_WEEK);
  REQUIRE(it);
  NEAR(0.03, it->saving_gpu_h);
  CHECK(strstr(it->message, "held 0.03 GPU-hours that sat idle: 60% of the 0.05 GPU-hours"));
  gp_advice_free(a);
  a = gp_advice_new(&p);
  CHECK_EQ_STR("672", gp__ledger_adv_num(a, 672));
  CHECK_EQ_STR("12.3", gp__ledger_adv_num(a, 12.345));
  CHECK_EQ_STR("1.5", gp__ledger_adv_num(a, 1.5));
  CHECK_EQ_STR("0.0312", gp__ledger_adv_num(a, 0.03123));
  CHECK_EQ_STR("0", gp__ledger_adv_num(a, 0));
  CHECK_EQ_STR("-2.5", gp__ledger_adv_num(a, -2.5));
  CHECK_EQ_STR("0", gp__ledger_adv_num(a, 1e-12));
  gp_advice_free(a);
}

GP_TESTS(a_recurring_job_fits_a_smaller_mig_profile, headroom_decides_the_profile,
         a_fraction_where_the_model_shares, a_cheaper_model_with_the_memory,
         unknown_use_gets_no_right_size,
         spot_for_checkpointing_requeueable_jobs, idle_week_sums_by_queue_and_user,
         quota_and_the_utilisation_band, filters_and_idle_now, bad_parameters_are_named,
         a_fractions_sm_is_a_share_of_the_whole_gpu, quota_counts_only_while_the_fleet_was_up,
         small_figures_keep_their_digits)
