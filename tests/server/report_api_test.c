/* SPDX-License-Identifier: Apache-2.0 */
/* GET /v1/reports/{kind} and `gpool report` over a real SQLite store whose ledger holds
 * known intervals: the figures, the split by day, the user/admin split (a user sees only
 * their own rows, never the fleet's idle ones), CSV quoting of a user name with a comma and
 * quotes and of names a spreadsheet would run as formulas, each row's period range, the
 * table's word on efficiency over 100%, the cut of a runaway `by=job`, and clear 400s naming the parameter at fault. */
#include <stdio.h>
#include <sys/wait.h>

#include "test.h"
#include "srv_util.h"
#include "server/accounting/report.h"
#include "store/store.h"

#define JAN1 INT64_C(1767225600) /* 2026-01-01T00:00:00Z */
#define H INT64_C(3600)
typedef struct iv {
  int64_t job;
  const char *user, *queue;
  int gpus;
  double share;
  int64_t start, end;
  double used_gpu_s, energy_j; /* the job's totals on the node; < 0 unknown */
} iv;

/* The fleet: node n1, four H100s on demand, up for two days. Smith's name holds a comma
 * and quotes, which CSV must quote (user names come from tokens, which allow both). */
static const iv fixture[] = {
    {1, "alice", "org/a", 2, 1.0, JAN1, JAN1 + 10 * H, 36000, 18e6},
    {2, "bob", "org/b", 1, 0.25, JAN1 + 12 * H, JAN1 + 36 * H, -1, -1},
    {3, "smith, \"jr\"", "default", 1, 1.0, JAN1 + 24 * H, JAN1 + 28 * H, 3600, -1},
};

static void write_interval(gp_store *st, const iv *v) {
  gp_err e = {0};
  for (int g = 0; g < v->gpus; g++) {
    char uuid[64];
    snprintf(uuid, sizeof uuid, "GPU-n1-%d", g);
    gp_store_interval row = {.job_id = v->job, .attempt = 1, .task = 0, .user = v->user,
                             .queue = v->queue, .node = "n1", .gpu_uuid = uuid,
                             .model = "H100-80GB", .capacity = "on-demand", .share = v->share,
                             .start = v->start};
    REQUIRE(gp_store_open_interval(st, &row, &e) == 0);
  }
  if (v->used_gpu_s >= 0 || v->energy_j >= 0)
    REQUIRE(gp_store_set_interval_use(st, v->job, "n1", v->used_gpu_s, v->energy_j, &e) == 0);
  REQUIRE(gp_store_close_intervals(st, v->job, v->end, &e) == 0);
}

/* Writes the ledger (and `more` one-GPU jobs of one hour for alice) into the test's store
 * before its server opens it. */
static void write_ledger(tsrv *t, int more) {
  tsrv_make_dir(t);
  char path[300];
  snprintf(path, sizeof path, "%s/gpool.db", t->dir);
  gp_store *st = NULL;
  gp_err e = {0};
  REQUIRE(gp_store_sqlite_open(path, &st, &e) == 0);
  REQUIRE(gp_store_begin(st, &e) == 0);
  gp_store_node_interval n = {.node = "n1", .model = "H100-80GB", .capacity = "on-demand",
                              .state = "up", .gpus = 4, .start = JAN1};
  REQUIRE(gp_store_open_node_interval(st, &n, &e) == 0);
  REQUIRE(gp_store_close_node_interval(st, "n1", JAN1 + 48 * H, &e) == 0);
  for (size_t i = 0; i < sizeof fixture / sizeof fixture[0]; i++) write_interval(st, &fixture[i]);
  for (int i = 0; i < more; i++) {
    iv v = {100 + i, "alice", "org/a", 1, 1.0, JAN1 + 40 * H, JAN1 + 41 * H, -1, -1};
    write_interval(st, &v);
  }
  REQUIRE(gp_store_commit(st, &e) == 0);
  gp_store_close(st);
}

