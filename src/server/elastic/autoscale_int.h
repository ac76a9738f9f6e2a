/* SPDX-License-Identifier: Apache-2.0 */
/* What the autoscaler's files share: its records and the provider calls its workers run
 * (autoscale_calls.c). Internal to src/server. */
#ifndef GP_SERVER_AUTOSCALE_INT_H
#define GP_SERVER_AUTOSCALE_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/plan.h"
#include "provider/provider.h"
#include "server/elastic/autoscale.h"
#include "server/state/metrics.h"
#include "server/state/node_templates.h"

#define GP_SRV_AS_WORKERS 4   /* provider calls at once */
#define GP_SRV_AS_MAX_INSTANCES 100000 /* creating or deleting records, in all */
#define GP_SRV_AS_MAX_NOTES 100000     /* pending jobs with a scale note */

/* One provider call, from the state thread to a worker and back. */
typedef struct gp_srv_as_call {
  gp_provider_verb verb;
  int tmpl;                 /* index into the config's node templates */
  int count;                /* create */
  char id[GP_PROVIDER_ID_MAX + 1];     /* delete: the one instance */
  char key[GP_PROVIDER_KEY_MAX + 1];
  int64_t job_id;           /* create: the first pending job it is for; 0: none */
  int64_t job_since;        /* that job's submission (wall s); 0: not measured */
  /* Filled by the worker. */
  int64_t started_ms;       /* wall ms the provider was started */
  int rc;
  gp_provider_result res;
  gp_provider_error e;
  struct gp_srv_as_call *next;
} gp_srv_as_call;

typedef enum gp_srv_as_phase {
  GP_SRV_AS_CREATING = 0,   /* asked for; its agent has not registered yet */
  GP_SRV_AS_DELETING,       /* being given back to its provider */
} gp_srv_as_phase;

/* An instance the autoscaler is waiting for: to register, or to be deleted. Records are
 * keyed by instance id (no two share one), and a node name is bound to one instance at
 * most: a record's node is held by no other record and by no registered node bound to
 * another instance. An instance the provider answered for a node that is held (an
 * orphan) gets a record with no node: it counts against max_nodes and max_hourly_cost
 * until its provider confirms its deletion. */
typedef struct gp_srv_as_inst {
  int tmpl;
  gp_srv_as_phase phase;
  char id[GP_PROVIDER_ID_MAX + 1];
  char node[GP_PROVIDER_NODE_MAX + 1]; /* "": an orphan, bound to no node */
  double price;             /* per GPU-hour as the provider answered; < 0: the template's */
  int64_t asked_at;         /* wall s the create (or list) was called */
  int64_t deadline;         /* CREATING: resume deadline (wall s) */
  int64_t job;              /* the job its create was asked for; 0: none */
  bool call_out;            /* DELETING: its delete call is running */
  bool interrupted;         /* DELETING: a spot node whose notice came (not counted) */
  bool orphan;              /* DELETING: answered for a node held by another instance */
  int failures;             /* DELETING: consecutive failed deletes */
  int64_t retry_at;         /* DELETING: after a failed delete, not before then */
} gp_srv_as_inst;

/* What the autoscaler knows of one template. */
typedef struct gp_srv_as_tmpl {
  const gp_node_template *nt;
  int failures;             /* consecutive failed creations */
  int64_t retry_at;         /* wall s: no create before then; 0: now */
  char err_class[16];       /* the last failure's class ("capacity", "timeout", ...) */
  char err_message[GP_PROVIDER_MESSAGE_MAX + 1];
  int64_t err_at;
  bool listed;              /* its `list` answered since the server started, or since
                               a broken create (which may have made what it did not say) */
  bool list_out;            /* a `list` call is running */
  int64_t list_since;       /* wall s: a node first registered since then may be a listed
                               instance's own; 0: since the list call started */
  int creating_calls;       /* instances asked for by create calls still running */
  int64_t last_asked;       /* wall s of its last create call; 0: none */
  uint64_t seq;             /* for idempotency keys */
  /* Provider calls by verb and result (gp_provider_class; 0: ok). */
  uint64_t calls[3][GP_PROVIDER_BROKEN + 1];
} gp_srv_as_tmpl;

/* A provider node's last emptiness (for scale-down). */
typedef struct gp_srv_as_idle {
  char node[GP_PROVIDER_NODE_MAX + 1];
  int64_t idle_since;       /* wall s it last became empty; 0: holds a job */
  int64_t last_job;         /* the last job seen on it; 0: none */
  bool seen;
} gp_srv_as_idle;

/* A pending job's scale note (re-applied every step until the next proposal). */
typedef struct gp_srv_as_note {
  int64_t job;
  int tmpl;
  gp_scale_state state;
  int count;
  int waited;               /* the template whose new nodes it last waited for; -1: none */
} gp_srv_as_note;

