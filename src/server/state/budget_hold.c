/* SPDX-License-Identifier: Apache-2.0 */
/* The two holds a job can carry, and who may lift each:
 *   its owner's   `gpool hold`, `submit --hold`: the owner (or an admin) releases it;
 *   its budget's  a queue's spent budget with `hold_new` (budget.c): only an admin, or the
 *                 next period, releases it. The owner cannot: the budget would be advisory.
 * A job is held while it carries either. Both are read from the job's timeline, which is
 * stored event by event and loaded whole, so they need no field of their own and survive a
 * restart or a failover as they were:
 *   "held"     by "budget": the budget's hold; by anyone else (or nobody: submit --hold):
 *              the owner's;
 *   "released" hold "user": the owner's hold only; hold "budget" (or by "budget", a new
 *              period): the budget's only; otherwise (an admin's release, and releases
 *              written before the holds were told apart): both. */
#include <string.h>

#include "server/state/state.h"

enum { HOLD_USER = 1, HOLD_BUDGET = 2 };

static const char *ev_str(const json_t *ev, const char *key) {
  return json_string_value(json_object_get(ev, key));
}

static bool is(const char *s, const char *want) { return s && strcmp(s, want) == 0; }

/* The holds in force, and the reason of the budget's (NULL when it holds nothing). */
static unsigned holds_of(const gp_srv_job *j, const char **ret_reason) {
  if (ret_reason) *ret_reason = NULL;
  if (j->state != GP_JOB_HELD) return 0;
  unsigned h = 0;
  const char *reason = NULL;
  for (size_t i = 0; i < json_array_size(j->timeline); i++) {
    const json_t *ev = json_array_get(j->timeline, i);
    const char *name = ev_str(ev, "event");
    if (is(name, "held")) {
      if (is(ev_str(ev, "by"), "budget")) {
        h |= HOLD_BUDGET;
        reason = ev_str(ev, "reason");
      } else {
        h |= HOLD_USER;
      }
    } else if (is(name, "released")) {
      const char *which = ev_str(ev, "hold");
      if (is(which, "user")) h &= ~(unsigned)HOLD_USER;
      else if (is(which, "budget") || is(ev_str(ev, "by"), "budget")) h &= ~(unsigned)HOLD_BUDGET;
      else h = 0;
    }
  }
  /* Held with no hold on record (a timeline cut short): the owner's, which they may lift. */
  if (!h) h = HOLD_USER;
  if (ret_reason && (h & HOLD_BUDGET)) *ret_reason = reason ? reason : "held by its queue's budget";
  return h;
}

bool gp__srv_job_budget_held(const gp_srv_job *j) { return holds_of(j, NULL) & HOLD_BUDGET; }

const char *gp__srv_job_budget_hold_reason(const gp_srv_job *j) {
  const char *reason;
  holds_of(j, &reason);
  return reason;
}

int gp__srv_job_budget_hold(gp_srv_state *s, gp_srv_job *j, const char *why, int64_t now,
                            gp_err *err) {
  if (j->state != GP_JOB_PENDING && j->state != GP_JOB_HELD) return 0;
  if (j->state == GP_JOB_PENDING) gp__srv_job_set_state(s, j, GP_JOB_HELD);
  return gp__srv_job_event(s, j, "held", now, json_pack("{s:s,s:s}", "by", "budget", "reason", why),
                           err);
}

int gp__srv_job_budget_release(gp_srv_state *s, gp_srv_job *j, const char *why, int64_t now,
                               gp_err *err) {
  unsigned h = holds_of(j, NULL);
  if (!(h & HOLD_BUDGET)) return 0;
  /* Its owner's own hold stays: they release it themselves. */
  if (!(h & HOLD_USER)) gp__srv_job_set_state(s, j, GP_JOB_PENDING);
  s->sched_dirty = true;
  int rc = gp__srv_job_event(s, j, "released", now,
                             json_pack("{s:s,s:s,s:s}", "by", "budget", "hold", "budget", "reason", why),
                             err);
  return rc ? rc : gp__srv_persist_job(s, j, err);
}

int gp__srv_job_hold_change(gp_srv_state *s, gp_srv_job *j, bool hold, const char *user, bool admin,
                            int64_t now, gp_srv_hold_refusal *ret_refusal, gp_err *err) {
  *ret_refusal = GP_SRV_HOLD_DONE;
  unsigned h = holds_of(j, NULL);
  if (hold) {
    if (j->state == GP_JOB_HELD && (h & HOLD_USER)) return 0;
    if (j->state != GP_JOB_PENDING && j->state != GP_JOB_HELD) {
      *ret_refusal = GP_SRV_HOLD_WRONG_STATE;
      return 0;
    }
    /* Held by the budget alone: the owner's hold is added, so that the job stays held
     * when the budget lets go. */
    if (j->state == GP_JOB_PENDING) gp__srv_job_set_state(s, j, GP_JOB_HELD);
    int rc = gp__srv_job_event(s, j, "held", now, json_pack("{s:s}", "by", user), err);
    return rc ? rc : gp__srv_persist_job(s, j, err);
  }
  if (j->state == GP_JOB_PENDING) return 0;
  if (j->state != GP_JOB_HELD) {
    *ret_refusal = GP_SRV_HOLD_WRONG_STATE;
    return 0;
  }
  if ((h & HOLD_BUDGET) && !admin) {
    *ret_refusal = GP_SRV_HOLD_BY_BUDGET; /* nothing changes, its owner's hold included */
    return 0;
  }
  gp__srv_job_set_state(s, j, GP_JOB_PENDING);
  int rc = gp__srv_job_event(s, j, "released", now,
                             json_pack("{s:s,s:s}", "by", user, "hold", admin ? "all" : "user"), err);
  return rc ? rc : gp__srv_persist_job(s, j, err);
}