static void start(tsrv *t, int more) {
  write_ledger(t, more);
  tsrv_start(t);
}

static json_t *rows(const tsrv *t) { return json_object_get(t->last, "rows"); }
static json_t *row(const tsrv *t, size_t i) { return json_array_get(rows(t), i); }
static const char *s_of(json_t *o, const char *k) {
  const char *v = json_string_value(json_object_get(o, k));
  return v ? v : "(null)";
}
static double n_of(json_t *o, const char *k) { return json_number_value(json_object_get(o, k)); }

/* The row of `user` (jobs rows only), or NULL. */
static json_t *user_row(const tsrv *t, const char *user) {
  size_t i;
  json_t *r;
  json_array_foreach(rows(t), i, r) {
    if (strcmp(s_of(r, "kind"), "jobs") == 0 && strcmp(s_of(r, "user"), user) == 0) return r;
  }
  return NULL;
}

#define RANGE "from=2026-01-01&to=2026-01-03"

static void usage_by_user_adds_up_each_users_gpu_hours(void) {
  tsrv t = {0};
  start(&t, 0);
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/reports/usage?by=user&" RANGE, ADMIN, NULL));
  CHECK_EQ_STR("usage", s_of(t.last, "kind"));
  CHECK_EQ_STR("2026-01-01T00:00:00Z", s_of(t.last, "from"));
  CHECK_EQ_STR("2026-01-03T00:00:00Z", s_of(t.last, "to"));
  CHECK_EQ_INT(3, json_array_size(rows(&t)));
  json_t *a = user_row(&t, "alice"), *b = user_row(&t, "bob"), *s = user_row(&t, "smith, \"jr\"");
  REQUIRE(a && b && s);
  CHECK_NEAR(20, n_of(a, "gpu_hours"), 1e-9);      /* 2 GPUs x 10 h */
  CHECK_NEAR(10, n_of(a, "used_gpu_hours"), 1e-9);
  CHECK_NEAR(0.5, n_of(a, "efficiency"), 1e-9);
  CHECK_NEAR(5, n_of(a, "energy_kwh"), 1e-9);       /* 18 MJ */
  CHECK_NEAR(6, n_of(b, "gpu_hours"), 1e-9);        /* a quarter GPU for 24 h */
  CHECK(json_is_null(json_object_get(b, "efficiency"))); /* never measured: unknown, not 0 */
  CHECK(json_is_null(json_object_get(b, "used_gpu_hours")));
  CHECK(json_is_null(json_object_get(b, "energy_kwh")));  /* nor its energy */
  CHECK_NEAR(4, n_of(s, "gpu_hours"), 1e-9);
  CHECK_NEAR(0.25, n_of(s, "efficiency"), 1e-9);
  /* Usage has no money columns. */
  CHECK(!json_object_get(a, "cost"));
  /* A period that holds only part of an interval counts only that part. */
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/reports/usage?by=user&from=2026-01-01T05:00:00Z&to=2026-01-01T07:00:00%2B01:00", ADMIN, NULL));
  a = user_row(&t, "alice");
  REQUIRE(a);
  CHECK_NEAR(2, n_of(a, "gpu_hours"), 1e-9); /* 05:00 to 06:00 UTC on 2 GPUs */
  tsrv_stop(&t);
}

static void a_day_step_splits_an_interval_at_midnight(void) {
  tsrv t = {0};
  start(&t, 0);
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/reports/usage?by=queue&step=day&" RANGE, ADMIN, NULL));
  double b1 = -1, b2 = -1;
  size_t i;
  json_t *r;
  json_array_foreach(rows(&t), i, r) {
    if (strcmp(s_of(r, "queue"), "org/b")) continue;
    if (!strcmp(s_of(r, "period"), "2026-01-01T00:00:00Z")) b1 = n_of(r, "gpu_hours");
    if (!strcmp(s_of(r, "period"), "2026-01-02T00:00:00Z")) b2 = n_of(r, "gpu_hours");
  }
  CHECK_NEAR(3, b1, 1e-9);
  CHECK_NEAR(3, b2, 1e-9);
  tsrv_stop(&t);
}

