/* SPDX-License-Identifier: Apache-2.0 */
/* Replay summaries for scripts (JSON, keys documented in docs/simulator.md) and for people
 * (tables). Numbers are rounded to fixed decimals so outputs compare byte for byte across
 * runs and machines. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/replay/replay.h"
#include "util/csv.h"

/* Fixed precision: 3 decimals for seconds and GPUs, 6 for ratios. */
static json_t *num(double v, int decimals) {
  double scale = pow(10, decimals);
  double r = round(v * scale) / scale;
  if (r == 0) r = 0; /* no "-0.0" */
  return json_real(r);
}

/* The idle figures: only when the replay modelled idle stretches or ran an idle policy,
 * so every other replay's output stays as it was. */
static json_t *idle_obj(const gp_replay_result *r) {
  const gp_replay_idle *id = &r->idle;
  json_t *o = json_object();
  json_object_set_new(o, "assumed", json_boolean(id->assumed));
  json_object_set_new(o, "jobs", json_integer(id->jobs));
  json_object_set_new(o, "gpu_hours", num(id->gpu_hours, 3));
  json_object_set_new(o, "held_gpu_hours", num(id->held_gpu_hours, 3));
  json_object_set_new(o, "policy", json_boolean(id->policy));
  json_object_set_new(o, "notified", json_integer(id->notified));
  json_object_set_new(o, "requeued", json_integer(id->requeued));
  json_object_set_new(o, "cancelled", json_integer(id->cancelled));
  json_object_set_new(o, "released_gpu_hours", num(id->released_gpu_hours, 3));
  if (id->priced) {
    json_object_set_new(o, "cost", num(id->cost, 2));
    json_object_set_new(o, "released_cost", num(id->released_cost, 2));
    json_object_set_new(o, "cost_unknown", json_boolean(id->cost_unknown));
  }
  if (id->has_baseline) {
    json_object_set_new(o, "baseline_avg_wait_s", num(id->base_avg_wait_s, 3));
    json_object_set_new(o, "baseline_avg_jct_s", num(id->base_avg_jct_s, 3));
    json_object_set_new(o, "avg_wait_change_s", num(r->avg_wait_s - id->base_avg_wait_s, 3));
    json_object_set_new(o, "avg_jct_change_s", num(r->avg_jct_s - id->base_avg_jct_s, 3));
  }
  return o;
}

/* The `spot` object, only when spot interruptions were modelled. */
static json_t *spot_obj(const gp_replay_spot_stats *sp) {
  json_t *o = json_object();
  json_object_set_new(o, "interruptions", json_integer(sp->interruptions));
  json_object_set_new(o, "notices_used", json_integer(sp->notices_used));
  json_object_set_new(o, "jobs_interrupted", json_integer(sp->jobs_interrupted));
  json_object_set_new(o, "runs_interrupted", json_integer(sp->runs_interrupted));
  json_object_set_new(o, "gpu_hours_recomputed", num(sp->gpu_hours_recomputed, 3));
  json_object_set_new(o, "gpu_hours_overhead", num(sp->gpu_hours_overhead, 3));
  json_object_set_new(o, "gpu_hours_lost", num(sp->gpu_hours_lost, 3));
  return o;
}

/* The `scale` object, only when the replay had node templates. */
static json_t *scale_obj(const gp_replay_scale_stats *sc) {
  json_t *o = json_object();
  json_object_set_new(o, "nodes_created", json_integer(sc->created));
  json_object_set_new(o, "nodes_deleted", json_integer(sc->deleted));
  json_object_set_new(o, "nodes_interrupted", json_integer(sc->interrupted));
  json_object_set_new(o, "peak_provider_nodes", json_integer(sc->peak_provider_nodes));
  json_object_set_new(o, "peak_nodes", json_integer(sc->peak_nodes));
  json_object_set_new(o, "provider_node_hours", num(sc->node_hours, 3));
  json_object_set_new(o, "provider_gpu_hours", num(sc->gpu_hours, 3));
  if (sc->priced) {
    json_object_set_new(o, "provider_cost", num(sc->cost, 2));
    json_object_set_new(o, "cost_unknown", json_boolean(sc->cost_unknown));
  }
  return o;
}

