/* SPDX-License-Identifier: Apache-2.0 */
/* `gpool sim frag`: the FGD paper's fragmentation experiment on an openb trace, for one
 * placement policy and one or more seeds. Writes the allocation ratio per 1% of arrived
 * GPU demand as CSV (to --csv FILE, or to stdout when neither --csv nor -o json is given)
 * and a summary: one line (on stdout, or on stderr when the CSV took stdout), or one JSON
 * object with -o json. A progress bar goes to stderr when it is a terminal and several
 * seeds run. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli_common.h"
#include "cli/commands.h"
#include "cli/opts.h"
#include "sim/frag/family.h"
#include "sim/frag/frag.h"
#include "sim/frag/trace.h"

#define MAX_SEEDS 1000

enum { O_NODES = 1, O_PODS, O_POLICY, O_SEED, O_SEEDS, O_OUT, O_CSV, O_INFLATE, O_FAMILY,
       O_FAMILY_SEED, O_SPECS_FROM, O_HELP };

static const gp_opt opts[] = {
    {0, "nodes", true, O_NODES},     {0, "pods", true, O_PODS},   {0, "policy", true, O_POLICY},
    {0, "seed", true, O_SEED},       {0, "seeds", true, O_SEEDS}, {'o', "output", true, O_OUT},
    {0, "csv", true, O_CSV},         {0, "inflate", true, O_INFLATE},
    {0, "family", true, O_FAMILY},   {0, "family-seed", true, O_FAMILY_SEED},
    {0, "specs-from", true, O_SPECS_FROM},
    {'h', "help", false, O_HELP},    {0, NULL, false, 0},
};

static const char usage[] =
    "usage: gpool sim frag --nodes NODES.csv --pods PODS.csv [--policy P]\n"
    "                      [--seed N | --seeds A-B] [-o json] [--csv OUT.csv] [--inflate 1.3]\n"
    "                      [--family KIND:PCT [--family-seed N] [--specs-from PODS.csv]]\n"
    "\n"
    "Replays the FGD paper's experiment (Weng et al., ATC'23) on an openb trace: pods\n"
    "shuffled with the seed, resampled to --inflate x the cluster's GPU capacity, arriving\n"
    "one at a time and never leaving; prints the GPU allocation ratio per 1%% of arrived\n"
    "GPU demand (CSV: trace,policy,seed,arrived_pct,alloc_pct) and a summary.\n"
    "\n"
    "  --policy   gpool (default), fgd, bestfit, gpupacking, dotproduct, random\n"
    "  --seed     one seed (default 42); --seeds 42-51 runs each and reports mean/min/max\n"
    "  -o json    the summary as one JSON object (alloc_ratio keyed by arrived percent)\n"
    "  --csv F    write the per-1%% CSV to F (default: stdout, unless -o json)\n"
    "  --family   replay a member of a workload family built from --pods (the FGD paper's\n"
    "             sensitivity lists): cpu:P (CPU-only pods P%% of all pods), gpushare:P\n"
    "             (GPU-sharing pods P%% of the GPU demand), multigpu:P (multi-GPU pods P%%\n"
    "             of the GPU demand), gpuspec:P (P%% of GPU pods limited to GPU models)\n"
    "  --family-seed N  the draws that build the member (default 1)\n"
    "  --specs-from F   gpuspec: the pod list whose gpu_specs are drawn (openb gpuspec33)\n";

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int parse_u64(const char *s, uint64_t *ret) {
  if (!s || !*s) return -1;
  char *end = NULL;
  unsigned long long v = strtoull(s, &end, 10);
  if (*end || s[0] == '-' || v > 0xffffffffULL) return -1;
  *ret = v;
  return 0;
}

/* "42-51", "42,43,50" or "42". */
static int parse_seeds(const char *s, uint64_t *seeds, int *n) {
  *n = 0;
  char buf[4096];
  if (strlen(s) >= sizeof(buf)) return -1;
  strcpy(buf, s);
  char *save = NULL;
  for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    char *dash = strchr(tok, '-');
    uint64_t a = 0, b = 0;
    if (dash) {
      *dash = 0;
      if (parse_u64(tok, &a) || parse_u64(dash + 1, &b) || b < a) return -1;
    } else {
      if (parse_u64(tok, &a)) return -1;
      b = a;
    }
    for (uint64_t v = a; v <= b; v++) {
      if (*n >= MAX_SEEDS) return -1;
      seeds[(*n)++] = v;
    }
  }
  return *n > 0 ? 0 : -1;
}

