/* SPDX-License-Identifier: Apache-2.0 */
/* The server's in-memory records (their types: state.h): the state's lifetime, loading it
 * from the store, and the helpers that write each change of a job, node or queue into the
 * current store transaction. Named apart from state.h so that the records' types, which
 * every file of the server reads, are not this file's code, which calls many of them. */
#include <assert.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/sched.h"
#include "server/state/jobrec.h"
#include "server/state/load_jobs.h"
#include "server/state/state.h"

#include "util/mem.h"

gp_srv_state *gp__srv_state_new(const gp_server_config *cfg, gp_store *store) {
  gp_srv_state *s = gp_xcalloc(1, sizeof *s);
  s->cfg = cfg;
  s->store = store;
  s->next_job_id = 1;
  s->next_order_id = 1;
  s->memo = gp_sched_memo_new();
  gp__srv_queues_changed(s);
  const char *check = getenv("GPOOL_SCHED_CHECK");
  s->sched_check = check && strcmp(check, "1") == 0;
  gp_hist_init(&s->counters.cycle_s, gp_hist_bounds_cycle_s, gp_hist_n_bounds_cycle_s);
  gp_hist_init(&s->counters.wait_s, gp_hist_bounds_wait_s, gp_hist_n_bounds_wait_s);
  gp_hist_init(&s->counters.run_s, gp_hist_bounds_wait_s, gp_hist_n_bounds_wait_s);
  return s;
}

void gp__srv_state_free(gp_srv_state *s) {
  if (!s) return;
  gp__srv_hook_fire(s, &s->hooks, GP_SRV_HOOK_FREE, &(gp_srv_hook_ev){0}, NULL);
  for (size_t i = 0; i < s->cap_jobs; i++) gp__srv_job_free(s->jobs[i]);
  free(s->jobs);
  free(s->arrays);
  free(s->active);
  for (int i = 0; i < s->n_nodes; i++) gp__srv_node_free(s->nodes[i]);
  free(s->nodes);
  free(s->node_slots);
  for (int i = 0; i < s->n_queues; i++) gp__srv_queue_free(s->queues[i]);
  free(s->queues);
  for (int i = 0; i < s->n_figs; i++) {
    free(s->figs[i].name);
    free(s->figs[i].parent);
  }
  free(s->figs);
  gp__srv_view_free(&s->view);
  gp__srv_waiters_free(&s->waiters);
  gp_sched_memo_free(s->memo);
  gp_plan_free(s->last_plan);
  gp__srv_counts_free(&s->pending_by_user);
  gp__srv_counts_free(&s->pending_by_queue);
  gp__srv_ended_free(&s->ended);
  free(s);
}

static void slots_insert(int *slots, size_t n_slots, const char *name, int index) {
  size_t i = (size_t)gp__srv_name_hash(name) & (n_slots - 1);
  while (slots[i] >= 0) i = (i + 1) & (n_slots - 1);
  slots[i] = index;
}

void gp__srv_node_add(gp_srv_state *s, gp_srv_node *n) {
  gp_xgrow((void **)&s->nodes, &s->cap_nodes, (size_t)s->n_nodes + 1, sizeof *s->nodes);
  n->index = s->n_nodes;
  n->ledger_state = -1;
  s->nodes[s->n_nodes++] = n;
  gp__srv_node_changed(s, n);
  if ((size_t)s->n_nodes * 2 > s->n_node_slots) {
    size_t want = s->n_node_slots ? s->n_node_slots * 2 : 64;
    while ((size_t)s->n_nodes * 2 > want) want *= 2;
    free(s->node_slots);
    s->node_slots = gp_xmalloc(want * sizeof *s->node_slots);
    for (size_t i = 0; i < want; i++) s->node_slots[i] = -1;
    s->n_node_slots = want;
    for (int i = 0; i < s->n_nodes; i++) slots_insert(s->node_slots, want, s->nodes[i]->name, i);
  } else {
    slots_insert(s->node_slots, s->n_node_slots, n->name, s->n_nodes - 1);
  }
}

gp_srv_job *gp__srv_node_holder(const gp_srv_state *s, const gp_srv_node *n) {
  for (int a = 0; a < s->n_active; a++)
    for (int t = 0; t < s->active[a]->n_alloc; t++)
      if (s->active[a]->alloc[t].node == n->index) return s->active[a];
  return NULL;
}

