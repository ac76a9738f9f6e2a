/* SPDX-License-Identifier: Apache-2.0 */
/* Health policy and engine declared in health.h. The Xid defaults follow the "Resolution
 * Bucket (Immediate Action)" column of NVIDIA's Xid catalogue: RESTART_APP faults are the
 * application's own (ignored: the job's own exit tells the story), RESET_GPU / RESTART_BM
 * faults make the GPU untrustworthy until reset (fail the job there, drain the GPU), and
 * faults whose recovery needs the node (Xid 154 with "node reboot required") drain the node.
 * Counters from samples are compared round to round: only a rise is news, so a restarted
 * agent does not re-punish an old volatile ECC count. */
#include "agent/health.h"

#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "agent/nvml_api.h"
#include "util/mem.h"
#include "util/units.h"

#define FJ GP_HEALTH_FAIL_JOB
#define DG GP_HEALTH_DRAIN_GPU
#define DN GP_HEALTH_DRAIN_NODE

static const struct {
  int xid;
  unsigned actions;
  const char *name;
} xid_catalogue[] = {
    {8, 0, "GPU stopped processing (application)"},
    {13, 0, "graphics engine exception (application)"},
    {31, 0, "GPU memory page fault (application)"},
    {32, 0, "invalid or corrupted push buffer stream"},
    {43, 0, "GPU stopped processing (application)"},
    {45, 0, "preemptive cleanup after an earlier fault"},
    {48, FJ | DG, "double-bit ECC error"},
    {61, FJ | DG, "internal micro-controller breakpoint"},
    {62, FJ | DG, "internal micro-controller halt"},
    {63, DG, "row remapping recorded: reset the GPU to activate"},
    {64, FJ | DG, "row remapping failed"},
    {69, FJ | DG, "graphics engine class error"},
    {74, FJ | DG, "NVLink error"},
    {79, FJ | DG, "GPU has fallen off the bus"},
    {92, DG, "high single-bit ECC error rate"},
    {94, FJ | DG, "contained ECC error"},
    {95, FJ | DG, "uncontained ECC error"},
    {109, 0, "context switch timeout (application)"},
    {119, FJ | DG, "GSP RPC timeout"},
    {120, FJ | DG, "GSP error"},
    {121, FJ | DG, "C2C link error"},
    {140, FJ | DG, "unrecovered ECC error"},
    {154, FJ | DN, "GPU recovery action changed (node reboot required)"},
};
#define N_CATALOGUE (sizeof xid_catalogue / sizeof xid_catalogue[0])

const char *gp_health_xid_name(int xid) {
  for (size_t i = 0; i < N_CATALOGUE; i++)
    if (xid_catalogue[i].xid == xid) return xid_catalogue[i].name;
  return NULL;
}

void gp_health_policy_default(gp_health_policy *p) {
  memset(p, 0, sizeof *p);
  for (size_t i = 0; i < N_CATALOGUE && p->n_xid < GP_HEALTH_MAX_XID_RULES; i++) {
    p->xid[p->n_xid].xid = xid_catalogue[i].xid;
    p->xid[p->n_xid++].actions = xid_catalogue[i].actions;
  }
  p->unknown_xid = 0;
  p->double_bit_ecc = FJ | DG;
  p->row_remap_failure = FJ | DG;
  p->row_remap_pending = DG;
  p->gpu_lost = FJ | DG;
  p->sbe_storm_count = 100;
  p->sbe_storm_window_s = 60;
  p->sbe_storm = DG;
  p->throttle_window_s = 30;
  p->auto_resume_after_s = 0;
}

unsigned gp_health_xid_actions(const gp_health_policy *p, int xid) {
  for (int i = 0; i < p->n_xid; i++)
    if (p->xid[i].xid == xid) return p->xid[i].actions;
  return p->unknown_xid;
}

const char *gp_health_actions_str(unsigned a, char *buf, size_t size) {
  if (!a) {
    snprintf(buf, size, "ignore");
    return buf;
  }
  snprintf(buf, size, "%s%s%s%s%s", a & FJ ? "fail_job" : "", a & FJ && a & (DG | DN) ? "," : "",
           a & DG ? "drain_gpu" : "", a & DG && a & DN ? "," : "", a & DN ? "drain_node" : "");
  return buf;
}