static json_t *result_obj(const gp_replay_result *r, bool with_wall) {
  json_t *o = json_object();
  json_object_set_new(o, "policy", json_string(r->policy));
  json_object_set_new(o, "jobs", json_integer(r->jobs));
  json_object_set_new(o, "completed", json_integer(r->completed));
  json_object_set_new(o, "timeouts", json_integer(r->timeouts));
  json_object_set_new(o, "rejected", json_integer(r->rejected));
  json_object_set_new(o, "unfinished", json_integer(r->unfinished));
  json_object_set_new(o, "avg_jct_s", num(r->avg_jct_s, 3));
  json_object_set_new(o, "p50_jct_s", num(r->p50_jct_s, 3));
  json_object_set_new(o, "p95_jct_s", num(r->p95_jct_s, 3));
  json_object_set_new(o, "p99_jct_s", num(r->p99_jct_s, 3));
  json_object_set_new(o, "avg_wait_s", num(r->avg_wait_s, 3));
  json_object_set_new(o, "p50_wait_s", num(r->p50_wait_s, 3));
  json_object_set_new(o, "p95_wait_s", num(r->p95_wait_s, 3));
  json_object_set_new(o, "p99_wait_s", num(r->p99_wait_s, 3));
  json_object_set_new(o, "gpu_utilization", num(r->gpu_utilization, 6));
  json_object_set_new(o, "makespan_s", num(r->makespan_s, 3));
  json_object_set_new(o, "jain_fairness", num(r->jain_fairness, 6));
  json_t *wj = json_array();
  for (int i = 0; i < r->n_weeks; i++) json_array_append_new(wj, num(r->weekly_jain[i], 6));
  json_object_set_new(o, "weekly_cumulative_jain", wj);
  json_object_set_new(o, "usage_half_life_s", r->usage_half_life_s < 0 ? json_null() : json_integer((json_int_t)r->usage_half_life_s));
  json_object_set_new(o, "preemptions", json_integer(r->preemptions));
  json_object_set_new(o, "gpu_hours_lost", num(r->gpu_hours_lost, 3));
  json_object_set_new(o, "node_failures", json_integer(r->node_failures));
  json_object_set_new(o, "gpu_hours_lost_node_failures", num(r->gpu_hours_lost_failures, 3));
  json_object_set_new(o, "sched_calls", json_integer(r->sched_calls));
  json_object_set_new(o, "wall_seconds", num(with_wall ? r->wall_seconds : 0, 3));
  json_t *qs = json_array();
  for (int i = 0; i < r->n_queues; i++) {
    const gp_replay_queue_stats *q = &r->queues[i];
    json_t *qo = json_object();
    json_object_set_new(qo, "name", json_string(q->name));
    json_object_set_new(qo, "deserved_gpus", num(q->deserved_gpus, 3));
    json_object_set_new(qo, "jobs", json_integer(q->jobs));
    json_object_set_new(qo, "finished", json_integer(q->finished));
    json_object_set_new(qo, "avg_wait_s", num(q->avg_wait_s, 3));
    json_object_set_new(qo, "p95_wait_s", num(q->p95_wait_s, 3));
    json_object_set_new(qo, "avg_jct_s", num(q->avg_jct_s, 3));
    json_object_set_new(qo, "p95_jct_s", num(q->p95_jct_s, 3));
    json_object_set_new(qo, "gpu_hours", num(q->gpu_hours, 3));
    json_object_set_new(qo, "avg_allocated_gpus", num(q->avg_allocated_gpus, 3));
    json_object_set_new(qo, "avg_fair_share_gpus", num(q->avg_fair_share_gpus, 3));
    json_object_set_new(qo, "share_ratio", num(q->share_ratio, 6));
    if (r->usage_half_life_s >= 0) json_object_set_new(qo, "usage_share", num(q->usage_share, 6));
    json_object_set_new(qo, "preempted", json_integer(q->preempted));
    if (r->cost.priced) {
      json_object_set_new(qo, "cost", num(q->cost, 2));
      json_object_set_new(qo, "cost_unknown", json_boolean(q->cost_unknown));
    }
    json_array_append_new(qs, qo);
  }
  json_object_set_new(o, "queues", qs);
  if (r->cost.priced) {
    const gp_replay_cost *c = &r->cost;
    json_t *co = json_object();
    json_object_set_new(co, "currency", json_string(c->currency));
    json_object_set_new(co, "jobs", num(c->jobs, 2));
    json_object_set_new(co, "idle", num(c->idle, 2));
    json_object_set_new(co, "drained_down", num(c->drained_down, 2));
    json_object_set_new(co, "unused_commitment", num(c->unused_commitment, 2));
    json_object_set_new(co, "fleet", num(c->fleet, 2));
    json_object_set_new(co, "unknown", json_boolean(c->unknown));
    json_object_set_new(o, "cost", co);
  }
  if (r->idle.modelled || r->idle.policy) json_object_set_new(o, "idle", idle_obj(r));
  if (r->spot.modelled) json_object_set_new(o, "spot", spot_obj(&r->spot));
  if (r->scale.modelled) json_object_set_new(o, "scale", scale_obj(&r->scale));
  return o;
}

