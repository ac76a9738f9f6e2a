/* SPDX-License-Identifier: Apache-2.0 */
/* Orders from the server, each executed at most once: executed ids are remembered in memory
 * and appended (fsync'd) to <data>/orders.log, so neither a re-sent order nor a restarted
 * agent runs one twice. Each kind is decoded by the protocol module and run through the
 * table of kinds at the end of this file. */
#include "agent/agent_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/gpu_sim.h"
#include "util/mem.h"

/* ---- executed orders: kept on disk so a restarted agent still runs each at most once ---- */

static bool order_seen(const gp_agent *a, const char *id) {
  for (size_t i = 0; i < a->n_orders; i++)
    if (strcmp(a->orders[i], id) == 0) return true;
  return false;
}

static void order_remember_mem(gp_agent *a, const char *id) {
  snprintf(a->orders[a->next_order], GP_AGENT_ID_MAX, "%s", id);
  a->next_order = (a->next_order + 1) % GP_AGENT_MAX_ORDERS_KEPT;
  if (a->n_orders < GP_AGENT_MAX_ORDERS_KEPT) a->n_orders++;
}

static void orders_rewrite(gp_agent *a) {
  char path[700], tmp[710];
  snprintf(path, sizeof path, "%s/orders.log", a->cfg.data_dir);
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "we");
  if (!f) return;
  for (size_t i = 0; i < a->n_orders; i++) {
    size_t k = (a->next_order + GP_AGENT_MAX_ORDERS_KEPT - a->n_orders + i) %
               GP_AGENT_MAX_ORDERS_KEPT;
    fprintf(f, "%s\n", a->orders[k]);
  }
  fflush(f);
  fsync(fileno(f));
  fclose(f);
  rename(tmp, path);
  if (a->orders_log) fclose(a->orders_log);
  a->orders_log = fopen(path, "ae");
  a->orders_log_lines = a->n_orders;
}

static void order_remember(gp_agent *a, const char *id) {
  order_remember_mem(a, id);
  if (a->orders_log) {
    fprintf(a->orders_log, "%s\n", id);
    fflush(a->orders_log);
    fsync(fileno(a->orders_log));
    a->orders_log_lines++;
  }
  if (a->orders_log_lines > 2 * GP_AGENT_MAX_ORDERS_KEPT) orders_rewrite(a);
}

void gp__agent_orders_load(gp_agent *a) {
  char path[700], line[256];
  snprintf(path, sizeof path, "%s/orders.log", a->cfg.data_dir);
  FILE *f = fopen(path, "re");
  if (f) {
    while (fgets(line, sizeof line, f)) {
      line[strcspn(line, "\n")] = '\0';
      if (line[0] && strlen(line) < GP_AGENT_ID_MAX) order_remember_mem(a, line);
      a->orders_log_lines++;
    }
    fclose(f);
  }
  a->orders_log = fopen(path, "ae");
}

void gp__agent_orders_forget(gp_agent *a) {
  a->n_orders = 0;
  a->next_order = 0;
  orders_rewrite(a);
}

/* ---- the kinds ---- */

_Static_assert(GP_PROTO_MAX_GPUS == GP_GPU_MAX_DEVICES, "a GPU index of the protocol is one of ours");
_Static_assert(GP_PROTO_MAX_MIG == GP_GPU_MAX_MIG, "a mig order fits a GPU's MIG table");
_Static_assert(GP_PROTO_ID_MAX == GP_AGENT_ID_MAX, "an order or job id fits our tables");

/* The answers to mig and inject orders: the server waits for the first, an admin reads the
 * second. */
static gp_proto_event *order_done(gp_proto_event_kind kind, const char *id, int rc,
                                  const char *ok_message, const char *message) {
  gp_proto_event *ev = gp_xcalloc(1, sizeof *ev);
  ev->kind = kind;
  snprintf(ev->order, sizeof ev->order, "%s", id);
  ev->ok = rc == 0;
  snprintf(ev->message, sizeof ev->message, "%s", rc == 0 ? ok_message : message);
  return ev;
}

