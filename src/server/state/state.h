/* SPDX-License-Identifier: Apache-2.0 */
/* The server's authoritative state in memory: jobs, nodes, queues and the orders waiting
 * for agents. One thread (the state thread, server.c) owns all of it, Redis-style: HTTP
 * threads never touch it; they hand requests over and wait for the answer. Every change
 * is written to the store inside the state thread's current transaction (the gp__srv_persist_*
 * helpers); when a commit fails the state is thrown away and reloaded from the store, so
 * memory never runs ahead of what is durable. The job and node records are in job.h and
 * node.h.
 *
 * Internal to src/server (gp__srv_ names). */
#ifndef GP_SERVER_STATE_H
#define GP_SERVER_STATE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/idle.h"
#include "core/model.h"
#include "core/plan.h"
#include "server/state/array.h"
#include "server/state/config.h"
#include "server/state/hooks.h"
#include "server/state/job.h"
#include "server/state/metrics.h"
#include "server/state/node.h"
#include "server/state/store_health.h"
#include "store/store.h"
#include "tls/digest.h"
#include "util/error.h"

#define GP_SRV_MAX_TASKS 1024     /* gang size */
#define GP_SRV_MAX_DEPS 64        /* ids per dependency list */
#define GP_SRV_MAX_PARTITIONS 16  /* queues in a submission's partition list */
#define GP_SRV_MAX_NODES 100000
#define GP_SRV_MAX_QUEUES 10000
#define GP_SRV_IDLE_PCT 5.0       /* an allocated GPU under this utilisation is idle... */
#define GP_SRV_IDLE_WINDOW_S 600  /* ...when it stayed there this long */
#define GP_SRV_MAX_GPU_WATTS 2000.0 /* above any GPU's board power: a bound on reported energy */

typedef struct gp_srv_queue {
  char *name;
  double deserved, limit, weight;
  char *default_priority;
  int64_t default_time_limit;
  int n_users;
  char **users;
  int n_classes;        /* priority classes its users may ask for; -1: the default */
  char **classes;
  bool from_config;     /* defined in the config file: read-only through the API */
  gp_budget budget;     /* budget.h; .set false: none */
  gp_idle_policy idle_policy; /* core/idle.h; .set false: none */
  gp_spot_pref spot;          /* how its jobs meet spot capacity (core/spot.c) */
  double spot_share;          /* (0, 1]: cap on its GPUs on spot; 0: none */
  gp_srv_ulimits user_limits; /* per-user limits (user_limits.h); n 0: none */
  uint64_t idle_actions[3];   /* the policy's actions since the server started, by
                                 gp_idle_action (idle.c) */
  /* Figures from the last scheduling step (fair share) and live counts. */
  double fair_share;
} gp_srv_queue;

/* Last plan's per-queue figures, including implied parents. */
typedef struct gp_srv_queue_fig {
  char *name;
  char *parent;
  gp_plan_queue fig;
} gp_srv_queue_fig;

#define GP_SRV_CAPACITIES 4          /* gp_capacity values */
#define GP_SRV_INTERRUPT_SOURCES 5   /* gp__srv_interrupt_sources */

typedef struct gp_srv_counters {
  uint64_t submissions, starts, preemptions, sched_cycles, requeues, ends;
  uint64_t steps_skipped; /* cycles whose step could change nothing (schedule.c) */
  double last_cycle_s;
  double cycles_cpu_s;  /* the state thread's CPU time in scheduling cycles */
  gp_hist cycle_s, wait_s, run_s;
  /* spot interruptions (interrupt.c): by the node's capacity type and the notice's source */
  uint64_t interruptions[GP_SRV_CAPACITIES][GP_SRV_INTERRUPT_SOURCES];
  gp_hist notice_to_stop_s; /* from the agent seeing a notice to its jobs' stop orders */
} gp_srv_counters;

/* The scheduler's view, kept between steps (view.c): entries parallel to the nodes, the
 * queues and the active jobs (then this step's ended dependencies), rewritten only for the
 * records marked stale since the last step. */