static void a_user_sees_only_their_own_rows_and_no_idle(void) {
  tsrv t = {0};
  start(&t, 0);
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/reports/cost?by=user&" RANGE, ALICE, NULL));
  CHECK_EQ_INT(1, json_array_size(rows(&t)));
  CHECK_EQ_STR("alice", s_of(row(&t, 0), "user"));
  CHECK_EQ_STR("jobs", s_of(row(&t, 0), "kind"));
  CHECK(!json_object_get(t.last, "fleet_cost"));
  /* Asking for others' rows by grouping changes nothing. */
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/reports/usage?by=queue,job&" RANGE, ALICE, NULL));
  size_t i;
  json_t *r;
  json_array_foreach(rows(&t), i, r) CHECK_EQ_STR("org/a", s_of(r, "queue"));
  CHECK_EQ_INT(1, json_array_size(rows(&t)));
  /* The fleet's idle capacity and its charge-back are an admin's. */
  CHECK_EQ_INT(403, tsrv_req(&t, "GET", "/v1/reports/idle?" RANGE, ALICE, NULL));
  CHECK_EQ_STR("kind", err_field(t.last));
  CHECK_EQ_INT(403, tsrv_req(&t, "GET", "/v1/reports/cost?share_idle=usage&" RANGE, BOB, NULL));
  CHECK_EQ_STR("share_idle", err_field(t.last));
  /* An admin's cost report has the idle capacity as rows of its own: 4 GPUs x 48 h less
   * the 30 GPU-hours the jobs held. */
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/reports/cost?by=user&" RANGE, ADMIN, NULL));
  double idle = 0, jobs = 0;
  json_array_foreach(rows(&t), i, r) {
    if (!strcmp(s_of(r, "kind"), "idle")) idle += n_of(r, "gpu_hours");
    if (!strcmp(s_of(r, "kind"), "jobs")) jobs += n_of(r, "gpu_hours");
  }
  CHECK_NEAR(30, jobs, 1e-9);
  CHECK_NEAR(192 - 30, idle, 1e-9);
  /* Without a price catalogue there is no money to show: null, not 0. */
  CHECK(json_is_null(json_object_get(user_row(&t, "alice"), "cost")));
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/reports/idle?" RANGE, ADMIN, NULL));
  json_array_foreach(rows(&t), i, r) CHECK(strcmp(s_of(r, "kind"), "jobs") != 0);
  tsrv_stop(&t);
}

static void efficiency_lists_the_worst_first(void) {
  tsrv t = {0};
  start(&t, 0);
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/reports/efficiency?by=user&" RANGE, ADMIN, NULL));
  CHECK_EQ_INT(3, json_array_size(rows(&t)));
  CHECK_EQ_STR("smith, \"jr\"", s_of(row(&t, 0), "user"));
  CHECK_EQ_STR("alice", s_of(row(&t, 1), "user"));
  CHECK_EQ_STR("bob", s_of(row(&t, 2), "user")); /* unknown last */
  tsrv_stop(&t);
}

/* GETs `path` as text. */
static long get_text(const tsrv *t, const char *path, const char *token, gp_buf *out) {
  CURL *h = curl_easy_init();
  char url[512], auth[128];
  snprintf(url, sizeof url, "%s%s", t->base, path);
  snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
  struct curl_slist *hdrs = curl_slist_append(NULL, auth);
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, tsrv_write);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, out);
  long code = 0;
  if (curl_easy_perform(h) == CURLE_OK) curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
  curl_slist_free_all(hdrs);
  curl_easy_cleanup(h);
  return code;
}

