/* SPDX-License-Identifier: Apache-2.0 */
/* GET /v1/advice (docs/api-reports.md): where GPU-hours and money go unused, read from the store's
 * ledger and ended jobs by the advice engine (ledger/advice.h). As with reports, the state
 * thread only checks the request and copies out what it needs (the prices by reference; the
 * fleet's models, the queues' deserved GPUs and the running jobs idle now by value) into a
 * gp_srv_advice; an HTTP thread then reads the store and writes the answer, so advice over a
 * year never holds the state thread. */
#ifndef GP_SERVER_ADVICE_H
#define GP_SERVER_ADVICE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "ledger/advice.h"
#include "server/state/server_int.h"
#include "util/error.h"

#define GP_SRV_ADVICE_DEFAULT_S (INT64_C(7) * 86400) /* the period without from: a week */
#define GP_SRV_ADVICE_MAX_SPAN_S (INT64_C(1096) * 86400) /* as a report: three years */

/* A request handed from the state thread to the HTTP thread; owns what it points to except
 * `store`, which outlives every request. */
typedef struct gp_srv_advice {
  gp_advice_params p;         /* its strings and arrays point into the fields below */
  gp_store *store;
  gp_prices *prices;          /* one reference, or NULL */
  bool admin;
  int max_in_flight;          /* shared with reports (gp__srv_report_slot) */
  char *queue, *user, *name;
  gp_advice_model *models;    /* names owned */
  gp_advice_queue *queues;    /* names owned */
  gp_advice_idle *idle;       /* strings owned */
  int n_idle;
} gp_srv_advice;

/* advice_route.c, on the state thread: answers errors at once (400 naming the parameter,
 * 403 for another user's advice), or leaves r->advice set for the HTTP thread. */
void gp__srv_advice_route(gp_srv_state *s, gp_srv_req *r, int64_t now);
/* Reads the query (an object of strings) into p: from, to, queue, user, name, headroom,
 * checkpoint. Returns 0 or GP_EINVAL naming the parameter. */
int gp__srv_advice_query(const json_t *query, int64_t now, gp_advice_params *p, gp_err *err);

/* advice_run.c, on an HTTP thread: runs r->advice, sets r's answer and frees the request. */
void gp__srv_advice_run(gp_srv_req *r);
void gp__srv_advice_free(gp_srv_advice *adv); /* accepts NULL */

/* advice_doc.c, advice_run.c: an ended job's stored document (its row's id, user and
 * queue beside it) as a run. The scan allocates nothing; its strings point into `b`. False
 * when the scan cannot read the document plainly: gp__srv_advice_run_of (jansson, strings
 * borrowed from `doc`) reads it then, with the same result. */
typedef struct gp_srv_advice_doc_buf { char name[260], mig[40]; } gp_srv_advice_doc_buf;
bool gp__srv_advice_doc_scan(const char *doc, const char *user, const char *queue, int64_t id,
                             gp_srv_advice_doc_buf *b, gp_advice_run *ret);
bool gp__srv_advice_run_of(const json_t *doc, const char *user, const char *queue, int64_t id,
                           gp_advice_run *ret);

/* advice_out.c: the answer's JSON (malloc'd). */
char *gp__srv_advice_render(const gp_srv_advice *adv, const gp_advice_item *items, int n,
                            bool truncated);

/* advice_run.c: an ended job's document into advice (ctx: the gp_advice **), for
 * gp_store_reader_jobs. */
int gp__srv_advice_on_job(void *ctx, const gp_store_job *row, int64_t ended_at);

#endif