/* ---- Policy from the config ---- */

static int parse_one_action(const gp_doc *d, const gp_doc_node *n, const char *field,
                            unsigned *ret, gp_err *err) {
  const char *s = NULL;
  int rc = gp_doc_str(d, n, field, &s, err);
  if (rc) return rc;
  if (!strcasecmp(s, "ignore")) *ret |= 0;
  else if (!strcasecmp(s, "fail_job")) *ret |= FJ;
  else if (!strcasecmp(s, "drain_gpu")) *ret |= DG;
  else if (!strcasecmp(s, "drain_node")) *ret |= DN;
  else
    return gp_err_set(err, GP_EINVAL, d->name, n->line, field,
                      "unknown action '%s' (expected ignore, fail_job, drain_gpu or drain_node)", s);
  return 0;
}

static int parse_actions(const gp_doc *d, const gp_doc_node *n, const char *field, unsigned *ret,
                         gp_err *err) {
  unsigned a = 0;
  if (n->kind == GP_DOC_SEQ) {
    for (int i = 0; i < n->n; i++) {
      char f[160];
      snprintf(f, sizeof f, "%s[%d]", field, i);
      int rc = parse_one_action(d, n->items[i], f, &a, err);
      if (rc) return rc;
    }
  } else {
    int rc = parse_one_action(d, n, field, &a, err);
    if (rc) return rc;
  }
  *ret = a;
  return 0;
}

int gp_health_policy_load(const gp_doc *d, const gp_doc_node *node, gp_health_policy *out,
                          gp_err *err) {
  gp_health_policy p = *out;
  if (!node || gp_doc_is_null(node)) return 0;
  int rc = gp_doc_expect(d, node, "health", GP_DOC_MAP, err);
  if (rc) return rc;
  static const char *const keys[] = {"xid", "double_bit_ecc", "row_remap_failure",
                                     "row_remap_pending", "gpu_lost", "sbe_storm",
                                     "throttle_window", "auto_resume", NULL};
  if ((rc = gp_doc_check_keys(d, node, "health", keys, err))) return rc;
  const gp_doc_node *x = gp_doc_get(node, "xid");
  if (x) {
    if ((rc = gp_doc_expect(d, x, "health.xid", GP_DOC_MAP, err))) return rc;
    for (int i = 0; i < x->n; i++) {
      char f[160];
      snprintf(f, sizeof f, "health.xid.%s", x->keys[i]);
      unsigned a;
      if ((rc = parse_actions(d, x->items[i], f, &a, err))) return rc;
      if (!strcmp(x->keys[i], "default")) {
        p.unknown_xid = a;
        continue;
      }
      int64_t code;
      if (gp_parse_int64(x->keys[i], &code) || code < 1 || code > 100000)
        return gp_err_set(err, GP_EINVAL, d->name, x->items[i]->line, f,
                          "expected an Xid number or 'default'");
      int k = 0;
      while (k < p.n_xid && p.xid[k].xid != (int)code) k++;
      if (k == p.n_xid) {
        if (p.n_xid == GP_HEALTH_MAX_XID_RULES)
          return gp_err_set(err, GP_ELIMIT, d->name, x->items[i]->line, f,
                            "more than %d Xid rules", GP_HEALTH_MAX_XID_RULES);
        p.n_xid++;
      }
      p.xid[k].xid = (int)code;
      p.xid[k].actions = a;
    }
  }
  static const struct {
    const char *key;
    size_t off;
  } simple[] = {
      {"double_bit_ecc", offsetof(gp_health_policy, double_bit_ecc)},
      {"row_remap_failure", offsetof(gp_health_policy, row_remap_failure)},
      {"row_remap_pending", offsetof(gp_health_policy, row_remap_pending)},
      {"gpu_lost", offsetof(gp_health_policy, gpu_lost)},
  };
  for (size_t i = 0; i < sizeof simple / sizeof simple[0]; i++) {
    const gp_doc_node *n = gp_doc_get(node, simple[i].key);
    if (!n) continue;
    char f[64];
    snprintf(f, sizeof f, "health.%s", simple[i].key);
    if ((rc = parse_actions(d, n, f, (unsigned *)((char *)&p + simple[i].off), err))) return rc;
  }
  const gp_doc_node *st = gp_doc_get(node, "sbe_storm");
  if (st) {
    if ((rc = gp_doc_expect(d, st, "health.sbe_storm", GP_DOC_MAP, err))) return rc;
    static const char *const sk[] = {"count", "window", "action", NULL};
    if ((rc = gp_doc_check_keys(d, st, "health.sbe_storm", sk, err))) return rc;
    int64_t v;
    const gp_doc_node *n;
    if ((n = gp_doc_get(st, "count"))) {
      if ((rc = gp_doc_int(d, n, "health.sbe_storm.count", &v, err))) return rc;
      if (v < 1 || v > 1000000000)
        return gp_err_set(err, GP_EINVAL, d->name, n->line, "health.sbe_storm.count",
                          "expected 1 to 1e9");
      p.sbe_storm_count = (int)v;
    }
    if ((n = gp_doc_get(st, "window"))) {
      if ((rc = gp_doc_duration_s(d, n, "health.sbe_storm.window", &v, err))) return rc;
      if (v < 1 || v > 86400)
        return gp_err_set(err, GP_EINVAL, d->name, n->line, "health.sbe_storm.window",
                          "expected 1s to 1d");
      p.sbe_storm_window_s = (int)v;
    }
    if ((n = gp_doc_get(st, "action")) &&
        (rc = parse_actions(d, n, "health.sbe_storm.action", &p.sbe_storm, err)))
      return rc;
  }
  const gp_doc_node *n;
  if ((n = gp_doc_get(node, "throttle_window"))) {
    int64_t v;
    if ((rc = gp_doc_duration_s(d, n, "health.throttle_window", &v, err))) return rc;
    if (v > 86400)
      return gp_err_set(err, GP_EINVAL, d->name, n->line, "health.throttle_window",
                        "at most 1d");
    p.throttle_window_s = (int)v;
  }
  if ((n = gp_doc_get(node, "auto_resume"))) {
    const char *s = n->kind == GP_DOC_SCALAR ? n->scalar : NULL;
    if (s && (!strcasecmp(s, "off") || !strcasecmp(s, "false") || !strcmp(s, "0"))) {
      p.auto_resume_after_s = 0;
    } else {
      int64_t v;
      if ((rc = gp_doc_duration_s(d, n, "health.auto_resume", &v, err))) return rc;
      if (v > 30 * 86400)
        return gp_err_set(err, GP_EINVAL, d->name, n->line, "health.auto_resume",
                          "at most 30d");
      p.auto_resume_after_s = (int)v;
    }
  }
  *out = p;
  return 0;
}