static void csv_quotes_a_name_with_a_comma_and_quotes(void) {
  tsrv t = {0};
  start(&t, 0);
  gp_buf b;
  gp_buf_init(&b, 0);
  CHECK_EQ_INT(200, get_text(&t, "/v1/reports/usage?by=user&format=csv&" RANGE, ADMIN, &b));
  REQUIRE(b.data);
  static const char head[] =
      "user,period,period_end,kind,gpu_hours,used_gpu_hours,efficiency,energy_kwh\r\n";
  CHECK(strncmp(b.data, head, strlen(head)) == 0);
  CHECK_CONTAINS(b.data, "\r\nalice,2026-01-01T00:00:00Z,2026-01-03T00:00:00Z,jobs,20,10,0.5,5\r\n");
  CHECK_CONTAINS(b.data, "\r\nbob,2026-01-01T00:00:00Z,2026-01-03T00:00:00Z,jobs,6,,,\r\n");
  CHECK_CONTAINS(b.data, "\r\n\"smith, \"\"jr\"\"\",2026-01-01T00:00:00Z,2026-01-03T00:00:00Z,jobs,4,1,0.25,\r\n");
  gp_buf_done(&b);
  /* The CLI writes the same CSV from the JSON answer. */
  const char *bin = getenv("GPOOL_BIN");
  if (bin) {
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "'%s' report usage --by user --from 2026-01-01 --to 2026-01-03 -o csv "
             "--server %s --token %s",
             bin, t.base, ADMIN);
    FILE *p = popen(cmd, "r");
    REQUIRE(p);
    char out[4096] = "";
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    CHECK_EQ_INT(0, pclose(p));
    CHECK_CONTAINS(out, "\r\n\"smith, \"\"jr\"\"\",2026-01-01T00:00:00Z,2026-01-03T00:00:00Z,jobs,4,1,0.25,\r\n");
    /* And a table for people. */
    snprintf(cmd, sizeof cmd,
             "'%s' report efficiency --by user --from 2026-01-01 --to 2026-01-03 "
             "--server %s --token %s",
             bin, t.base, ADMIN);
    p = popen(cmd, "r");
    REQUIRE(p);
    n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    CHECK_EQ_INT(0, pclose(p));
    CHECK_CONTAINS(out, "USER");
    CHECK_CONTAINS(out, "25.0%");
    /* The server's refusal reaches the user with the option named. */
    snprintf(cmd, sizeof cmd,
             "'%s' report usage --by team --server %s --token %s 2>&1", bin, t.base, ADMIN);
    p = popen(cmd, "r");
    REQUIRE(p);
    n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    int rc = pclose(p);
    CHECK(WIFEXITED(rc) && WEXITSTATUS(rc) == 1);
    CHECK_CONTAINS(out, "team");
    CHECK_CONTAINS(out, "by");
  }
  tsrv_stop(&t);
}

static void by_job_over_the_row_limit_is_cut_and_says_so(void) {
  tsrv t = {0};
  start(&t, GP_SRV_REPORT_MAX_ROWS + 5);
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/reports/usage?by=job&" RANGE, ADMIN, NULL));
  CHECK(json_is_true(json_object_get(t.last, "truncated")));
  CHECK_EQ_INT(GP_SRV_REPORT_MAX_ROWS, json_array_size(rows(&t)));
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/reports/usage?by=user&" RANGE, ADMIN, NULL));
  CHECK(json_is_false(json_object_get(t.last, "truncated")));
  json_t *a = user_row(&t, "alice");
  REQUIRE(a);
  CHECK_NEAR(20 + GP_SRV_REPORT_MAX_ROWS + 5, n_of(a, "gpu_hours"), 1e-6);
  tsrv_stop(&t);
}

