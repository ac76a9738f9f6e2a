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
#include "sim/frag/frag.h"
#include "sim/frag/trace.h"

#define MAX_SEEDS 1000

enum { O_NODES = 1, O_PODS, O_POLICY, O_SEED, O_SEEDS, O_OUT, O_CSV, O_INFLATE, O_HELP };

static const gp_opt opts[] = {
    {0, "nodes", true, O_NODES},     {0, "pods", true, O_PODS},   {0, "policy", true, O_POLICY},
    {0, "seed", true, O_SEED},       {0, "seeds", true, O_SEEDS}, {'o', "output", true, O_OUT},
    {0, "csv", true, O_CSV},         {0, "inflate", true, O_INFLATE},
    {'h', "help", false, O_HELP},    {0, NULL, false, 0},
};

static const char usage[] =
    "usage: gpool sim frag --nodes NODES.csv --pods PODS.csv [--policy P]\n"
    "                      [--seed N | --seeds A-B] [-o json] [--csv OUT.csv] [--inflate 1.3]\n"
    "\n"
    "Replays the FGD paper's experiment (Weng et al., ATC'23) on an openb trace: pods\n"
    "shuffled with the seed, resampled to --inflate x the cluster's GPU capacity, arriving\n"
    "one at a time and never leaving; prints the GPU allocation ratio per 1%% of arrived\n"
    "GPU demand (CSV: trace,policy,seed,arrived_pct,alloc_pct) and a summary.\n"
    "\n"
    "  --policy   gpool (default), fgd, bestfit, gpupacking, dotproduct, random\n"
    "  --seed     one seed (default 42); --seeds 42-51 runs each and reports mean/min/max\n"
    "  -o json    the summary as one JSON object (alloc_ratio keyed by arrived percent)\n"
    "  --csv F    write the per-1%% CSV to F (default: stdout, unless -o json)\n";

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

