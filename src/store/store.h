/* SPDX-License-Identifier: Apache-2.0 */
/* The server's durable store: one interface, several backends (SQLite now, PostgreSQL
 * later, and a fault-injecting wrapper for tests). The server keeps its authoritative
 * state in memory and writes every change here inside a transaction before it
 * acknowledges anything; on start it loads everything back and picks up where it was.
 *
 * Rows carry a few indexed columns (state, queue, user, ...) and the full object as a
 * JSON document (`doc`), so a backend stores what the server gives it without knowing
 * the job schema, and new job fields need no migration.
 *
 * Tables: jobs, job_events (the timeline: one row per transition), nodes, allocations
 * (one row per task of a running job), queues (those created through the API), orders
 * (start/stop orders not yet acknowledged by an agent), meta (counters), identity (the
 * store's id), node_credentials (the hash of each node's agent credential), settings (admin
 * settings that outlive a restart, by name: e.g. the price catalogue an admin set) and the
 * ledger: `ledger` (one row per job attempt, task and GPU: who held which part of which GPU
 * from when to when, and what it used) and `node_ledger` (one row per node state interval:
 * up, drained, down), each opened and closed in the transaction of the state change that
 * starts and ends it (docs/internals/store.md), and their daily roll-ups (`ledger_day`,
 * `ledger_alloc_day`, `ledger_held_day`: gp_store_job_day below), added to as intervals close.
 *
 * Identity: every store has a random id, made with the database and kept in it, so that an
 * agent can tell a store it served from another one that reuses the same job and order
 * numbers (a moved data directory, a restored backup); see docs/agent.md.
 *
 * Contract: every write happens between begin() and commit(); commit() returns 0 only
 * when the transaction is durable (survives kill -9 and, for SQLite with
 * synchronous=FULL, power loss). After a failed write or commit the caller calls
 * rollback() and must treat the store as the truth (reload); the handle's `failure` then
 * names the cause for an operator. All strings passed in are
 * borrowed for the duration of the call; strings handed to load callbacks are borrowed
 * for the duration of the callback. Not thread-safe: one thread uses a store. */
#ifndef GP_STORE_STORE_H
#define GP_STORE_STORE_H

#include <stdbool.h>
#include <stdint.h>

#include "util/error.h"

typedef struct gp_store gp_store;
typedef struct gp_store_reader gp_store_reader;

typedef struct gp_store_job {
  int64_t id;
  const char *state;     /* gp_job_state_name() */
  const char *queue;
  const char *user;
  int64_t submitted_at;
  const char *doc;       /* the job as JSON */
  /* Its load record (the server's jobrec.h): what a restart needs, in a form that reads
   * without a JSON parse; NULL: none (a row of an older gpool, or a history read). Loads
   * hand it out beside the document; other reads leave it NULL. */
  const char *rec;
} gp_store_job;

typedef struct gp_store_event {
  int64_t job_id;
  int64_t at;
  const char *event;     /* submitted, started, preempted, requeued, ended, ... */
  const char *doc;       /* the timeline entry as JSON */
} gp_store_event;

typedef struct gp_store_node {
  const char *name;
  const char *doc;       /* the node as JSON (facts from registration + admin state) */
} gp_store_node;

typedef struct gp_store_alloc {
  int64_t job_id;
  int task;
  const char *node;
  uint32_t gpu_mask;
  int gpu_milli;
  int64_t gpu_mem_mib;
  int mig_instance;      /* -1: none */
} gp_store_alloc;

typedef struct gp_store_queue {
  const char *name;
  const char *doc;
} gp_store_queue;

typedef struct gp_store_order {
  int64_t id;            /* server-wide sequence; per node increasing */
  const char *node;
  const char *doc;       /* the order as sent to the agent */
} gp_store_order;

/* One row of the ledger: a job attempt's task holding `share` of one GPU over [start, end).
 * Strings are borrowed (for the call, or for a load/read callback). */
