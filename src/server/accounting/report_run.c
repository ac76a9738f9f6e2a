/* SPDX-License-Identifier: Apache-2.0 */
/* A report on an HTTP thread (report.h): a store reader of its own, node intervals then
 * job intervals streamed from the ledger tables into the engine's accumulator (which keeps
 * per-group sums, never rows), then the answer; by day sums where it can (report_days.c). A
 * user's report scans only that user's job intervals and no node intervals: idle capacity
 * is the fleet's, an admin's to read. */
#include <stdatomic.h>
#include <stdlib.h>

#include "server/accounting/ledger.h"
#include "server/accounting/report.h"
#include "server/accounting/ledger_feed.h"
#include "util/mem.h"

void gp__srv_report_free(gp_srv_report *rep) {
  if (!rep) return;
  gp_prices_free(rep->prices);
  free(rep->user);
  for (int i = 0; i < rep->n_deserved; i++) free(rep->deserved_queue[i]);
  free(rep->deserved_queue);
  free(rep->deserved_gpus);
  free(rep);
}

typedef struct scan {
  gp_ledger_report *lr;   /* NULL: count the intervals only */
  int64_t now;
  int64_t job;            /* > 0: only this job's intervals */
  long n;
} scan;

gp_capacity gp__srv_ledger_capacity(const char *name) {
  gp_capacity c = GP_CAP_ON_DEMAND;
  if (name) gp_capacity_parse(name, &c);
  return c;
}

gp_ledger_node_iv gp__srv_ledger_node_iv(const gp_store_node_interval *iv, int64_t now) {
  /* The ledger's node states are written in the engine's order (up, drained, down); a
   * name this server does not know counts as up. */
  int state = iv->state ? gp__srv_ledger_node_state(iv->state) : -1;
  return (gp_ledger_node_iv){
      .node = iv->node,
      .model = iv->model,
      .capacity = gp__srv_ledger_capacity(iv->capacity),
      .gpus = iv->gpus,
      .state = state < 0 ? GP_LEDGER_UP : (gp_ledger_node_state)state,
      .start = iv->start,
      .end = iv->end ? iv->end : now,
  };
}

gp_ledger_job_iv gp__srv_ledger_job_iv(const gp_store_interval *iv, int64_t now) {
  return (gp_ledger_job_iv){
      .job = iv->job_id,
      .attempt = iv->attempt,
      .queue = iv->queue,
      .user = iv->user,
      .node = iv->node,
      .model = iv->model,
      .service = iv->service,
      .capacity = gp__srv_ledger_capacity(iv->capacity),
      .share = iv->share,
      .start = iv->start,
      .end = iv->end ? iv->end : now,
      .used_gpu_s = iv->used_gpu_s,
      .energy_j = iv->energy_j,
  };
}

static int on_node(void *ctx, const gp_store_node_interval *iv) {
  scan *sc = ctx;
  sc->n++;
  if (!sc->lr) return 0;
  gp_ledger_node_iv n = gp__srv_ledger_node_iv(iv, sc->now);
  if (n.end > n.start) gp_ledger_report_add_node(sc->lr, &n);
  return 0;
}

static int on_job(void *ctx, const gp_store_interval *iv) {
  scan *sc = ctx;
  sc->n++;
  if (!sc->lr || (sc->job && iv->job_id != sc->job)) return 0;
  gp_ledger_job_iv j = gp__srv_ledger_job_iv(iv, sc->now);
  if (j.end > j.start) gp_ledger_report_add_job(sc->lr, &j);
  return 0;
}

int gp_report_feed(gp_store_reader *r, gp_ledger_report *lr, int64_t from, int64_t to, int64_t now,
                   const char *user, bool nodes, int64_t job, long *ret_read, gp_err *err) {
  scan sc = {.lr = lr, .now = now, .job = job};
  int rc = nodes ? gp_store_reader_node_intervals(r, from, to, on_node, &sc, err) : 0;
  if (!rc) rc = gp_store_reader_intervals(r, from, to, user, on_job, &sc, err);
  if (ret_read) *ret_read = sc.n;
  return rc;
}

static _Atomic int in_flight;

bool gp__srv_report_slot(int delta, int max_in_flight) {
  if (delta < 0) {
    atomic_fetch_sub(&in_flight, 1);
    return true;
  }
  if (atomic_fetch_add(&in_flight, 1) < max_in_flight) return true;
  atomic_fetch_sub(&in_flight, 1);
  return false;
}

void gp__srv_report_run(gp_srv_req *r) {
  gp_srv_report *rep = r->report;
  r->report = NULL;
  if (!gp__srv_report_slot(+1, rep->max_in_flight)) {
    gp__srv_reply_error(r, 503, "unavailable", NULL,
                        "%d reports are running already; retry in a moment", rep->max_in_flight);
    gp__srv_report_free(rep);
    return;
  }
  const gp_srv_report_query *q = &rep->q;
  bool admin = rep->user == NULL;
  /* Idle, drained and unused rows need the fleet's node intervals; usage and efficiency
   * are the jobs' alone. */
  bool nodes = admin && !q->job && (q->kind == GP_SRV_REPORT_COST || q->kind == GP_SRV_REPORT_IDLE);
  gp_ledger_params p = {
      .from = q->from,
      .to = q->to,
      .group = q->group,
      .step = q->step,
      .share_idle = q->share_idle,
      .prices = rep->prices,
      .n_deserved = rep->n_deserved,
      .deserved_queue = (const char *const *)rep->deserved_queue,
      .deserved_gpus = rep->deserved_gpus,
  };
  gp_err err = {0};
  gp_store_reader *reader = NULL;
  gp_ledger_report *lr = NULL;
  int rc = gp_store_reader_open(rep->store, &reader, &err);
  if (rc) goto fail;
  lr = gp_ledger_report_new(&p);
  /* The daily roll-ups hold neither nodes, jobs nor services: by those, and for one job,
   * the intervals are read raw. */
  if (!q->job && !(q->group & (GP_LG_NODE | GP_LG_JOB | GP_LG_SERVICE)))
    rc = gp_report_feed_days(reader, lr, q->from, q->to, rep->now, rep->user, nodes, NULL, &err);
  else
    rc = gp_report_feed(reader, lr, q->from, q->to, rep->now, rep->user, nodes, q->job, NULL, &err);
  gp_store_reader_close(reader);
  const gp_ledger_row *rows = NULL;
  int n_rows = 0;
  if (!rc) rc = gp_ledger_report_finish(lr, &rows, &n_rows, &err);
  if (rc) goto fail;
  free(r->resp);
  r->resp = gp__srv_report_render(rep, lr, rows, n_rows, admin);
  r->resp_type = q->csv ? "text/csv; charset=utf-8" : "application/json";
  r->status = 200;
  gp_ledger_report_free(lr);
  gp__srv_report_free(rep);
  gp__srv_report_slot(-1, 0);
  return;
fail:
  gp_ledger_report_free(lr);
  gp__srv_report_free(rep);
  gp__srv_report_slot(-1, 0);
  /* A store without a reader (or one that fails to read) cannot answer now. */
  gp__srv_reply_err(r, rc == GP_EINVAL ? GP_EIO : rc, &err);
}