static char *dump(json_t *o) {
  char *s = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15));
  json_decref(o);
  if (!s) abort(); /* only on out of memory */
  size_t n = strlen(s);
  char *out = malloc(n + 2);
  if (!out) abort();
  memcpy(out, s, n);
  out[n] = '\n';
  out[n + 1] = '\0';
  free(s);
  return out;
}

char *gp_replay_result_json(const gp_replay_result *r, bool with_wall) {
  return dump(result_obj(r, with_wall));
}

char *gp_replay_results_json(gp_replay_result *const *r, int n, bool with_wall) {
  json_t *o = json_object(), *runs = json_array();
  for (int i = 0; i < n; i++) json_array_append_new(runs, result_obj(r[i], with_wall));
  json_object_set_new(o, "runs", runs);
  return dump(o);
}

/* Seconds for people: "42s", "3.5m", "2.1h", "4.0d". */
static const char *human_s(double s, char *buf, size_t n) {
  if (s < 100) snprintf(buf, n, "%.0fs", s);
  else if (s < 6000) snprintf(buf, n, "%.1fm", s / 60);
  else if (s < 3 * 86400) snprintf(buf, n, "%.1fh", s / 3600);
  else snprintf(buf, n, "%.1fd", s / 86400);
  return buf;
}

/* Seconds with a sign, for changes: "-42s", "+1.5h". */
static const char *human_delta(double s, char *buf, size_t n) {
  char tmp[32];
  snprintf(buf, n, "%s%s", s < 0 ? "-" : "+", human_s(fabs(s), tmp, sizeof tmp));
  return buf;
}

static void print_idle(FILE *out, const gp_replay_result *r) {
  const gp_replay_idle *id = &r->idle;
  char a[32], b[32], c[32], d[32];
  if (id->assumed)
    fputs("  idle model (ASSUMED, not measured: --idle-tail picks jobs that hold their GPUs idle\n"
          "  at the end of their run; the trace has no utilisation):\n", out);
  fprintf(out, "  idle in jobs: %lld jobs idle at the end of their run, %.1f GPU-hours (%.1f held)\n",
          (long long)id->jobs, id->gpu_hours, id->held_gpu_hours);
  if (id->policy)
    fprintf(out, "  idle policy released %.1f GPU-hours (%lld requeued, %lld cancelled, %lld notified)\n",
            id->released_gpu_hours, (long long)id->requeued, (long long)id->cancelled,
            (long long)id->notified);
  if (id->priced)
    fprintf(out, "  idle in jobs cost (%s) %.2f, released by the policy %.2f%s\n", r->cost.currency,
            id->cost, id->released_cost, id->cost_unknown ? " (some GPU-hours had no price)" : "");
  if (id->has_baseline)
    fprintf(out, "  without the policy: avg wait %s (%s), avg JCT %s (%s)\n",
            human_s(id->base_avg_wait_s, a, 32), human_delta(r->avg_wait_s - id->base_avg_wait_s, b, 32),
            human_s(id->base_avg_jct_s, c, 32), human_delta(r->avg_jct_s - id->base_avg_jct_s, d, 32));
  fputc('\n', out);
}