typedef struct gp_store_interval {
  int64_t id, job_id;        /* id: the row's number (ignored when opening one) */
  int attempt, task;         /* attempt: the job's run number, 1, 2, ... */
  const char *user, *queue, *node, *gpu_uuid, *model, *capacity;
  const char *service;       /* a service replica's service; "" (or NULL when opening): none.
                                Read by gp_store_reader_intervals; other reads leave it NULL */
  double share;              /* the part of the GPU held, (0, 1] */
  int64_t start, end;        /* Unix seconds; end 0: still open */
  double used_gpu_s;         /* SM-busy GPU-seconds in whole-GPU units; < 0: unknown */
  double energy_j;           /* < 0: unknown */
} gp_store_interval;

/* One row of the node ledger: a node in one state ("up", "drained", "down") over
 * [start, end). */
typedef struct gp_store_node_interval {
  int64_t id;
  const char *node, *model, *capacity, *state;
  int gpus;                  /* the node's GPU count */
  int64_t start, end;        /* end 0: still open */
} gp_store_node_interval;

/* Load callbacks return 0 to continue or a negative GP_E* to stop the load with it. */
typedef struct gp_store_load_cb {
  void *ctx;
  int (*job)(void *ctx, const gp_store_job *row);
  int (*event)(void *ctx, const gp_store_event *row);   /* in (job_id, insertion) order */
  int (*node)(void *ctx, const gp_store_node *row);
  int (*alloc)(void *ctx, const gp_store_alloc *row);
  int (*queue)(void *ctx, const gp_store_queue *row);
  int (*order)(void *ctx, const gp_store_order *row);   /* in id order */
  int (*meta)(void *ctx, const char *key, int64_t value);
  int (*credential)(void *ctx, const char *node, const char *hash);
  int (*interval)(void *ctx, const gp_store_interval *row);           /* open ones, by id */
  int (*node_interval)(void *ctx, const gp_store_node_interval *row); /* open ones, by id */
  /* A bounded history, when `ended` is set: job() and event() then see only the jobs in
   * `active_states` and the `keep_ended` jobs in `ended_states` (NULL-terminated names)
   * that ended last (by ended_at, then id), those oldest first after the others; ended()
   * is called before them for every job in `ended_states`, with its id and state only
   * (read from the state index, not the documents). */
  const char *const *active_states;
  const char *const *ended_states;
  int64_t keep_ended;
  int (*ended)(void *ctx, int64_t id, const char *state);
  int (*setting)(void *ctx, const char *name, const char *doc);   /* in name order */
} gp_store_load_cb;

/* A backend fills this table. Every function returns 0 or a negative GP_E* with details
 * in *err (may be NULL). */