static void mig_done(gp_agent *a, const char *id, int gpu, int rc, const char *message) {
  gp_proto_event *ev = order_done(GP_PROTO_EV_MIG_DONE, id, rc, "MIG layout applied", message);
  ev->gpu = gpu;
  if (gpu >= 0 && gpu < a->n_gpus) {
    const gp_gpu_info *g = &a->gpus[gpu];
    ev->has_mig = true;
    for (int k = 0; k < g->n_mig && k < GP_PROTO_MAX_MIG; k++) {
      gp_proto_mig_instance *m = &ev->mig[ev->n_mig++];
      snprintf(m->uuid, sizeof m->uuid, "%s", g->mig[k].uuid);
      snprintf(m->profile, sizeof m->profile, "%s", g->mig[k].profile);
      m->start_slot = g->mig[k].start_slot;
      m->gpu_instance_id = g->mig[k].gpu_instance_id;
      m->mem_mib = g->mig[k].mem_mib;
    }
  }
  gp__agent_log("order %s: mig on GPU %d: %s", id, gpu, rc == 0 ? "applied" : message);
  gp__agent_event(a, gp_proto_event_encode(ev));
  free(ev);
}

static void inject_done(gp_agent *a, const char *id, const char *spec, int rc, const char *message) {
  gp_proto_event *ev = order_done(GP_PROTO_EV_INJECT_DONE, id, rc, "fault injected", message);
  gp__agent_event(a, gp_proto_event_encode(ev));
  free(ev);
  gp__agent_log("order %s: inject '%s': %s", id, spec ? spec : "", rc == 0 ? "done" : message);
}

static void run_start(gp_agent *a, const gp_proto_order *o) { gp__agent_job_start(a, o->id, &o->u.start); }

static void refuse_start(gp_agent *a, const char *id, const json_t *doc, const gp_err *err) {
  const char *job = json_string_value(json_object_get(json_object_get(doc, "job"), "id"));
  json_int_t task = json_integer_value(json_object_get(json_object_get(doc, "job"), "task_index"));
  if (gp_proto_job_id_valid(job))
    gp__agent_job_start_failed(a, id, job, task >= 0 && task < GP_PROTO_MAX_TASKS ? (int)task : -1, -1,
                               err->message);
  else gp__agent_log("order %s: %s", id, err->message);
}

static void run_stop(gp_agent *a, const gp_proto_order *o) { gp__agent_job_stop(a, o->id, &o->u.stop); }

static void refuse_log(gp_agent *a, const char *id, const json_t *doc, const gp_err *err) {
  (void)a;
  (void)doc;
  gp__agent_log("order %s: %s", id, err->message);
}

static void run_mig(gp_agent *a, const gp_proto_order *o) {
  const gp_proto_mig *m = &o->u.mig;
  gp_err err = {0};
  int rc = 0;
  if (m->gpu >= a->n_gpus) {
    rc = gp_err_set(&err, GP_EINVAL, NULL, 0, "gpu", "node %s has no GPU %d", a->cfg.name, m->gpu);
  } else {
    const char *profiles[GP_PROTO_MAX_MIG];
    for (int k = 0; k < m->n; k++) profiles[k] = m->profiles[k];
    rc = gp__agent_mig_apply(a, m->gpu, profiles, m->start_slots, m->n, &err);
    gp_err rerr = {0};
    if (rc == 0 && a->tel && gp_telemetry_rediscover(a->tel, &rerr) != 0)
      gp__agent_log("telemetry: %s", rerr.message);
  }
  mig_done(a, o->id, m->gpu, rc, err.message);
}

static void refuse_mig(gp_agent *a, const char *id, const json_t *doc, const gp_err *err) {
  mig_done(a, id, (int)json_integer_value(json_object_get(doc, "gpu")), GP_EINVAL, err->message);
}

