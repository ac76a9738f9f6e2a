/* SPDX-License-Identifier: Apache-2.0 */
/* GET /v1/reports/{kind} (docs/api-reports.md): who used what, and what it cost, read from the
 * store's ledger. The state thread only checks the request and the caller and takes what
 * the report needs from its state (the price catalogue by reference, the queues' deserved
 * GPUs by copy) into a gp_srv_report; the HTTP thread then opens a store reader, streams
 * the intervals through the ledger engine (ledger/report.h) and writes the answer, so a
 * report over a year of history never holds the state thread. */
#ifndef GP_SERVER_REPORT_H
#define GP_SERVER_REPORT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "ledger/report.h"
#include "server/state/server_int.h"
#include "util/buf.h"
#include "util/calendar.h"
#include "util/error.h"

/* The longest period one report covers: three years (with a leap day). */
#define GP_SRV_REPORT_MAX_SPAN_S (INT64_C(1096) * 86400)
/* The most rows one answer holds; more (by job, by node per day) are cut and the answer
 * says `truncated`. */
#define GP_SRV_REPORT_MAX_ROWS 10000

typedef enum gp_srv_report_kind {
  GP_SRV_REPORT_USAGE,
  GP_SRV_REPORT_COST,
  GP_SRV_REPORT_IDLE,
  GP_SRV_REPORT_EFFICIENCY
} gp_srv_report_kind;

/* What the caller asked for, checked. */
typedef struct gp_srv_report_query {
  gp_srv_report_kind kind;
  unsigned group;                 /* gp_ledger_group bits */
  int64_t from, to;               /* [from, to), Unix seconds */
  gp_ledger_step step;
  gp_ledger_share_idle share_idle;
  bool csv;                       /* format=csv */
  int64_t job;                    /* job=ID: that job's intervals only; 0: every job's */
} gp_srv_report_query;

/* A report handed from the state thread to the HTTP thread; owns everything it points to
 * except `store`, which outlives every request. */
typedef struct gp_srv_report {
  gp_srv_report_query q;
  gp_store *store;
  gp_prices *prices;              /* one reference, or NULL: no money columns */
  char *user;                     /* only this user's intervals; NULL: an admin, everything */
  int64_t now;                    /* open intervals end here */
  int max_in_flight;              /* reports that may run at once (gp__srv_report_run) */
  int n_deserved;
  char **deserved_queue;
  double *deserved_gpus;
} gp_srv_report;


/* Reports running on HTTP threads now. A report holds its thread for as long as its period
 * takes to read (a year of a large fleet: most of a second), so at most half the HTTP
 * threads run one; more at once are answered 503 at once, and the other half of the threads
 * stay free for submissions, agents and everything else. `delta` +1 takes a slot (false
 * when none is free: nothing taken), -1 gives it back. */
bool gp__srv_report_slot(int delta, int max_in_flight);

/* report_query.c. Reads the kind (the path's last part) and the query parameters (an
 * object of strings; an unknown one is refused). `admin`: share_idle and the idle kind are
 * an admin's. Returns 0, or GP_EINVAL / GP_EPERM with err naming the field. */
int gp__srv_report_query_parse(const char *kind, const json_t *query, bool admin, int64_t now,
                               gp_srv_report_query *ret, gp_err *err);
const char *gp__srv_report_kind_name(gp_srv_report_kind k);

/* report_route.c, on the state thread: answers errors at once, or leaves r->report set
 * for the HTTP thread. */
void gp__srv_report_route(gp_srv_state *s, gp_srv_req *r, const char *kind, int64_t now);

/* report_run.c, on an HTTP thread: runs r->report, sets r's answer and frees the report. */
void gp__srv_report_run(gp_srv_req *r);
void gp__srv_report_free(gp_srv_report *rep); /* accepts NULL */
/* A capacity name the store holds; one it does not know (a newer server's) counts as
 * on-demand, the list price, rather than failing the whole report or advice. */
gp_capacity gp__srv_ledger_capacity(const char *name);
/* A ledger row as the ledger engine takes it (an open one ends at `now`). */
gp_ledger_node_iv gp__srv_ledger_node_iv(const gp_store_node_interval *iv, int64_t now);
gp_ledger_job_iv gp__srv_ledger_job_iv(const gp_store_interval *iv, int64_t now);

/* report_out.c: the answer of a finished report. Rows past GP_SRV_REPORT_MAX_ROWS are cut.
 * `admin` adds the fleet's cost. Returns the body (JSON or CSV, malloc'd). */
char *gp__srv_report_render(const gp_srv_report *rep, gp_ledger_report *lr,
                            const gp_ledger_row *rows, int n_rows, bool admin);

#endif
