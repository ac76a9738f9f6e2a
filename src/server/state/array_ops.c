/* SPDX-License-Identifier: Apache-2.0 */
/* Job arrays in the state (array.h): elements made into jobs as they may start, the
 * array's counts, its end, and cancel/hold/release of the whole array or of one element
 * not made yet. Every change of an array record is written with the job row of its
 * array's job, in the state thread's current transaction. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/state/array.h"
#include "server/state/state.h"
#include "util/mem.h"

static gp_srv_job *job_at(const gp_srv_state *s, int64_t id) {
  return id > 0 && (size_t)id < s->cap_jobs ? s->jobs[id] : NULL;
}

static gp_srv_job *parent_of(const gp_srv_state *s, const gp_srv_job *e) {
  gp_srv_job *p = job_at(s, e->array_job);
  return p && p->array ? p : NULL;
}

static void posv_add(gp_srv_posv *v, int64_t p) {
  for (int i = 0; i < v->n; i++)
    if (v->v[i] == p) return;
  gp_xgrow((void **)&v->v, &v->cap, (size_t)v->n + 1, sizeof *v->v);
  v->v[v->n++] = p;
}

static bool posv_del(gp_srv_posv *v, int64_t p) {
  for (int i = 0; i < v->n; i++)
    if (v->v[i] == p) {
      memmove(v->v + i, v->v + i + 1, (size_t)(v->n - i - 1) * sizeof *v->v);
      v->n--;
      return true;
    }
  return false;
}

static bool posv_has_held(const gp_srv_array *a, int64_t p) {
  for (int i = 0; i < a->held.n; i++)
    if (a->held.v[i] == p) return true;
  return false;
}

static void account(gp_srv_array *a, const gp_srv_job *e, int st, int sign) {
  if (!gp_job_state_is_final((gp_job_state)st)) {
    a->n_live += sign;
    if (gp__srv_state_waits((gp_job_state)st)) a->n_waiting += sign;
    return;
  }
  a->n_done += sign;
  if (st != GP_JOB_COMPLETED) a->n_bad += sign;
  if (st == GP_JOB_CANCELLED) a->n_cancel += sign;
  if (sign > 0 && e && e->has_exit_code && e->exit_code > a->max_exit) a->max_exit = e->exit_code;
}

static void note_started(gp_srv_state *s, gp_srv_job *p, const gp_srv_job *e) {
  if (p->started_at) return;
  p->started_at = e->started_at ? e->started_at : e->submitted_at ? e->submitted_at : 1;
  gp__srv_job_changed(s, p); /* `after:J` reads it */
}

void gp__srv_array_element_moved(gp_srv_state *s, gp_srv_job *e, int old, int st) {
  gp_srv_job *p = parent_of(s, e);
  if (!p) return;
  if (old >= 0) account(p->array, e, old, -1);
  account(p->array, e, st, 1);
  if (st == GP_JOB_RUNNING || st == GP_JOB_STOPPING) note_started(s, p, e);
  s->sched_dirty = true;
}

static void list_add(gp_srv_state *s, int64_t id) {
  for (int i = 0; i < s->n_arrays; i++)
    if (s->arrays[i] == id) return;
  gp_xgrow((void **)&s->arrays, &s->cap_arrays, (size_t)s->n_arrays + 1, sizeof *s->arrays);
  s->arrays[s->n_arrays++] = id;
}

void gp__srv_array_listed(gp_srv_state *s, gp_srv_job *p) {
  if (p->array && !gp_job_state_is_final(p->state)) list_add(s, p->id);
  if (p->array && p->id + 1 + p->array->count > s->next_job_id) s->next_job_id = p->id + 1 + p->array->count;
}

void gp__srv_arrays_rebuild(gp_srv_state *s) {
  for (int i = 0; i < s->n_arrays; i++) {
    gp_srv_job *p = job_at(s, s->arrays[i]);
    if (!p || !p->array) continue;
    gp_srv_array *a = p->array;
    a->n_live = a->n_waiting = a->n_done = a->n_bad = a->n_cancel = 0;
    a->max_exit = 0;
    for (int64_t pos = 0; pos < a->count; pos++) {
      if (!gp__srv_array_made(a, pos)) continue;
      const gp_srv_job *e = job_at(s, p->id + 1 + pos);
      gp_job_state st = GP_JOB_FAILED; /* made, but neither in memory nor known ended */
      if (e) st = e->state;
      else gp__srv_ended_state(s, p->id + 1 + pos, &st);
      account(a, e, st, 1);
      if (e && (e->started_at || gp_job_state_is_final(st))) note_started(s, p, e);
    }
  }
}

