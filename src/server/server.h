/* SPDX-License-Identifier: Apache-2.0 */
/* `gpool server` as a library: an HTTP/JSON API (libmicrohttpd, a thread pool), one state
 * thread that owns the cluster state, commits changes to the store in batches (group
 * commit: many submissions share one fsync, and none is acknowledged before its commit),
 * runs the scheduling core on each batch of events and on a timer, and hands orders to
 * agents' long polls once they are durable. Tests run it in-process on port 0. */
#ifndef GP_SERVER_SERVER_H
#define GP_SERVER_SERVER_H

#include <jansson.h>

#include "ledger/advice.h"
#include "ledger/report.h"
#include "server/config.h"
#include "store/store.h"
#include "util/error.h"

typedef struct gp_server gp_server;

/* Creates a server for `cfg` (borrowed; must outlive the server). `store` is taken over
 * when not NULL (tests pass a fault-injecting one); NULL opens <data_dir>/gpool.db.
 * Loads the stored state. Returns 0 or a GP_E* with details in *err. */
int gp_server_new(const gp_server_config *cfg, gp_store *store, gp_server **ret, gp_err *err);

/* Binds the listen address (port 0: any free port) and starts the threads. */
int gp_server_start(gp_server *srv, gp_err *err);

/* The port it listens on, after gp_server_start. */
int gp_server_port(const gp_server *srv);
/* The port of the agents' own listener (agent_listen), after gp_server_start; 0: none. */
int gp_server_agent_port(const gp_server *srv);

/* The store it uses (borrowed; for tests that inject faults). */
gp_store *gp_server_store(gp_server *srv);

/* Stops accepting, answers what is waiting with 503, joins the threads. */
void gp_server_stop(gp_server *srv);
void gp_server_free(gp_server *srv); /* stops first; accepts NULL */

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