static void progress(int done, int total, double elapsed) {
  int width = 30, fill = total ? done * width / total : width;
  fprintf(stderr, "\r[");
  for (int i = 0; i < width; i++) fputc(i < fill ? '#' : ' ', stderr);
  fprintf(stderr, "] %d/%d runs  %.1fs", done, total, elapsed);
  if (done == total) fputc('\n', stderr);
  fflush(stderr);
}

typedef struct stats {
  double mean, min, max;
} stats;

static stats stats_at(const gp_frag_result *res, int n, int k) {
  stats s = {0, 1e300, -1e300};
  for (int i = 0; i < n; i++) {
    double v = res[i].alloc_pct[k];
    s.mean += v / n;
    if (v < s.min) s.min = v;
    if (v > s.max) s.max = v;
  }
  return s;
}

static double round2(double v) {
  return (double)llround(v * 100.0) / 100.0;
}

/* Returned by a phase when the command goes on to the next one. */
#define GO_ON (-1)

/* One run of the command: its options, the trace, the results and the CSV destination. */
typedef struct frag_cmd {
  const char *nodes, *pods, *csv_path, *policy_name, *family, *specs_from;
  uint64_t family_seed;
  bool json;
  uint64_t *seeds;
  int n_seeds;
  gp_frag_opts fo;
  gp_err err;
  gp_frag_trace *t;
  gp_frag_result *res;
  FILE *csv;
  bool csv_on_stdout;
  double per_run;
} frag_cmd;

/* Sets the defaults: policy gpool, seed 42, no CSV file. */
static void frag_cmd_init(frag_cmd *c) {
  memset(c, 0, sizeof(*c));
  c->policy_name = "gpool";
  c->seeds = calloc(MAX_SEEDS, sizeof(uint64_t));
  c->n_seeds = 1;
  c->seeds[0] = 42;
  c->family_seed = 1;
  gp_frag_opts_init(&c->fo);
}

/* Applies one option; GO_ON, or the exit code when it ends the command. */
static int apply_option(frag_cmd *c, int id, const char *arg) {
  switch (id) {
  case O_NODES: c->nodes = arg; break;
  case O_PODS: c->pods = arg; break;
  case O_POLICY: c->policy_name = arg; break;
  case O_SEED:
    if (parse_u64(arg, &c->seeds[0]))
      return gp_cli_usage_error("sim frag", "--seed takes a whole number, not '%s'", arg);
    c->n_seeds = 1;
    break;
  case O_SEEDS:
    if (parse_seeds(arg, c->seeds, &c->n_seeds))
      return gp_cli_usage_error("sim frag",
                                "--seeds takes A-B or a comma list (at most %d), not '%s'",
                                MAX_SEEDS, arg);
    break;
  case O_OUT:
    if (strcmp(arg, "json") == 0) c->json = true;
    else if (strcmp(arg, "table") == 0) c->json = false;
    else return gp_cli_usage_error("sim frag", "-o takes 'json' or 'table', not '%s'", arg);
    break;
  case O_CSV: c->csv_path = arg; break;
  case O_FAMILY: c->family = arg; break;
  case O_SPECS_FROM: c->specs_from = arg; break;
  case O_FAMILY_SEED:
    if (parse_u64(arg, &c->family_seed))
      return gp_cli_usage_error("sim frag", "--family-seed takes a whole number, not '%s'", arg);
    break;
  case O_INFLATE: {
    char *end = NULL;
    c->fo.inflate = strtod(arg, &end);
    if (*end || !(c->fo.inflate > 0 && c->fo.inflate <= 2.0))
      return gp_cli_usage_error("sim frag", "--inflate takes a number in (0, 2], not '%s'", arg);
    break;
  }
  case O_HELP: fputs(usage, stdout); return 0;
  default: return gp_cli_usage_error("sim frag", "unexpected argument '%s'", arg ? arg : "");
  }
  return GO_ON;
}

