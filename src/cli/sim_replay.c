/* SPDX-License-Identifier: Apache-2.0 */
/* `gpool sim replay` and `gpool sim compare`: replay a cluster trace through the scheduler
 * core under one policy (a summary table, or JSON with -o json; a per-minute CSV time series
 * and an HTML report on request) or under several policies side by side.
 * Inputs and figures are documented in docs/simulator.md. */
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/opts.h"
#include "sim/replay/replay.h"
#include "sim/trace/trace.h"
#include "util/units.h"

#define MAX_POLICIES 8
#define MAX_FLEETS 8

enum {
  O_TRACE = 1, O_FORMAT, O_FLEET, O_QUEUES, O_QUEUES_FROM, O_POLICY, O_POLICY_FILE, O_POLICIES,
  O_SEED, O_MTBF, O_REPAIR, O_CKPT, O_RESTART, O_GRACE, O_OVER, O_BAD_ROWS, O_MAX_JOBS,
  O_SHARING, O_TIME_SCALE, O_PARTITION, O_EVERY_EVENT, O_PROBE, O_OUT, O_CSV, O_HTML, O_NO_PROGRESS, O_DETERMINISTIC,
  O_PRICES, O_COST_CSV, O_IDLE_TAIL, O_IDLE_POLICY, O_SPOT, O_SPOT_NOTICE, O_PROVIDER_DELAY,
  O_TEMPLATES, O_SCALE_ORDER, O_MAX_HOURLY_COST, O_SCALE_DOWN_AFTER, O_AUTOSCALE_INTERVAL,
  O_HALF_LIFE, O_HELP
};

static const gp_opt opts[] = {
    {0, "trace", true, O_TRACE},
    {0, "format", true, O_FORMAT},
    {0, "fleet", true, O_FLEET},
    {0, "queues", true, O_QUEUES},
    {0, "queues-from", true, O_QUEUES_FROM},
    {0, "policy", true, O_POLICY},
    {0, "policy-file", true, O_POLICY_FILE},
    {0, "policies", true, O_POLICIES},
    {0, "seed", true, O_SEED},
    {0, "mtbf", true, O_MTBF},
    {0, "repair-time", true, O_REPAIR},
    {0, "checkpoint-interval", true, O_CKPT},
    {0, "restart-overhead", true, O_RESTART},
    {0, "grace", true, O_GRACE},
    {0, "half-life", true, O_HALF_LIFE},
    {0, "overestimate", true, O_OVER},
    {0, "bad-rows", true, O_BAD_ROWS},
    {0, "max-jobs", true, O_MAX_JOBS},
    {0, "gpu-sharing", true, O_SHARING},
    {0, "time-scale", true, O_TIME_SCALE},
    {0, "partition", false, O_PARTITION},
    {0, "every-event", false, O_EVERY_EVENT},
    {0, "share-probe", true, O_PROBE},
    {'o', "output", true, O_OUT},
    {0, "csv", true, O_CSV},
    {0, "html", true, O_HTML},
    {0, "no-progress", false, O_NO_PROGRESS},
    {0, "deterministic", false, O_DETERMINISTIC},
    {0, "prices", true, O_PRICES},
    {0, "cost-csv", true, O_COST_CSV},
    {0, "idle-tail", true, O_IDLE_TAIL},
    {0, "idle-policy", true, O_IDLE_POLICY},
    {0, "spot-interruptions", true, O_SPOT},
    {0, "spot-notice", true, O_SPOT_NOTICE},
    {0, "provider-delay", true, O_PROVIDER_DELAY},
    {0, "templates", true, O_TEMPLATES},
    {0, "scale-order", true, O_SCALE_ORDER},
    {0, "max-hourly-cost", true, O_MAX_HOURLY_COST},
    {0, "scale-down-after", true, O_SCALE_DOWN_AFTER},
    {0, "autoscale-interval", true, O_AUTOSCALE_INTERVAL},
    {'h', "help", false, O_HELP},
    {0, NULL, false, 0},
};

