/* SPDX-License-Identifier: Apache-2.0 */
/* Why a job that found no room waits, when a reservation is the cause (reservation.h,
 * gp__core_ares_reason): the job is placed again as if no reservation fenced a node, and
 * the first reservation fencing a node of that placement is named, with its times in UTC.
 * Above placement (it places the whole gang), while the fences themselves (reservation.c)
 * sit below it, where every node filter reads them. */
#include <string.h>

#include "core/reservation.h"
#include "util/calendar.h"

/* "2026-12-06 14:00:00" in UTC (plan arena), from seconds since the epoch: calendar
 * arithmetic only, no clock or time zone. */
static const char *utc(gp_arena *a, gp_time t) {
  int64_t days = t / GP_DAY_S, sec = t % GP_DAY_S, y;
  if (sec < 0) {
    sec += GP_DAY_S;
    days--;
  }
  int m, d;
  gp_civil_from_days(days, &y, &m, &d);
  return gp_arena_printf(a, "%04lld-%02d-%02d %02lld:%02lld:%02lld", (long long)y, m, d, (long long)(sec / 3600),
                         (long long)(sec / 60 % 60), (long long)(sec % 60));
}

const char *gp__core_ares_reason(gp__core_ctx *c, gp__core_req *r, gp__core_fit **fits, size_t *fits_cap) {
  if (!gp__core_ares_any(c) || c->decisions_only) return NULL;
  gp__core_req_need(c, r);
  gp__core_req wide = *r;
  wide.ignore_ares = true;
  gp_xgrow((void **)fits, fits_cap, (size_t)r->tasks, sizeof **fits);
  if (!gp__core_place_job(c, &wide, *fits, false)) return NULL;
  for (int t = 0; t < r->tasks; t++) {
    int k = gp__core_ares_fence(c, r->job, r->end, (*fits)[t].node);
    if (k < 0) continue;
    const gp_reservation *rv = &c->view->reservations[c->ares->idx[k]];
    const char *from = utc(c->arena, rv->start), *to = utc(c->arena, rv->end);
    bool same_day = strncmp(from, to, 10) == 0;
    return gp_arena_printf(
        c->arena, "Node %s is reserved by %s%s from %s to %s UTC; %s.", c->view->nodes[(*fits)[t].node].name,
        rv->name, rv->maint ? " (maintenance)" : "", from, same_day ? to + 11 : to,
        rv->start <= c->now ? "only the reservation's jobs may use it until then"
        : r->end >= GP__NEVER ? "the job has no time limit, so it would run into the reservation"
                              : "the job's time limit would run into the reservation");
  }
  return NULL;
}