void gp__srv_array_id_by_number(const gp_srv_state *s, char **id) {
  int64_t eid = strchr(*id, '_') ? gp__srv_array_elem_id(s, *id, NULL, NULL) : 0;
  if (!eid) return;
  char num[24];
  snprintf(num, sizeof num, "%" PRId64, eid);
  free(*id);
  *id = gp_xstrdup(num);
}

gp_srv_job *gp__srv_array_of_id(const gp_srv_state *s, int64_t id, int64_t *ret_pos) {
  for (int i = 0; i < s->n_arrays; i++) {
    gp_srv_job *p = job_at(s, s->arrays[i]);
    if (p && p->array && id > p->id && id <= p->id + p->array->count) {
      *ret_pos = id - p->id - 1;
      return p;
    }
  }
  return NULL;
}

gp_srv_job *gp__srv_array_ghost(gp_srv_state *s, int64_t id) {
  int64_t pos;
  gp_srv_job *p = gp__srv_array_of_id(s, id, &pos);
  if (!p || gp__srv_array_made(p->array, pos)) return NULL;
  gp_srv_job *g = gp__srv_ghost_get(s, id, p->array->cancelled ? GP_JOB_CANCELLED : GP_JOB_PENDING);
  g->dep_only = true;
  return g;
}

static void set_env(json_t *env, const char *k, int64_t v) {
  char num[24];
  snprintf(num, sizeof num, "%" PRId64, v);
  json_object_set_new(env, k, json_string(num));
}

/* Keys of the array's job that its elements do not inherit: the array's own progress. */
static const char *const not_inherited[] = {
    "array", "started_at", "ended_at", "last_checkpoint_at", "exit_code", "end_reason", "stop_reason",
    "last_placements", "attempts", "enforcement", "usage", "restarts", "timeline", NULL};

/* Makes element `pos` a job in state st, waiting for `corr` (ids, may be empty) too. */
static int make(gp_srv_state *s, gp_srv_job *p, int64_t pos, gp_job_state st, char **corr, int n_corr,
                int64_t now, gp_srv_job **ret, gp_err *err) {
  const gp_srv_array *a = p->array;
  int64_t id = p->id + 1 + pos, idx = gp__srv_array_index(a, pos);
  json_t *doc = gp__srv_job_to_json(s, p, true);
  for (int i = 0; not_inherited[i]; i++) json_object_del(doc, not_inherited[i]);
  char ids[24];
  snprintf(ids, sizeof ids, "%" PRId64, id);
  json_object_set_new(doc, "id", json_string(ids));
  json_object_set_new(doc, "state", json_string(gp_job_state_name(st)));
  char *txt = json_dumps(doc, JSON_COMPACT);
  json_decref(doc);
  gp_srv_job *e = NULL;
  int r = gp__srv_job_from_doc(txt, &e, err);
  free(txt);
  if (r) return r;
  e->array_job = p->id;
  e->array_index = idx;
  /* Slurm's variables, and gpool's names for them. */
  static const char *const pre[2] = {"SLURM_ARRAY_", "GPOOL_ARRAY_"};
  int64_t vals[6] = {p->id, idx, a->count, a->ranges[0].lo, a->ranges[a->n_ranges - 1].hi,
                     a->n_ranges == 1 ? a->ranges[0].step : 1};
  static const char *const names[6] = {"JOB_ID", "TASK_ID", "TASK_COUNT", "TASK_MIN", "TASK_MAX", "TASK_STEP"};
  for (int k = 0; k < 2; k++)
    for (int v = 0; v < 6; v++) {
      char key[40];
      snprintf(key, sizeof key, "%s%s", pre[k], names[v]);
      set_env(e->env, key, vals[v]);
    }
  if (n_corr) {
    e->after_ok = gp_xrealloc(e->after_ok, (size_t)(e->n_after_ok + n_corr + 1) * sizeof *e->after_ok);
    for (int i = 0; i < n_corr; i++) e->after_ok[e->n_after_ok++] = gp_xstrdup(corr[i]);
  }
  gp__srv_job_insert(s, e);
  s->counters.submissions++;
  json_t *extra = json_object();
  json_object_set_new(extra, "user", json_string(e->user));
  char aid[48];
  snprintf(aid, sizeof aid, "%" PRId64 "_%" PRId64, p->id, idx);
  json_object_set_new(extra, "array", json_string(aid));
  r = gp__srv_job_event(s, e, "submitted", now, extra, err);
  if (!r && st == GP_JOB_HELD) r = gp__srv_job_event(s, e, "held", now, NULL, err);
  if (!r) r = gp__srv_persist_job(s, e, err);
  if (ret) *ret = e;
  return r;
}