int gp__srv_node_remove(gp_srv_state *s, gp_srv_node *n, int64_t now, gp_err *err) {
  assert(!gp__srv_node_holder(s, n) && !n->waiter);
  int r = gp_store_close_node_interval(s->store, n->name, now, err);
  if (!r) r = gp_store_del_node(s->store, n->name, err);
  if (r) return r;
  int idx = n->index, last = s->n_nodes - 1;
  gp_srv_node *moved = s->nodes[last];
  /* Jobs name nodes by position: those on the last node follow it to its new one. */
  for (int a = 0; a < s->n_active && moved != n; a++) {
    gp_srv_job *j = s->active[a];
    bool changed = false;
    for (int t = 0; t < j->n_alloc; t++)
      if (j->alloc[t].node == last) {
        j->alloc[t].node = idx;
        changed = true;
      }
    if (changed) gp__srv_job_changed(s, j);
  }
  s->nodes[idx] = moved;
  moved->index = idx;
  s->n_nodes--;
  for (size_t i = 0; i < s->n_node_slots; i++) s->node_slots[i] = -1;
  for (int i = 0; i < s->n_nodes; i++) slots_insert(s->node_slots, s->n_node_slots, s->nodes[i]->name, i);
  /* The view, the woken list and the poll heap list nodes by position too: list the moved
   * node again at its new one (entries left at the old position are past the end). */
  s->view_rev = ++s->revs;
  if (moved != n) {
    moved->view_stale = false;
    gp__srv_node_changed(s, moved);
    if (moved->waiter_woken) {
      moved->waiter_woken = false;
      gp__srv_waiter_orders_added(s, moved);
    }
    if (moved->waiter)
      gp__srv_waiter_park(s, moved, moved->waiter, moved->waiter_gen, moved->waiter_deadline_ms);
  }
  s->sched_dirty = true;
  gp__srv_node_free(n);
  return 0;
}

static bool provider_text_ok(const char *v, size_t max) {
  size_t len = v ? strlen(v) : 0;
  if (len == 0 || len > max) return false;
  for (size_t i = 0; i < len; i++)
    if ((unsigned char)v[i] <= 0x20 || (unsigned char)v[i] >= 0x7f) return false;
  return true;
}

int gp__srv_node_set_provider(gp_srv_state *s, gp_srv_node *n, const char *tmpl,
                              const char *instance, double price, gp_err *err) {
  if (!provider_text_ok(tmpl, 128) || !provider_text_ok(instance, 128))
    return gp_err_set(err, GP_EINVAL, NULL, 0, "provider",
                      "template and instance id must be 1..128 printable characters");
  free(n->provider_template);
  free(n->provider_instance);
  n->provider_template = gp_xstrdup(tmpl);
  n->provider_instance = gp_xstrdup(instance);
  n->provider_price = price >= 0 && price <= 1e6 ? price : -1;
  return gp__srv_persist_node(s, n, err);
}

static void active_add(gp_srv_state *s, gp_srv_job *j) {
  if (j->active_pos >= 0 || j->array) return; /* (an array's elements are scheduled, not it) */
  gp_xgrow((void **)&s->active, &s->cap_active, (size_t)s->n_active + 1, sizeof *s->active);
  j->active_pos = s->n_active;
  s->active[s->n_active++] = j;
  gp__srv_view_active_moved(s, j, true);
  gp__srv_job_changed(s, j); /* its view entry is new */
}

static void active_remove(gp_srv_state *s, gp_srv_job *j) {
  if (j->active_pos < 0) return;
  gp_srv_job *last = s->active[--s->n_active];
  s->active[j->active_pos] = last;
  last->active_pos = j->active_pos;
  j->active_pos = -1;
  gp__srv_view_active_moved(s, j, false);
  if (last != j) gp__srv_job_changed(s, last); /* another job takes its view entry */
}

static void count_pending(gp_srv_state *s, const gp_srv_job *j, int64_t delta) {
  if (!gp__srv_state_waits(j->state)) return;
  gp__srv_count_add(&s->pending_by_user, j->user, delta);
  gp__srv_count_add(&s->pending_by_queue, j->queue, delta);
}