typedef struct gp_store_ops {
  const char *name;
  int (*begin)(gp_store *s, gp_err *err);
  int (*commit)(gp_store *s, gp_err *err);
  void (*rollback)(gp_store *s);
  int (*put_job)(gp_store *s, const gp_store_job *row, gp_err *err);       /* upsert */
  int (*add_event)(gp_store *s, const gp_store_event *row, gp_err *err);
  int (*put_node)(gp_store *s, const gp_store_node *row, gp_err *err);     /* upsert */
  int (*put_alloc)(gp_store *s, const gp_store_alloc *row, gp_err *err);   /* upsert */
  int (*del_allocs)(gp_store *s, int64_t job_id, gp_err *err);           /* all tasks */
  int (*put_queue)(gp_store *s, const gp_store_queue *row, gp_err *err);   /* upsert */
  int (*del_queue)(gp_store *s, const char *name, gp_err *err);
  int (*put_order)(gp_store *s, const gp_store_order *row, gp_err *err);
  int (*del_orders)(gp_store *s, const char *node, int64_t up_to_id, gp_err *err);
  int (*del_order)(gp_store *s, int64_t id, gp_err *err);                /* one order */
  int (*set_meta)(gp_store *s, const char *key, int64_t value, gp_err *err);
  /* Calls the non-NULL callbacks for every row, table by table, in the order listed in
   * gp_store_load_cb. Outside a transaction. */
  int (*load)(gp_store *s, const gp_store_load_cb *cb, gp_err *err);
  void (*close)(gp_store *s);
  /* Checks, in a transaction of its own that leaves no trace, that the store can take a
   * write of GP_STORE_PROBE_BYTES now: after a failure, this says when to try real work
   * again without risking it. */
  int (*probe)(gp_store *s, gp_err *err);
  /* A node's credential hash (upsert), or with hash NULL no credential for it. */
  int (*put_credential)(gp_store *s, const char *node, const char *hash, gp_err *err);
  /* A read-only handle on the same data for another thread (see gp_store_reader). */
  int (*open_reader)(gp_store *s, gp_store_reader **ret, gp_err *err);
  /* The ledger. Opens an interval (row's id, end and use figures are ignored: it starts
   * open, its use unknown). */
  int (*open_interval)(gp_store *s, const gp_store_interval *row, gp_err *err);
  /* Closes every open interval of a job at `end`. */
  int (*close_intervals)(gp_store *s, int64_t job_id, int64_t end, gp_err *err);
  /* Sets the use figures of a job's open intervals on `node`: the job's totals there for
   * its current attempt, split across the intervals by share. A figure < 0 (unknown) leaves
   * the intervals' figure as it was. */
  int (*set_interval_use)(gp_store *s, int64_t job_id, const char *node, double used_gpu_s,
                          double energy_j, gp_err *err);
  /* Opens a node interval, closing the node's open one (if any) at the new one's start. */
  int (*open_node_interval)(gp_store *s, const gp_store_node_interval *row, gp_err *err);
  /* Closes the node's open interval (if any) at `end`. */
  int (*close_node_interval)(gp_store *s, const char *node, int64_t end, gp_err *err);
  /* An admin setting `name` (upsert), or with doc NULL no setting of that name. */
  int (*put_setting)(gp_store *s, const char *name, const char *doc, gp_err *err);
  /* Forgets a node: its row, its credential and its unacknowledged orders (a node of that
   * name registering later is a new node). Its ledger rows stay, as history; the caller
   * closes its open interval. Allocations are the jobs' and go with them. */
  int (*del_node)(gp_store *s, const char *name, gp_err *err);
} gp_store_ops;

#define GP_STORE_ID_MAX 33 /* 32 hex digits (128 random bits) and the NUL */

/* For backends: makes a new store id (128 random bits in hex) in `out`; `where` (the file
 * or URL as shown) names the store in the error when the system has no randomness to give. */
int gp_store_make_id(char out[GP_STORE_ID_MAX], const char *where, gp_err *err);
/* For backends: the error of a load that a callback stopped with `code`: the callback's own
 * message when it gave one (a corrupt row names itself), else the query being read. */
int gp_store_load_stopped(gp_err *err, int code, const char *where, const char *sql);

/* Large enough that a probe which fits says an ordinary batch will fit too. */
#define GP_STORE_PROBE_BYTES (256 * 1024)

/* Every backend's handle starts with this header. `failure` names, in a few words for an
 * operator, why the last operation failed: "disk full" (SQLite's SQLITE_FULL, which is
 * also how it reports ENOSPC), "I/O error", "read-only", "locked", "corrupt", ...; a
 * backend sets it with every failure it returns. */
struct gp_store {
  const gp_store_ops *ops;
  char failure[64];
  char id[GP_STORE_ID_MAX]; /* the store's identity, set by the backend when it opens */
  /* Fencing (docs/ha.md): when > 0, the epoch of the leader lease (lease.h) this server
   * holds. A backend that shares its data between servers (PostgreSQL) checks it inside
   * every write transaction against the lease row, under a share lock that a takeover
   * must wait for, and refuses the transaction with GP_ESTATE and `failure` "fenced"
   * when a newer epoch exists. 0: no fencing (one server; SQLite ignores it). */
  int64_t fence_epoch;
};