static const char usage_replay[] =
    "usage: gpool sim replay --trace FILE [--format philly|openb|csv|jsonl]\n"
    "         [--fleet 352x8xV100[,16x8xA100] | --fleet NODES.csv | --fleet POOL.yaml]\n"
    "         [--queues QUEUES.yaml | --queues-from VC_NODES.csv]\n"
    "         [--policy fifo|backfill|gpool|sjf|backfill-vc | --policy-file FILE]\n"
    "         [-o table|json] [--csv SERIES.csv] [--html REPORT.html]\n"
    "         [--prices PRICES.yaml [--cost-csv COST.csv]]\n"
    "         [--idle-tail FRACTION:SHARE] [--idle-policy IDLE.yaml]\n"
    "         [--spot-interruptions RATE[:MODEL=RATE,...]]\n"
    "         [--templates TEMPLATES.yaml [--scale-order ...] [--max-hourly-cost X]] [options]\n";
static const char usage_compare[] =
    "usage: gpool sim compare --trace FILE --policies fifo,backfill,gpool,sjf\n"
    "         [--fleet ... [--fleet ...]] [--queues ... | --queues-from ...] [-o table|json]\n"
    "         [--csv SERIES.csv] [--html REPORT.html]\n"
    "         [--prices PRICES.yaml [--cost-csv COST.csv]]\n"
    "         [--idle-tail FRACTION:SHARE] [--idle-policy IDLE.yaml]\n"
    "         [--spot-interruptions RATE[:MODEL=RATE,...]]\n"
    "         [--templates TEMPLATES.yaml [--scale-order ...] [--max-hourly-cost X]] [options]\n";
static const char usage_options[] =
    "\n"
    "Replays the trace on a virtual clock through the same scheduler core the server runs.\n"
    "With no --fleet, the fleet is the virtual clusters' nodes (8 GPUs each) of --queues-from\n"
    "(for a Philly trace: philly_vc_nodes.csv next to the trace): the Helios Philly fleet.\n"
    "A fleet group may name its capacity type: 32x8xH100:reserved,32x8xH100:on-demand\n"
    "(on-demand, reserved, spot, on-prem; default on-prem). compare takes --fleet up to %d\n"
    "times and runs every policy on every fleet.\n"
    "\n"
    "  --prices FILE            price the replay: the server's `prices:` map (YAML/JSON);\n"
    "                           adds cost per queue, idle, unused commitment, fleet cost\n"
    "  --cost-csv FILE          the costs as CSV (policy,kind,queue,cost,currency)\n"
    "  --idle-tail F:S          ASSUMED idle model for traces without idle_tail: a share F\n"
    "                           of the jobs (picked by --seed) hold their GPUs idle for the\n"
    "                           last share S of their run (0.2:0.25); not a measurement\n"
    "  --idle-policy FILE       act on idle stretches: `idle_policy:` (window, grace, action,\n"
    "                           threshold_pct) and optional `queues: {NAME: {...}}`; the\n"
    "                           replay also runs without it and reports the change\n"
    "  --spot-interruptions R[:MODEL=R,...]  spot nodes are reclaimed: R is the probability\n"
    "                           that one is within 30 days (0.05 or 5%%; per GPU model after\n"
    "                           ':'); seeded; jobs there are requeued (default: none)\n"
    "  --spot-notice DUR        notice before a reclaim; at least --grace: jobs checkpoint at\n"
    "                           the notice, else they lose the work since their last\n"
    "                           checkpoint (default 2m; 0: none)\n"
    "  --provider-delay DUR     a reclaimed spot node's replacement, or a node created by\n"
    "                           autoscaling, is up this long after it is asked for\n"
    "                           (default 5m)\n"
    "  --templates FILE         autoscaling: a file whose only key is the server config's\n"
    "                           `node_templates:`; pending jobs that no node holds make\n"
    "                           provider nodes, empty ones are deleted (cost: price_per_\n"
    "                           gpu_hour, else --prices)\n"
    "  --scale-order LIST       capacity classes created, in order (default on-prem,\n"
    "                           reserved,spot,on-demand; a class left out is never made)\n"
    "  --max-hourly-cost X      provider nodes cost at most X per hour (default: no cap)\n"
    "  --scale-down-after DUR   an empty provider node is deleted after this (default 10m;\n"
    "                           0: never)\n"
    "  --autoscale-interval DUR at most one autoscaling pass per DUR (default 60s)\n"
    "  --seed N                 seed for node failures and randomised policies (default 1)\n"
    "  --mtbf HOURS             mean time between failures of one node (default: none)\n"
    "  --repair-time DUR        how long a failed node stays down (default 1h)\n"
    "  --checkpoint-interval D  a running job checkpoints this often (default 30m; 0: never)\n"
    "  --restart-overhead DUR   a restarted job's start-up cost (default 60s)\n"
    "  --grace DUR              a preempted job keeps its GPUs this long (default 30s)\n"
    "  --half-life DUR|off      fair share over time: the queues' decayed usage (halving every\n"
    "                           DUR; off: no decay) orders them and sizes what each borrows,\n"
    "                           as on the server (default: no usage). Every replay reports\n"
    "                           the weekly Jain index of cumulative GPU-hours against\n"
    "                           deserved shares\n"
    "  --overestimate F         time limit = duration x F when the trace has none (default 2)\n"
    "  --bad-rows skip|fail     malformed trace rows: report and skip, or stop (default fail)\n"
    "  --max-jobs N             read only the first N jobs of the file\n"
    "  --time-scale F           divide inter-arrival times by F (2: twice the load)\n"
    "  --partition              static partitions: each queue only on the nodes labelled\n"
    "                           queue=<name> (the Philly fleet's VCs); backfill-vc is\n"
    "                           backfill with it\n"
    "  --gpu-sharing shared|exclusive  GPUs of the fleet (default: shared if the trace\n"
    "                           has fractional jobs)\n"
    "  --csv FILE               time series every simulated minute (compare: FILE per policy)\n"
    "  --html FILE              self-contained HTML report with charts\n"
    "  --share-probe DUR        when calls were skipped, call the core at least this often\n"
    "                           so fair shares (fairness figures) stay fresh (default 1h)\n"
    "  --every-event            call the core after every event batch, skipping nothing\n"
    "  --deterministic          write wall_seconds as 0 so outputs compare byte for byte\n"
    "  --no-progress            no progress bar on stderr\n";