void gp_replay_print_table(FILE *out, const gp_replay_result *r) {
  char a[32], b[32], c[32], d[32];
  fprintf(out, "policy %s: %lld jobs (%lld completed, %lld timed out, %lld rejected, %lld unfinished)\n",
          r->policy, (long long)r->jobs, (long long)r->completed, (long long)r->timeouts,
          (long long)r->rejected, (long long)r->unfinished);
  fprintf(out, "  JCT      avg %s  p50 %s  p95 %s  p99 %s\n", human_s(r->avg_jct_s, a, 32),
          human_s(r->p50_jct_s, b, 32), human_s(r->p95_jct_s, c, 32), human_s(r->p99_jct_s, d, 32));
  fprintf(out, "  wait     avg %s  p50 %s  p95 %s  p99 %s\n", human_s(r->avg_wait_s, a, 32),
          human_s(r->p50_wait_s, b, 32), human_s(r->p95_wait_s, c, 32), human_s(r->p99_wait_s, d, 32));
  fprintf(out, "  GPU utilisation %.1f%%  makespan %s  Jain fairness %.3f\n",
          r->gpu_utilization * 100, human_s(r->makespan_s, a, 32), r->jain_fairness);
  if (r->n_weeks > 0) {
    double lo = 1, sum = 0;
    for (int i = 0; i < r->n_weeks; i++) {
      if (r->weekly_jain[i] < lo) lo = r->weekly_jain[i];
      sum += r->weekly_jain[i];
    }
    fprintf(out, "  cumulative fairness by week (Jain of GPU-hours over deserved share): min %.3f  "
                 "mean %.3f  last %.3f over %d weeks",
            lo, sum / r->n_weeks, r->weekly_jain[r->n_weeks - 1], r->n_weeks);
    if (r->usage_half_life_s > 0) fprintf(out, "  (usage half-life %s)\n", human_s(r->usage_half_life_s, a, 32));
    else fprintf(out, r->usage_half_life_s == 0 ? "  (usage without decay)\n" : "  (no usage)\n");
  }
  fprintf(out, "  preemptions %lld (%.1f GPU-hours lost)  node failures %lld (%.1f GPU-hours lost)\n",
          (long long)r->preemptions, r->gpu_hours_lost, (long long)r->node_failures,
          r->gpu_hours_lost_failures);
  const gp_replay_spot_stats *sp = &r->spot;
  if (sp->modelled)
    fprintf(out, "  spot interruptions %lld (%lld with a usable notice): %lld jobs interrupted "
            "(%lld runs), %.1f GPU-hours lost (%.1f recomputed + %.1f restart overhead)\n",
            (long long)sp->interruptions, (long long)sp->notices_used,
            (long long)sp->jobs_interrupted, (long long)sp->runs_interrupted, sp->gpu_hours_lost,
            sp->gpu_hours_recomputed, sp->gpu_hours_overhead);
  const gp_replay_scale_stats *sc = &r->scale;
  if (sc->modelled) {
    fprintf(out, "  autoscaling: %lld provider nodes created, %lld deleted, %lld interrupted; "
            "peak %lld provider nodes (%lld nodes in all); %.1f node-hours (%.1f GPU-hours)",
            (long long)sc->created, (long long)sc->deleted, (long long)sc->interrupted,
            (long long)sc->peak_provider_nodes, (long long)sc->peak_nodes, sc->node_hours,
            sc->gpu_hours);
    if (sc->priced)
      fprintf(out, ", cost %.2f%s", sc->cost, sc->cost_unknown ? " (some had no price)" : "");
    fputc('\n', out);
  }
  fprintf(out, "  %lld scheduler calls (%.2f s), replay %.2f s wall\n\n", (long long)r->sched_calls,
          r->sched_seconds, r->wall_seconds);
  const gp_replay_cost *k = &r->cost;
  if (k->priced) {
    fprintf(out, "  cost (%s): fleet %.2f = jobs %.2f + idle %.2f + unused commitment %.2f",
            k->currency, k->fleet, k->jobs, k->idle, k->unused_commitment);
    if (k->drained_down != 0) fprintf(out, " + drained/down %.2f", k->drained_down);
    fputc('\n', out);
    if (k->unknown) fputs("  (some GPU-hours had no price: the figures leave them out)\n", out);
    fputc('\n', out);
  }
  if (r->idle.modelled || r->idle.policy) print_idle(out, r);
  fprintf(out, "  %-16s %9s %7s %9s %9s %9s %9s %8s %8s %6s %6s", "QUEUE", "DESERVED", "JOBS",
          "AVG WAIT", "P95 WAIT", "AVG JCT", "GPU-H", "AVG GPU", "FAIR", "RATIO", "PREEMPT");
  if (k->priced) fprintf(out, " %12s", "COST");
  fputc('\n', out);
  for (int i = 0; i < r->n_queues; i++) {
    const gp_replay_queue_stats *q = &r->queues[i];
    fprintf(out, "  %-16.16s %9.0f %7lld %9s %9s %9s %9.0f %8.1f %8.1f %6.2f %6lld", q->name,
            q->deserved_gpus, (long long)q->jobs, human_s(q->avg_wait_s, a, 32),
            human_s(q->p95_wait_s, b, 32), human_s(q->avg_jct_s, c, 32), q->gpu_hours,
            q->avg_allocated_gpus, q->avg_fair_share_gpus, q->share_ratio, (long long)q->preempted);
    if (k->priced) fprintf(out, " %12.2f%s", q->cost, q->cost_unknown ? "+" : "");
    fputc('\n', out);
  }
}