void gp__srv_job_insert(gp_srv_state *s, gp_srv_job *j) {
  if ((size_t)j->id >= s->cap_jobs) {
    size_t old = s->cap_jobs, cap = old ? old : 1024;
    while (cap <= (size_t)j->id) cap *= 2;
    s->jobs = gp_xrealloc(s->jobs, cap * sizeof *s->jobs);
    memset(s->jobs + old, 0, (cap - old) * sizeof *s->jobs);
    s->cap_jobs = cap;
  }
  gp_srv_job *old = s->jobs[j->id];
  if (old) {
    /* The job it replaces leaves every list that points at it before it is freed: a job
     * left in s->active would be read (and its alloc freed) after this free. */
    count_pending(s, old, -1);
    active_remove(s, old);
  }
  gp__srv_job_free(old);
  s->jobs[j->id] = j;
  count_pending(s, j, 1);
  gp__srv_job_changed(s, j);
  if (j->id >= s->next_job_id) s->next_job_id = j->id + 1;
  if (!gp_job_state_is_final(j->state)) active_add(s, j);
  gp__srv_ended_mark(s, j->id, j->state, gp_job_state_is_final(j->state));
  if (j->array) gp__srv_array_listed(s, j);
  if (j->array_job) gp__srv_array_element_moved(s, j, -1, j->state);
}

void gp__srv_job_set_state(gp_srv_state *s, gp_srv_job *j, gp_job_state st) {
  gp_job_state old = j->state;
  gp__srv_job_changed(s, j);
  count_pending(s, j, -1);
  j->state = st;
  count_pending(s, j, 1);
  if (gp_job_state_is_final(st)) active_remove(s, j);
  else active_add(s, j);
  if (j->array_job) gp__srv_array_element_moved(s, j, (int)old, (int)st);
  /* Its final state (and the counts by state) follow any change into, out of or between
   * final states. */
  bool final = gp_job_state_is_final(st);
  if (old != st && (final || gp_job_state_is_final(old))) gp__srv_ended_mark(s, j->id, st, final);
  gp__srv_hook_fire(s, &s->hooks, GP_SRV_HOOK_JOB_STATE, &(gp_srv_hook_ev){.job = j, .old_state = (int)old},
                    NULL);
  s->sched_dirty = true;
}

int gp__srv_persist_job_doc(gp_srv_state *s, gp_srv_job *j, char **ret_doc, gp_err *err) {
  gp__srv_job_changed(s, j); /* every lasting change is written through here */
  char *doc = gp__srv_job_store_doc(j), *rec = gp__srv_job_store_rec(j);
  gp_store_job row = {j->id, gp_job_state_name(j->state), j->queue, j->user, j->submitted_at, doc, rec};
  int r = gp_store_put_job(s->store, &row, err);
  free(rec);
  if (r || !ret_doc) free(doc);
  else *ret_doc = doc;
  return r;
}

int gp__srv_persist_job(gp_srv_state *s, gp_srv_job *j, gp_err *err) {
  return gp__srv_persist_job_doc(s, j, NULL, err);
}

int gp__srv_job_event(gp_srv_state *s, gp_srv_job *j, const char *ev, int64_t at, json_t *extra,
                  gp_err *err) {
  json_t *e = json_object();
  json_object_set_new(e, "event", json_string(ev));
  json_object_set_new(e, "at", json_integer(at));
  if (extra) {
    json_object_update(e, extra);
    json_decref(extra);
  }
  char *doc = json_dumps(e, JSON_COMPACT);
  json_array_append_new(j->timeline, e);
  gp_store_event row = {j->id, at, ev, doc};
  int r = gp_store_add_event(s->store, &row, err);
  free(doc);
  return r;
}

int gp__srv_persist_node(gp_srv_state *s, gp_srv_node *n, gp_err *err) {
  gp__srv_node_changed(s, n);
  json_t *o = gp__srv_node_to_json(s, n, true);
  char *doc = json_dumps(o, JSON_COMPACT);
  json_decref(o);
  gp_store_node row = {n->name, doc};
  int r = gp_store_put_node(s->store, &row, err);
  free(doc);
  /* Every change of a node's admin state or liveness that lasts is persisted here. */
  if (!r)
    r = gp__srv_hook_fire(s, &s->hooks, GP_SRV_HOOK_NODE_STATE,
                          &(gp_srv_hook_ev){.node = n, .now_s = time(NULL)}, err);
  return r;
}

