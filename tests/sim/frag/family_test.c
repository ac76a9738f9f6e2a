/* SPDX-License-Identifier: Apache-2.0 */
/* Workload families (`gpool sim frag --family`): each member has the share of its kind of
 * pod that was asked, the same family seed builds the same member, bad requests are
 * refused by name; and on the real openb trace, FGD with many CPU-only pods lands on the
 * published figure (it fell 1.9 points under it while node ties went to the list's first
 * nodes) and gpool's own policy is at least as good as FGD on such a member, and on one
 * where a third of the GPU pods are limited to GPU models. */
#include <sys/wait.h>

#include "test.h"
#include "core/model.h"
#include "sim/frag/family.h"
#include "sim/frag/frag.h"
#include "sim/frag/trace.h"

#define OPENB GP_SOURCE_DIR "/traces/openb/"
#define NODES OPENB "openb_node_list_gpu_node.csv"
#define DEFAULT_PODS OPENB "openb_pod_list_default.csv"
#define SPEC_PODS OPENB "openb_pod_list_gpuspec33.csv"

static gp_frag_trace *load(const char *pods) {
  gp_frag_trace *t = NULL;
  gp_err e = {0};
  if (gp_frag_trace_load(NODES, pods, &t, &e) != 0) fprintf(stderr, "load: %s\n", e.message);
  REQUIRE(t);
  return t;
}

static gp_frag_trace *member(const char *spec, uint64_t seed, const gp_frag_trace *ref) {
  gp_frag_trace *t = load(DEFAULT_PODS);
  gp_frag_family f = {0};
  gp_err e = {0};
  REQUIRE(gp_frag_family_parse(spec, &f, &e) == 0);
  f.seed = seed, f.specs_from = ref;
  if (gp_frag_family_apply(t, &f, &e) != 0) fprintf(stderr, "apply %s: %s\n", spec, e.message);
  return t;
}

typedef struct counts {
  int pods, cpu, gpu, fraction, constrained;
  int64_t milli, fraction_milli, multi_milli;
} counts;

static counts count(const gp_frag_trace *t) {
  counts c = {0};
  for (int i = 0; i < t->n_pods; i++) {
    const gp_frag_pod *p = &t->pods[i];
    int64_t m = (int64_t)p->n_gpus * p->gpu_milli;
    c.pods++;
    c.milli += m;
    if (p->n_gpus == 0) c.cpu++;
    else c.gpu++;
    if (p->n_gpus == 1 && p->gpu_milli < 1000) c.fraction++, c.fraction_milli += m;
    if (p->n_gpus > 1) c.multi_milli += m;
    if (p->n_gpus > 0 && p->spec >= 0) c.constrained++;
  }
  return c;
}

static void each_member_has_the_share_it_asks(void) {
  gp_frag_trace *base = load(DEFAULT_PODS);
  counts b = count(base);
  gp_frag_trace *t = member("cpu:25", 1, NULL);
  counts c = count(t);
  CHECK_EQ_STR("openb_pod_list_default+cpu25", t->name);
  CHECK_EQ_INT(b.gpu, c.gpu); /* GPU pods kept */
  CHECK_NEAR(0.25, (double)c.cpu / c.pods, 0.001);
  gp_frag_trace_free(t);

  t = member("gpushare:60", 1, NULL);
  c = count(t);
  CHECK_EQ_INT(b.pods, c.pods); /* as many pods, CPU-only ones kept */
  CHECK_EQ_INT(b.cpu, c.cpu);
  CHECK_NEAR(0.60, (double)c.fraction_milli / (double)c.milli, 0.01);
  gp_frag_trace_free(t);

  t = member("multigpu:40", 1, NULL);
  c = count(t);
  CHECK(c.pods > b.pods);
  CHECK(c.multi_milli * 100 >= 40 * c.milli);
  CHECK(c.multi_milli * 100 < 40 * c.milli + 100 * 8000); /* stops at the first pod past 40% */
  for (int i = 0; i < b.pods; i++) CHECK(t->pods[i].cpu_milli == base->pods[i].cpu_milli);
  gp_frag_trace_free(t);

  gp_frag_trace *ref = load(SPEC_PODS);
  t = member("gpuspec:20", 1, ref);
  c = count(t);
  CHECK_EQ_INT(b.pods, c.pods);
  CHECK_NEAR(0.20, (double)c.constrained / c.gpu, 0.001);
  /* Fractional pods take the specs of fractional pods: in openb those name T4 or P100. */
  int odd = 0;
  for (int i = 0; i < t->n_pods; i++) {
    const gp_frag_pod *p = &t->pods[i];
    if (p->spec < 0 || !(p->n_gpus == 1 && p->gpu_milli < 1000)) continue;
    const gp_frag_spec *s = &t->specs[p->spec];
    bool t4_or_p100 = false;
    for (int m = 0; m < s->n_models; m++)
      t4_or_p100 |= strcmp(s->models[m], "T4") == 0 || strcmp(s->models[m], "P100") == 0;
    odd += !t4_or_p100;
  }
  CHECK_EQ_INT(0, odd);
  gp_frag_trace_free(t);
  gp_frag_trace_free(ref);
  gp_frag_trace_free(base);
}