typedef struct args {
  const char *fleets[MAX_FLEETS];
  int n_fleets;
  const char *prices, *cost_csv, *idle_policy, *templates;
  bool scale_flags;           /* an autoscaling flag other than --templates was given */
  const char *trace, *format, *queues, *queues_from, *policy, *policy_file, *policies;
  const char *out, *csv, *html, *sharing;
  bool skip_bad, progress, deterministic;
  size_t max_jobs;
  gp_replay_config cfg;
} args;

static int fail(const char *cmd, const gp_err *e) {
  char msg[1024];
  gp_err_format(e, msg, sizeof msg);
  fprintf(stderr, "gpool sim %s: %s\n", cmd, msg);
  return 1;
}

static int bad_arg(const char *cmd, const char *opt, const char *v) {
  fprintf(stderr, "gpool sim %s: invalid %s '%s'\n", cmd, opt, v);
  return 2;
}

static int parse_args(const char *cmd, int argc, char **argv, args *a) {
  memset(a, 0, sizeof *a);
  gp_replay_config_init(&a->cfg);
  a->progress = isatty(2);
  a->out = "table";
  gp_opt_iter it;
  gp_opt_init(&it, argc, argv, 1);
  gp_err e = {0};
  const char *v;
  int id;
  double d;
  int64_t i64;
  while ((id = gp_opt_next(&it, opts, &v, &e)) != GP_OPT_END) {
    switch (id) {
    case O_TRACE: a->trace = v; break;
    case O_FORMAT: a->format = v; break;
    case O_FLEET:
      if (a->n_fleets == MAX_FLEETS) {
        fprintf(stderr, "gpool sim %s: at most %d fleets\n", cmd, MAX_FLEETS);
        return 2;
      }
      a->fleets[a->n_fleets++] = v;
      break;
    case O_PRICES: a->prices = v; break;
    case O_COST_CSV: a->cost_csv = v; break;
    case O_IDLE_POLICY: a->idle_policy = v; break;
    case O_IDLE_TAIL: {
      const char *colon = strchr(v, ':');
      char frac[64];
      double f, sh;
      if (!colon || (size_t)(colon - v) >= sizeof frac) return bad_arg(cmd, "--idle-tail (FRACTION:SHARE, e.g. 0.2:0.25)", v);
      memcpy(frac, v, (size_t)(colon - v));
      frac[colon - v] = '\0';
      if (gp_parse_double(frac, &f) || gp_parse_double(colon + 1, &sh) || !(f > 0 && f <= 1) ||
          !(sh > 0 && sh <= 1))
        return bad_arg(cmd, "--idle-tail (FRACTION:SHARE, each above 0 and at most 1)", v);
      a->cfg.idle_fraction = f;
      a->cfg.idle_share = sh;
      break;
    }
    case O_SPOT:
      if (gp_replay_spot_parse(v, &a->cfg.spot, &e)) {
        fprintf(stderr, "gpool sim %s: invalid --spot-interruptions '%s': %s\n", cmd, v, e.message);
        return 2;
      }
      break;
    case O_SPOT_NOTICE:
      if (gp_parse_duration_s(v, &i64) || i64 < 0 || i64 > 86400)
        return bad_arg(cmd, "--spot-notice (a duration from 0 to 1 day)", v);
      a->cfg.spot.notice = i64;
      break;
    case O_PROVIDER_DELAY:
      if (gp_parse_duration_s(v, &i64) || i64 < 0 || i64 > 30 * 86400)
        return bad_arg(cmd, "--provider-delay (a duration from 0 to 30 days)", v);
      a->cfg.spot.provider_delay = i64;
      break;
    case O_TEMPLATES: a->templates = v; break;
    case O_SCALE_ORDER:
      if (gp_replay_scale_order_parse(v, a->cfg.scale.class_rank, &e)) {
        fprintf(stderr, "gpool sim %s: invalid --scale-order '%s': %s\n", cmd, v, e.message);
        return 2;
      }
      a->scale_flags = true;
      break;
    case O_MAX_HOURLY_COST:
      if (gp_parse_double(v, &d) || !(d >= 0 && d <= 1e12))
        return bad_arg(cmd, "--max-hourly-cost (a cost per hour from 0 to 1e12)", v);
      a->cfg.scale.max_hourly_cost = d;
      a->scale_flags = true;
      break;
    case O_SCALE_DOWN_AFTER:
      if (gp_parse_duration_s(v, &i64) || i64 < 0 || i64 > 365 * 86400)
        return bad_arg(cmd, "--scale-down-after (a duration from 0 to 365 days)", v);
      a->cfg.scale.scale_down_after = i64;
      a->scale_flags = true;
      break;
    case O_AUTOSCALE_INTERVAL:
      if (gp_parse_duration_s(v, &i64) || i64 < 1 || i64 > 86400)
        return bad_arg(cmd, "--autoscale-interval (a duration from 1s to 1 day)", v);
      a->cfg.scale.interval = i64;
      a->scale_flags = true;
      break;
    case O_QUEUES: a->queues = v; break;
    case O_QUEUES_FROM: a->queues_from = v; break;
    case O_POLICY: a->policy = v; break;
    case O_HALF_LIFE:
      /* Fair share over time: the queues' decayed usage in the view (docs/scheduling.md). */
      if (strcmp(v, "off") == 0) {
        a->cfg.fairshare.half_life_s = 0;
      } else if (gp_parse_duration_s(v, &i64) || i64 < 60 || i64 > 10LL * 365 * 86400) {
        return bad_arg(cmd, "--half-life (a duration from 1m to 10 years, or off)", v);
      } else {
        a->cfg.fairshare.half_life_s = i64;
      }
      a->cfg.usage = true;
      break;
    case O_POLICY_FILE: a->policy_file = v; break;
    case O_POLICIES: a->policies = v; break;
    case O_SEED:
      if (gp_parse_int64(v, &i64) || i64 < 0) return bad_arg(cmd, "--seed", v);
      a->cfg.seed = (uint64_t)i64;
      break;
    case O_MTBF:
      if (gp_parse_double(v, &d) || d < 0 || d > 1e9) return bad_arg(cmd, "--mtbf", v);
      a->cfg.mtbf_hours = d;
      break;
    case O_REPAIR:
    case O_CKPT:
    case O_RESTART:
    case O_GRACE:
      if (gp_parse_duration_s(v, &i64) || i64 < 0 || i64 > ((int64_t)1 << 40))
        return bad_arg(cmd, "duration", v);
      if (id == O_REPAIR) {
        if (i64 < 1) return bad_arg(cmd, "--repair-time", v);
        a->cfg.repair_time = i64;
      }
      if (id == O_CKPT) a->cfg.checkpoint_interval = i64;
      if (id == O_RESTART) a->cfg.restart_overhead = i64;
      if (id == O_GRACE) a->cfg.grace = i64;
      break;
    case O_OVER:
      if (gp_parse_double(v, &d) || d < 1 || d > 1000) return bad_arg(cmd, "--overestimate (1 to 1000)", v);
      a->cfg.overestimate = d;
      break;
    case O_BAD_ROWS:
      if (strcmp(v, "skip") && strcmp(v, "fail")) return bad_arg(cmd, "--bad-rows", v);
      a->skip_bad = strcmp(v, "skip") == 0;
      break;
    case O_MAX_JOBS:
      if (gp_parse_int64(v, &i64) || i64 < 1 || i64 > GP_TRACE_MAX_JOBS) return bad_arg(cmd, "--max-jobs", v);
      a->max_jobs = (size_t)i64;
      break;
    case O_SHARING:
      if (strcmp(v, "shared") && strcmp(v, "exclusive")) return bad_arg(cmd, "--gpu-sharing", v);
      a->sharing = v;
      break;
    case O_TIME_SCALE:
      if (gp_parse_double(v, &d) || d < 0.001 || d > 1000) return bad_arg(cmd, "--time-scale (0.001 to 1000)", v);
      a->cfg.time_scale = d;
      break;
    case O_PARTITION: a->cfg.partition = true; break;
    case O_EVERY_EVENT: a->cfg.every_event = true; break;
    case O_PROBE:
      if (gp_parse_duration_s(v, &i64) || i64 < 0 || i64 > ((int64_t)1 << 40))
        return bad_arg(cmd, "--share-probe", v);
      a->cfg.share_probe = i64;
      break;
    case O_OUT:
      if (strcmp(v, "table") && strcmp(v, "json")) return bad_arg(cmd, "-o", v);
      a->out = v;
      break;
    case O_CSV: a->csv = v; break;
    case O_HTML: a->html = v; break;
    case O_NO_PROGRESS: a->progress = false; break;
    case O_DETERMINISTIC: a->deterministic = true; break;
    case O_HELP:
      fputs(strcmp(cmd, "replay") == 0 ? usage_replay : usage_compare, stdout);
      printf(usage_options, MAX_FLEETS);
      return -1;
    case GP_OPT_POSITIONAL:
      fprintf(stderr, "gpool sim %s: unexpected argument '%s'\n", cmd, v);
      return 2;
    default:
      fprintf(stderr, "gpool sim %s: %s\n", cmd, e.message);
      fputs(strcmp(cmd, "replay") == 0 ? usage_replay : usage_compare, stderr);
      return 2;
    }
  }
  if (!a->trace) {
    fprintf(stderr, "gpool sim %s: --trace is required\n", cmd);
    fputs(strcmp(cmd, "replay") == 0 ? usage_replay : usage_compare, stderr);
    return 2;
  }
  if (a->cost_csv && !a->prices) {
    fprintf(stderr, "gpool sim %s: --cost-csv needs --prices\n", cmd);
    return 2;
  }
  if (a->scale_flags && !a->templates) {
    fprintf(stderr, "gpool sim %s: --scale-order, --max-hourly-cost, --scale-down-after and "
            "--autoscale-interval need --templates\n", cmd);
    return 2;
  }
  if (a->queues && a->queues_from) {
    fprintf(stderr, "gpool sim %s: give --queues or --queues-from, not both\n", cmd);
    return 2;
  }
  return 0;
}