struct gp_srv_autoscale {
  const gp_server_config *cfg;
  int n_tmpl;
  gp_srv_as_tmpl *tmpl;
  gp_template *shapes;      /* the view's templates */
  int64_t started_at;       /* wall s, in idempotency keys */
  int64_t next_run_ms;      /* monotonic */
  int64_t newest_seen;      /* the newest pending job id a proposal has seen */
  gp_srv_as_inst *inst;
  int n_inst;
  size_t cap_inst;
  gp_srv_as_idle *idle;
  int n_idle;
  size_t cap_idle;
  gp_srv_as_note *notes;
  int n_notes;
  size_t cap_notes;
  gp_hist call_s, pending_to_call_s;
  /* The workers. */
  pthread_mutex_t lock;
  pthread_cond_t cond;
  gp_srv_as_call *todo, *done; /* under lock; todo FIFO through todo_tail */
  gp_srv_as_call **todo_tail;
  bool stopping;
  int n_threads;
  pthread_t threads[GP_SRV_AS_WORKERS];
};

/* autoscale_calls.c: start and stop the workers; queue a call (taken over); take the
 * finished calls (oldest first; the caller frees each with gp__srv_as_call_free). */
void gp__srv_as_workers_start(gp_srv_autoscale *a);
void gp__srv_as_workers_stop(gp_srv_autoscale *a);
void gp__srv_as_submit(gp_srv_autoscale *a, gp_srv_as_call *c);
gp_srv_as_call *gp__srv_as_take_done(gp_srv_autoscale *a);
void gp__srv_as_call_free(gp_srv_as_call *c);

/* autoscale.c: helpers of the records. */
/* Template t's creations failed: it is passed over for the backoff (gp__srv_as_backoff_delay
 * of its consecutive failures, or the provider's longer retry_after), and its last error
 * says why. */
void gp__srv_as_backoff(gp_srv_autoscale *a, int t, const char *cls, const char *msg,
                        int retry_after, int64_t now);
/* The delay after `failures` (>= 1) consecutive failures: backoff.initial, doubling, at
 * most backoff.max. */
int64_t gp__srv_as_backoff_delay(const gp_autoscale_config *c, int failures);
/* A `scale_failed` event (template t's last error) on pending job `job` (0: none). */
int gp__srv_as_job_failed(gp_srv_state *s, gp_srv_autoscale *a, int64_t job, int t, int64_t now,
                          gp_err *err);
/* Drops a record (the last one takes its place). */
void gp__srv_as_drop(gp_srv_autoscale *a, gp_srv_as_inst *in);
/* Removes a provider node whose instance is gone, unless a job holds it. */
int gp__srv_as_remove_node(gp_srv_state *s, gp_srv_node *n, int64_t now, gp_err *err);
/* autoscale_answers.c: takes in the finished calls' answers. */
int gp__srv_as_take_answers(gp_srv_state *s, gp_srv_autoscale *a, int64_t now, gp_err *err);
int64_t gp__srv_as_mono_ms(void);
int gp__srv_as_tmpl_index(const gp_srv_autoscale *a, const char *name); /* -1: none */
double gp__srv_as_price(const gp_srv_autoscale *a, int t); /* per GPU-hour; < 0: not stated */
/* Queues a provider call of template t (an idempotency key is made for create and delete). */
void gp__srv_as_call_out(gp_srv_autoscale *a, gp_provider_verb verb, int t, int count,
                         const char *id, int64_t job_id, int64_t job_since);
/* The record of instance `id` or of node `node` (either may be NULL; an orphan is found
 * by its id only), or NULL. */
gp_srv_as_inst *gp__srv_as_find(gp_srv_autoscale *a, const char *id, const char *node);
/* A new record (NULL past GP_SRV_AS_MAX_INSTANCES). */
gp_srv_as_inst *gp__srv_as_add(gp_srv_autoscale *a, int t, gp_srv_as_phase ph, const char *id,
                               const char *node);
/* autoscale_step.c: the emptiness record of provider node `node` (made when missing). */
gp_srv_as_idle *gp__srv_as_idle_entry(gp_srv_autoscale *a, const char *node);
/* Calls the provider's delete for a DELETING record. */
void gp__srv_as_delete(gp_srv_autoscale *a, gp_srv_as_inst *in);

/* autoscale_out.c: HH:MM:SS UTC of a wall time. */
void gp__srv_as_clock(int64_t t, char out[16]);
/* The pending reason of a job with scale note `n`. */
void gp__srv_as_note_message(const gp_srv_autoscale *a, const gp_srv_as_note *n, int64_t now,
                             char *buf, size_t size);

#endif