static void bad_parameters_are_refused_naming_them(void) {
  tsrv t = {0};
  start(&t, 0);
  static const struct {
    const char *path, *field;
  } bad[] = {
      {"/v1/reports/money", "kind"},
      {"/v1/reports/usage?from=2026-13-01", "from"},
      {"/v1/reports/usage?from=2026-02-30", "from"},
      {"/v1/reports/usage?to=yesterday", "to"},
      {"/v1/reports/usage?from=2026-01-01T10:00:00", "from"}, /* no zone */
      {"/v1/reports/usage?from=2026-01-02&to=2026-01-01", "from"},
      {"/v1/reports/usage?from=2026-01-01&to=2026-01-01", "from"},
      {"/v1/reports/usage?from=2020-01-01&to=2026-01-01", "to"},
      {"/v1/reports/usage?by=queue,team", "by"},
      {"/v1/reports/usage?by=queue,,user", "by"},
      {"/v1/reports/usage?step=hour", "step"},
      {"/v1/reports/usage?share_idle=everyone", "share_idle"},
      {"/v1/reports/usage?format=xml", "format"},
      {"/v1/reports/usage?group=queue", "group"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    long code = tsrv_req(&t, "GET", bad[i].path, ADMIN, NULL);
    if (code != 400 || strcmp(err_field(t.last), bad[i].field) != 0)
      fprintf(stderr, "  %s answered %ld naming \"%s\"\n", bad[i].path, code, err_field(t.last));
    CHECK_EQ_INT(400, code);
    CHECK_EQ_STR(bad[i].field, err_field(t.last));
  }
  CHECK_EQ_INT(405, tsrv_req(&t, "POST", "/v1/reports/usage", ADMIN, "{}"));
  CHECK_EQ_INT(401, tsrv_req(&t, "GET", "/v1/reports/usage", NULL, NULL));
  CHECK_EQ_INT(403, tsrv_req(&t, "GET", "/v1/reports/usage", AGENT, NULL));
  /* Unix seconds and the default period: this month up to now. */
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/reports/usage?from=1767225600&to=1767312000", ADMIN, NULL));
  CHECK_EQ_STR("2026-01-02T00:00:00Z", s_of(t.last, "to"));
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/reports/usage", ADMIN, NULL));
  CHECK(strstr(s_of(t.last, "from"), "-01T00:00:00Z") != NULL);
  tsrv_stop(&t);
}

/* A job the server started itself: its interval is open and counts up to now. */
static void a_running_job_counts_up_to_now(void) {
  tsrv t = {0};
  tsrv_start(&t);
  CHECK_EQ_INT(201, tsrv_register(&t, "n1", 4, NULL));
  char *id = tsrv_submit(&t, ALICE, "{\"queue\": \"org/a\", \"command\": [\"train\"], \"gpus\": 2}");
  REQUIRE(id);
  json_t *hb = tsrv_heartbeat(&t, "n1", 0, 3000, NULL);
  REQUIRE(hb);
  json_decref(hb);
  CHECK(tsrv_wait_state(&t, id, "running"));
  usleep(1100 * 1000); /* a whole second held, so the open interval has a length */
  char path[128];
  long long now = (long long)time(NULL);
  snprintf(path, sizeof path, "/v1/reports/usage?by=user,job&from=%lld&to=%lld", now - 3600, now + 3600);
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", path, ALICE, NULL));
  CHECK_EQ_INT(1, json_array_size(rows(&t)));
  CHECK_EQ_STR(id, s_of(row(&t, 0), "job"));
  double h = n_of(row(&t, 0), "gpu_hours");
  CHECK(h >= 2.0 / 3600 && h < 2.0 * 600 / 3600); /* 2 GPUs, at least a second, not ten minutes */
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", path, BOB, NULL));
  CHECK_EQ_INT(0, json_array_size(rows(&t)));
  free(id);
  tsrv_stop(&t);
}

/* Reports hold an HTTP thread while they read: at most half the threads (2 of the default
 * 4) run one at once, and one more is answered 503 at once instead of taking a thread the
 * rest of the API needs. */
static void reports_beyond_half_the_threads_are_turned_away(void) {
  tsrv t = {0};
  start(&t, 0);
  REQUIRE(gp__srv_report_slot(+1, 2));
  REQUIRE(gp__srv_report_slot(+1, 2)); /* two long reports running */
  CHECK_EQ_INT(503, tsrv_req(&t, "GET", "/v1/reports/usage?" RANGE, ADMIN, NULL));
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/queues", ADMIN, NULL)); /* the rest answers */
  gp__srv_report_slot(-1, 0);
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/reports/usage?" RANGE, ADMIN, NULL));
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/reports/usage?" RANGE, ADMIN, NULL)); /* slot given back */
  gp__srv_report_slot(-1, 0);
  tsrv_stop(&t);
}

/* Runs `gpool` with args against t and returns its stdout (static; "" without GPOOL_BIN). */
static const char *cli(const tsrv *t, const char *args) {
  static char out[8192];
  out[0] = '\0';
  const char *bin = getenv("GPOOL_BIN");
  if (!bin) return out;
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "'%s' %s --server %s --token %s", bin, args, t->base, ADMIN);
  FILE *p = popen(cmd, "r");
  REQUIRE(p);
  size_t n = fread(out, 1, sizeof out - 1, p);
  out[n] = '\0';
  CHECK_EQ_INT(0, pclose(p));
  return out;
}