typedef struct gp_srv_view {
  gp_view view;
  gp_node *nodes;
  size_t cap_nodes;
  gp_queue *queues;
  size_t cap_queues;
  gp_job *jobs;
  size_t cap_jobs;
  uint64_t *job_revs;
  size_t cap_job_revs;
  struct gp_srv_job **deps; /* ended dependencies in this step's view */
  int n_deps;
  size_t cap_deps;
  struct gp_srv_job **at;   /* the job at each index of the synced view, frozen while its
                               plan is applied (that moves jobs in the active list) */
  size_t cap_at;
  int n_with_deps;          /* active jobs that name dependencies */
  int64_t *stale_jobs;      /* ids of jobs changed since the last step */
  int n_stale_jobs;
  size_t cap_stale_jobs;
  int *stale_nodes;         /* indices of nodes changed since the last step */
  int n_stale_nodes;
  size_t cap_stale_nodes;
  bool queues_stale;
} gp_srv_view;

/* The nodes whose parked heartbeat polls may be due (waiters.c). */
typedef struct gp_srv_deadline {
  int64_t deadline_ms;
  int node;
} gp_srv_deadline;

typedef struct gp_srv_waiters {
  int *woken;               /* nodes given orders since the last look, each once */
  int n_woken;
  size_t cap_woken;
  gp_srv_deadline *heap;    /* parked polls by deadline (min-heap; stale entries allowed) */
  int n_heap;
  size_t cap_heap;
} gp_srv_waiters;

/* Counts by name (counts.c). */
typedef struct gp_srv_count {
  char *name;           /* owned; NULL: an empty slot */
  int64_t n;
} gp_srv_count;

typedef struct gp_srv_counts {
  gp_srv_count *slots;
  size_t cap;           /* a power of two, or 0 */
  size_t used;
} gp_srv_counts;

/* Ended jobs (ended.c): memory holds the active jobs and the last
 * cfg->recent_ended_jobs ended ones; the rest live in the store. Every ended job keeps its
 * final state here, one byte per job id (state + 1; 0: not ended), so dependencies on a
 * job no longer in memory resolve and the per-state counts stay whole. */
typedef struct gp_srv_ended {
  uint8_t *final;           /* by job id */
  size_t cap_final;
  int64_t by_state[16];     /* ended jobs per gp_job_state, in memory or not */
  int64_t *fifo;            /* ids of ended jobs in memory, in the order they ended */
  size_t fifo_head, fifo_len, cap_fifo;
  struct gp_srv_job **ghosts; /* stand-ins for dependencies no longer in memory (view.c) */
  int n_ghosts;
  size_t cap_ghosts;
} gp_srv_ended;