/* Opens (creating when missing) the SQLite store at `path` (WAL, synchronous=FULL, so a
 * committed transaction survives kill -9 and power loss). A file that exists but is not a
 * gpool store (0 bytes, or a database without gpool's tables) is refused with GP_EINVAL:
 * starting it as a new, empty store would reuse the old store's job and order numbers. */
int gp_store_sqlite_open(const char *path, gp_store **ret, gp_err *err);

/* Opens the PostgreSQL store at `url` (a libpq URI, postgresql://...): creates or
 * migrates its schema (the same tables as SQLite, versioned migrations), with connect and
 * keepalive timeouts set so that a dead or half-open server fails a call in seconds. A
 * commit returns 0 only once PostgreSQL has committed it (synchronous_commit on). */
int gp_store_pg_open(const char *url, gp_store **ret, gp_err *err);

/* Opens the store a server config names: a postgresql:// or postgres:// URL opens
 * PostgreSQL, anything else is a SQLite file path. */
int gp_store_open(const char *url_or_path, gp_store **ret, gp_err *err);

/* A test hook: caps the SQLite database at `pages` pages (never below its current size;
 * 0: SQLite's own cap) from the next transaction on, so that writes fail with "disk full"
 * as on a full file system, and the space can be given back. Safe to call from any
 * thread. Returns GP_EINVAL for another backend. */
int gp_store_sqlite_cap_pages(gp_store *s, int64_t pages);

/* A wrapper for tests that forwards to `inner` (whose ownership it takes) and fails on
 * demand, like SQLite's test VFS: after gp_store_fault_arm(s, n), the n-th write call
 * from now (put/add/del/set, or commit: each counts as one) fails with GP_EIO without
 * reaching `inner`; with `sticky` every later write fails too, until re-armed.
 * gp_store_fault_arm(s, 0, false) disarms. */
int gp_store_fault_open(gp_store *inner, gp_store **ret);
void gp_store_fault_arm(gp_store *s, int nth_write, bool sticky);
/* The cause an injected failure reports in the handle's `failure` ("I/O error" unless
 * set; at most 63 characters). */
void gp_store_fault_cause(gp_store *s, const char *cause);
/* Makes every load() fail with GP_EIO (true) or work again (false); thread-safe. */
void gp_store_fault_fail_load(gp_store *s, bool fail);
/* Makes every load() wait `delay_ms` first, as a large store on a slow disk would. */
void gp_store_fault_slow_load(gp_store *s, int delay_ms);
/* Number of writes the wrapper has failed so far. */
int gp_store_fault_failures(const gp_store *s);

/* A read-only handle on a store, for a thread other than the one that writes (reports,
 * job history): its own connection, which sees every committed transaction and never
 * blocks the writer (SQLite's WAL). Not thread-safe itself: one thread uses a reader; open
 * one per thread or per request. */
int gp_store_reader_open(gp_store *s, gp_store_reader **ret, gp_err *err);
void gp_store_reader_close(gp_store_reader *r); /* accepts NULL */

/* Every interval that overlaps [from, to) (an open one overlaps when start < to), in start
 * order; `user` non-NULL keeps only that user's. The callback returns 0 to go on, or a
 * negative GP_E* to stop the scan with it. Strings are borrowed for the callback. */
int gp_store_reader_intervals(gp_store_reader *r, int64_t from, int64_t to, const char *user,
                              int (*cb)(void *ctx, const gp_store_interval *iv), void *ctx,
                              gp_err *err);
int gp_store_reader_node_intervals(gp_store_reader *r, int64_t from, int64_t to,
                                   int (*cb)(void *ctx, const gp_store_node_interval *iv),
                                   void *ctx, gp_err *err);