/* ---- Engine ---- */

#define SBE_WINDOW_SLOTS 256

typedef struct gpu_health {
  bool drained, by_policy;
  char reason[256];
  int64_t drained_at_ms;
  bool have_prev, was_lost, remap_failure, remap_pending;
  int64_t prev_dbe, prev_sbe;
  int sbe_n;                         /* recent single-bit increases: (time, count) */
  int64_t sbe_at[SBE_WINDOW_SLOTS], sbe_count[SBE_WINDOW_SLOTS];
  int64_t storm_until_ms;            /* a storm was reported; quiet until the window passes */
  int64_t thermal_since_ms, power_since_ms;
} gpu_health;

struct gp_health {
  pthread_mutex_t mu;
  gp_health_policy p;
  gp_gpu_backend *b;
  gpu_health g[GP_GPU_MAX_DEVICES];
  bool node_drained;
  char node_reason[192];
  bool thermal, power;               /* active node conditions */
};

gp_health *gp_health_new(const gp_health_policy *p, gp_gpu_backend *b) {
  gp_health *h = gp_xcalloc(1, sizeof *h);
  pthread_mutex_init(&h->mu, NULL);
  if (p) h->p = *p;
  else gp_health_policy_default(&h->p);
  h->b = b;
  return h;
}

void gp_health_free(gp_health *h) {
  if (!h) return;
  pthread_mutex_destroy(&h->mu);
  free(h);
}

typedef struct out_list {
  gp_health_action *a;
  int n, max;
} out_list;