/* philly_vc_nodes.csv next to a Philly trace, if it is there. */
static char *sibling_vc_file(const char *trace) {
  char *copy = strdup(trace);
  if (!copy) return NULL;
  const char *dir = dirname(copy);
  size_t n = strlen(dir) + 32;
  char *path = malloc(n);
  if (path) snprintf(path, n, "%s/philly_vc_nodes.csv", dir);
  free(copy);
  if (path && access(path, R_OK) != 0) {
    free(path);
    path = NULL;
  }
  return path;
}

typedef struct inputs {
  gp_trace *trace;
  gp_fleet *fleets[MAX_FLEETS];
  int n_fleets;
  gp_replay_queues *queues;
  struct gp_prices *prices;
  gp_replay_idle_policy *idle_policy;
  gp_replay_templates *templates;
  char *vc_file;
} inputs;

static void inputs_done(inputs *in) {
  gp_trace_free(in->trace);
  for (int i = 0; i < in->n_fleets; i++) gp_fleet_free(in->fleets[i]);
  gp_replay_prices_free(in->prices);
  gp_replay_idle_policy_free(in->idle_policy);
  gp_replay_templates_free(in->templates);
  gp_replay_queues_free(in->queues);
  free(in->vc_file);
}

static int load_inputs(const char *cmd, args *a, inputs *in) {
  gp_err e = {0};
  gp_trace_opts to = {.skip_bad = a->skip_bad, .max_jobs = a->max_jobs};
  if (a->format && gp_trace_format_parse(a->format, &to.format))
    return bad_arg(cmd, "--format (philly, openb, csv, jsonl)", a->format);
  if (gp_trace_read_file(a->trace, &to, &in->trace, &e)) return fail(cmd, &e);
  if (in->trace->bad_rows)
    fprintf(stderr, "gpool sim %s: skipped %zu bad rows of %s:\n%s", cmd, in->trace->bad_rows,
            a->trace, in->trace->bad_report.data ? in->trace->bad_report.data : "");
  if (a->queues_from) in->vc_file = strdup(a->queues_from);
  else if (!a->queues && in->trace->format == GP_TRACE_PHILLY) in->vc_file = sibling_vc_file(a->trace);

  bool has_fraction = false;
  for (size_t i = 0; i < in->trace->n_jobs && !has_fraction; i++)
    has_fraction = in->trace->jobs[i].gpu_milli > 0;
  bool shared = a->sharing ? strcmp(a->sharing, "shared") == 0 : has_fraction;
  if (a->n_fleets) {
    for (; in->n_fleets < a->n_fleets; in->n_fleets++)
      if (gp_fleet_load(a->fleets[in->n_fleets], shared, &in->fleets[in->n_fleets], &e))
        return fail(cmd, &e);
  } else if (in->vc_file) {
    if (gp_fleet_from_vc_file(in->vc_file, &in->fleets[0], &e)) return fail(cmd, &e);
    in->n_fleets = 1;
  } else {
    fprintf(stderr, "gpool sim %s: give --fleet (e.g. --fleet 100x8xH100 or a node list)\n", cmd);
    return 2;
  }
  if (a->queues) {
    if (gp_replay_queues_load(a->queues, &in->queues, &e)) return fail(cmd, &e);
  } else if (in->vc_file) {
    if (gp_replay_queues_from_vc_file(in->vc_file, 8, in->trace, &in->queues, &e))
      return fail(cmd, &e);
  } else {
    in->queues = gp_replay_queues_from_trace(in->trace);
  }
  if (a->prices && gp_replay_prices_load(a->prices, &in->prices, &e)) return fail(cmd, &e);
  if (a->idle_policy && gp_replay_idle_policy_load(a->idle_policy, &in->idle_policy, &e))
    return fail(cmd, &e);
  if (a->templates && gp_replay_templates_load(a->templates, &in->templates, &e))
    return fail(cmd, &e);
  bool spot_nodes = false;
  for (int i = 0; in->templates && i < in->templates->n; i++)
    spot_nodes = spot_nodes || in->templates->spec[i].t.node.capacity == GP_CAP_SPOT;
  for (int f = 0; f < in->n_fleets && !spot_nodes; f++)
    for (int i = 0; i < in->fleets[f]->n_nodes && !spot_nodes; i++)
      spot_nodes = in->fleets[f]->nodes[i].capacity == GP_CAP_SPOT;
  bool spot_rates = a->cfg.spot.rate > 0;
  for (int k = 0; k < a->cfg.spot.n_models; k++) spot_rates = spot_rates || a->cfg.spot.model_rate[k] > 0;
  if (spot_rates && !spot_nodes)
    fprintf(stderr, "gpool sim %s: warning: --spot-interruptions: no fleet has a spot node "
            "and no template is spot (give a group ':spot', e.g. --fleet 16x8xH100:spot)\n",
            cmd);
  if (a->cfg.idle_fraction > 0 && in->trace->has_idle_tail) {
    fprintf(stderr, "gpool sim %s: %s gives idle_tail: --idle-tail is for traces without it\n",
            cmd, a->trace);
    return 2;
  }
  return 0;
}

