/* SPDX-License-Identifier: Apache-2.0 */
/* The advice engine's state, shared by the file that feeds it (advice.c), the one that
 * sizes a job's request (advice_size.c) and the ones that turn sums into items
 * (advice_jobs.c, advice_pool.c). */
#ifndef GP_LEDGER_ADVICE_INT_H
#define GP_LEDGER_ADVICE_INT_H

#include "ledger/advice.h"
#include "ledger/intern.h"
#include "ledger/periods.h"
#include "ledger/timeline.h"

/* An int64 -> index map (open addressing, kept at most half full). */
typedef struct gp__ledger_imap {
  int64_t *keys;
  int32_t *vals;      /* index + 1; 0: empty */
  size_t n, n_slots;
} gp__ledger_imap;
/* The index of key, or -1; with `add` >= 0, stores add when missing and returns it. */
int32_t gp__ledger_imap_get(gp__ledger_imap *m, int64_t key, int32_t add);
void gp__ledger_imap_done(gp__ledger_imap *m);

/* One job's pieces inside the period. */
typedef struct gp__ledger_adv_job {
  int64_t job;
  int32_t model;                    /* of its first piece */
  gp_capacity capacity;
  int64_t first_start;
  double gpu_s, cost;
  bool cost_unknown;
  double nonspot_gpu_s, nonspot_cost, spot_cost;
  bool spot_unknown;                /* some non-spot piece had no spot price */
  int64_t longest_nonspot_s;        /* the longest piece held on non-spot capacity */
} gp__ledger_adv_job;

/* Idle sums of one (queue, user). */
typedef struct gp__ledger_adv_idle {
  int32_t queue, user;
  double known_gpu_s, used_gpu_s, idle_cost;
  bool cost_unknown;
} gp__ledger_adv_idle;

/* A queue's figures for quota. */
typedef struct gp__ledger_adv_queue {
  double alloc_gpu_s;               /* held by its jobs in the period */
  double waited_gpu_s;              /* wait x GPUs of its jobs that started in the period */
  bool seen;
} gp__ledger_adv_queue;

/* A change in the fleet's up GPUs: +gpus where a node's up interval starts, -gpus where it
 * ends (quota counts a queue's deserved GPUs only while the fleet had them up). */
typedef struct gp__ledger_adv_up {
  int64_t t;
  int gpus;
} gp__ledger_adv_up;

/* A run kept for the join at finish (strings interned). */
typedef struct gp__ledger_adv_run {
  int64_t job;
  int32_t name, user, queue, mig;   /* mig: interned profile, -1: none */
  int tasks, gpus, gpu_milli;
  bool requeue;
  int64_t last_checkpoint_at, submitted_at, started_at, peak_mem_mib;
  double avg_sm_util_pct;
} gp__ledger_adv_run;

struct gp_advice {
  gp_advice_params p;
  struct gp_arena *arena;
  gp__ledger_strings strs;          /* every name: queues, users, models, job names */
  gp__ledger_periods periods;       /* the whole period, for the price timelines */
  bool have_periods;
  gp__ledger_timeline **timelines;  /* by model id x 4 + capacity, built when first met */
  size_t n_timelines;
  int32_t last_job, last_queue, last_user, last_model;  /* the previous interval's, -1: none */
  gp__ledger_imap job_index;
  gp__ledger_adv_job *jobs;
  size_t n_jobs, cap_jobs;
  gp__ledger_imap idle_index;       /* (queue << 32 | user) */
  gp__ledger_adv_idle *idle;
  size_t n_idle, cap_idle;
  gp__ledger_adv_queue *queues;     /* by interned name id */
  size_t cap_queues;
  int32_t *queue_ids;               /* the ids of queues seen, in order */
  size_t n_queue_ids, cap_queue_ids;
  gp__ledger_adv_run *runs;
  size_t n_runs, cap_runs;
  gp_advice_idle *now_idle;         /* strings in the arena */
  size_t n_now_idle, cap_now_idle;
  double up_gpu_s, up_cost, alloc_gpu_s, used_gpu_s, known_gpu_s;
  bool up_cost_unknown;
  gp__ledger_adv_up *up;            /* the up intervals' edges, for quota */
  size_t n_up, cap_up;
  gp_advice_item *items;
  size_t n_items, cap_items;
  int64_t win_from, win_to;         /* gp_advice_window; win_to 0: none */
  bool finished;
};

/* The part of a GPU one task holds: whole GPUs, a fraction, or a MIG profile's compute
 * slices out of 7 on `model`. 0 when it cannot be told. */
double gp__ledger_adv_share(const char *model, int gpus, int gpu_milli, const char *mig);

/* The cheapest request that fits `need_mem_mib` and `need_gpu` (compute in GPU units) for a
 * task now holding `cur_share` of one GPU of `model` on capacity `c` (at `at`, for prices).
 * Fills flag ("--mig 2g.20gb", "--gpu-fraction 0.25", "--gpu-type L40S-48GB"), the share it
 * would hold, and the cost ratio new/old (< 1). False: nothing fits GP_ADVICE_MIN_SAVING. */
typedef struct gp__ledger_adv_fit {
  char flag[64];
  const char *model;                /* the model it would run on */
  double share, ratio;
  bool model_change;
} gp__ledger_adv_fit;
bool gp__ledger_adv_fit_find(const gp_advice *a, const char *model, gp_capacity c, int64_t at,
                             double cur_share, double need_mem_mib, double need_gpu,
                             gp__ledger_adv_fit *ret);

/* v with three significant digits and no trailing zeros ("672", "12.3", "0.03"), in a's
 * arena: a sentence never says 0.0 GPU-hours beside a table that shows 0.03. */
const char *gp__ledger_adv_num(gp_advice *a, double v);

/* A new item (zeroed, kind set) in a's list. */
gp_advice_item *gp__ledger_adv_item(gp_advice *a, gp_advice_kind kind);
void gp__ledger_adv_evidence(gp_advice_item *it, const char *key, double value);
/* Whether queue q is p->queue or one of its sub-queues (true without a filter). */
bool gp__ledger_adv_in_queue(const char *filter, const char *q);

/* advice_jobs.c: right_size and spot items from the runs; advice_pool.c: idle_week,
 * idle_now, quota and utilisation items. */
void gp__ledger_adv_jobs_items(gp_advice *a);
void gp__ledger_adv_pool_items(gp_advice *a);
/* The sums of queue id q (zeroed and listed when first met). */
gp__ledger_adv_queue *gp__ledger_adv_queue_of(gp_advice *a, int32_t q);

#endif