typedef struct gp_srv_state {
  const gp_server_config *cfg; /* borrowed */
  gp_store *store;              /* borrowed */
  /* The features' handlers (hooks.h), registered when the state is made (parts.c): the
   * state fires them and calls no feature itself. Each feature's own record is one
   * `struct gp__srv_*` pointer below, NULL until its feature makes it and freed by it on
   * GP_SRV_HOOK_FREE; only its feature sees inside (the others call its functions). */
  gp_srv_hooks hooks;
  /* Jobs by id: jobs[id] (ids are 1, 2, ...); NULL holes never happen but are tolerated. */
  gp_srv_job **jobs;
  size_t cap_jobs;
  int64_t next_job_id;
  /* Arrays not ended (array.h), by the id of the array's job. */
  int64_t *arrays;
  int n_arrays;
  size_t cap_arrays;
  /* Non-final jobs, for building views without scanning history. */
  gp_srv_job **active;
  int n_active;
  size_t cap_active;
  gp_srv_node **nodes;
  int n_nodes;
  size_t cap_nodes;
  int *node_slots;          /* open-addressing hash of node names -> index, -1: empty */
  size_t n_node_slots;      /* a power of two, >= 2 * n_nodes */
  gp_srv_queue **queues;
  int n_queues;
  size_t cap_queues;
  gp_srv_queue_fig *figs;
  int n_figs;
  int64_t next_order_id;
  bool sched_dirty;         /* something changed that the scheduler should see */
  /* The scheduler's memo (gp_sched_step_memo) and its rev contract: every job change takes
   * the job a new rev (gp__srv_job_changed), every node or queue change a new view rev
   * (gp__srv_node_changed, gp__srv_queues_changed); one counter for both. sched_check
   * (GPOOL_SCHED_CHECK=1, for tests) checks the kept view against its records and runs
   * gp_sched_step beside each memo step, and aborts on any difference. */
  struct gp_sched_memo *memo;
  uint64_t revs, view_rev;
  bool sched_check;
  bool have_plan;
  /* What the last step saw (schedule.c): the rev counter and the view's size, and until
   * when its plan holds as time passes (gp_plan.valid_until, set to 0 when the plan acted).
   * A cycle that finds the same, before that time, skips the step: it would decide the
   * same. With sched_check the last plan is kept (last_plan) and a full step checks each
   * skip. */
  uint64_t plan_revs;
  int plan_n_jobs;
  int64_t plan_now, plan_valid_until;
  struct gp_plan *last_plan;
  gp_srv_counters counters;
  gp_srv_store_health store_health; /* carried over a reload, like the counters */
  _Atomic int64_t jobs_loaded;  /* by gp__srv_state_load so far; read by HTTP threads */
  /* Jobs not yet started (PENDING or HELD), per user and per queue: the submission caps
   * (gp_server_config.max_pending_*) read them. Kept by gp__srv_job_insert and
   * gp__srv_job_set_state, the two ways a job's state changes. */
  gp_srv_counts pending_by_user, pending_by_queue;
  gp_srv_view view;
  gp_srv_waiters waiters;
  struct gp__srv_ledger *ledger; /* its writes' switch and the totals since start
                                   (accounting/ledger.h), NULL until used */
  struct gp__srv_fairshare *fairshare; /* decayed usage (fairshare.c), NULL until used */
  struct gp__srv_resvs *resvs; /* advance reservations (reservations.c), NULL until used */
  gp_srv_ended ended;
  struct gp__srv_pricing *pricing; /* the catalogue in force and the admin's
                                     (accounting/prices.h), NULL until loaded */
  struct gp__srv_budgets *budgets; /* spend, alerts and priced totals (budget.c), or NULL */
  struct gp_srv_autoscale *autoscale; /* the server's (autoscale.h; borrowed, kept over a
                                         reload), NULL: a fixed fleet */
  struct gp_srv_sessions *sessions; /* interactive sessions (sessions.h; borrowed), for /metrics */
  struct gp_srv_events *events; /* the event streams (events.h; borrowed, kept over a
                                   reload), NULL: no streams (tests, a loading state) */
  struct gp__srv_events_feed *events_feed; /* records noted for the streams (events.h),
                                             NULL until one is */
  struct gp_srv_notify *notify; /* the notification sender (notify.h; borrowed, kept over a
                                   reload), NULL: none (tests, loading, following) */
  struct gp__srv_notify_state *notify_st; /* notes and users' settings (notify_job.c) */
  struct gp__srv_registry_state *registry_st; /* registry credentials (registry.c), NULL: none */
  struct gp_srv_links *links; /* the console's links to jobs' ports (webproxy_links.c), NULL: none */
  struct gp__srv_pulls *pulls; /* pre-pulls' results (image_pull.c), NULL: none yet */
  struct gp__srv_services *services; /* inference services (service.h), NULL: none yet */
  uint64_t ranked_cycle;      /* counters.sched_cycles + 1 when the jobs' queue positions
                                 were worked out (jobrank.c), 0: never */
  struct gp__srv_heartbeats *heartbeats; /* nodes' heartbeats for followers (heartbeats.c),
                                           NULL until used */
} gp_srv_state;