static void run_gpu_admin(gp_agent *a, const gp_proto_order *o) {
  const gp_proto_gpu_admin *g = &o->u.gpu;
  bool drain = o->kind == GP_PROTO_DRAIN_GPU;
  if (g->gpu >= a->n_gpus) {
    gp__agent_log("order %s: %s for GPU %d, which this node does not have", o->id,
            gp_proto_order_kind_name(o->kind), g->gpu);
    return;
  }
  const char *reason = g->has_reason ? g->reason : NULL;
  a->gpu_drained[g->gpu] = drain;
  if (!drain && a->health) gp_health_resume(a->health, g->gpu);
  char *kept = a->gpu_drain_reason[g->gpu]; /* a long reason is cut to what the table keeps */
  snprintf(kept, sizeof a->gpu_drain_reason[g->gpu], "%.*s",
           (int)sizeof a->gpu_drain_reason[g->gpu] - 1, drain && reason ? reason : "");
  gp__agent_log("order %s: GPU %d %s%s%s", o->id, g->gpu, drain ? "drained" : "resumed",
          drain && reason ? ": " : "", drain && reason ? reason : "");
}

/* Simulated faults on order (admin API), for drills and tests. */
static void run_inject(gp_agent *a, const gp_proto_order *o) {
  const gp_proto_inject *in = &o->u.inject;
  gp_err err = {0};
  int rc = gp_gpu_sim_inject(a->gpu, in->faults, in->n_faults, &err);
  inject_done(a, o->id, in->fault, rc, err.message);
}

static void refuse_inject(gp_agent *a, const char *id, const json_t *doc, const gp_err *err) {
  inject_done(a, id, json_string_value(json_object_get(doc, "fault")), GP_EINVAL, err->message);
}

static void run_step(gp_agent *a, const gp_proto_order *o) { gp__agent_step_run(a, o->id, &o->u.step); }

/* A step order that does not decode: its task fails, so srun does not wait for it. */
static void refuse_step(gp_agent *a, const char *id, const json_t *doc, const gp_err *err) {
  const json_t *st = json_object_get(doc, "step");
  const char *job = json_string_value(json_object_get(st, "job"));
  json_int_t step = json_integer_value(json_object_get(st, "step")), task = json_integer_value(json_object_get(st, "task"));
  gp__agent_log("order %s: %s: %s", id, err->field, err->message);
  if (!gp_proto_job_id_valid(job) || step < 0 || step >= GP_PROTO_MAX_STEPS || task < 0 || task >= GP_PROTO_MAX_TASKS)
    return;
  gp_proto_event *ev = gp_xcalloc(1, sizeof *ev);
  ev->kind = GP_PROTO_EV_STEP_EXITED;
  snprintf(ev->job, sizeof ev->job, "%s", job);
  ev->step = (int)step;
  ev->task = (int)task;
  ev->at = gp__agent_now_ms() / 1000;
  snprintf(ev->reason, sizeof ev->reason, "start_failed");
  snprintf(ev->message, sizeof ev->message, "%.100s: %.400s", err->field, err->message);
  gp__agent_event(a, gp_proto_event_encode(ev));
  free(ev);
}

static void run_pull(gp_agent *a, const gp_proto_order *o) { gp__agent_pull_run(a, o->id, &o->u.pull); }

static void refuse_pull(gp_agent *a, const char *id, const json_t *doc, const gp_err *err) {
  (void)doc;
  gp_proto_event *ev = order_done(GP_PROTO_EV_PULL_DONE, id, GP_EINVAL, "", err->message);
  gp__agent_event(a, gp_proto_event_encode(ev));
  free(ev);
}

static void run_step_stop(gp_agent *a, const gp_proto_order *o) { gp__agent_step_stop(a, &o->u.step_stop); }

