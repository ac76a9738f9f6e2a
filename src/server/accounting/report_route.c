/* SPDX-License-Identifier: Apache-2.0 */
/* GET /v1/reports/{kind} on the state thread (report.h): checks the request and the
 * caller, and copies out what the HTTP thread needs (the prices by reference, the queues'
 * deserved GPUs by value), so nothing the report reads later belongs to the state. */
#include <stdlib.h>
#include <string.h>

#include "server/accounting/prices.h"
#include "server/accounting/report.h"
#include "util/mem.h"

void gp__srv_report_route(gp_srv_state *s, gp_srv_req *r, const char *kind, int64_t now) {
  if (strcmp(r->method, "GET") != 0) {
    gp__srv_reply_error(r, 405, "method_not_allowed", NULL, "use GET on /v1/reports/{kind}");
    return;
  }
  bool admin = gp_role_reads_all(r->role);
  gp_srv_report_query q;
  gp_err err = {0};
  int rc = gp__srv_report_query_parse(kind, r->query, admin, now, &q, &err);
  if (rc) {
    gp__srv_reply_err(r, rc, &err);
    return;
  }
  gp_srv_report *rep = gp_xcalloc(1, sizeof *rep);
  rep->q = q;
  rep->store = s->store;
  rep->now = now;
  rep->max_in_flight = s->cfg->http_threads > 2 ? s->cfg->http_threads / 2 : 1;
  rep->user = admin ? NULL : gp_xstrdup(r->user);
  if (q.kind == GP_SRV_REPORT_COST || q.kind == GP_SRV_REPORT_IDLE)
    rep->prices = gp__srv_prices_ref(s); /* NULL: GPU-hours and no money */
  if (q.share_idle == GP_LSI_DESERVED && s->n_queues > 0) {
    rep->deserved_queue = gp_xcalloc((size_t)s->n_queues, sizeof *rep->deserved_queue);
    rep->deserved_gpus = gp_xcalloc((size_t)s->n_queues, sizeof *rep->deserved_gpus);
    for (int i = 0; i < s->n_queues; i++) {
      rep->deserved_queue[i] = gp_xstrdup(s->queues[i]->name);
      rep->deserved_gpus[i] = s->queues[i]->deserved;
    }
    rep->n_deserved = s->n_queues;
  }
  gp__srv_report_free(r->report);
  r->report = rep;
  /* Decided here; the HTTP thread makes the answer's body (gp__srv_report_run). */
  free(r->resp);
  r->resp = NULL;
  r->status = 200;
  r->answered = true;
}