int gp__srv_persist_queue(gp_srv_state *s, gp_srv_queue *q, gp_err *err) {
  gp__srv_queues_changed(s);
  json_t *o = gp__srv_queue_to_json(q);
  char *doc = json_dumps(o, JSON_COMPACT);
  json_decref(o);
  gp_store_queue row = {q->name, doc};
  int r = gp_store_put_queue(s->store, &row, err);
  free(doc);
  return r;
}

static void node_push_order(gp_srv_node *n, int64_t id, char *doc, int64_t job_id, bool is_start) {
  gp_xgrow((void **)&n->orders, &n->cap_orders, (size_t)n->n_orders + 1, sizeof *n->orders);
  n->orders[n->n_orders++] = (gp_srv_order){id, doc, job_id, is_start};
}

int gp__srv_order_add(gp_srv_state *s, gp_srv_node *n, json_t *doc, int64_t job_id, bool is_start,
                  gp_err *err) {
  int64_t id = s->next_order_id++;
  char ids[32];
  snprintf(ids, sizeof ids, "o%lld", (long long)id);
  json_object_set_new(doc, "id", json_string(ids));
  char *text = json_dumps(doc, JSON_COMPACT);
  json_decref(doc);
  gp_store_order row = {id, n->name, text};
  int r = gp_store_put_order(s->store, &row, err);
  if (!r) r = gp_store_set_meta(s->store, "next_order_id", s->next_order_id, err);
  node_push_order(n, id, text, job_id, is_start);
  gp__srv_waiter_orders_added(s, n);
  return r;
}

int gp__srv_orders_purge_stale(gp_srv_state *s, gp_srv_node *n, gp_err *err) {
  int idx = gp__srv_node_index(s, n->name);
  int k = 0, r = 0;
  for (int i = 0; i < n->n_orders; i++) {
    gp_srv_order *o = &n->orders[i];
    bool stale = false;
    gp_srv_job *j = o->job_id > 0 && (size_t)o->job_id < s->cap_jobs ? s->jobs[o->job_id] : NULL;
    if (!j && gp__srv_ended_state(s, o->job_id, NULL)) {
      stale = true; /* a job that ended long ago (no longer in memory) */
    } else if (j) { /* orders for unknown jobs (a stray process) are kept */
      /* Each task of the job on the node has its own start order: a start order is current
       * while it is one of theirs, any order older than all of them is of an earlier run.
       * (0: a task's order is not known, after a restart; then nothing is judged stale.) */
      bool here = false, known = true, mine = false;
      int64_t oldest = 0;
      for (int t = 0; t < j->n_alloc; t++)
        if (j->alloc[t].node == idx && !j->alloc[t].exited) {
          int64_t cur = j->alloc[t].order_id;
          here = true;
          known = known && cur;
          mine = mine || cur == o->id;
          if (cur && (!oldest || cur < oldest)) oldest = cur;
        }
      here = here && (j->state == GP_JOB_RUNNING || j->state == GP_JOB_STOPPING);
      stale = !here || (known && o->id < oldest) || (known && o->is_start && !mine);
    }
    if (stale) {
      if (!r) r = gp_store_del_order(s->store, o->id, err);
      free(o->doc);
    } else {
      n->orders[k++] = *o;
    }
  }
  n->n_orders = k;
  return r;
}

int gp__srv_orders_ack(gp_srv_state *s, gp_srv_node *n, int64_t gen, gp_err *err) {
  int k = 0;
  while (k < n->n_orders && n->orders[k].id <= gen) free(n->orders[k++].doc);
  if (k == 0) return 0;
  memmove(n->orders, n->orders + k, sizeof *n->orders * (size_t)(n->n_orders - k));
  n->n_orders -= k;
  if (gen > n->acked_gen) n->acked_gen = gen;
  return gp_store_del_orders(s->store, n->name, gen, err);
}

/* ---- loading ---- */

typedef struct load_ctx {
  gp_srv_state *s;
  gp_err *err;
  int64_t now_ms;
  int64_t *open_jobs;   /* jobs with open ledger intervals (one entry per interval) */
  int n_open_jobs;
  size_t cap_open_jobs;
  gp__srv_job_batch batch; /* job rows read, not yet inserted */
  gp__srv_event_batch events; /* timeline rows read, not yet appended */
  int threads;             /* to parse them with */
} load_ctx;