/* Sets the config for one policy name (a preset) or the policy file. */
static int set_policy(const char *cmd, args *a, const char *name, gp_arena *arena,
                      gp_replay_config *cfg) {
  *cfg = a->cfg;
  cfg->progress = a->progress;
  if (name) {
    gp_replay_preset p;
    if (gp_replay_preset_parse(name, &p)) return bad_arg(cmd, "policy (fifo, backfill, gpool, sjf, backfill-vc)", name);
    gp_replay_preset_policy(p, &cfg->policy);
    cfg->oracle_limits = p == GP_REPLAY_SJF;
    cfg->partition = a->cfg.partition || gp_replay_preset_partitioned(p);
    cfg->policy_name = gp_replay_preset_name(p);
  } else {
    gp_err e = {0};
    if (gp_replay_policy_load(a->policy_file, arena, &cfg->policy, &e)) return fail(cmd, &e);
    cfg->oracle_limits = false;
    char *copy = gp_arena_strdup(arena, a->policy_file);
    cfg->policy_name = basename(copy);
  }
  cfg->policy.seed = cfg->seed;
  return 0;
}

/* "x.csv" -> "x.fifo.csv" for one policy of a comparison. */
static char *per_policy_path(gp_arena *arena, const char *path, const char *policy) {
  const char *dot = strrchr(path, '.'), *slash = strrchr(path, '/');
  if (!dot || (slash && dot < slash)) return gp_arena_printf(arena, "%s.%s", path, policy);
  return gp_arena_printf(arena, "%.*s.%s%s", (int)(dot - path), path, policy, dot);
}

