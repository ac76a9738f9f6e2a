/* SPDX-License-Identifier: Apache-2.0 */
/* A queue's idle-GPU policy and the arithmetic of idleness, shared by the server (which
 * measures running jobs from their agents' use figures) and the simulator (which replays a
 * trace's idle stretches): when is a job idle, since when, and what happens to it then.
 *
 * A policy has a rule for ordinary jobs and, optionally, one for jobs of the `interactive`
 * priority class (notebooks idle between cells for longer). A rule is a threshold on SM
 * utilisation (% of the job's share of its GPUs), a window the job must stay under it, a
 * grace after its start (model loading, data staging) during which it is never judged, and
 * an action: notify (an event and a metric), requeue (the checkpoint handshake, then back
 * to pending; requeueable jobs only) or cancel (the `opportunistic` class only). A job the
 * action may not touch is notified instead, and the event says why.
 *
 * A job whose use is unknown (MPS clients, no figures yet) is never idle. Pure: no I/O, no
 * clock; the format is in docs/config.md ("Idle policy"). */
#ifndef GP_CORE_IDLE_H
#define GP_CORE_IDLE_H

#include <stdbool.h>
#include <stdint.h>

#include "util/doc.h"
#include "util/error.h"

#define GP_IDLE_MAX_WINDOW_S (30LL * 86400) /* window and grace: at most 30 days */
#define GP_IDLE_MIN_SPAN_S 4  /* use figures closer than this are not judged (sampling noise) */

typedef enum gp_idle_action { GP_IDLE_NOTIFY, GP_IDLE_REQUEUE, GP_IDLE_CANCEL } gp_idle_action;

typedef struct gp_idle_rule {
  double threshold_pct;  /* idle below this SM utilisation, 0 < t <= 100 (default 5) */
  int64_t window_s;      /* ...for this long, >= 1 (default 600) */
  int64_t grace_s;       /* not judged this long after its start, >= 0 (default 600) */
  gp_idle_action action; /* default notify */
} gp_idle_rule;

typedef struct gp_idle_policy {
  bool set;                 /* false: the queue has no policy (nothing is judged) */
  gp_idle_rule rule;        /* every job but the interactive ones */
  bool has_interactive;
  gp_idle_rule interactive; /* jobs of the `interactive` class; without it they use `rule` */
} gp_idle_policy;

/* Reads `idle_policy: {threshold_pct, window, grace, action, interactive: {...}}` at node `n`
 * (a map; null: no policy). Keys left out take the defaults above; `interactive` keys left
 * out take the outer rule's. Errors name `path` and the key ("queues[2].idle_policy.window").
 * *ret is untouched on failure. The queues API and the simulator read through it too. */
int gp_idle_policy_read(const gp_doc *d, const gp_doc_node *n, const char *path,
                        gp_idle_policy *ret, gp_err *err);
const char *gp_idle_action_name(gp_idle_action a); /* "notify", "requeue", "cancel" */

/* The rule for a job of priority class `priority_class` (NULL: not interactive). */
const gp_idle_rule *gp_idle_rule_for(const gp_idle_policy *p, const char *priority_class);

/* What the rule's action becomes for a job: requeue needs a requeueable job, cancel the
 * `opportunistic` class; otherwise notify, and *why (when not NULL) says what stopped it. */
gp_idle_action gp_idle_effective(const gp_idle_rule *r, bool requeueable,
                                 const char *priority_class, const char **why);

/* When the rule acts on a job that started at `started_at` and has been idle since
 * `idle_since` (0: busy or unknown -> returns 0): idle for the window, and not before the
 * grace after its start has passed. */
int64_t gp_idle_due(const gp_idle_rule *r, int64_t started_at, int64_t idle_since);

/* A running job's idleness from its cumulative use: the busy GPU-seconds of its share
 * (what the agents report as sm_busy_gpu_s, summed over its tasks) at successive times. */
typedef struct gp_idle_track {
  int64_t base_at;      /* time of the figure the next one is measured against, 0: none */
  double base_busy_gpu_s;
  int64_t idle_since;   /* start of the stretch under the threshold, 0: busy or unknown */
  double last_pct;      /* utilisation over the last measured span, < 0: unknown */
} gp_idle_track;
#define GP_IDLE_TRACK_INIT ((gp_idle_track){.last_pct = -1})

/* Takes the figure at `at`: busy_gpu_s < 0 means unknown (the track resets: never idle);
 * share_gpus is the job's GPUs counted by share (a 3g.40gb slice of a 7-slice GPU is 3/7).
 * Judges the span since the last judged figure once it is GP_IDLE_MIN_SPAN_S long. */
void gp_idle_track_update(gp_idle_track *t, double busy_gpu_s, double share_gpus,
                          double threshold_pct, int64_t at);

#endif