/* Appends the timeline rows read so far to their jobs, in the store's order. */
static void load_flush_events(load_ctx *c) {
  gp__srv_event_batch *b = &c->events;
  if (!b->rows.n) return;
  gp__srv_event_batch_parse(b, c->threads);
  for (int i = 0; i < b->rows.n; i++) {
    int64_t id = b->rows.ids[i];
    gp_srv_job *j = (size_t)id < c->s->cap_jobs && id > 0 ? c->s->jobs[id] : NULL;
    if (!j || !b->events[i]) continue; /* an event of a job that is gone: harmless */
    json_array_append_new(j->timeline, b->events[i]);
    b->events[i] = NULL;
  }
  gp__srv_event_batch_reset(b);
}

/* Parses the job rows read so far and inserts them in the store's order; every other
 * kind of row flushes first, as it may refer to those jobs (and a job row flushes the
 * timeline rows, which belong to the jobs before it: at most one batch holds rows). */
static int load_flush(load_ctx *c) {
  gp__srv_job_batch *b = &c->batch;
  if (!b->rows.n) {
    load_flush_events(c);
    return 0;
  }
  gp__srv_job_batch_parse(b, c->threads);
  int r = 0;
  for (int i = 0; i < b->rows.n && !r; i++) {
    gp_srv_job *j;
    if (!(r = gp__srv_job_batch_take(b, i, &j, c->err))) {
      gp__srv_job_insert(c->s, j);
      atomic_fetch_add_explicit(&c->s->jobs_loaded, 1, memory_order_relaxed);
    }
  }
  gp__srv_job_batch_reset(b);
  return r;
}

static int load_job(void *ctx, const gp_store_job *row) {
  load_ctx *c = ctx;
  load_flush_events(c);
  return gp__srv_rows_add(&c->batch.rows, row->id, row->doc, row->rec) ? load_flush(c) : 0;
}

#define LOAD_FLUSH(c)            \
  do {                           \
    int fr_ = load_flush(c);     \
    if (fr_) return fr_;         \
  } while (0)

static int load_event(void *ctx, const gp_store_event *row) {
  load_ctx *c = ctx;
  if (c->batch.rows.n) LOAD_FLUSH(c); /* the jobs first: the events append to them */
  if (gp__srv_rows_add(&c->events.rows, row->job_id, row->doc, NULL)) load_flush_events(c);
  return 0;
}

static int load_node(void *ctx, const gp_store_node *row) {
  load_ctx *c = ctx;
  LOAD_FLUSH(c);
  json_t *o = json_loads(row->doc, 0, NULL);
  if (!o) return gp_err_set(c->err, GP_EPARSE, NULL, 0, NULL, "stored node %s is not JSON", row->name);
  gp_srv_node *n = gp_xcalloc(1, sizeof *n);
  int r = gp__srv_node_from_json(o, n, true, c->err);
  json_decref(o);
  if (r) {
    gp__srv_node_free(n);
    return r;
  }
  /* Agents that are still alive keep heartbeating; give them a timeout's grace. */
  n->alive = true;
  n->last_seen_ms = c->now_ms;
  gp__srv_node_add(c->s, n);
  return 0;
}

static int load_alloc(void *ctx, const gp_store_alloc *row) {
  load_ctx *c = ctx;
  LOAD_FLUSH(c);
  gp_srv_job *j = (size_t)row->job_id < c->s->cap_jobs && row->job_id > 0 ? c->s->jobs[row->job_id] : NULL;
  int node = gp__srv_node_index(c->s, row->node);
  if (!j || node < 0 || row->task < 0 || row->task >= j->tasks) return 0;
  if (!j->alloc) {
    j->alloc = gp_xcalloc((size_t)j->tasks, sizeof *j->alloc);
    j->n_alloc = j->tasks;
    for (int t = 0; t < j->tasks; t++) j->alloc[t].node = -1;
  }
  j->alloc[row->task] = (gp_srv_alloc){node, row->gpu_mask, row->gpu_milli, row->gpu_mem_mib,
                                       row->mig_instance, false, 0, 0, -1, -1, 0, 0};
  return 0;
}

static int load_interval(void *ctx, const gp_store_interval *row) {
  load_ctx *c = ctx;
  LOAD_FLUSH(c);
  if (c->n_open_jobs > 0 && c->open_jobs[c->n_open_jobs - 1] == row->job_id) return 0;
  gp_xgrow((void **)&c->open_jobs, &c->cap_open_jobs, (size_t)c->n_open_jobs + 1,
           sizeof *c->open_jobs);
  c->open_jobs[c->n_open_jobs++] = row->job_id;
  return 0;
}