static void add_jobs(gp_health_action *a, const gp_telemetry_view *v, const gp_telemetry_job *jobs,
                     int n_jobs, int gpu) {
  for (int i = 0; i < n_jobs; i++)
    for (int k = 0; k < jobs[i].n_gpus; k++)
      if (jobs[i].gpus[k] == gpu || gpu < 0) {
        bool dup = false;
        for (int j = 0; j < a->n_jobs && !dup; j++) dup = !strcmp(a->jobs[j], jobs[i].id);
        if (!dup && a->n_jobs < GP_HEALTH_MAX_JOBS)
          snprintf(a->jobs[a->n_jobs++], sizeof a->jobs[0], "%s", jobs[i].id);
        break;
      }
  for (int i = 0; v && i < v->n_attr; i++) {
    if (v->attr[i].gpu != gpu && gpu >= 0) continue;
    bool dup = false;
    for (int j = 0; j < a->n_jobs && !dup; j++) dup = !strcmp(a->jobs[j], v->attr[i].job);
    if (!dup && a->n_jobs < GP_HEALTH_MAX_JOBS)
      snprintf(a->jobs[a->n_jobs++], sizeof a->jobs[0], "%s", v->attr[i].job);
  }
}

/* Emits a fault unless this round already emitted one for the GPU covering these actions
 * (an Xid 48 event and the DBE counter rise are one fault, not two). */
static void fault(gp_health *h, out_list *o, const gp_telemetry_view *v,
                  const gp_telemetry_job *jobs, int n_jobs, int gpu, int xid, unsigned actions,
                  int64_t now, const char *fmt, ...) __attribute__((format(printf, 10, 11)));

static void fault(gp_health *h, out_list *o, const gp_telemetry_view *v,
                  const gp_telemetry_job *jobs, int n_jobs, int gpu, int xid, unsigned actions,
                  int64_t now, const char *fmt, ...) {
  if (!actions) return;
  for (int i = 0; i < o->n; i++)
    if (o->a[i].kind == GP_HEALTH_FAULT && o->a[i].gpu == gpu &&
        (o->a[i].actions | actions) == o->a[i].actions)
      return;
  char reason[192];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(reason, sizeof reason, fmt, ap);
  va_end(ap);
  if (gpu >= 0 && gpu < GP_GPU_MAX_DEVICES && (actions & DG) && !h->g[gpu].drained) {
    gpu_health *g = &h->g[gpu];
    g->drained = true;
    g->by_policy = true;
    g->drained_at_ms = now;
    snprintf(g->reason, sizeof g->reason, "%s", reason);
  }
  if ((actions & DN) && !h->node_drained) {
    h->node_drained = true;
    snprintf(h->node_reason, sizeof h->node_reason, "%s", reason);
  }
  if (o->n == o->max) return;
  gp_health_action *a = &o->a[o->n++];
  memset(a, 0, sizeof *a);
  a->kind = GP_HEALTH_FAULT;
  a->gpu = gpu;
  a->xid = xid;
  a->actions = actions;
  snprintf(a->reason, sizeof a->reason, "%s", reason);
  if (actions & FJ) add_jobs(a, v, jobs, n_jobs, gpu);
}

static void condition(out_list *o, const char *name, bool active) {
  if (o->n == o->max) return;
  gp_health_action *a = &o->a[o->n++];
  memset(a, 0, sizeof *a);
  a->kind = GP_HEALTH_CONDITION;
  a->gpu = -1;
  snprintf(a->condition, sizeof a->condition, "%s", name);
  a->active = active;
}

static bool gpu_busy(const gp_telemetry_view *v, const gp_telemetry_job *jobs, int n_jobs, int g) {
  for (int i = 0; i < n_jobs; i++)
    for (int k = 0; k < jobs[i].n_gpus; k++)
      if (jobs[i].gpus[k] == g) return true;
  if (v && g < v->n_gpus && v->have_sample[g] && v->sample[g].n_procs > 0) return true;
  return false;
}

/* The reset check: reset the GPU where the backend can (on real GPUs an operator resets
 * with nvidia-smi -r, and the backend's reset leaves the GPU as it is), then read it: it must
 * answer, with no row-remap failure or pending remap. */