/* Writes the priced runs' costs to `path` as CSV. */
static int write_cost_csv(const char *cmd, const char *path, gp_replay_result *const *res, int n) {
  FILE *f = fopen(path, "w");
  if (!f) {
    fprintf(stderr, "gpool sim %s: cannot write %s\n", cmd, path);
    return 1;
  }
  gp_replay_write_cost_csv(f, res, n);
  if (fclose(f) != 0) {
    fprintf(stderr, "gpool sim %s: writing %s failed\n", cmd, path);
    return 1;
  }
  return 0;
}

/* The same replay without the idle policy, for the change the GPUs it freed brought. */
static int run_baseline(const char *cmd, const gp_replay_config *with, const inputs *in, int fi,
                        gp_replay_result *r) {
  gp_replay_config cfg = *with;
  cfg.idle_policy = NULL;
  cfg.csv = NULL;
  cfg.prices = NULL;
  gp_replay_result *base = NULL;
  gp_err e = {0};
  if (gp_replay_run(&cfg, in->trace, in->fleets[fi], in->queues, &base, &e)) return fail(cmd, &e);
  r->idle.has_baseline = true;
  r->idle.base_avg_wait_s = base->avg_wait_s;
  r->idle.base_avg_jct_s = base->avg_jct_s;
  gp_replay_result_free(base);
  return 0;
}