static void the_same_family_seed_builds_the_same_member(void) {
  gp_frag_trace *a = member("cpu:20", 7, NULL), *b = member("cpu:20", 7, NULL), *c = member("cpu:20", 8, NULL);
  REQUIRE(a->n_pods == b->n_pods && a->n_pods == c->n_pods);
  int same_ab = 1, same_ac = 1;
  for (int i = 0; i < a->n_pods; i++) {
    same_ab &= a->pods[i].cpu_milli == b->pods[i].cpu_milli && a->pods[i].mem_mib == b->pods[i].mem_mib;
    same_ac &= a->pods[i].cpu_milli == c->pods[i].cpu_milli && a->pods[i].mem_mib == c->pods[i].mem_mib;
  }
  CHECK(same_ab);
  CHECK(!same_ac);
  gp_frag_trace_free(a), gp_frag_trace_free(b), gp_frag_trace_free(c);
}

static void bad_families_are_refused_by_name(void) {
  gp_frag_family f = {0};
  gp_err e = {0};
  CHECK_EQ_INT(GP_EINVAL, gp_frag_family_parse("cpu", &f, &e));
  CHECK_CONTAINS(e.message, "KIND:PCT");
  CHECK_EQ_INT(GP_EINVAL, gp_frag_family_parse("tpu:20", &f, &e));
  CHECK_CONTAINS(e.message, "unknown family 'tpu'");
  CHECK_EQ_INT(GP_EINVAL, gp_frag_family_parse("cpu:100", &f, &e));
  CHECK_CONTAINS(e.message, "0..99");
  CHECK_EQ_INT(GP_EINVAL, gp_frag_family_parse("gpushare:4x", &f, &e));
  CHECK_EQ_INT(GP_EINVAL, gp_frag_family_parse("gpushare:", &f, &e));
  gp_frag_trace *t = load(DEFAULT_PODS);
  int pods = t->n_pods;
  REQUIRE(gp_frag_family_parse("gpuspec:20", &f, &e) == 0);
  CHECK_EQ_INT(GP_EINVAL, gp_frag_family_apply(t, &f, &e));
  CHECK_EQ_STR("specs_from", e.field);
  REQUIRE(gp_frag_family_parse("multigpu:5", &f, &e) == 0); /* default already asks 7.3% */
  CHECK_EQ_INT(GP_EINVAL, gp_frag_family_apply(t, &f, &e));
  CHECK_CONTAINS(e.message, "already ask");
  CHECK_EQ_INT(pods, t->n_pods); /* unchanged */
  CHECK_EQ_STR("openb_pod_list_default", t->name);
  gp_frag_trace_free(t);
}

static double mean_at(const gp_frag_trace *t, gp_share_policy pol, int pct, double *at130) {
  double sum = 0, sum130 = 0;
  for (uint64_t seed = 42; seed <= 43; seed++) {
    gp_frag_opts o;
    gp_frag_opts_init(&o);
    o.policy = pol, o.seed = seed;
    gp_frag_result r;
    gp_err e = {0};
    REQUIRE(gp_frag_run(t, &o, &r, &e) == 0);
    sum += r.alloc_pct[pct] / 2, sum130 += r.alloc_pct[130] / 2;
  }
  *at130 = sum130;
  return sum;
}