/* ---- records.c: lifetime, lookup, persistence ---- */
gp_srv_state *gp__srv_state_new(const gp_server_config *cfg, gp_store *store);
void gp__srv_state_free(gp_srv_state *s);
/* Loads everything from the store into a fresh state (config queues first). */
int gp__srv_state_load(gp_srv_state *s, int64_t now_s, int64_t now_ms, gp_err *err);

/* lookup.c: a job by id, or an array's element by "J_I"; NULL: not in memory. */
gp_srv_job *gp__srv_job_get(const gp_srv_state *s, const char *id);
/* Appends a node (taking ownership) and indexes it by name. */
void gp__srv_node_add(gp_srv_state *s, gp_srv_node *n);
/* lookup.c: a node by name, its position (-1: none); the name index's hash. */
gp_srv_node *gp__srv_node_get(const gp_srv_state *s, const char *name);
int gp__srv_node_index(const gp_srv_state *s, const char *name);
uint64_t gp__srv_name_hash(const char *name);
/* lookup.c: the token the server calls node n's agent with (logs, sessions, links): the
 * node's own, else the config's first agent token; "" when there is none. */
const char *gp__srv_node_agent_token(const gp_srv_state *s, const gp_srv_node *n);
/* The active job that holds (or held, in its current run) a task on node n, or NULL. */
gp_srv_job *gp__srv_node_holder(const gp_srv_state *s, const gp_srv_node *n);
/* Forgets a node that no active job holds (gp__srv_node_holder NULL; the caller answers
 * its parked poll first): closes its node ledger interval at `now`, deletes its row,
 * credential and orders from the store, and removes and frees it; the last node takes its
 * place in the list, with every reference to it moved along. */
int gp__srv_node_remove(gp_srv_state *s, gp_srv_node *n, int64_t now, gp_err *err);
/* Records that a provider made node n (template and instance id, both non-empty; price
 * per GPU-hour, < 0: not known) and persists it. GP_EINVAL for an unsafe id or name. */
int gp__srv_node_set_provider(gp_srv_state *s, gp_srv_node *n, const char *tmpl,
                              const char *instance, double price, gp_err *err);
/* lookup.c: a queue by name, and the rules a submission to it is checked against. */
gp_srv_queue *gp__srv_queue_get(const gp_srv_state *s, const char *name);
bool gp__srv_queue_admits(const gp_srv_queue *q, const char *user);
/* May the queue's users ask for priority class `cls` by name? Those the queue lists; by
 * default every preemptible class, the policy's default class and the queue's own. */
bool gp__srv_queue_allows_class(const gp_srv_state *s, const gp_srv_queue *q, const char *cls);
const char *gp__srv_default_queue(const gp_srv_state *s, const char *user);
/* Does another queue name `name` as its parent (a queue "name/...")? Jobs go to leaves. */
bool gp__srv_queue_is_parent(const gp_srv_state *s, const char *name);

/* job_free.c: releases a job record and all it owns (NULL: nothing). */
void gp__srv_job_free(gp_srv_job *j);
/* Takes ownership of j (a new job with j->id assigned) and indexes it. */
void gp__srv_job_insert(gp_srv_state *s, gp_srv_job *j);
void gp__srv_job_set_state(gp_srv_state *s, gp_srv_job *j, gp_job_state st);

/* ---- ended.c: ended jobs out of memory ---- */
/* A job of id `id` reached (final true) or left a final state `st`. */
void gp__srv_ended_mark(gp_srv_state *s, int64_t id, gp_job_state st, bool final);
/* Frees the oldest ended jobs past cfg->recent_ended_jobs (their final state stays). Call
 * between batches, when no job pointer is held (the view's ended dependencies are
 * dropped; the next step finds them again). */
void gp__srv_ended_evict(gp_srv_state *s);
/* Is job `id` ended? Its final state, whether in memory or only in the store. */
bool gp__srv_ended_state(const gp_srv_state *s, int64_t id, gp_job_state *ret);
/* lookup.c: parses a job id ("123"); 0 when it is not one. */
int64_t gp__srv_job_id_parse(const char *id);
/* The stand-in job for id in the view's dependencies (id and state only: a new one in
 * state st, or the one already made); owned by s->ended, trimmed by
 * gp__srv_ended_ghosts_trim. */