/* Every policy on every fleet (fleet by fleet). With several fleets a run is named
 * "policy@fleet" and its CSV series "NAME.policy.fK.csv". */
static int run_policies(const char *cmd, args *a, const char *const *names, int n_names,
                        bool compare) {
  inputs in = {0};
  gp_arena *arena = gp_arena_new();
  gp_replay_result *res[MAX_POLICIES * MAX_FLEETS] = {0};
  int n = 0;
  int rc = load_inputs(cmd, a, &in);
  for (int k = 0; k < n_names * in.n_fleets && !rc; k++, n++) {
    int fi = k / n_names;
    gp_replay_config cfg;
    if ((rc = set_policy(cmd, a, names[k % n_names], arena, &cfg))) break;
    const char *series_name = cfg.policy_name;
    if (in.n_fleets > 1) {
      series_name = gp_arena_printf(arena, "%s.f%d", cfg.policy_name, fi + 1);
      cfg.policy_name = gp_arena_printf(arena, "%s@%s", cfg.policy_name, a->fleets[fi]);
    }
    cfg.prices = in.prices;
    cfg.scale.templates = in.templates;
    FILE *csv = NULL;
    const char *csv_path = NULL;
    if (a->csv) {
      csv_path = compare ? per_policy_path(arena, a->csv, series_name) : a->csv;
      csv = fopen(csv_path, "w");
      if (!csv) {
        fprintf(stderr, "gpool sim %s: cannot write %s\n", cmd, csv_path);
        rc = 1;
        break;
      }
      cfg.csv = csv;
    }
    cfg.idle_policy = in.idle_policy;
    gp_err e = {0};
    int r = gp_replay_run(&cfg, in.trace, in.fleets[fi], in.queues, &res[k], &e);
    if (csv && fclose(csv) != 0 && !r) {
      fprintf(stderr, "gpool sim %s: writing %s failed\n", cmd, csv_path);
      rc = 1;
    }
    if (r) rc = fail(cmd, &e);
    else if (csv && res[k]->csv_rows >= GP_REPLAY_MAX_CSV_ROWS)
      fprintf(stderr, "gpool sim %s: the CSV time series stops after %d rows\n", cmd,
              GP_REPLAY_MAX_CSV_ROWS);
    if (!rc && in.idle_policy) rc = run_baseline(cmd, &cfg, &in, fi, res[k]);
  }
  if (!rc) {
    bool json = strcmp(a->out, "json") == 0;
    if (json) {
      char *s = compare ? gp_replay_results_json(res, n, !a->deterministic)
                        : gp_replay_result_json(res[0], !a->deterministic);
      fputs(s, stdout);
      free(s);
    } else if (compare) {
      gp_replay_print_compare(stdout, res, n);
    } else {
      gp_replay_print_table(stdout, res[0]);
    }
    if (a->html) {
      gp_err e = {0};
      char *title = gp_arena_printf(arena, "gpool sim %s: %s", cmd, in.trace->source);
      if (gp_replay_write_html(a->html, title, res, n, &e)) rc = fail(cmd, &e);
    }
    if (!rc && a->cost_csv) rc = write_cost_csv(cmd, a->cost_csv, res, n);
  }
  for (int i = 0; i < n_names * MAX_FLEETS; i++) gp_replay_result_free(res[i]);
  inputs_done(&in);
  gp_arena_free(arena);
  return rc;
}