int gp_cmd_sim_frag(int argc, char **argv) {
  const char *nodes = NULL, *pods = NULL, *csv_path = NULL, *policy_name = "gpool";
  bool json = false;
  uint64_t *seeds = calloc(MAX_SEEDS, sizeof(uint64_t));
  int n_seeds = 1;
  seeds[0] = 42;
  gp_frag_opts fo;
  gp_frag_opts_init(&fo);
  gp_opt_iter it;
  gp_opt_init(&it, argc, argv, 1);
  int rc = 0;
  const char *arg = NULL;
  gp_err err = {0};
  for (;;) {
    int id = gp_opt_next(&it, opts, &arg, &err);
    if (id == GP_OPT_END) break;
    if (id < 0 && id != GP_OPT_POSITIONAL) {
      rc = gp_cli_usage_error("sim frag", "%s", err.message);
      goto out;
    }
    switch (id) {
    case O_NODES: nodes = arg; break;
    case O_PODS: pods = arg; break;
    case O_POLICY: policy_name = arg; break;
    case O_SEED:
      if (parse_u64(arg, &seeds[0])) {
        rc = gp_cli_usage_error("sim frag", "--seed takes a whole number, not '%s'", arg);
        goto out;
      }
      n_seeds = 1;
      break;
    case O_SEEDS:
      if (parse_seeds(arg, seeds, &n_seeds)) {
        rc = gp_cli_usage_error("sim frag", "--seeds takes A-B or a comma list (at most %d), not '%s'",
                                MAX_SEEDS, arg);
        goto out;
      }
      break;
    case O_OUT:
      if (strcmp(arg, "json") == 0) json = true;
      else if (strcmp(arg, "table") == 0) json = false;
      else {
        rc = gp_cli_usage_error("sim frag", "-o takes 'json' or 'table', not '%s'", arg);
        goto out;
      }
      break;
    case O_CSV: csv_path = arg; break;
    case O_INFLATE: {
      char *end = NULL;
      fo.inflate = strtod(arg, &end);
      if (*end || !(fo.inflate > 0 && fo.inflate <= 2.0)) {
        rc = gp_cli_usage_error("sim frag", "--inflate takes a number in (0, 2], not '%s'", arg);
        goto out;
      }
      break;
    }
    case O_HELP: fputs(usage, stdout); goto out;
    default:
      rc = gp_cli_usage_error("sim frag", "unexpected argument '%s'", arg ? arg : "");
      goto out;
    }
  }
  if (!nodes || !pods) {
    rc = gp_cli_usage_error("sim frag", "--nodes and --pods are required");
    goto out;
  }
  if (gp_share_policy_parse(policy_name, &fo.policy) != 0) {
    rc = gp_cli_usage_error("sim frag",
                            "--policy takes gpool, fgd, bestfit, gpupacking, dotproduct or random, not '%s'",
                            policy_name);
    goto out;
  }

  gp_frag_trace *t = NULL;
  char line[1200];
  if ((rc = gp_frag_trace_load(nodes, pods, &t, &err)) != 0) {
    gp_err_format(&err, line, sizeof(line));
    fprintf(stderr, "gpool sim frag: %s\n", line);
    rc = 1;
    goto out;
  }
  gp_frag_result *res = calloc((size_t)n_seeds, sizeof(gp_frag_result));
  FILE *csv = NULL;
  bool csv_on_stdout = false;
  if (csv_path) {
    csv = fopen(csv_path, "w");
    if (!csv) {
      fprintf(stderr, "gpool sim frag: cannot write %s\n", csv_path);
      rc = 1;
      goto done;
    }
  } else if (!json) {
    csv = stdout, csv_on_stdout = true;
  }
  const char *pname = gp_share_policy_name(fo.policy);
  if (csv) fprintf(csv, "trace,policy,seed,arrived_pct,alloc_pct\n");
  bool bar = n_seeds > 1 && isatty(STDERR_FILENO);
  double t0 = now_s();
  for (int i = 0; i < n_seeds; i++) {
    fo.seed = seeds[i];
    if ((rc = gp_frag_run(t, &fo, &res[i], &err)) != 0) {
      gp_err_format(&err, line, sizeof(line));
      fprintf(stderr, "gpool sim frag: %s\n", line);
      rc = 1;
      goto done;
    }
    if (csv) {
      for (int k = 0; k <= res[i].max_pct; k++)
        fprintf(csv, "%s,%s,%llu,%d,%.2f\n", t->name, pname, (unsigned long long)seeds[i], k,
                res[i].alloc_pct[k]);
    }
    if (bar) progress(i + 1, n_seeds, now_s() - t0);
  }
  double per_run = (now_s() - t0) / n_seeds;
  int top = res[0].max_pct;
  int k100 = top >= 100 ? 100 : top;
  stats s100 = stats_at(res, n_seeds, k100), stop = stats_at(res, n_seeds, top);
  double failed = 0;
  for (int i = 0; i < n_seeds; i++) failed += (double)res[i].pods_failed / n_seeds;
  if (json) {
    json_t *o = json_object();
    json_object_set_new(o, "trace", json_string(t->name));
    json_object_set_new(o, "policy", json_string(pname));
    json_t *sa = json_array();
    for (int i = 0; i < n_seeds; i++) json_array_append_new(sa, json_integer((json_int_t)seeds[i]));
    json_object_set_new(o, "seeds", sa);
    json_object_set_new(o, "runs", json_integer(n_seeds));
    json_object_set_new(o, "seconds_per_run", json_real(per_run));
    json_object_set_new(o, "nodes", json_integer(t->n_nodes));
    json_object_set_new(o, "gpus", json_integer(res[0].gpu_capacity_milli / 1000));
    json_object_set_new(o, "pods_failed_mean", json_real(failed));
    json_t *ar = json_object();
    for (int k = 0; k <= top; k++) {
      stats s = stats_at(res, n_seeds, k);
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
  } else {
    FILE *sum = csv_on_stdout ? stderr : stdout;
    fprintf(sum,
            "%s %s seeds=%d: alloc at %d%% arrived %.2f%% (min %.2f, max %.2f), at %d%% %.2f%% "
            "(min %.2f, max %.2f); failed pods %.1f/run; %.3f s/run\n",
            t->name, pname, n_seeds, k100, s100.mean, s100.min, s100.max, top, stop.mean, stop.min,
            stop.max, failed, per_run);
  }
done:
  if (csv && !csv_on_stdout && fclose(csv) != 0 && rc == 0) {
    fprintf(stderr, "gpool sim frag: cannot write %s\n", csv_path);
    rc = 1;
  }
  free(res);
  gp_frag_trace_free(t);
out:
  free(seeds);
  return rc;
}