void gp_replay_print_compare(FILE *out, gp_replay_result *const *r, int n) {
  char a[32];
  /* Columns as wide as the longest run name (policy@fleet when fleets are compared). */
  int w = 12;
  for (int i = 0; i < n; i++) {
    int len = (int)strlen(r[i]->policy);
    if (len > w) w = len < 48 ? len : 48;
  }
  fprintf(out, "%-22s", "");
  for (int i = 0; i < n; i++) fprintf(out, " %*.*s", w, w, r[i]->policy);
  fputc('\n', out);
#define ROW_S(label, field)                                                        \
  do {                                                                             \
    fprintf(out, "%-22s", label);                                                  \
    for (int i = 0; i < n; i++) fprintf(out, " %*s", w, human_s(r[i]->field, a, 32)); \
    fputc('\n', out);                                                              \
  } while (0)
#define ROW_F(label, fmt, expr)                                       \
  do {                                                                \
    fprintf(out, "%-22s", label);                                     \
    for (int i = 0; i < n; i++) fprintf(out, " %*" fmt, w, expr);    \
    fputc('\n', out);                                                 \
  } while (0)
  ROW_F("jobs finished", "lld", (long long)(r[i]->completed + r[i]->timeouts));
  ROW_S("avg wait", avg_wait_s);
  ROW_S("p50 wait", p50_wait_s);
  ROW_S("p95 wait", p95_wait_s);
  ROW_S("avg JCT", avg_jct_s);
  ROW_S("p50 JCT", p50_jct_s);
  ROW_S("p95 JCT", p95_jct_s);
  ROW_S("p99 JCT", p99_jct_s);
  /* Money and spot interruptions beside the waits and JCT, so a comparison of fleets
   * ("what if half of it were spot?") reads at the top of one table. */
  char label[64];
  if (r[0]->cost.priced) {
    snprintf(label, sizeof label, "fleet cost (%.8s)", r[0]->cost.currency);
    ROW_F(label, ".2f", r[i]->cost.fleet);
    ROW_F("job cost", ".2f", r[i]->cost.jobs);
    ROW_F("idle cost", ".2f", r[i]->cost.idle);
    ROW_F("unused commitment", ".2f", r[i]->cost.unused_commitment);
  }
  bool spot = false;
  for (int i = 0; i < n; i++) spot = spot || r[i]->spot.modelled;
  if (spot) {
    ROW_F("spot interruptions", "lld", (long long)r[i]->spot.interruptions);
    ROW_F("jobs interrupted", "lld", (long long)r[i]->spot.jobs_interrupted);
    ROW_F("GPU-h lost to spot", ".1f", r[i]->spot.gpu_hours_lost);
  }
  bool scale = false;
  for (int i = 0; i < n; i++) scale = scale || r[i]->scale.modelled;
  if (scale) {
    ROW_F("nodes created", "lld", (long long)r[i]->scale.created);
    ROW_F("nodes deleted", "lld", (long long)r[i]->scale.deleted);
    ROW_F("peak provider nodes", "lld", (long long)r[i]->scale.peak_provider_nodes);
    ROW_F("provider node-hours", ".1f", r[i]->scale.node_hours);
    if (r[0]->cost.priced) ROW_F("provider cost", ".2f", r[i]->scale.cost);
  }
  ROW_F("GPU utilisation %", ".1f", r[i]->gpu_utilization * 100);
  ROW_S("makespan", makespan_s);
  ROW_F("Jain fairness", ".3f", r[i]->jain_fairness);
  ROW_F("preemptions", "lld", (long long)r[i]->preemptions);
  ROW_F("GPU-hours lost", ".1f", r[i]->gpu_hours_lost);
  ROW_F("scheduler calls", "lld", (long long)r[i]->sched_calls);
  ROW_F("wall seconds", ".2f", r[i]->wall_seconds);
  if (r[0]->cost.priced) {
    for (int q = 0; q < r[0]->n_queues; q++) {
      snprintf(label, sizeof label, "cost %.17s", r[0]->queues[q].name);
      ROW_F(label, ".2f", q < r[i]->n_queues ? r[i]->queues[q].cost : 0);
    }
  }
  bool idle = false;
  for (int i = 0; i < n; i++) idle = idle || r[i]->idle.modelled || r[i]->idle.policy;
  if (idle) {
    ROW_F("idle in jobs GPU-h", ".1f", r[i]->idle.gpu_hours);
    ROW_F("released GPU-hours", ".1f", r[i]->idle.released_gpu_hours);
    ROW_F("idle requeued", "lld", (long long)r[i]->idle.requeued);
    ROW_F("idle cancelled", "lld", (long long)r[i]->idle.cancelled);
    ROW_F("idle notified", "lld", (long long)r[i]->idle.notified);
    if (r[0]->idle.priced) {
      ROW_F("idle in jobs cost", ".2f", r[i]->idle.cost);
      ROW_F("released cost", ".2f", r[i]->idle.released_cost);
    }
    if (r[0]->idle.has_baseline) {
      ROW_S("avg wait w/o policy", idle.base_avg_wait_s);
      ROW_S("avg JCT w/o policy", idle.base_avg_jct_s);
    }
    bool assumed = false;
    for (int i = 0; i < n; i++) assumed = assumed || r[i]->idle.assumed;
    if (assumed) fputs("(idle stretches ASSUMED by --idle-tail, not measured)\n", out);
  }
#undef ROW_S
#undef ROW_F
}