/* aftercorr: the ids element `idx` waits for (into out, each owned), or -1 when one of the
 * arrays it follows has not made its element idx yet (so this one waits to be made). */
static int corr_ids(gp_srv_state *s, const gp_srv_array *a, int64_t idx, char **out) {
  int n = 0;
  for (int i = 0; i < a->n_after_corr; i++) {
    const gp_srv_job *b = gp__srv_job_get(s, a->after_corr[i]);
    char buf[48];
    if (b && b->array) {
      int64_t bp = gp__srv_array_pos(b->array, idx);
      /* No such element: a name no job has, so the element ends as never satisfied. */
      if (bp < 0) snprintf(buf, sizeof buf, "%s_%" PRId64, b->idstr, idx);
      else if (!gp__srv_array_made(b->array, bp) && !b->array->cancelled && !gp_job_state_is_final(b->state)) {
        for (int k = 0; k < n; k++) free(out[k]);
        return -1;
      } else snprintf(buf, sizeof buf, "%" PRId64, b->id + 1 + bp);
    } else {
      snprintf(buf, sizeof buf, "%s", a->after_corr[i]); /* a plain job: afterok */
    }
    out[n++] = gp_xstrdup(buf);
  }
  return n;
}

/* The end of an array whose elements all ended: completed when every one completed. */
static int maybe_end(gp_srv_state *s, gp_srv_job *p, int64_t now, gp_err *err) {
  gp_srv_array *a = p->array;
  bool unmade = a->cancelled && a->n_done + a->n_live < a->count;
  if (a->n_live > 0) return 0;
  if (!a->cancelled && (a->next < a->count || a->held.n || a->owed.n)) return 0;
  gp_job_state st = GP_JOB_COMPLETED;
  char why[96] = "completed";
  if (a->n_bad - a->n_cancel > 0) {
    st = GP_JOB_FAILED;
    snprintf(why, sizeof why, "%" PRId64 " of %" PRId64 " elements did not complete", a->n_bad - a->n_cancel, a->count);
  } else if (a->n_cancel > 0 || unmade) {
    st = GP_JOB_CANCELLED;
    snprintf(why, sizeof why, "cancelled");
  }
  p->has_exit_code = true;
  p->exit_code = a->max_exit;
  return gp__srv_job_end(s, p, st, why, now, err);
}

static int step_one(gp_srv_state *s, gp_srv_job *p, int64_t now, gp_err *err) {
  gp_srv_array *a = p->array;
  bool changed = false;
  int r = 0;
  while (!r && p->state == GP_JOB_PENDING && !a->held_all && !a->cancelled) {
    if (a->limit && a->n_live >= a->limit) break;
    if (a->n_waiting >= GP_SRV_ARRAY_WINDOW) break;
    bool owed = a->owed.n > 0;
    if (!owed) {
      while (a->next < a->count && (posv_del(&a->extra, a->next) || posv_has_held(a, a->next))) {
        a->next++;
        changed = true;
      }
      if (a->next >= a->count) break;
    }
    int64_t pos = owed ? a->owed.v[0] : a->next;
    char *corr[GP_SRV_MAX_DEPS];
    int n = corr_ids(s, a, gp__srv_array_index(a, pos), corr);
    if (n < 0) break;
    if (owed) posv_del(&a->owed, pos);
    else a->next++;
    changed = true;
    r = make(s, p, pos, GP_JOB_PENDING, corr, n, now, NULL, err);
    for (int i = 0; i < n; i++) free(corr[i]);
  }
  if (!r && changed) r = gp__srv_persist_job(s, p, err);
  if (!r) r = maybe_end(s, p, now, err);
  return r;
}

int gp__srv_arrays_step(gp_srv_state *s, int64_t now, gp_err *err) {
  int k = 0, r = 0;
  for (int i = 0; i < s->n_arrays; i++) {
    gp_srv_job *p = job_at(s, s->arrays[i]);
    if (!p || !p->array || gp_job_state_is_final(p->state)) continue;
    if (!r) r = step_one(s, p, now, err);
    if (!gp_job_state_is_final(p->state)) s->arrays[k++] = p->id;
  }
  s->n_arrays = k;
  return r;
}