/* A user and a node whose names a spreadsheet would run as formulas (user names come from
 * tokens, node names from agents): the CSV writes them as text behind a single quote,
 * quoted, in the server's answer and in the CLI's. The fraction job kept 0.6 of the GPU
 * busy on a 0.5 share: 120%, which the table explains. */
static void csv_neutralises_formulas_and_over_100_is_explained(void) {
  tsrv t = {0};
  tsrv_make_dir(&t);
  char path[300];
  snprintf(path, sizeof path, "%s/gpool.db", t.dir);
  gp_store *st = NULL;
  gp_err e = {0};
  REQUIRE(gp_store_sqlite_open(path, &st, &e) == 0);
  REQUIRE(gp_store_begin(st, &e) == 0);
  gp_store_node_interval n = {.node = "+n2", .model = "H100-80GB", .capacity = "on-demand",
                              .state = "up", .gpus = 1, .start = JAN1};
  REQUIRE(gp_store_open_node_interval(st, &n, &e) == 0);
  REQUIRE(gp_store_close_node_interval(st, "+n2", JAN1 + 48 * H, &e) == 0);
  gp_store_interval row = {.job_id = 7, .attempt = 1, .user = "=HYPERLINK(\"http://x/\",\"hi\")",
                           .queue = "@q", .node = "+n2", .gpu_uuid = "GPU-n2-0",
                           .model = "H100-80GB", .capacity = "on-demand", .share = 0.5,
                           .start = JAN1};
  REQUIRE(gp_store_open_interval(st, &row, &e) == 0);
  REQUIRE(gp_store_set_interval_use(st, 7, "+n2", 0.6 * 2 * H, -1, &e) == 0);
  REQUIRE(gp_store_close_intervals(st, 7, JAN1 + 2 * H, &e) == 0);
  REQUIRE(gp_store_commit(st, &e) == 0);
  gp_store_close(st);
  tsrv_start(&t);
  static const char want[] =
      "\r\n\"'@q\",\"'=HYPERLINK(\"\"http://x/\"\",\"\"hi\"\")\",\"'+n2\","
      "2026-01-01T00:00:00Z,2026-01-03T00:00:00Z,jobs,1,1.2,1.2,\r\n";
  gp_buf b;
  gp_buf_init(&b, 0);
  CHECK_EQ_INT(200, get_text(&t, "/v1/reports/usage?by=queue,user,node&format=csv&" RANGE, ADMIN, &b));
  REQUIRE(b.data);
  CHECK_CONTAINS(b.data, want);
  gp_buf_done(&b);
  if (getenv("GPOOL_BIN")) {
    CHECK_CONTAINS(cli(&t, "report usage --by queue,user,node --from 2026-01-01 --to 2026-01-03 -o csv"), want);
    const char *table = cli(&t, "report usage --by user --from 2026-01-01 --to 2026-01-03");
    CHECK_CONTAINS(table, "120.0%");
    CHECK_CONTAINS(table, "EFFICIENCY over 100%");
    CHECK_CONTAINS(table, "fraction");
  }
  tsrv_stop(&t);
}

