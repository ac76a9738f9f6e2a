/* SPDX-License-Identifier: Apache-2.0 */
/* Advice on an HTTP thread (advice.h): a store reader of its own streams the period's node
 * intervals (an admin's: the fleet's band), the job intervals and the ended jobs' documents
 * into the advice engine, then the answer is written. It shares the reports' limit on heavy
 * reads at once (gp__srv_report_slot). */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "server/accounting/advice.h"
#include "server/accounting/report.h"
#include "server/accounting/ledger_feed.h"
#include "util/mem.h"

typedef struct scan {
  gp_advice *a;
  int64_t now;
} scan;

static int on_node(void *ctx, const gp_store_node_interval *iv) {
  scan *sc = ctx;
  gp_ledger_node_iv n = gp__srv_ledger_node_iv(iv, sc->now);
  if (n.end > n.start) gp_advice_add_node(sc->a, &n);
  return 0;
}

static int on_interval(void *ctx, const gp_store_interval *iv) {
  scan *sc = ctx;
  gp_ledger_job_iv j = gp__srv_ledger_job_iv(iv, sc->now);
  if (j.end > j.start) gp_advice_add_interval(sc->a, &j);
  return 0;
}

/* A number as an int64 (0 when absent or not a number). */
static int64_t int_of(const json_t *o, const char *key) {
  const json_t *v = json_object_get(o, key);
  return json_is_number(v) ? (int64_t)json_number_value(v) : 0;
}

bool gp__srv_advice_run_of(const json_t *doc, const char *user, const char *queue, int64_t id,
                           gp_advice_run *ret) {
  if (!json_is_object(doc)) return false;
  gp_advice_run r = {.job = id, .user = user, .queue = queue, .peak_mem_mib = -1,
                     .avg_sm_util_pct = -1};
  r.name = json_string_value(json_object_get(doc, "name"));
  r.mig = json_string_value(json_object_get(doc, "mig"));
  r.tasks = (int)int_of(doc, "tasks");
  r.gpus = (int)int_of(doc, "gpus");
  const json_t *frac = json_object_get(doc, "gpu_fraction");
  double f = json_is_number(frac) ? json_number_value(frac) : 0;
  r.gpu_milli = f > 0 && f < 1 ? (int)(f * GP_GPU_MILLI + 0.5) : 0;
  r.requeue = json_is_true(json_object_get(doc, "requeue"));
  r.last_checkpoint_at = int_of(doc, "last_checkpoint_at");
  r.submitted_at = int_of(doc, "submitted_at");
  r.started_at = int_of(doc, "started_at");
  /* Use figures: absent utilisation (MPS) stays unknown, never an idle 0. */
  const json_t *u = json_object_get(doc, "usage");
  const json_t *peak = json_object_get(u, "peak_mem_mib"), *avg = json_object_get(u, "avg_sm_util_pct");
  if (json_is_number(peak) && json_number_value(peak) >= 0)
    r.peak_mem_mib = (int64_t)json_number_value(peak);
  if (json_is_number(avg) && json_number_value(avg) >= 0 && json_number_value(avg) <= 100)
    r.avg_sm_util_pct = json_number_value(avg);
  if (!r.user || !r.queue || r.tasks < 1) return false;
  *ret = r;
  return true;
}

int gp__srv_advice_on_job(void *ctx, const gp_store_job *row, int64_t ended_at) {
  (void)ended_at;
  gp_advice **a = ctx;
  gp_srv_advice_doc_buf b;
  gp_advice_run r;
  if (gp__srv_advice_doc_scan(row->doc, row->user, row->queue, row->id, &b, &r)) {
    gp_advice_add_run(*a, &r);
    return 0;
  }
  json_t *doc = json_loads(row->doc ? row->doc : "", 0, NULL);
  if (gp__srv_advice_run_of(doc, row->user, row->queue, row->id, &r)) gp_advice_add_run(*a, &r);
  json_decref(doc);
  return 0;
}

int gp_advice_feed(gp_store_reader *r, gp_advice *a, const gp_advice_params *p, gp_err *err) {
  scan sc = {.a = a, .now = p->now};
  int rc = p->fleet ? gp_store_reader_node_intervals(r, p->from, p->to, on_node, &sc, err) : 0;
  if (!rc) rc = gp_store_reader_intervals(r, p->from, p->to, p->user, on_interval, &sc, err);
  /* Jobs that ended from the period's start on may have run in it. */
  gp_store_job_filter f = {.from = p->from, .to = p->now + 1, .user = p->user, .queue = p->queue};
  if (!rc) rc = gp_store_reader_jobs(r, &f, 0, 0, INT_MAX, gp__srv_advice_on_job, &sc.a, err);
  return rc;
}

void gp__srv_advice_run(gp_srv_req *r) {
  gp_srv_advice *adv = r->advice;
  r->advice = NULL;
  if (!gp__srv_report_slot(+1, adv->max_in_flight)) {
    gp__srv_reply_error(r, 503, "unavailable", NULL,
                        "%d reports are running already; retry in a moment", adv->max_in_flight);
    gp__srv_advice_free(adv);
    return;
  }
  const gp_advice_params *p = &adv->p;
  gp_err err = {0};
  gp_store_reader *reader = NULL;
  gp_advice *a = gp_advice_new(p);
  for (int i = 0; i < adv->n_idle; i++) gp_advice_add_idle(a, &adv->idle[i]);
  int rc = gp_store_reader_open(adv->store, &reader, &err);
  if (!rc) rc = gp_advice_feed_days(reader, a, p, NULL, &err);
  gp_store_reader_close(reader);
  const gp_advice_item *items = NULL;
  int n = 0;
  bool truncated = false;
  if (!rc) rc = gp_advice_finish(a, &items, &n, &truncated, &err);
  if (!rc) {
    free(r->resp);
    r->resp = gp__srv_advice_render(adv, items, n, truncated);
    r->resp_type = "application/json";
    r->status = 200;
  } else {
    /* A store without a reader (or one that fails to read) cannot answer now. */
    gp__srv_reply_err(r, rc == GP_EINVAL && !err.field[0] ? GP_EIO : rc, &err);
  }
  gp_advice_free(a);
  gp__srv_advice_free(adv);
  gp__srv_report_slot(-1, 0);
}