/* Reads the command line into c; GO_ON, or the exit code when it ends the command. */
static int read_options(frag_cmd *c, int argc, char **argv) {
  gp_opt_iter it;
  gp_opt_init(&it, argc, argv, 1);
  const char *arg = NULL;
  for (;;) {
    int id = gp_opt_next(&it, opts, &arg, &c->err);
    if (id == GP_OPT_END) return GO_ON;
    if (id < 0 && id != GP_OPT_POSITIONAL)
      return gp_cli_usage_error("sim frag", "%s", c->err.message);
    int rc = apply_option(c, id, arg);
    if (rc != GO_ON) return rc;
  }
}

/* Checks that the trace is named and resolves the policy; GO_ON or the exit code. */
static int check_options(frag_cmd *c) {
  if (!c->nodes || !c->pods)
    return gp_cli_usage_error("sim frag", "--nodes and --pods are required");
  if (gp_share_policy_parse(c->policy_name, &c->fo.policy) != 0)
    return gp_cli_usage_error("sim frag",
                              "--policy takes gpool, fgd, bestfit, gpupacking, dotproduct or random, not '%s'",
                              c->policy_name);
  if (c->family) {
    gp_frag_family f = {0};
    if (gp_frag_family_parse(c->family, &f, &c->err) != 0)
      return gp_cli_usage_error("sim frag", "--family: %s", c->err.message);
    if (f.kind == GP_FRAG_FAMILY_GPUSPEC && !c->specs_from)
      return gp_cli_usage_error("sim frag", "--family gpuspec:P needs --specs-from PODS.csv "
                                            "(openb_pod_list_gpuspec33.csv)");
  } else if (c->specs_from) {
    return gp_cli_usage_error("sim frag", "--specs-from goes with --family gpuspec:P");
  }
  return GO_ON;
}

/* Prints c->err as the command's error and returns exit code 1. */
static int fail(frag_cmd *c) {
  char line[1200];
  gp_err_format(&c->err, line, sizeof(line));
  fprintf(stderr, "gpool sim frag: %s\n", line);
  return 1;
}

/* Loads the openb trace (and builds the --family member from it), and makes room for one
 * result per seed; GO_ON or the exit code. */
static int load_trace(frag_cmd *c) {
  if (gp_frag_trace_load(c->nodes, c->pods, &c->t, &c->err) != 0) return fail(c);
  if (c->family) {
    gp_frag_family f = {0};
    gp_frag_family_parse(c->family, &f, NULL); /* checked in check_options */
    f.seed = c->family_seed;
    gp_frag_trace *ref = NULL;
    if (c->specs_from && gp_frag_trace_load(c->nodes, c->specs_from, &ref, &c->err) != 0) return fail(c);
    f.specs_from = ref;
    int rc = gp_frag_family_apply(c->t, &f, &c->err);
    gp_frag_trace_free(ref);
    if (rc != 0) return fail(c);
  }
  c->res = calloc((size_t)c->n_seeds, sizeof(gp_frag_result));
  return GO_ON;
}

/* Opens the CSV destination (--csv FILE, else stdout unless -o json) and writes its header. */
static int open_csv(frag_cmd *c) {
  if (c->csv_path) {
    c->csv = fopen(c->csv_path, "w");
    if (!c->csv) {
      fprintf(stderr, "gpool sim frag: cannot write %s\n", c->csv_path);
      return 1;
    }
  } else if (!c->json) {
    c->csv = stdout, c->csv_on_stdout = true;
  }
  if (c->csv) fprintf(c->csv, "trace,policy,seed,arrived_pct,alloc_pct\n");
  return GO_ON;
}

/* Runs the experiment once per seed, writing each run's CSV rows as it ends. */
static int run_seeds(frag_cmd *c) {
  const char *pname = gp_share_policy_name(c->fo.policy);
  bool bar = c->n_seeds > 1 && isatty(STDERR_FILENO);
  double t0 = now_s();
  for (int i = 0; i < c->n_seeds; i++) {
    c->fo.seed = c->seeds[i];
    if (gp_frag_run(c->t, &c->fo, &c->res[i], &c->err) != 0) return fail(c);
    if (c->csv) {
      for (int k = 0; k <= c->res[i].max_pct; k++)
        fprintf(c->csv, "%s,%s,%llu,%d,%.2f\n", c->t->name, pname,
                (unsigned long long)c->seeds[i], k, c->res[i].alloc_pct[k]);
    }
    if (bar) progress(i + 1, c->n_seeds, now_s() - t0);
  }
  c->per_run = (now_s() - t0) / c->n_seeds;
  return GO_ON;
}

