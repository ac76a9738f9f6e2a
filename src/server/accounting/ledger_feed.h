/* SPDX-License-Identifier: Apache-2.0 */
/* Reports and advice read from the store's ledger: a report's or advice's period streamed
 * into the ledger module's builders, from the raw intervals or from the daily roll-ups, and
 * a report as CSV. The API's readers run them on HTTP threads; `gpool report`, the
 * benchmarks and the tests call them directly (server.h hands them on). */
#ifndef GP_SERVER_LEDGER_FEED_H
#define GP_SERVER_LEDGER_FEED_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "ledger/advice.h"
#include "ledger/report.h"
#include "store/store.h"
#include "util/error.h"

/* A report answer (GET /v1/reports/{kind}, JSON) as RFC 4180 CSV: a header row of its
 * `columns`, then one line per row (CR LF; null an empty field; numbers unformatted). The
 * server answers format=csv with it and `gpool report -o csv` prints it. Caller frees. */
char *gp_report_csv(const json_t *doc);

/* Streams a report's period out of the ledger into `lr` (NULL: only counts): the fleet's
 * node intervals first when `nodes`, then the job intervals (`user` non-NULL: only that
 * user's; `job` > 0: only that job's), open ones ending at `now`. The count of intervals
 * read goes to *ret_read (may be NULL). Returns 0 or the reader's GP_E*. GET /v1/reports
 * runs it on an HTTP thread when the roll-ups cannot answer (by node or job, one job). */
int gp_report_feed(gp_store_reader *r, gp_ledger_report *lr, int64_t from, int64_t to, int64_t now,
                   const char *user, bool nodes, int64_t job, long *ret_read, gp_err *err);

/* The same report made from the ledger's daily roll-ups (report_days.c; docs/accounting.md,
 * "Roll-ups"): the whole days of the period from their sums, the partial days at its edges
 * and days with a price change inside them from their closed intervals, and the open
 * intervals raw, all in one snapshot of the store. `lr` must not group by node or job (the
 * sums hold neither); rows match gp_report_feed's to the cent. *ret_read counts the rows
 * read (day sums and intervals). */
int gp_report_feed_days(gp_store_reader *r, gp_ledger_report *lr, int64_t from, int64_t to,
                        int64_t now, const char *user, bool nodes, long *ret_read, gp_err *err);

/* Streams advice's period out of the store into `a`, made with params `p`: the fleet's node
 * intervals when p->fleet, the job intervals (p->user's only when set), then the jobs that
 * ended from p->from on (their documents' request and use figures). Returns 0 or the
 * reader's GP_E*. GET /v1/advice runs it on an HTTP thread. */
int gp_advice_feed(gp_store_reader *r, gp_advice *a, const gp_advice_params *p, gp_err *err);
/* The same from the ledger's daily roll-ups (advice_days.c): each whole UTC day of the period
 * as the jobs' day sums, the other stretches and the open intervals raw, in one snapshot;
 * the same items as gp_advice_feed's. *ret_read (may be NULL) counts the rows read. */
int gp_advice_feed_days(gp_store_reader *r, gp_advice *a, const gp_advice_params *p,
                        long *ret_read, gp_err *err);

#endif