/* Calls fn on every element made a job and not ended. */
static int each_live(gp_srv_state *s, gp_srv_job *p, int (*fn)(gp_srv_state *, gp_srv_job *, void *),
                     void *ctx) {
  gp_srv_array *a = p->array;
  for (int64_t pos = 0; pos < a->count; pos++) {
    if (pos >= a->next && !a->extra.n) break;
    if (!gp__srv_array_made(a, pos)) continue;
    gp_srv_job *e = job_at(s, p->id + 1 + pos);
    if (!e || gp_job_state_is_final(e->state)) continue;
    int r = fn(s, e, ctx);
    if (r) return r;
  }
  return 0;
}

typedef struct act_ctx {
  const char *by;
  bool admin, hold;
  int64_t now;
  gp_err *err;
} act_ctx;

static int cancel_one(gp_srv_state *s, gp_srv_job *e, void *ctx) {
  act_ctx *c = ctx;
  switch (e->state) {
  case GP_JOB_PENDING:
  case GP_JOB_HELD:
    return gp__srv_job_end(s, e, GP_JOB_CANCELLED, "cancelled", c->now, c->err);
  case GP_JOB_RUNNING: {
    int r = gp__srv_job_event(s, e, "cancel_requested", c->now, json_pack("{s:s}", "by", c->by), c->err);
    return r ? r : gp__srv_job_stop(s, e, "cancelled", c->now, c->err);
  }
  case GP_JOB_STOPPING:
    free(e->stop_reason);
    e->stop_reason = gp_xstrdup("cancelled");
    return gp__srv_persist_job(s, e, c->err);
  default:
    return 0;
  }
}

int gp__srv_array_cancel(gp_srv_state *s, gp_srv_job *p, const char *by, int64_t now, gp_err *err) {
  act_ctx c = {.by = by, .now = now, .err = err};
  p->array->cancelled = true;
  int r = each_live(s, p, cancel_one, &c);
  if (!r) r = gp__srv_persist_job(s, p, err);
  if (!r) r = maybe_end(s, p, now, err);
  s->sched_dirty = true;
  return r;
}

static int hold_one(gp_srv_state *s, gp_srv_job *e, void *ctx) {
  act_ctx *c = ctx;
  if (e->state != (c->hold ? GP_JOB_PENDING : GP_JOB_HELD)) return 0;
  gp_srv_hold_refusal why;
  return gp__srv_job_hold_change(s, e, c->hold, c->by, c->admin, c->now, &why, c->err);
}

int gp__srv_array_hold(gp_srv_state *s, gp_srv_job *p, bool hold, const char *by, bool admin, int64_t now,
                       gp_err *err) {
  act_ctx c = {.by = by, .admin = admin, .hold = hold, .now = now, .err = err};
  p->array->held_all = hold;
  if (p->state == (hold ? GP_JOB_PENDING : GP_JOB_HELD)) {
    gp__srv_job_set_state(s, p, hold ? GP_JOB_HELD : GP_JOB_PENDING);
    int r = gp__srv_job_event(s, p, hold ? "held" : "released", now, json_pack("{s:s}", "by", by), err);
    if (r) return r;
  }
  int r = each_live(s, p, hold_one, &c);
  if (!r) r = gp__srv_persist_job(s, p, err);
  s->sched_dirty = true;
  return r;
}

int gp__srv_array_elem_action(gp_srv_state *s, gp_srv_job *p, int64_t pos, const char *action, int64_t now,
                              gp_err *err) {
  gp_srv_array *a = p->array;
  int r = 0;
  if (strcmp(action, "cancel") == 0) {
    posv_del(&a->held, pos);
    posv_del(&a->owed, pos);
    if (pos >= a->next) posv_add(&a->extra, pos);
    gp_srv_job *e = NULL;
    r = make(s, p, pos, GP_JOB_PENDING, NULL, 0, now, &e, err);
    if (!r) r = gp__srv_job_end(s, e, GP_JOB_CANCELLED, "cancelled", now, err);
  } else if (strcmp(action, "hold") == 0) {
    posv_del(&a->owed, pos); /* (released before, not made yet: held again) */
    posv_add(&a->held, pos);
  } else if (posv_del(&a->held, pos) && pos < a->next) {
    posv_add(&a->owed, pos); /* a release: made in its turn, before the next ones */
  }
  if (!r) r = gp__srv_persist_job(s, p, err);
  s->sched_dirty = true;
  return r;
}
