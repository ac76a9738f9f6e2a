/* SPDX-License-Identifier: Apache-2.0 */
/* Heavy reads (src/server/front/readers.c) never starve the agent protocol: many clients paging
 * through a large job history at once, while a node heartbeats over real sockets, leave
 * the heartbeats prompt and the node up; reads past the cap are answered 503 with
 * Retry-After at once instead of queueing on the HTTP threads. */
#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <strings.h>

#include "test.h"
#include "srv_util.h"

enum { ENDED = 20000, READERS = 24, RUN_MS = 5000 };

/* Fills the store with ENDED copies of one ended job the server wrote (as
 * bench/ended_jobs_memory.sh does), straight into the SQLite file. */
static void fill_history(const char *dir, const char *id) {
  char path[400], *sql = NULL;
  REQUIRE(snprintf(path, sizeof path, "%s/gpool.db", dir) < (int)sizeof path);
  sqlite3 *db = NULL;
  REQUIRE(sqlite3_open(path, &db) == SQLITE_OK);
  REQUIRE(asprintf(&sql,
                   "BEGIN;"
                   "CREATE TEMP TABLE tmpl AS SELECT doc, state, queue, user FROM jobs WHERE id = %s;"
                   "CREATE TEMP TABLE tev AS SELECT event, doc, seq FROM job_events WHERE job_id = %s;"
                   "DELETE FROM job_events; DELETE FROM jobs;"
                   "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < %d)"
                   " INSERT INTO jobs(id, state, queue, user, submitted_at, doc)"
                   " SELECT i, t.state, t.queue, t.user, 1700000000 + i,"
                   "  json_set(t.doc, '$.id', CAST(i AS TEXT), '$.name', 'job-' || i,"
                   "           '$.submitted_at', 1700000000 + i, '$.ended_at', 1700000000 + i + 60)"
                   " FROM n, tmpl AS t;"
                   "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < %d)"
                   " INSERT INTO job_events(job_id, at, event, doc)"
                   " SELECT i, 1700000000 + i, e.event, json_set(e.doc, '$.at', 1700000000 + i)"
                   " FROM n, tev AS e ORDER BY i, e.seq;"
                   "INSERT OR REPLACE INTO meta(key, value) VALUES ('next_job_id', %d);"
                   "COMMIT;",
                   id, id, ENDED, ENDED, ENDED + 1) > 0);
  char *msg = NULL;
  if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
    fprintf(stderr, "filling the store: %s\n", msg);
    REQUIRE(0);
  }
  free(sql);
  sqlite3_close(db);
}

typedef struct shared {
  tsrv *t;
  _Atomic bool stop;
  _Atomic int ok, busy, other, retry_after;
  _Atomic int running; /* readers not yet ended */
  int64_t hb_max_ms;
  int hb_n, hb_failed;
} shared;

static size_t header_cb(char *p, size_t size, size_t n, void *ud) {
  if (size * n >= 12 && strncasecmp(p, "Retry-After:", 12) == 0) atomic_fetch_add(&((shared *)ud)->retry_after, 1);
  return size * n;
}

/* One client paging through the whole history as fast as it is answered (a 503 makes it
 * wait 20 ms: more eager than Retry-After asks). */
static void *reader(void *arg) {
  shared *sh = arg;
  char url[128];
  REQUIRE(snprintf(url, sizeof url, "%s/v1/jobs?all=1&limit=10000", sh->t->base) < (int)sizeof url);
  while (!atomic_load(&sh->stop)) {
    CURL *h = curl_easy_init();
    struct curl_slist *hdrs = curl_slist_append(NULL, "Authorization: Bearer " ADMIN);
    gp_buf out;
    gp_buf_init(&out, 0);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 60000L);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, tsrv_write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &out);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, header_cb);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, sh);
    long code = 0;
    if (curl_easy_perform(h) == CURLE_OK) curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    curl_slist_free_all(hdrs);
    curl_easy_cleanup(h);
    gp_buf_done(&out);
    if (code == 200) atomic_fetch_add(&sh->ok, 1);
    else if (code == 503) atomic_fetch_add(&sh->busy, 1), usleep(20 * 1000);
    else atomic_fetch_add(&sh->other, 1);
  }
  atomic_fetch_sub(&sh->running, 1);
  return NULL;
}