static bool reset_check(gp_health *h, int gpu, char *why, size_t size) {
  if (!h->b) {
    snprintf(why, size, "no backend to check the GPU with");
    return false;
  }
  gp_err e = {0};
  if (h->b->ops->reset(h->b, gpu, &e)) {
    snprintf(why, size, "reset failed: %.100s", e.message);
    return false;
  }
  gp_gpu_sample s;
  if (h->b->ops->sample(h->b, gpu, &s, &e)) {
    snprintf(why, size, "GPU does not answer: %.100s", e.message);
    return false;
  }
  if (s.row_remap_failure) {
    snprintf(why, size, "row remapping has failed: the GPU needs replacing");
    return false;
  }
  if (s.row_remap_pending) {
    snprintf(why, size, "a row remap still waits for a GPU reset");
    return false;
  }
  gpu_health *g = &h->g[gpu];
  g->prev_dbe = s.ecc_dbe_volatile;
  g->prev_sbe = s.ecc_sbe_volatile;
  g->was_lost = false;
  g->remap_pending = false;
  g->sbe_n = 0;
  return true;
}

/* One evaluation: its inputs, the actions it emits and the node conditions it finds. */
typedef struct eval_round {
  gp_health *h;
  const gp_health_policy *p;
  const gp_telemetry_view *v;
  const gp_telemetry_job *jobs;
  int n_jobs;
  int64_t now;
  out_list o;
  bool thermal_any, power_any;
} eval_round;

/* Emits a fault for each Xid event the backend reported on a known GPU. */
static void check_xid_events(eval_round *r, const gp_gpu_event *events, int n_events) {
  for (int i = 0; i < n_events; i++) {
    const gp_gpu_event *e = &events[i];
    if (e->xid <= 0 || e->gpu < 0 || e->gpu >= GP_GPU_MAX_DEVICES) continue;
    const char *name = gp_health_xid_name(e->xid);
    fault(r->h, &r->o, r->v, r->jobs, r->n_jobs, e->gpu, e->xid,
          gp_health_xid_actions(r->p, e->xid), r->now, "xid %d (%s) on GPU %d", e->xid,
          name ? name : "not in the catalogue", e->gpu);
  }
}

/* Emits the lost-GPU fault once when a GPU stops answering. */
static void check_lost(eval_round *r, gpu_health *g, int gi) {
  if (r->v->sample_error[gi][0] && !g->was_lost) {
    g->was_lost = true;
    fault(r->h, &r->o, r->v, r->jobs, r->n_jobs, gi, 0, r->p->gpu_lost, r->now,
          "GPU %d cannot be read: %s", gi, r->v->sample_error[gi]);
  }
}

/* Emits faults for new double-bit ECC errors and a new row-remap failure or pending remap. */
static void check_ecc(eval_round *r, gpu_health *g, int gi, const gp_gpu_sample *s) {
  if (g->have_prev && s->ecc_dbe_volatile > g->prev_dbe)
    fault(r->h, &r->o, r->v, r->jobs, r->n_jobs, gi, 0, r->p->double_bit_ecc, r->now,
          "%lld new double-bit ECC error(s) on GPU %d",
          (long long)(s->ecc_dbe_volatile - g->prev_dbe), gi);
  if (s->row_remap_failure && !g->remap_failure)
    fault(r->h, &r->o, r->v, r->jobs, r->n_jobs, gi, 0, r->p->row_remap_failure, r->now,
          "row remapping failed on GPU %d", gi);
  if (s->row_remap_pending && !g->remap_pending)
    fault(r->h, &r->o, r->v, r->jobs, r->n_jobs, gi, 0, r->p->row_remap_pending, r->now,
          "row remap pending on GPU %d: it needs a reset", gi);
  g->remap_failure = s->row_remap_failure;
  g->remap_pending = s->row_remap_pending;
}

/* Single-bit storms: counts the increases within the sliding window and emits a fault when
 * they reach the policy's count. */