struct gp_srv_job *gp__srv_ghost_get(gp_srv_state *s, int64_t id, gp_job_state st);
/* The stand-in for an ended dependency no longer in memory; NULL when id never ended. */
struct gp_srv_job *gp__srv_ended_ghost(gp_srv_state *s, int64_t id);
/* Frees the stand-ins the last view did not use (view_index < 0). */
void gp__srv_ended_ghosts_trim(gp_srv_state *s);
void gp__srv_ended_free(gp_srv_ended *e);

/* ---- counts.c ---- */
int64_t gp__srv_count_get(const gp_srv_counts *m, const char *name);
void gp__srv_count_add(gp_srv_counts *m, const char *name, int64_t delta);
void gp__srv_counts_free(gp_srv_counts *m);
/* Is a job in this state one that the pending caps count? */
static inline bool gp__srv_state_waits(gp_job_state st) {
  return st == GP_JOB_PENDING || st == GP_JOB_HELD;
}

/* ---- view.c: the scheduler's kept view ---- */
/* A job, a node or the queues changed: the next step rewrites their view entries (and the
 * core's memo re-derives what it kept of them). */
void gp__srv_job_changed(gp_srv_state *s, gp_srv_job *j);
void gp__srv_node_changed(gp_srv_state *s, gp_srv_node *n);
void gp__srv_queues_changed(gp_srv_state *s);
/* A job entered (added) or left the active list. */
void gp__srv_view_active_moved(gp_srv_state *s, gp_srv_job *j, bool added);
/* Brings the view up to date for a step. */
const gp_view *gp__srv_view_sync(gp_srv_state *s);
/* Brings the nodes' entries up to date (gp_srv_state.n_nodes of them), and only those. */
const gp_node *gp__srv_view_nodes(gp_srv_state *s);
/* What job j asks for, as the core reads a request (strings borrowed from j). */
void gp__srv_job_request(const gp_srv_job *j, gp_request *r);
/* The job at an index of the last synced view (as it was at the sync, however the active
 * list moved since), or NULL. */
gp_srv_job *gp__srv_view_job(const gp_srv_state *s, int index);
void gp__srv_view_free(gp_srv_view *w);

int gp__srv_persist_job(gp_srv_state *s, gp_srv_job *j, gp_err *err);
/* The same, handing the stored JSON document to the caller (who frees it) on success. */
int gp__srv_persist_job_doc(gp_srv_state *s, gp_srv_job *j, char **ret_doc, gp_err *err);
/* Appends {"event": ev, "at": at, ...extra} to the timeline and the store (steals extra). */
int gp__srv_job_event(gp_srv_state *s, gp_srv_job *j, const char *ev, int64_t at, json_t *extra,
                  gp_err *err);
int gp__srv_persist_node(gp_srv_state *s, gp_srv_node *n, gp_err *err);
int gp__srv_persist_queue(gp_srv_state *s, gp_srv_queue *q, gp_err *err);
/* Queues an order for a node (persisted). Steals `doc`. */
int gp__srv_order_add(gp_srv_state *s, gp_srv_node *n, json_t *doc, int64_t job_id, bool is_start,
                  gp_err *err);
/* Drops the node's unacknowledged start and stop orders that belong to no current run on
 * it (the job ended, was requeued or runs elsewhere, or the order is an older run's), so
 * an agent that comes back never starts a job twice or stops a newer run. */
int gp__srv_orders_purge_stale(gp_srv_state *s, gp_srv_node *n, gp_err *err);
/* Drops the node's orders with id <= gen. */
int gp__srv_orders_ack(gp_srv_state *s, gp_srv_node *n, int64_t gen, gp_err *err);