/* Mean pods that failed to place, per run. */
static double failed_mean(const frag_cmd *c) {
  double failed = 0;
  for (int i = 0; i < c->n_seeds; i++) failed += (double)c->res[i].pods_failed / c->n_seeds;
  return failed;
}

/* Prints the summary as one JSON object on stdout. */
static void print_json(const frag_cmd *c, const char *pname, double failed) {
  int top = c->res[0].max_pct;
  json_t *o = json_object();
  json_object_set_new(o, "trace", json_string(c->t->name));
  json_object_set_new(o, "policy", json_string(pname));
  json_t *sa = json_array();
  for (int i = 0; i < c->n_seeds; i++)
    json_array_append_new(sa, json_integer((json_int_t)c->seeds[i]));
  json_object_set_new(o, "seeds", sa);
  json_object_set_new(o, "runs", json_integer(c->n_seeds));
  json_object_set_new(o, "seconds_per_run", json_real(c->per_run));
  json_object_set_new(o, "nodes", json_integer(c->t->n_nodes));
  json_object_set_new(o, "gpus", json_integer(c->res[0].gpu_capacity_milli / 1000));
  json_object_set_new(o, "pods_failed_mean", json_real(failed));
  json_t *ar = json_object();
  for (int k = 0; k <= top; k++) {
    stats s = stats_at(c->res, c->n_seeds, k);
    char key[16];
    snprintf(key, sizeof(key), "%d", k);
    json_t *e = json_object();
    json_object_set_new(e, "mean", json_real(round2(s.mean)));
    json_object_set_new(e, "min", json_real(round2(s.min)));
    json_object_set_new(e, "max", json_real(round2(s.max)));
    json_object_set_new(ar, key, e);
  }
  json_object_set_new(o, "alloc_ratio", ar);
  char *text = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
  printf("%s\n", text);
  free(text);
  json_decref(o);
}

/* Prints the one-line summary: on stderr when the CSV took stdout, else on stdout. */
static void print_line(const frag_cmd *c, const char *pname, double failed) {
  int top = c->res[0].max_pct;
  int k100 = top >= 100 ? 100 : top;
  stats s100 = stats_at(c->res, c->n_seeds, k100), stop = stats_at(c->res, c->n_seeds, top);
  FILE *sum = c->csv_on_stdout ? stderr : stdout;
  fprintf(sum,
          "%s %s seeds=%d: alloc at %d%% arrived %.2f%% (min %.2f, max %.2f), at %d%% %.2f%% "
          "(min %.2f, max %.2f); failed pods %.1f/run; %.3f s/run\n",
          c->t->name, pname, c->n_seeds, k100, s100.mean, s100.min, s100.max, top, stop.mean,
          stop.min, stop.max, failed, c->per_run);
}

/* Prints the summary over all seeds, as JSON or as one line. */
static void print_summary(const frag_cmd *c) {
  const char *pname = gp_share_policy_name(c->fo.policy);
  double failed = failed_mean(c);
  if (c->json) print_json(c, pname, failed);
  else print_line(c, pname, failed);
}

/* Closes a CSV file of our own; a failed close turns a success into exit code 1. */
static int close_csv(frag_cmd *c, int rc) {
  if (c->csv && !c->csv_on_stdout && fclose(c->csv) != 0 && rc == 0) {
    fprintf(stderr, "gpool sim frag: cannot write %s\n", c->csv_path);
    rc = 1;
  }
  return rc;
}

int gp_cmd_sim_frag(int argc, char **argv) {
  frag_cmd c;
  frag_cmd_init(&c);
  int rc = read_options(&c, argc, argv);
  if (rc == GO_ON) rc = check_options(&c);
  if (rc == GO_ON) rc = load_trace(&c);
  if (rc == GO_ON) {
    rc = open_csv(&c);
    if (rc == GO_ON) rc = run_seeds(&c);
    if (rc == GO_ON) {
      print_summary(&c);
      rc = 0;
    }
    rc = close_csv(&c, rc);
  }
  free(c.res);
  gp_frag_trace_free(c.t);
  free(c.seeds);
  return rc;
}