static void check_sbe_storm(eval_round *r, gpu_health *g, int gi, const gp_gpu_sample *s) {
  const gp_health_policy *p = r->p;
  int64_t now = r->now;
  if (g->have_prev && s->ecc_sbe_volatile > g->prev_sbe && p->sbe_storm_count > 0) {
    if (g->sbe_n == SBE_WINDOW_SLOTS) {
      memmove(g->sbe_at, g->sbe_at + 1, sizeof g->sbe_at[0] * (SBE_WINDOW_SLOTS - 1));
      memmove(g->sbe_count, g->sbe_count + 1, sizeof g->sbe_count[0] * (SBE_WINDOW_SLOTS - 1));
      g->sbe_n--;
    }
    g->sbe_at[g->sbe_n] = now;
    g->sbe_count[g->sbe_n++] = s->ecc_sbe_volatile - g->prev_sbe;
  }
  int64_t win = (int64_t)p->sbe_storm_window_s * 1000, total = 0;
  int k = 0;
  for (int i = 0; i < g->sbe_n; i++)
    if (now - g->sbe_at[i] < win) {
      g->sbe_at[k] = g->sbe_at[i];
      g->sbe_count[k++] = g->sbe_count[i];
      total += g->sbe_count[i];
    }
  g->sbe_n = k;
  if (p->sbe_storm_count > 0 && total >= p->sbe_storm_count && now >= g->storm_until_ms) {
    g->storm_until_ms = now + win;
    fault(r->h, &r->o, r->v, r->jobs, r->n_jobs, gi, 0, p->sbe_storm, now,
          "%lld single-bit ECC errors within %ds on GPU %d", (long long)total,
          p->sbe_storm_window_s, gi);
  }
}

/* Keeps the ECC counters the next sample is compared with; the GPU answered. */
static void remember_sample(gpu_health *g, const gp_gpu_sample *s) {
  if (s->ecc_dbe_volatile >= 0) g->prev_dbe = s->ecc_dbe_volatile;
  if (s->ecc_sbe_volatile >= 0) g->prev_sbe = s->ecc_sbe_volatile;
  g->have_prev = true;
  g->was_lost = false;
}

/* Notes thermal and power throttling on this GPU: continuously for the window, it becomes
 * a node condition. */
static void track_throttle(eval_round *r, gpu_health *g, const gp_gpu_sample *s) {
  const gp_health_policy *p = r->p;
  int64_t now = r->now;
  uint64_t thr = s->throttle_reasons;
  if (thr & (GP_NVML_CLOCKS_EVENT_HW_THERMAL_SLOWDOWN | GP_NVML_CLOCKS_EVENT_SW_THERMAL_SLOWDOWN)) {
    if (!g->thermal_since_ms) g->thermal_since_ms = now;
    if (now - g->thermal_since_ms >= (int64_t)p->throttle_window_s * 1000) r->thermal_any = true;
  } else {
    g->thermal_since_ms = 0;
  }
  if (thr & (GP_NVML_CLOCKS_EVENT_SW_POWER_CAP | GP_NVML_CLOCKS_EVENT_HW_POWER_BRAKE)) {
    if (!g->power_since_ms) g->power_since_ms = now;
    if (now - g->power_since_ms >= (int64_t)p->throttle_window_s * 1000) r->power_any = true;
  } else {
    g->power_since_ms = 0;
  }
}

/* Evaluates one GPU's sample, or its absence. */
static void check_gpu(eval_round *r, int gi) {
  gpu_health *g = &r->h->g[gi];
  if (!r->v->have_sample[gi]) {
    check_lost(r, g, gi);
    return;
  }
  const gp_gpu_sample *s = &r->v->sample[gi];
  check_ecc(r, g, gi, s);
  check_sbe_storm(r, g, gi, s);
  remember_sample(g, s);
  track_throttle(r, g, s);
}

/* Emits the node conditions (thermal, power throttling) that changed since the last round. */
static void report_conditions(eval_round *r) {
  gp_health *h = r->h;
  if (!r->v) return;
  if (r->thermal_any != h->thermal) condition(&r->o, "thermal_throttling", r->thermal_any);
  if (r->power_any != h->power) condition(&r->o, "power_throttling", r->power_any);
  h->thermal = r->thermal_any;
  h->power = r->power_any;
}