/* What the agent does with each kind the protocol decodes: `run` a decoded order, or
 * `refuse` one whose fields did not decode (and tell the server where it waits for an
 * answer). */
static const struct {
  gp_proto_order_kind kind;
  void (*run)(gp_agent *a, const gp_proto_order *o);
  void (*refuse)(gp_agent *a, const char *id, const json_t *doc, const gp_err *err);
} kinds[] = {
    {GP_PROTO_START, run_start, refuse_start},
    {GP_PROTO_STOP, run_stop, refuse_log},
    {GP_PROTO_MIG, run_mig, refuse_mig},
    {GP_PROTO_DRAIN_GPU, run_gpu_admin, refuse_log},
    {GP_PROTO_RESUME_GPU, run_gpu_admin, refuse_log},
    {GP_PROTO_INJECT, run_inject, refuse_inject},
    {GP_PROTO_STEP, run_step, refuse_step},
    {GP_PROTO_STEP_STOP, run_step_stop, refuse_log},
    {GP_PROTO_PULL_IMAGE, run_pull, refuse_pull},
};

/* A start order this agent took before (its id is on disk) for a job it does not have: the
 * agent stopped between taking the order and starting the job, so the job never ran here.
 * The server still counts the task as running, and the order is all that says otherwise:
 * the task is reported lost (re-running the order could start a second copy). */
static void start_seen_again(gp_agent *a, const char *id, const json_t *doc) {
  gp_proto_order *o = gp_xmalloc(sizeof *o);
  gp_err err = {0};
  if (gp_proto_order_decode(doc, o, &err) == 0 &&
      !gp__agent_job_find_task(a, o->u.start.id, o->u.start.task_index)) {
    gp__agent_log("order %s: job %s task %d was taken before a restart and never started; reporting it lost",
                  id, o->u.start.id, o->u.start.task_index);
    gp__agent_event(a, gp__agent_task_exited_event(o->u.start.id, o->u.start.task_index,
                                                   gp__agent_now_ms() / 1000, false, 0, 0,
                                              "lost", "the agent stopped before the job started", id));
  }
  gp_proto_order_done(o);
  free(o);
}

/* The same for a step order: a step task this agent no longer has was killed at its
 * restart (agent_steps.c), and its end must still reach srun. */
static void step_seen_again(gp_agent *a, const char *id, const json_t *doc) {
  gp_proto_order *o = gp_xmalloc(sizeof *o);
  gp_err err = {0};
  if (gp_proto_order_decode(doc, o, &err) == 0)
    gp__agent_step_seen_again(a, id, &o->u.step);
  gp_proto_order_done(o);
  free(o);
}

void gp__agent_order_execute(gp_agent *a, json_t *doc) {
  const char *id, *kind;
  if (gp_proto_order_head(doc, &id, &kind, NULL) != 0) {
    gp__agent_log("ignoring an order without a valid id or kind");
    return;
  }
  if (order_seen(a, id)) {
    if (gp_proto_order_kind_parse(kind) == GP_PROTO_START) start_seen_again(a, id, doc);
    if (gp_proto_order_kind_parse(kind) == GP_PROTO_STEP) step_seen_again(a, id, doc);
    return;
  }
  order_remember(a, id);
  gp_proto_order_kind k = gp_proto_order_kind_parse(kind);
  size_t row = 0;
  while (row < sizeof kinds / sizeof kinds[0] && kinds[row].kind != k) row++;
  if (!k || row == sizeof kinds / sizeof kinds[0]) {
    gp__agent_log("order %s: unknown kind '%s' ignored", id, kind);
    return;
  }
  gp_proto_order *o = gp_xmalloc(sizeof *o); /* large: a start carries its placement's UUIDs */
  gp_err err = {0};
  if (gp_proto_order_decode(doc, o, &err) == 0) kinds[row].run(a, o);
  else kinds[row].refuse(a, id, doc, &err);
  gp_proto_order_done(o);
  free(o);
}