/* By service: two replicas of "chat" (one GPU for 10 h, half a GPU for 4 h), one of "embed"
 * (one GPU for 2 h) and a batch job (one GPU for 3 h) on four H100s at 2.5 an hour: chat
 * 12 GPU-hours and 30, embed 2 and 5, the batch job under "-" 3 and 7.5. The roll-ups hold
 * no service, so the report reads the intervals; the figures match a hand computation. */
static void by_service_sums_each_services_replicas(void) {
  tsrv t = {0};
  tsrv_make_dir(&t);
  char path[300];
  snprintf(path, sizeof path, "%s/gpool.db", t.dir);
  gp_store *st = NULL;
  gp_err e = {0};
  REQUIRE(gp_store_sqlite_open(path, &st, &e) == 0);
  REQUIRE(gp_store_begin(st, &e) == 0);
  gp_store_node_interval n = {.node = "n1", .model = "H100-80GB", .capacity = "on-demand",
                              .state = "up", .gpus = 4, .start = JAN1};
  REQUIRE(gp_store_open_node_interval(st, &n, &e) == 0);
  REQUIRE(gp_store_close_node_interval(st, "n1", JAN1 + 48 * H, &e) == 0);
  static const struct { int64_t job; const char *service; double share; int64_t hours; } rep[] = {
      {1, "chat", 1.0, 10}, {2, "chat", 0.5, 4}, {3, "embed", 1.0, 2}, {4, NULL, 1.0, 3}};
  for (int i = 0; i < 4; i++) {
    gp_store_interval row = {.job_id = rep[i].job, .attempt = 1, .user = "alice",
                             .queue = "org/a", .node = "n1", .gpu_uuid = "GPU-n1-0",
                             .model = "H100-80GB", .capacity = "on-demand", .share = rep[i].share,
                             .start = JAN1 + H, .service = rep[i].service};
    REQUIRE(gp_store_open_interval(st, &row, &e) == 0);
    REQUIRE(gp_store_close_intervals(st, rep[i].job, JAN1 + H + rep[i].hours * H, &e) == 0);
  }
  REQUIRE(gp_store_commit(st, &e) == 0);
  gp_store_close(st);
  tsrv_start(&t);
  CHECK_EQ_INT(200, tsrv_req(&t, "PUT", "/v1/prices", ADMIN,
                             "{\"prices\": {\"currency\": \"EUR\", \"gpu_hour\": [{\"model\": "
                             "\"H100-80GB\", \"capacity\": \"on-demand\", \"price\": 2.5}]}}"));
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/reports/cost?by=service&" RANGE, ADMIN, NULL));
  CHECK_EQ_STR("service", json_string_value(json_array_get(json_object_get(t.last, "by"), 0)));
  CHECK_EQ_STR("service", json_string_value(json_array_get(json_object_get(t.last, "columns"), 0)));
  static const struct { const char *service; double hours, cost; } want[] = {
      {"-", 3, 7.5}, {"chat", 12, 30}, {"embed", 2, 5}};
  for (int i = 0; i < 3; i++) {
    json_t *r = row(&t, (size_t)i);
    REQUIRE(r);
    CHECK_EQ_STR("jobs", s_of(r, "kind"));
    CHECK_EQ_STR(want[i].service, s_of(r, "service"));
    CHECK_NEAR(want[i].hours, n_of(r, "gpu_hours"), 1e-9);
    CHECK_NEAR(want[i].cost, n_of(r, "cost"), 1e-9);
  }
  json_t *idle = row(&t, 3);   /* the fleet's idle GPU-hours carry no service */
  REQUIRE(idle);
  CHECK_EQ_STR("idle", s_of(idle, "kind"));
  CHECK(json_is_null(json_object_get(idle, "service")));
  CHECK_NEAR(4 * 48 - 17, n_of(idle, "gpu_hours"), 1e-9);
  if (getenv("GPOOL_BIN")) {
    const char *table = cli(&t, "report cost --by service --from 2026-01-01 --to 2026-01-03");
    CHECK_CONTAINS(table, "SERVICE");
    CHECK_CONTAINS(table, "chat");
    CHECK_CONTAINS(table, "embed");
    CHECK_CONTAINS(cli(&t, "report cost --by service --from 2026-01-01 --to 2026-01-03 -o csv"),
                   "\r\nchat,2026-01-01T00:00:00Z,2026-01-03T00:00:00Z,jobs,12,");
  }
  tsrv_stop(&t);
}