/* Returns a GPU drained by policy when its reset check passes, or notes why it failed. */
static void try_resume(eval_round *r, gpu_health *g, int gi) {
  char why[160];
  if (reset_check(r->h, gi, why, sizeof why)) {
    g->drained = false;
    g->by_policy = false;
    if (r->o.n < r->o.max) {
      gp_health_action *a = &r->o.a[r->o.n++];
      memset(a, 0, sizeof *a);
      a->kind = GP_HEALTH_RESUME_GPU;
      a->gpu = gi;
      snprintf(a->reason, sizeof a->reason, "GPU %d passed the reset check after: %.120s", gi,
               g->reason);
    }
    g->reason[0] = '\0';
  } else {
    g->drained_at_ms = r->now; /* try again after another period */
    char prev[256];
    snprintf(prev, sizeof prev, "%s", g->reason);
    char *semi = strstr(prev, "; reset check: ");
    if (semi) *semi = '\0';
    snprintf(g->reason, sizeof g->reason, "%.100s; reset check: %.80s", prev, why);
  }
}

/* Automatic return after a successful reset check, once the GPU is empty. */
static void auto_resume(eval_round *r) {
  const gp_health_policy *p = r->p;
  if (p->auto_resume_after_s <= 0) return;
  for (int gi = 0; gi < GP_GPU_MAX_DEVICES; gi++) {
    gpu_health *g = &r->h->g[gi];
    if (!g->drained || !g->by_policy) continue;
    if (r->now - g->drained_at_ms < (int64_t)p->auto_resume_after_s * 1000) continue;
    if (gpu_busy(r->v, r->jobs, r->n_jobs, gi)) continue;
    try_resume(r, g, gi);
  }
}

int gp_health_evaluate(gp_health *h, const gp_telemetry_view *v, const gp_gpu_event *events,
                       int n_events, const gp_telemetry_job *jobs, int n_jobs, int64_t now,
                       gp_health_action *out, int max, int *ret_n) {
  eval_round r = {.h = h, .p = &h->p, .v = v, .jobs = jobs, .n_jobs = jobs ? n_jobs : 0,
                  .now = now, .o = {out, 0, max}};
  pthread_mutex_lock(&h->mu);
  check_xid_events(&r, events, n_events);
  for (int gi = 0; v && gi < v->n_gpus && gi < GP_GPU_MAX_DEVICES; gi++) check_gpu(&r, gi);
  report_conditions(&r);
  auto_resume(&r);
  pthread_mutex_unlock(&h->mu);
  *ret_n = r.o.n;
  return 0;
}

void gp_health_resume(gp_health *h, int gpu) {
  pthread_mutex_lock(&h->mu);
  if (gpu < 0) {
    h->node_drained = false;
    h->node_reason[0] = '\0';
  } else if (gpu < GP_GPU_MAX_DEVICES) {
    h->g[gpu].drained = false;
    h->g[gpu].by_policy = false;
    h->g[gpu].reason[0] = '\0';
  }
  pthread_mutex_unlock(&h->mu);
}

gp_gpu_state gp_health_gpu_state(gp_health *h, int gpu, char *reason, size_t size) {
  gp_gpu_state st = GP_GPU_STATE_HEALTHY;
  pthread_mutex_lock(&h->mu);
  if (gpu >= 0 && gpu < GP_GPU_MAX_DEVICES && h->g[gpu].drained) {
    /* A drained GPU that still does not answer is failed, not merely out of service: it
     * has no figures to show and nothing may run on it until a reset brings it back. */
    st = h->g[gpu].was_lost ? GP_GPU_STATE_FAILED : GP_GPU_STATE_DRAINED;
    if (reason) snprintf(reason, size, "%s", h->g[gpu].reason);
  } else if (reason && size) {
    reason[0] = '\0';
  }
  pthread_mutex_unlock(&h->mu);
  return st;
}

bool gp_health_node_drained(gp_health *h, char *reason, size_t size) {
  pthread_mutex_lock(&h->mu);
  bool d = h->node_drained;
  if (reason && size) snprintf(reason, size, "%s", d ? h->node_reason : "");
  pthread_mutex_unlock(&h->mu);
  return d;
}

void gp_health_conditions(gp_health *h, char *buf, size_t size) {
  pthread_mutex_lock(&h->mu);
  snprintf(buf, size, "%s%s%s%s%s", h->thermal ? "thermal_throttling" : "",
           h->thermal && (h->power || h->node_drained) ? "," : "",
           h->power ? "power_throttling" : "", h->power && h->node_drained ? "," : "",
           h->node_drained ? "drained" : "");
  pthread_mutex_unlock(&h->mu);
}