/* The ledger's daily roll-ups (docs/accounting.md, "Roll-ups"), written in the transaction
 * that closes an interval and built from the closed intervals when a store is upgraded: the
 * closed job intervals summed by UTC day x user x queue x model x capacity, and the same
 * allocation summed by UTC day x the model, capacity and state of the node interval it ran
 * in ("allocation against capacity"). Open intervals are in neither: a report reads them
 * raw. Each figure is what the ledger engine would take from the raw rows over that day:
 * gpu_s = share x seconds; used_gpu_s and energy_j pro rata of each interval's figure;
 * known_gpu_s the gpu_s whose use is known. */
typedef struct gp_store_job_day {
  int64_t day;               /* the UTC day's first second */
  const char *user, *queue, *model, *capacity;
  double gpu_s, used_gpu_s, known_gpu_s, energy_j;
  bool energy_known;         /* some part had its energy measured */
} gp_store_job_day;
/* A job's figures on one day (ledger_held_day, for advice, whose items are per job): held
 * on (model, capacity) by the job's closed intervals, their first second held that day and
 * the longest of them (whole, not clipped to the day). */
typedef struct gp_store_held_day {
  int64_t day, job_id;
  const char *model, *capacity, *user, *queue;
  double gpu_s, used_gpu_s, known_gpu_s;
  int64_t first_start, longest_s;
} gp_store_held_day;
typedef struct gp_store_alloc_day {
  int64_t day;
  const char *model, *capacity, *state;   /* the node interval's */
  double gpu_s;
} gp_store_alloc_day;

/* Reads that follow, until gp_store_reader_snapshot(r, false), see one snapshot of the
 * store, so that an interval closing meanwhile is counted once: either open and raw, or in
 * the roll-ups. */
int gp_store_reader_snapshot(gp_store_reader *r, bool on, gp_err *err);
/* Roll-up rows of the days in [day_from, day_to) (day starts), in day order; `user`
 * non-NULL reads only that user's rows, through an index on (user, day). */
int gp_store_reader_job_days(gp_store_reader *r, int64_t day_from, int64_t day_to,
                             const char *user,
                             int (*cb)(void *ctx, const gp_store_job_day *d), void *ctx,
                             gp_err *err);
int gp_store_reader_alloc_days(gp_store_reader *r, int64_t day_from, int64_t day_to,
                               int (*cb)(void *ctx, const gp_store_alloc_day *d), void *ctx,
                               gp_err *err);
/* The jobs' day rows of [day_from, day_to), in day order; `user` non-NULL: that user's, by
 * an index on (user, day). */
int gp_store_reader_held_days(gp_store_reader *r, int64_t day_from, int64_t day_to,
                              const char *user,
                              int (*cb)(void *ctx, const gp_store_held_day *d), void *ctx,
                              gp_err *err);
/* The open job intervals that started before `to` (end 0), `user` non-NULL: that user's. */
int gp_store_reader_open_intervals(gp_store_reader *r, int64_t to, const char *user,
                                   int (*cb)(void *ctx, const gp_store_interval *iv),
                                   void *ctx, gp_err *err);

/* Job history, read through a reader (sqlite_history.c). */
typedef struct gp_store_job_filter {
  int64_t from, to;      /* ended_at in [from, to) */
  const char *user;      /* NULL: any */
  const char *queue;     /* NULL: any; a queue also matches its sub-queues ("a" matches "a/b") */
} gp_store_job_filter;

/* One job (any state) and its timeline: job() once, then event() for each entry in order.
 * GP_ENOENT when the store has no such job. Callbacks return 0 or a negative GP_E* that
 * stops the read with it; strings are borrowed for the callback. */
int gp_store_reader_job(gp_store_reader *r, int64_t id,
                        int (*job)(void *ctx, const gp_store_job *row),
                        int (*event)(void *ctx, const gp_store_event *row), void *ctx,
                        gp_err *err);
/* Ended jobs that match `f`, the last ended first (by ended_at, then id, both descending),
 * starting after the cursor (after_ended_at, after_id; after_id 0: from the newest), at
 * most `limit`. cb returns 0 to go on, 1 to stop there, or a negative GP_E*. */