/* Each row says the range it covers: period (the step's start) and period_end in the API;
 * "start to end" in the table, from the report's own start when the step began before it. */
static void rows_carry_their_periods_range(void) {
  tsrv t = {0};
  start(&t, 0);
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/reports/usage?by=user&" RANGE, ADMIN, NULL));
  json_t *a = user_row(&t, "alice");
  REQUIRE(a);
  CHECK_EQ_STR("2026-01-01T00:00:00Z", s_of(a, "period"));
  CHECK_EQ_STR("2026-01-03T00:00:00Z", s_of(a, "period_end"));
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/reports/usage?by=queue&step=day&from=2026-01-01T12:00:00Z&to=2026-01-02T06:00:00Z", ADMIN, NULL));
  size_t i;
  json_t *r;
  int seen = 0;
  json_array_foreach(rows(&t), i, r) {
    if (strcmp(s_of(r, "queue"), "org/b")) continue;
    if (!strcmp(s_of(r, "period"), "2026-01-01T00:00:00Z")) {
      seen++;
      CHECK_EQ_STR("2026-01-02T00:00:00Z", s_of(r, "period_end"));
    }
    if (!strcmp(s_of(r, "period"), "2026-01-02T00:00:00Z")) {
      seen++;
      CHECK_EQ_STR("2026-01-02T06:00:00Z", s_of(r, "period_end"));
    }
  }
  CHECK_EQ_INT(2, seen);
  if (getenv("GPOOL_BIN")) {
    const char *out = cli(&t, "report usage --by user --from 2026-01-01 --to 2026-01-03");
    CHECK_CONTAINS(out, "PERIOD");
    CHECK_CONTAINS(out, "2026-01-01 to 2026-01-03");
    CHECK(strstr(out, "PERIOD_END") == NULL);
    out = cli(&t, "report usage --by queue --step day --from 2026-01-01T12:00:00Z --to 2026-01-02T06:00:00Z");
    CHECK_CONTAINS(out, "2026-01-01T12:00:00Z to 2026-01-02");
    CHECK_CONTAINS(out, "2026-01-02 to 2026-01-02T06:00:00Z");
  }
  tsrv_stop(&t);
}

GP_TESTS(a_running_job_counts_up_to_now, by_service_sums_each_services_replicas, reports_beyond_half_the_threads_are_turned_away, usage_by_user_adds_up_each_users_gpu_hours, a_day_step_splits_an_interval_at_midnight,
         a_user_sees_only_their_own_rows_and_no_idle, efficiency_lists_the_worst_first,
         csv_quotes_a_name_with_a_comma_and_quotes, by_job_over_the_row_limit_is_cut_and_says_so,
         bad_parameters_are_refused_naming_them, csv_neutralises_formulas_and_over_100_is_explained,
         rows_carry_their_periods_range)