/* A CSV field as the server's reports write one (util/csv.h): quoted where needed, and a
 * queue name from a trace that a spreadsheet would run as a formula written as text. */
static void csv_field(FILE *out, const char *s) {
  gp_buf b;
  gp_buf_init(&b, 0);
  gp_csv_field(&b, s);
  if (b.data) fputs(b.data, out);
  gp_buf_done(&b);
}

static void cost_row(FILE *out, const gp_replay_result *r, const char *kind, const char *queue,
                     double cost) {
  csv_field(out, r->policy);
  fprintf(out, ",%s,", kind);
  csv_field(out, queue);
  fprintf(out, ",%.2f,", cost);
  csv_field(out, r->cost.currency);
  fputc('\n', out);
}

void gp_replay_write_cost_csv(FILE *out, gp_replay_result *const *r, int n) {
  fputs("policy,kind,queue,cost,currency\n", out);
  for (int i = 0; i < n; i++) {
    if (!r[i]->cost.priced) continue;
    for (int q = 0; q < r[i]->n_queues; q++)
      cost_row(out, r[i], "jobs", r[i]->queues[q].name, r[i]->queues[q].cost);
    cost_row(out, r[i], "idle", "", r[i]->cost.idle);
    cost_row(out, r[i], "drained_down", "", r[i]->cost.drained_down);
    cost_row(out, r[i], "unused_commitment", "", r[i]->cost.unused_commitment);
    cost_row(out, r[i], "fleet", "", r[i]->cost.fleet);
  }
}