int gp_store_reader_jobs(gp_store_reader *r, const gp_store_job_filter *f, int64_t after_ended_at,
                         int64_t after_id, int limit,
                         int (*cb)(void *ctx, const gp_store_job *row, int64_t ended_at),
                         void *ctx, gp_err *err);

/* Closes any backend; accepts NULL. */
void gp_store_close(gp_store *s);

static inline int gp_store_begin(gp_store *s, gp_err *e) { return s->ops->begin(s, e); }
static inline int gp_store_commit(gp_store *s, gp_err *e) { return s->ops->commit(s, e); }
static inline void gp_store_rollback(gp_store *s) { s->ops->rollback(s); }
static inline int gp_store_put_job(gp_store *s, const gp_store_job *r, gp_err *e) { return s->ops->put_job(s, r, e); }
static inline int gp_store_add_event(gp_store *s, const gp_store_event *r, gp_err *e) { return s->ops->add_event(s, r, e); }
static inline int gp_store_put_node(gp_store *s, const gp_store_node *r, gp_err *e) { return s->ops->put_node(s, r, e); }
static inline int gp_store_put_alloc(gp_store *s, const gp_store_alloc *r, gp_err *e) { return s->ops->put_alloc(s, r, e); }
static inline int gp_store_del_allocs(gp_store *s, int64_t job, gp_err *e) { return s->ops->del_allocs(s, job, e); }
static inline int gp_store_put_queue(gp_store *s, const gp_store_queue *r, gp_err *e) { return s->ops->put_queue(s, r, e); }
static inline int gp_store_del_queue(gp_store *s, const char *name, gp_err *e) { return s->ops->del_queue(s, name, e); }
static inline int gp_store_put_order(gp_store *s, const gp_store_order *r, gp_err *e) { return s->ops->put_order(s, r, e); }
static inline int gp_store_del_orders(gp_store *s, const char *node, int64_t up_to, gp_err *e) { return s->ops->del_orders(s, node, up_to, e); }
static inline int gp_store_del_order(gp_store *s, int64_t id, gp_err *e) { return s->ops->del_order(s, id, e); }
static inline int gp_store_set_meta(gp_store *s, const char *key, int64_t v, gp_err *e) { return s->ops->set_meta(s, key, v, e); }
static inline int gp_store_probe(gp_store *s, gp_err *e) { return s->ops->probe(s, e); }
static inline const char *gp_store_failure(const gp_store *s) { return s->failure; }
static inline int gp_store_load(gp_store *s, const gp_store_load_cb *cb, gp_err *e) { return s->ops->load(s, cb, e); }
static inline int gp_store_put_credential(gp_store *s, const char *node, const char *hash, gp_err *e) { return s->ops->put_credential(s, node, hash, e); }
static inline int gp_store_open_interval(gp_store *s, const gp_store_interval *r, gp_err *e) { return s->ops->open_interval(s, r, e); }
static inline int gp_store_close_intervals(gp_store *s, int64_t job, int64_t end, gp_err *e) { return s->ops->close_intervals(s, job, end, e); }
static inline int gp_store_set_interval_use(gp_store *s, int64_t job, const char *node, double used_gpu_s, double energy_j, gp_err *e) { return s->ops->set_interval_use(s, job, node, used_gpu_s, energy_j, e); }
static inline int gp_store_open_node_interval(gp_store *s, const gp_store_node_interval *r, gp_err *e) { return s->ops->open_node_interval(s, r, e); }
static inline int gp_store_close_node_interval(gp_store *s, const char *node, int64_t end, gp_err *e) { return s->ops->close_node_interval(s, node, end, e); }
static inline int gp_store_del_node(gp_store *s, const char *name, gp_err *e) { return s->ops->del_node(s, name, e); }
static inline int gp_store_put_setting(gp_store *s, const char *name, const char *doc, gp_err *e) { return s->ops->put_setting(s, name, doc, e); }

#endif