int gp_cmd_sim_replay(int argc, char **argv) {
  args a;
  int rc = parse_args("replay", argc, argv, &a);
  if (rc) return rc < 0 ? 0 : rc;
  if (a.policies) {
    fprintf(stderr, "gpool sim replay: --policies is for 'gpool sim compare'\n");
    return 2;
  }
  if (a.policy && a.policy_file) {
    fprintf(stderr, "gpool sim replay: give --policy or --policy-file, not both\n");
    return 2;
  }
  if (a.n_fleets > 1) {
    fprintf(stderr, "gpool sim replay: one --fleet (compare takes several)\n");
    return 2;
  }
  const char *name = a.policy_file ? NULL : a.policy ? a.policy : "gpool";
  return run_policies("replay", &a, &name, 1, false);
}

int gp_cmd_sim_compare(int argc, char **argv) {
  args a;
  int rc = parse_args("compare", argc, argv, &a);
  if (rc) return rc < 0 ? 0 : rc;
  if (a.policy || a.policy_file) {
    fprintf(stderr, "gpool sim compare: use --policies fifo,backfill,gpool,sjf\n");
    return 2;
  }
  char list[256];
  snprintf(list, sizeof list, "%s", a.policies ? a.policies : "fifo,backfill,gpool,sjf");
  const char *names[MAX_POLICIES];
  int n = 0;
  for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    if (n == MAX_POLICIES) {
      fprintf(stderr, "gpool sim compare: at most %d policies\n", MAX_POLICIES);
      return 2;
    }
    gp_replay_preset p;
    if (gp_replay_preset_parse(tok, &p)) return bad_arg("compare", "policy (fifo, backfill, gpool, sjf, backfill-vc)", tok);
    names[n++] = gp_replay_preset_name(p);
  }
  if (n == 0) return bad_arg("compare", "--policies", a.policies);
  return run_policies("compare", &a, names, n, true);
}