static int load_node_interval(void *ctx, const gp_store_node_interval *row) {
  load_ctx *c = ctx;
  LOAD_FLUSH(c);
  gp_srv_node *n = gp__srv_node_get(c->s, row->node);
  if (!n) return 0;
  return gp__srv_hook_fire(c->s, &c->s->hooks, GP_SRV_HOOK_NODE_INTERVAL,
                           &(gp_srv_hook_ev){.node = n, .name = row->state}, c->err);
}

static int load_queue(void *ctx, const gp_store_queue *row) {
  load_ctx *c = ctx;
  LOAD_FLUSH(c);
  gp_srv_state *s = c->s;
  if (gp__srv_queue_get(s, row->name)) return 0; /* the config file defines it: the file wins */
  json_t *o = json_loads(row->doc, 0, NULL);
  gp_srv_queue *q = gp_xcalloc(1, sizeof *q);
  q->n_classes = -1;
  q->weight = 1;
  q->limit = GP_NO_LIMIT;
  int r = o ? gp__srv_queue_from_json(o, row->name, q, c->err) : GP_EPARSE;
  json_decref(o);
  if (r) {
    gp__srv_queue_free(q);
    return gp_err_set(c->err, GP_EPARSE, NULL, 0, NULL, "stored queue %s is invalid", row->name);
  }
  gp_xgrow((void **)&s->queues, &s->cap_queues, (size_t)s->n_queues + 1, sizeof *s->queues);
  s->queues[s->n_queues++] = q;
  return 0;
}

static int load_order(void *ctx, const gp_store_order *row) {
  load_ctx *c = ctx;
  LOAD_FLUSH(c);
  gp_srv_node *n = gp__srv_node_get(c->s, row->node);
  if (!n) return 0;
  json_t *o = json_loads(row->doc, 0, NULL);
  int64_t job_id = 0;
  bool is_start = false;
  if (o) {
    const char *kind = json_string_value(json_object_get(o, "kind"));
    is_start = kind && strcmp(kind, "start") == 0;
    const json_t *jv = json_object_get(o, "job");
    const char *jid = json_is_object(jv) ? json_string_value(json_object_get(jv, "id")) : json_string_value(jv);
    if (jid) job_id = strtoll(jid, NULL, 10);
    json_decref(o);
  }
  node_push_order(n, row->id, gp_xstrdup(row->doc), job_id, is_start);
  if (row->id >= c->s->next_order_id) c->s->next_order_id = row->id + 1;
  return 0;
}

static int load_meta(void *ctx, const char *key, int64_t value) {
  load_ctx *c = ctx;
  LOAD_FLUSH(c);
  if (strcmp(key, "next_order_id") == 0 && value > c->s->next_order_id) c->s->next_order_id = value;
  if (strcmp(key, "next_job_id") == 0 && value > c->s->next_job_id) c->s->next_job_id = value;
  return 0;
}

/* An ended job (id and state only): its final state, and the id sequence past it. */
static int load_ended(void *ctx, int64_t id, const char *state) {
  load_ctx *c = ctx;
  LOAD_FLUSH(c);
  gp_job_state st;
  if (id <= 0 || gp_job_state_parse(state, &st) || !gp_job_state_is_final(st)) return 0;
  gp__srv_ended_mark(c->s, id, st, true);
  if (id >= c->s->next_job_id) c->s->next_job_id = id + 1;
  return 0;
}

static int load_credential(void *ctx, const char *node, const char *hash) {
  load_ctx *c = ctx;
  LOAD_FLUSH(c);
  gp_srv_node *n = gp__srv_node_get(c->s, node);
  if (n) snprintf(n->credential_hash, sizeof n->credential_hash, "%s", hash);
  return 0;
}

static int load_setting(void *ctx, const char *name, const char *doc) {
  load_ctx *c = ctx;
  LOAD_FLUSH(c);
  /* Every setting is a feature's: each takes those it registered (parts.c). */
  return gp__srv_hook_fire(c->s, &c->s->hooks, GP_SRV_HOOK_SETTING,
                           &(gp_srv_hook_ev){.name = name, .doc = doc}, c->err);
}