/* ---- waiters.c: parked heartbeat polls ---- */
struct gp_srv_req;
/* Parks r as node n's poll until orders newer than gen arrive or deadline_ms passes. */
void gp__srv_waiter_park(gp_srv_state *s, gp_srv_node *n, struct gp_srv_req *r, int64_t gen,
                         int64_t deadline_ms);
/* Orders were queued for n (gp__srv_order_add). */
void gp__srv_waiter_orders_added(gp_srv_state *s, gp_srv_node *n);
/* The earliest deadline of a parked poll, or INT64_MAX. */
int64_t gp__srv_waiter_earliest(gp_srv_state *s);
/* The next node whose parked poll is due (new orders, unless expire_only; or past its
 * deadline), or NULL. The caller answers the poll and clears n->waiter. */
gp_srv_node *gp__srv_waiter_next_due(gp_srv_state *s, int64_t now_ms, bool expire_only);
void gp__srv_waiters_free(gp_srv_waiters *w);
/* Node n is being forgotten: its parked poll, if any, is answered 404 (the agent must
 * register again). */
void gp__srv_waiter_node_gone(gp_srv_node *n);

/* ---- lifecycle.c: transitions shared by the API, the agent protocol and the scheduler ---- */
/* Sends stop orders to every task not yet exited and moves the job to STOPPING. */
int gp__srv_job_stop(gp_srv_state *s, gp_srv_job *j, const char *reason, int64_t now, gp_err *err);
/* Reads and writes the fields above (jobopts.c): from a submission or a stored document,
 * into the API's and the store's JSON. */
int gp__srv_job_read_batch(const json_t *o, gp_srv_job *j, gp_err *err);
void gp__srv_job_batch_json(json_t *o, const gp_srv_job *j);
/* The job's container (jobimage.c): from a submission's `image` and `container_*` fields or
 * a stored `container` object; into the API's and the store's JSON as `container`. */
int gp__srv_job_read_container(const json_t *o, gp_srv_job *j, gp_err *err);
/* The images a node's agent reports in a heartbeat (images.c): checked, kept in memory. */
/* The heartbeat's `models` (models.c): the names in the node's models_dir, checked; true
 * when the set changed (the view's preference hashes with it). Absent: the last list stands. */
bool gp__srv_node_models_take(gp_srv_node *n, const json_t *models);
/* Rebuilds n->pref_hashes from its image and model hashes (models.c). */
void gp__srv_node_prefs_merge(gp_srv_node *n);
void gp__srv_job_container_json(json_t *o, const gp_srv_job *j);

/* The same with the grace period capped at max_grace_s (a spot notice's time left). */
int gp__srv_job_stop_within(gp_srv_state *s, gp_srv_job *j, const char *reason, int max_grace_s,
                            int64_t now, gp_err *err);
/* Task `task` of the job, on node `node`, exited (task -1: every task of the job on that
 * node, as an agent that names no task reports) with exit_code (-1: none) or killed by
 * signal `sig` (0: none); ends or requeues the job when it was the last. A task reported
 * twice, or not on that node, changes nothing. */
int gp__srv_job_task_exited(gp_srv_state *s, gp_srv_job *j, int node, int task, int exit_code,
                            int sig, const char *reason, int64_t now, gp_err *err);
/* The job's node is gone: requeue (requeue=true) or fail with "node lost". */
int gp__srv_job_lost(gp_srv_state *s, gp_srv_job *j, const char *why, int64_t now, gp_err *err);
/* Ends a job that is not running (cancelled, impossible, ...). */
int gp__srv_job_end(gp_srv_state *s, gp_srv_job *j, gp_job_state st, const char *reason,
                int64_t now, gp_err *err);
/* Marks a node down and handles its jobs. */
int gp__srv_node_down(gp_srv_state *s, gp_srv_node *n, const char *why, int64_t now, gp_err *err);

/* Periodic checks: node liveness, time limits. */
int gp__srv_state_tick(gp_srv_state *s, int64_t now_s, int64_t now_ms, gp_err *err);

/* lifecycle.c: names the end of the job's last attempt (once; after gp__srv_ledger_close_job). */
void gp__srv_attempt_ended(gp_srv_job *j, const char *reason);