/* The authors' 25%-CPU-only list gives FGD 92.83-93.82% at 100% arrived (seeds 42-51).
 * Their simulator breaks node ties in a random order of the nodes; while we gave ties to
 * the first nodes of the list, CPU-only pods (which tie everywhere under FGD) piled there
 * and FGD fell to 91.3%. And gpool, whose own rule sends CPU-only pods where the GPUs are
 * taken, must stay at least as good as FGD there. */
static void cpu_only_pods_fgd_matches_the_paper_and_gpool_beats_it(void) {
  gp_frag_trace *t = member("cpu:25", 1, NULL);
  double fgd130 = 0, gpool130 = 0;
  double fgd = mean_at(t, GP_SHARE_POLICY_FGD, 100, &fgd130);
  double gpool = mean_at(t, GP_SHARE_POLICY_GPOOL, 100, &gpool130);
  fprintf(stderr, "cpu:25 FGD %.2f / %.2f, gpool %.2f / %.2f\n", fgd, fgd130, gpool, gpool130);
  CHECK(fgd > 92.6 && fgd < 94.0);
  CHECK(gpool >= fgd);
  CHECK(gpool130 >= fgd130);
  gp_frag_trace_free(t);
}

/* A third of the GPU pods limited to GPU models (openb's production mix: T4 asked 1.25x
 * its capacity): gpool, which keeps work that could run elsewhere off the models such pods
 * need, places more than FGD at 100% and 130% arrived (88.77 / 95.08 against 88.44 /
 * 95.02; without that rule gpool was 0.13 under FGD at 100%). */
static void gpool_beats_fgd_when_pods_are_limited_to_gpu_models(void) {
  gp_frag_trace *ref = load(SPEC_PODS);
  gp_frag_trace *t = member("gpuspec:33", 1, ref);
  double fgd130 = 0, gpool130 = 0;
  double fgd = mean_at(t, GP_SHARE_POLICY_FGD, 100, &fgd130);
  double gpool = mean_at(t, GP_SHARE_POLICY_GPOOL, 100, &gpool130);
  fprintf(stderr, "gpuspec:33 FGD %.2f / %.2f, gpool %.2f / %.2f\n", fgd, fgd130, gpool, gpool130);
  CHECK(gpool > fgd);
  CHECK(gpool130 > fgd130);
  gp_frag_trace_free(t);
  gp_frag_trace_free(ref);
}

static int run_cli(const char *args, const char *out) {
  const char *bin = getenv("GPOOL_BIN");
  REQUIRE(bin);
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "%s sim frag --nodes %s --pods %s %s > %s 2>&1", bin, NODES, DEFAULT_PODS, args, out);
  int st = system(cmd);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  REQUIRE(f);
  static char buf[65536];
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  buf[n] = 0;
  fclose(f);
  return buf;
}

/* The command builds the member, names it in its output, and refuses what cannot be built. */
static void the_cli_runs_a_member_and_names_it(void) {
  char out[600];
  snprintf(out, sizeof out, "%s/family_test_cli.txt", GP_BINARY_DIR);
  CHECK_EQ_INT(0, run_cli("--family gpuspec:10 --specs-from " SPEC_PODS " --policy bestfit --seed 42 -o json", out));
  CHECK_CONTAINS(slurp(out), "\"trace\":\"openb_pod_list_default+gpuspec10\"");
  CHECK_EQ_INT(2, run_cli("--family gpuspec:10", out));
  CHECK_CONTAINS(slurp(out), "needs --specs-from");
  CHECK_EQ_INT(2, run_cli("--family cpu:120", out));
  CHECK_CONTAINS(slurp(out), "--family:");
  CHECK_EQ_INT(2, run_cli("--specs-from " SPEC_PODS, out));
  CHECK_CONTAINS(slurp(out), "goes with --family");
  CHECK_EQ_INT(1, run_cli("--family multigpu:2", out));
  CHECK_CONTAINS(slurp(out), "already ask");
  remove(out);
}

GP_TESTS(each_member_has_the_share_it_asks, the_cli_runs_a_member_and_names_it, the_same_family_seed_builds_the_same_member,
         bad_families_are_refused_by_name, cpu_only_pods_fgd_matches_the_paper_and_gpool_beats_it,
         gpool_beats_fgd_when_pods_are_limited_to_gpu_models)