static gp_srv_queue *queue_from_config(const gp_server_queue *cq) {
  gp_srv_queue *q = gp_xcalloc(1, sizeof *q);
  q->name = gp_xstrdup(cq->q.name);
  q->deserved = cq->q.deserved_gpus;
  q->limit = cq->q.limit_gpus;
  q->weight = cq->q.weight >= 0 ? cq->q.weight : 1;
  q->default_priority = gp_xstrdup(cq->q.default_priority);
  q->default_time_limit = cq->q.default_time_limit;
  q->n_users = cq->n_users;
  q->users = gp_xcalloc((size_t)cq->n_users + 1, sizeof *q->users);
  for (int i = 0; i < cq->n_users; i++) q->users[i] = gp_xstrdup(cq->users[i]);
  q->n_classes = cq->n_priority_classes < 0 ? -1 : cq->n_priority_classes;
  if (q->n_classes >= 0) {
    q->classes = gp_xcalloc((size_t)q->n_classes + 1, sizeof *q->classes);
    for (int i = 0; i < q->n_classes; i++) q->classes[i] = gp_xstrdup(cq->priority_classes[i]);
  }
  q->from_config = true;
  q->budget = cq->budget;
  q->idle_policy = cq->idle_policy;
  q->spot = cq->q.spot;
  q->spot_share = cq->q.spot_share;
  gp__srv_ulimits_copy(&q->user_limits, &cq->user_limits);
  return q;
}

int gp__srv_state_load(gp_srv_state *s, int64_t now_s, int64_t now_ms, gp_err *err) {
  for (int i = 0; i < s->cfg->n_queues; i++) {
    gp_xgrow((void **)&s->queues, &s->cap_queues, (size_t)s->n_queues + 1, sizeof *s->queues);
    s->queues[s->n_queues++] = queue_from_config(&s->cfg->queues[i]);
  }
  load_ctx c = {.s = s, .err = err, .now_ms = now_ms, .threads = 1};
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  c.threads = cpus > 16 ? 16 : cpus > 1 ? (int)cpus : 1;
  /* Active jobs and the recent ended ones; of the others, only their final states. */
  const char *active_states[GP_JOB_TIMEOUT + 2] = {0}, *ended_states[GP_JOB_TIMEOUT + 2] = {0};
  for (int st = 0, na = 0, ne = 0; st <= GP_JOB_TIMEOUT; st++) {
    if (gp_job_state_is_final((gp_job_state)st)) ended_states[ne++] = gp_job_state_name((gp_job_state)st);
    else active_states[na++] = gp_job_state_name((gp_job_state)st);
  }
  gp_store_load_cb cb = {&c, load_job, load_event, load_node, load_alloc, load_queue, load_order, load_meta,
                         load_credential, load_interval, load_node_interval,
                         (const char *const *)active_states,
                         (const char *const *)ended_states,
                         s->cfg->recent_ended_jobs, load_ended, load_setting};
  int r = gp_store_load(s->store, &cb, err);
  if (!r) r = load_flush(&c);
  /* A follower never writes; a leader of several writes the records as jobs change. */
  if (!r && !s->cfg->ha.on) gp__srv_job_batch_backfill(s, &c.batch);
  gp__srv_job_batch_free(&c.batch);
  gp__srv_event_batch_free(&c.events);
  if (r) {
    free(c.open_jobs);
    return r;
  }
  /* A running job whose allocations are incomplete cannot be trusted: treat as lost at the
   * next tick by giving it no placement (the agent's re-registration settles it). */
  for (int a = 0; a < s->n_active; a++) {
    gp_srv_job *j = s->active[a];
    if (j->state != GP_JOB_RUNNING && j->state != GP_JOB_STOPPING) {
      free(j->alloc);
      j->alloc = NULL;
      j->n_alloc = 0;
    }
  }
  gp__srv_arrays_rebuild(s);
  /* The features settle what they keep against what was loaded (prices, the ledger's open
   * intervals, nodes' heartbeats, services' replicas). */
  r = gp__srv_hook_fire(s, &s->hooks, GP_SRV_HOOK_LOADED,
                        &(gp_srv_hook_ev){.now_s = now_s, .now_ms = now_ms, .open_jobs = c.open_jobs,
                                          .n_open_jobs = c.n_open_jobs},
                        err);
  free(c.open_jobs);
  if (r) return r;
  s->sched_dirty = true;
  return 0;
}