/* ---- idle_rule.c, idle_json.c: what the queues' idle-GPU policy says of a job (its acting:
 * accounting/idle.h) ---- */
/* The queue's idle rule for the job, or NULL when its queue has no policy. */
const gp_idle_rule *gp__srv_idle_rule(const gp_srv_state *s, const gp_srv_job *j);
/* The job's class as the policy reads it: its own, else its queue's default, else the
 * scheduling policy's (or NULL). */
const char *gp__srv_idle_class(const gp_srv_state *s, const gp_srv_job *j);
/* Is the running job idle for at least its window now (its queue's, or the default)? */
bool gp__srv_idle_now(const gp_srv_state *s, const gp_srv_job *j, int64_t now);
/* How a job stopped by the policy ends: requeued (true) or cancelled, and the reason
 * ("idle: under 5% SM for 600 s"), from its last `idle` event. */
bool gp__srv_idle_requeues(const gp_srv_job *j, char *why, size_t size);
/* The figures of an idle rule, as events and reasons say them ("under 5% SM for 600 s"). */
void gp__srv_idle_figures(char *buf, size_t size, double threshold_pct, int64_t for_s);
/* The queues API's `idle_policy` (null: none), read as the config reads it; errors name
 * `field` and the key. */
int gp__srv_idle_policy_from_json(const json_t *v, const char *field, gp_idle_policy *ret,
                                  gp_err *err);
json_t *gp__srv_idle_policy_to_json(const gp_idle_policy *p);
/* The job's `idle` object of the API, or null (not running, or its use unknown). */
json_t *gp__srv_idle_job_json(const gp_srv_state *s, const gp_srv_job *j, int64_t now);

/* ---- jobjson.c, jobjson_out.c, jobredact.c: jobs to and from JSON ---- */
/* Validates a submission body into a new job (id unassigned), without looking at the
 * state, so HTTP threads can do it in parallel: types, ranges, unknown fields, the caller's
 * right to name another user, the priority class. `user` is the caller. On error fills
 * *err (field = the JSON key) and returns GP_EINVAL or GP_EPERM. */
int gp__srv_job_parse(const gp_server_config *cfg, const json_t *body, const char *user,
                      bool is_admin, gp_srv_job **ret, gp_err *err);
/* The checks that need the state (state thread): the queue (or the user's default), its
 * admission list, dependencies that exist, the queue's default time limit. */
int gp__srv_job_admit(const gp_srv_state *s, gp_srv_job *j, bool is_admin, gp_err *err);
/* lookup.c: GPUs a job's request asks for in all, fractions as fractions (MIG: compute
 * slices / 7). */
double gp__srv_job_asked_gpus(const gp_srv_job *j);
/* Rebuilds a job from its stored document. */
int gp__srv_job_from_doc(const char *doc, gp_srv_job **ret, gp_err *err);
/* The JOB object of the API. `for_store` leaves out what is recomputed (timeline, pending
 * reason, usage). */
json_t *gp__srv_job_to_json(const gp_srv_state *s, const gp_srv_job *j, bool for_store);
/* The same document as gp__srv_job_to_json(s, j, true), as compact text, written directly
 * (the hot path of every submission and transition). Caller frees. */
char *gp__srv_job_store_doc(const gp_srv_job *j);
/* The fields of the API's JOB that the store does not keep (pending reason, placements,
 * timeline, usage, enforcement). */
json_t *gp__srv_job_api_fields(const gp_srv_state *s, const gp_srv_job *j);
/* What a caller (`user`, `role`) may see of a job (docs/security.md): all of it (its owner,
 * admins); its measured use (usage, idle, GPU metrics, its GPUs' telemetry: also viewers). */
bool gp__srv_job_may_read_all(const gp_srv_job *j, const char *user, gp_role role);
bool gp__srv_job_may_read_use(const gp_srv_job *j, const char *user, gp_role role);
/* Trims an API JOB object `o` of job j to what the caller may see: to anyone but its owner
 * and admins its command and env values read "(hidden)", and so does the agent's detail of
 * its end reasons ("start_failed: (hidden)"); to users who are not its owner also its
 * measured use (usage, idle, SM use in idle events). Returns o. */