static void history_reads_do_not_starve_heartbeats(void) {
  tsrv t = {0};
  tsrv_start(&t); /* node_timeout_s: 2, http_threads: 4 */
  char *id = tsrv_submit(&t, ADMIN, "{\"command\": [\"python\", \"train.py\"], \"hold\": true, \"name\": \"tmpl\"}");
  REQUIRE(id);
  char path[64];
  REQUIRE(snprintf(path, sizeof path, "/v1/jobs/%s/cancel", id) < (int)sizeof path);
  REQUIRE(tsrv_req(&t, "POST", path, ADMIN, NULL) == 200);
  t.keep_dir = true;
  tsrv_stop(&t);
  int64_t t0 = tsrv_now_ms();
  fill_history(t.dir, id);
  free(id);
  tsrv_start(&t);
  printf("  a store of %d ended jobs, made in %lld ms\n", ENDED, (long long)(tsrv_now_ms() - t0));
  int64_t one = tsrv_now_ms();
  REQUIRE(tsrv_req(&t, "GET", "/v1/jobs?all=1&limit=10000", ADMIN, NULL) == 200);
  printf("  one page of 10,000 ended jobs alone: %lld ms\n", (long long)(tsrv_now_ms() - one));
  /* The node registers only now: that page alone may outlast node_timeout_s on a loaded
   * machine, and nothing heartbeats while it is read. */
  REQUIRE(tsrv_register(&t, "n1", 1, NULL) == 201);

  shared sh = {.t = &t, .running = READERS};
  pthread_t th[READERS];
  for (int i = 0; i < READERS; i++) REQUIRE(pthread_create(&th[i], NULL, reader, &sh) == 0);
  /* The node heartbeats as an agent does (every 250 ms here) from the same machine, until
   * the readers have stopped and their last pages are read. */
  long long gen = 0;
  for (int64_t until = tsrv_now_ms() + RUN_MS; atomic_load(&sh.running) > 0;) {
    if (tsrv_now_ms() >= until) atomic_store(&sh.stop, true);
    int64_t h0 = tsrv_now_ms();
    json_t *hb = tsrv_heartbeat(&t, "n1", gen, 0, NULL);
    int64_t took = tsrv_now_ms() - h0;
    if (took > sh.hb_max_ms) sh.hb_max_ms = took;
    sh.hb_n++;
    if (!hb) sh.hb_failed++;
    else gen = (long long)json_integer_value(json_object_get(hb, "gen"));
    json_decref(hb);
    usleep(250 * 1000);
  }
  for (int i = 0; i < READERS; i++) pthread_join(th[i], NULL);
  printf("  %d readers for %d ms: %d pages read, %d answered 503 (%d with Retry-After), %d other; "
         "%d heartbeats, slowest %lld ms, %d failed\n",
         READERS, RUN_MS, sh.ok, sh.busy, sh.retry_after, sh.other, sh.hb_n, (long long)sh.hb_max_ms,
         sh.hb_failed);
  CHECK(sh.ok > 0);
  CHECK(sh.busy > 0);
  CHECK_EQ_INT(sh.busy, sh.retry_after);
  CHECK_EQ_INT(0, sh.other);
  CHECK_EQ_INT(0, sh.hb_failed);
  CHECK(sh.hb_max_ms < 1000); /* node_timeout_s is 2 */
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/nodes/n1", ADMIN, NULL));
  CHECK_EQ_STR("up", json_string_value(json_object_get(json_object_get(t.last, "node"), "state")));
  tsrv_stop(&t);
}

GP_TESTS(history_reads_do_not_starve_heartbeats)