json_t *gp__srv_job_redact(json_t *o, const gp_srv_job *j, const char *user, gp_role role);
/* The API placements of a job's current allocation (an empty list when it holds none). */
json_t *gp__srv_job_placements_json(const gp_srv_state *s, const gp_srv_job *j);

/* ---- jobrank.c ---- */
/* The job's 1-based place among the pending jobs of its queue in the scheduler's order at
 * the last step, or 0 when that order does not hold it (not pending, not yet considered,
 * waiting for a dependency, held). State thread. */
int gp__srv_job_queue_position(const gp_srv_state *s, const gp_srv_job *j);

/* The pending reason and sentence the API shows for a job (NULL, NULL when it does not
 * wait): its last step's, "Held" for a held job, "Priority" before any step. */
void gp__srv_job_pending_why(const gp_srv_job *j, const char **ret_reason, const char **ret_message);

/* ---- nodejson.c ---- */
/* Reads a node as the agent registers it (or as stored) into *n (fresh or existing: facts
 * are replaced, admin state kept unless `stored`). */
int gp__srv_node_from_json(const json_t *o, gp_srv_node *n, bool stored, gp_err *err);
json_t *gp__srv_node_to_json(const gp_srv_state *s, const gp_srv_node *n, bool for_store);
/* The API's NODE as caller `user` (`role`) may see it: to a user, the telemetry of a GPU
 * that holds another user's job is null (docs/security.md). */
json_t *gp__srv_node_to_json_for(const gp_srv_state *s, const gp_srv_node *n, const char *user,
                                 gp_role role);
void gp__srv_node_free(gp_srv_node *n);
void gp__srv_node_free_facts(gp_srv_node *n);

/* ---- queuejson.c ---- */
int gp__srv_queue_from_json(const json_t *o, const char *name, gp_srv_queue *q, gp_err *err);
json_t *gp__srv_queue_to_json(const gp_srv_queue *q);
void gp__srv_queue_free(gp_srv_queue *q);
/* The queue list of the API: every queue with its parents, fair share and usage. */
json_t *gp__srv_queues_json(const gp_srv_state *s);

#define GP_SRV_SETTING_NAME_MAX 300 /* a setting's name: "budget/" and a queue name */

/* ---- budget_hold.c ---- */

/* A job's two holds (budget_hold.c): its owner's and its queue budget's, each lifted by
 * whom it may be. gp__srv_job_budget_hold puts the budget's on a pending or held job,
 * gp__srv_job_budget_release takes it off at a new period (the owner's hold stays). */
typedef enum gp_srv_hold_refusal {
  GP_SRV_HOLD_DONE = 0,      /* done, or nothing to do */
  GP_SRV_HOLD_WRONG_STATE,   /* not pending (hold) or not held (release): 409 */
  GP_SRV_HOLD_BY_BUDGET,     /* release by a non-admin of a job the budget holds: 403 */
} gp_srv_hold_refusal;
int gp__srv_job_budget_hold(gp_srv_state *s, gp_srv_job *j, const char *why, int64_t now,
                            gp_err *err);
int gp__srv_job_budget_release(gp_srv_state *s, gp_srv_job *j, const char *why, int64_t now,
                               gp_err *err);
bool gp__srv_job_budget_held(const gp_srv_job *j);
/* The budget hold's sentence (its "held" event's reason), or NULL when none is in force. */
const char *gp__srv_job_budget_hold_reason(const gp_srv_job *j);
/* POST /v1/jobs/{id}/hold or /release by `user` (the owner or an admin). */
int gp__srv_job_hold_change(gp_srv_state *s, gp_srv_job *j, bool hold, const char *user, bool admin,
                            int64_t now, gp_srv_hold_refusal *ret_refusal, gp_err *err);

#endif
