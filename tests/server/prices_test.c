/* SPDX-License-Identifier: Apache-2.0 */
/* Prices and budgets on a real server. /v1/prices: anyone reads the catalogue in force;
 * only admins set or reset it; a bad body names the field; the admin's catalogue survives
 * a restart and wins over the config's until it is deleted. The cost rate of a running
 * fraction is its share times the price. Budgets: one alert at 80% and one at 100%, and
 * the hold_new and demote actions on new jobs once spent, undone by the next period. */
#include <unistd.h>

#include "test.h"
#include "srv_util.h"
#include "server/state/budget.h"

static const char *const config_prices =
    "prices:\n"
    "  currency: EUR\n"
    "  gpu_hour:\n"
    "    - {model: H100-80GB, capacity: on-demand, price: 6.88, from: 2026-01-01}\n";

static const json_t *prices_of(const json_t *o) { return json_object_get(o, "prices"); }

static double first_price(const json_t *o) {
  return json_number_value(json_object_get(json_array_get(json_object_get(prices_of(o), "gpu_hour"), 0), "price"));
}

static void admins_set_prices_users_read_them_and_a_restart_keeps_them(void) {
  tsrv t = {0};
  tsrv_start_with(&t, config_prices, NULL);
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/prices", ALICE, NULL));
  CHECK_EQ_STR("config", json_string_value(json_object_get(prices_of(t.last), "source")));
  CHECK_EQ_STR("EUR", json_string_value(json_object_get(prices_of(t.last), "currency")));
  CHECK_NEAR(6.88, first_price(t.last), 1e-9);
  CHECK_EQ_STR("2026-01-01", json_string_value(json_object_get(
      json_array_get(json_object_get(prices_of(t.last), "gpu_hour"), 0), "from")));
  const char *body = "{\"currency\": \"USD\", \"gpu_hour\": [{\"model\": \"*\", \"capacity\": "
                     "\"spot\", \"price\": 2.5}]}";
  CHECK_EQ_INT(403, tsrv_req(&t, "PUT", "/v1/prices", ALICE, body));
  CHECK_EQ_STR("permission_denied", err_code(t.last));
  CHECK_EQ_INT(403, tsrv_req(&t, "DELETE", "/v1/prices", BOB, NULL));
  CHECK_EQ_INT(400, tsrv_req(&t, "PUT", "/v1/prices", ADMIN,
                             "{\"gpu_hour\": [{\"model\": \"A100\", \"capacity\": \"spot\", "
                             "\"price\": 1}, {\"model\": \"A100\", \"capacity\": \"spot\", \"price\": -3}]}"));
  CHECK_EQ_STR("prices.gpu_hour[1].price", err_field(t.last));
  CHECK_EQ_INT(400, tsrv_req(&t, "PUT", "/v1/prices", ADMIN, "{\"gpu_hours\": []}"));
  CHECK_CONTAINS(err_field(t.last), "gpu_hours");
  CHECK_EQ_INT(400, tsrv_req(&t, "PUT", "/v1/prices", ADMIN, "[1, 2]"));
  CHECK_EQ_STR("prices", err_field(t.last));
  /* Nothing bad was kept. */
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/prices", BOB, NULL));
  CHECK_EQ_STR("EUR", json_string_value(json_object_get(prices_of(t.last), "currency")));
  CHECK_EQ_INT(200, tsrv_req(&t, "PUT", "/v1/prices", ADMIN, body));
  CHECK_EQ_STR("admin", json_string_value(json_object_get(prices_of(t.last), "source")));
  t.keep_dir = true;
  tsrv_stop(&t);
  tsrv_start_with(&t, config_prices, NULL); /* same data dir, same config */
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/prices", ALICE, NULL));
  CHECK_EQ_STR("admin", json_string_value(json_object_get(prices_of(t.last), "source")));
  CHECK_EQ_STR("USD", json_string_value(json_object_get(prices_of(t.last), "currency")));
  CHECK_NEAR(2.5, first_price(t.last), 1e-9);
  CHECK_EQ_INT(200, tsrv_req(&t, "DELETE", "/v1/prices", ADMIN, NULL));
  CHECK_EQ_STR("config", json_string_value(json_object_get(prices_of(t.last), "source")));
  t.keep_dir = true;
  tsrv_stop(&t);
  tsrv_start_with(&t, config_prices, NULL);
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/prices", ALICE, NULL));
  CHECK_EQ_STR("EUR", json_string_value(json_object_get(prices_of(t.last), "currency")));
  tsrv_stop(&t);
}

/* What GET /v1/prices answers, PUT takes back as it is (docs/api-reports.md): the same catalogue,
 * now the admin's. Its `source` must be one of GET's; "none" cannot be set. */
static void what_get_answers_put_takes_back(void) {
  tsrv t = {0};
  tsrv_start_with(&t, config_prices, NULL);
  /* The config's catalogue, straight back. */
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/prices", ALICE, NULL));
  char *config_text = json_dumps(t.last, JSON_COMPACT);
  CHECK_EQ_INT(200, tsrv_req(&t, "PUT", "/v1/prices", ADMIN, config_text));
  CHECK_EQ_STR("admin", json_string_value(json_object_get(prices_of(t.last), "source")));
  CHECK_EQ_STR("EUR", json_string_value(json_object_get(prices_of(t.last), "currency")));
  CHECK_NEAR(6.88, first_price(t.last), 1e-9);
  free(config_text);
  /* Every kind of entry, a price without `from` (null in GET's answer) and a commitment
   * from the first day of the calendar, which GET must not write as null. */
  const char *full =
      "{\"currency\": \"USD\", \"gpu_hour\": ["
      "{\"model\": \"*\", \"capacity\": \"spot\", \"price\": 2.5},"
      "{\"model\": \"H100-80GB\", \"capacity\": \"on-demand\", \"price\": 6.875, \"from\": \"2026-01-01\"}],"
      " \"commitments\": [{\"model\": \"H100-80GB\", \"gpus\": 16, \"price\": 4.1, \"from\": \"1970-01-01\","
      " \"to\": \"2027-01-01\"}], \"energy\": [{\"price_per_kwh\": 0.12}, {\"price_per_kwh\": 0.15,"
      " \"from\": \"2026-06-01\"}]}";
  CHECK_EQ_INT(200, tsrv_req(&t, "PUT", "/v1/prices", ADMIN, full));
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/prices", BOB, NULL));
  char *first = json_dumps(t.last, JSON_COMPACT | JSON_SORT_KEYS);
  CHECK_CONTAINS(first, "\"from\":\"1970-01-01\"");
  CHECK_EQ_INT(200, tsrv_req(&t, "PUT", "/v1/prices", ADMIN, first));
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/prices", BOB, NULL));
  char *second = json_dumps(t.last, JSON_COMPACT | JSON_SORT_KEYS);
  CHECK_EQ_STR(first, second);
  /* Unwrapped, as the config file's map, it is read the same. */
  char *inner = json_dumps(prices_of(t.last), JSON_COMPACT);
  CHECK_EQ_INT(200, tsrv_req(&t, "PUT", "/v1/prices", ADMIN, inner));
  free(inner);
  free(first);
  free(second);
  /* `source` is GET's word, nothing else. */
  CHECK_EQ_INT(400, tsrv_req(&t, "PUT", "/v1/prices", ADMIN, "{\"source\": \"mine\", \"currency\": \"USD\"}"));
  CHECK_EQ_STR("prices.source", err_field(t.last));
  CHECK_EQ_INT(400, tsrv_req(&t, "PUT", "/v1/prices", ADMIN, "{\"prices\": {\"source\": \"none\"}}"));
  CHECK_EQ_STR("prices.source", err_field(t.last));
  CHECK_CONTAINS(json_string_value(json_object_get(json_object_get(t.last, "error"), "message")),
                 "DELETE");
  tsrv_stop(&t);
}

static void without_prices_the_catalogue_is_empty(void) {
  tsrv t = {0};
  tsrv_start(&t);
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/prices", ALICE, NULL));
  CHECK_EQ_STR("none", json_string_value(json_object_get(prices_of(t.last), "source")));
  CHECK(json_object_get(prices_of(t.last), "gpu_hour") == NULL);
  CHECK_EQ_INT(405, tsrv_req(&t, "POST", "/v1/prices", ADMIN, "{}"));
  tsrv_stop(&t);
}

/* The value of one sample of /metrics ("name{labels}"), or -1 when absent. */
static double metric(tsrv *t, const char *series) {
  json_t *o = NULL;
  CURL *h = curl_easy_init();
  char url[256];
  snprintf(url, sizeof url, "%s/metrics", t->base);
  gp_buf out;
  gp_buf_init(&out, 0);
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, tsrv_write);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &out);
  curl_easy_perform(h);
  curl_easy_cleanup(h);
  json_decref(o);
  double v = -1;
  size_t len = strlen(series);
  for (const char *p = out.data; p && *p;) {
    if (strncmp(p, series, len) == 0 && p[len] == ' ') {
      v = strtod(p + len + 1, NULL);
      break;
    }
    const char *nl = strchr(p, '\n');
    p = nl ? nl + 1 : NULL;
  }
  gp_buf_done(&out);
  return v;
}

/* Polls a metric until it reaches `at_least` (about 5 s at most). */
static double metric_reaches(tsrv *t, const char *series, double at_least) {
  double v = -1;
  for (int i = 0; i < 250 && !(v >= at_least); i++) {
    v = metric(t, series);
    if (!(v >= at_least)) usleep(20000);
  }
  return v;
}

static long register_shared(tsrv *t, const char *name, int gpus) {
  char body[4096];
  int n = snprintf(body, sizeof body,
                   "{\"node\": {\"name\": \"%s\", \"model\": \"H100-80GB\", \"gpus\": %d, "
                   "\"cpus\": 64, \"mem_mib\": 512000, \"gpu_list\": [", name, gpus);
  for (int g = 0; g < gpus; g++)
    n += snprintf(body + n, sizeof body - (size_t)n,
                  "%s{\"index\": %d, \"uuid\": \"GPU-%s-%d\", \"mem_mib\": 81920, "
                  "\"mode\": \"shared\"}", g ? "," : "", g, name, g);
  snprintf(body + n, sizeof body - (size_t)n, "]}, \"agent_url\": \"http://127.0.0.1:1\", \"jobs\": []}");
  json_t *o = NULL;
  long code = tsrv_agent_call(t, "/v1/agent/register", body, &o);
  json_decref(o);
  return code;
}

static void a_running_fraction_costs_its_share_of_the_price(void) {
  tsrv t = {0};
  tsrv_start_with(&t, "prices:\n  gpu_hour: [{model: h100-80gb, capacity: on-demand, price: 8}]\n", NULL);
  CHECK_EQ_INT(201, register_shared(&t, "n1", 2));
  CHECK_NEAR(0, metric(&t, "gpool_queue_cost_rate_per_hour{queue=\"org/a\"}"), 1e-9);
  char *id = tsrv_submit(&t, ALICE, "{\"queue\": \"org/a\", \"command\": [\"x\"], \"gpu_fraction\": 0.25}");
  REQUIRE(id);
  json_decref(tsrv_heartbeat(&t, "n1", 0, 1000, NULL));
  REQUIRE(tsrv_wait_state(&t, id, "running"));
  CHECK_NEAR(2.0, metric(&t, "gpool_queue_cost_rate_per_hour{queue=\"org/a\"}"), 1e-9);
  CHECK_NEAR(0, metric(&t, "gpool_queue_cost_rate_per_hour{queue=\"org/b\"}"), 1e-9);
  /* The cost so far grows at that rate. */
  CHECK(metric_reaches(&t, "gpool_queue_cost_total{queue=\"org/a\",model=\"H100-80GB\",capacity=\"on-demand\"}", 1e-6) > 0);
  free(id);
  tsrv_stop(&t);
}

/* A queue lab/b for alice with a budget of `gpu_hours` per month and `action`. */
static void budget_queue(tsrv *t, double gpu_hours, const char *action) {
  char body[256];
  snprintf(body, sizeof body, "{\"users\": [\"alice\"], \"budget\": {\"gpu_hours\": %g, "
           "\"period\": \"month\", \"action\": \"%s\"}}", gpu_hours, action);
  CHECK_EQ_INT(201, tsrv_req(t, "PUT", "/v1/queues/lab/b", ADMIN, body));
}

static const char *last_event(tsrv *t, const char *id, const char *event, const char *key) {
  char path[64];
  snprintf(path, sizeof path, "/v1/jobs/%s", id);
  CHECK_EQ_INT(200, tsrv_req(t, "GET", path, ALICE, NULL));
  const json_t *tl = json_object_get(json_object_get(t->last, "job"), "timeline");
  for (size_t i = json_array_size(tl); i-- > 0;) {
    const json_t *e = json_array_get(tl, i);
    if (strcmp(json_string_value(json_object_get(e, "event")), event) == 0) {
      const char *v = json_string_value(json_object_get(e, key));
      return v ? v : "";
    }
  }
  return "";
}

static void a_budget_alerts_once_at_80_and_100_percent_then_holds_new_jobs(void) {
  tsrv t = {0};
  tsrv_start(&t);
  CHECK_EQ_INT(201, tsrv_register(&t, "n1", 4, NULL));
  /* 7.2 GPU-seconds: four GPUs pass 80% after 1.44 s and 100% after 1.8 s. */
  budget_queue(&t, 0.002, "hold_new");
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/queues/lab/b", ALICE, NULL));
  const json_t *q = json_object_get(t.last, "queue");
  CHECK_EQ_STR("hold_new", json_string_value(json_object_get(json_object_get(q, "budget"), "action")));
  char *id = tsrv_submit(&t, ALICE, "{\"queue\": \"lab/b\", \"command\": [\"x\"], \"gpus\": 4}");
  REQUIRE(id);
  json_decref(tsrv_heartbeat(&t, "n1", 0, 1000, NULL));
  REQUIRE(tsrv_wait_state(&t, id, "running"));
  const char *a80 = "gpool_queue_budget_alerts_total{queue=\"lab/b\",threshold=\"80\"}";
  const char *a100 = "gpool_queue_budget_alerts_total{queue=\"lab/b\",threshold=\"100\"}";
  CHECK_NEAR(1, metric_reaches(&t, a100, 1), 1e-9);
  CHECK_NEAR(1, metric(&t, a80), 1e-9);
  CHECK_NEAR(0.002, metric(&t, "gpool_queue_budget{queue=\"lab/b\",unit=\"gpu_hours\"}"), 1e-9);
  CHECK(metric(&t, "gpool_queue_budget_spent{queue=\"lab/b\",unit=\"gpu_hours\"}") >= 0.002);
  CHECK(metric(&t, "gpool_queue_budget_used_ratio{queue=\"lab/b\",unit=\"gpu_hours\"}") >= 1);
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/queues/lab/b", ALICE, NULL));
  q = json_object_get(t.last, "queue");
  CHECK_EQ_STR("gpu_hours", json_string_value(json_object_get(q, "budget_unit")));
  CHECK(json_number_value(json_object_get(q, "budget_used_ratio")) >= 1);
  /* Spent: a new job is accepted, held, and says why. */
  char *next = tsrv_submit(&t, ALICE, "{\"queue\": \"lab/b\", \"command\": [\"x\"], \"gpus\": 1}");
  REQUIRE(next);
  CHECK(tsrv_wait_state(&t, next, "held"));
  CHECK_EQ_STR("budget", last_event(&t, next, "held", "by"));
  CHECK_CONTAINS(last_event(&t, next, "held", "reason"),
                 "queue lab/b spent its monthly budget of 0.002 GPU-hours (");
  CHECK_CONTAINS(last_event(&t, next, "held", "reason"), "held until the period ends or an admin releases it");
  /* Other queues are not held. */
  char *other = tsrv_submit(&t, ALICE, "{\"queue\": \"org/a\", \"command\": [\"x\"], \"gpus\": 1}");
  REQUIRE(other);
  CHECK(tsrv_wait_state(&t, other, "pending") || tsrv_wait_state(&t, other, "running"));
  /* Still one alert each, however long it runs on. */
  usleep(600000);
  CHECK_NEAR(1, metric(&t, a80), 1e-9);
  CHECK_NEAR(1, metric(&t, a100), 1e-9);
  /* The next month releases what the budget held. */
  gp_budget_test_clock_shift(32 * 86400);
  CHECK(tsrv_wait_state(&t, next, "pending") || tsrv_wait_state(&t, next, "running"));
  CHECK_EQ_STR("budget", last_event(&t, next, "released", "by"));
  gp_budget_test_clock_shift(0);
  free(id);
  free(next);
  free(other);
  tsrv_stop(&t);
}

static void a_spent_budget_demotes_new_jobs_to_the_lowest_preemptible_class(void) {
  tsrv t = {0};
  tsrv_start(&t); /* the default classes: training (50) ... opportunistic (0, the lowest) */
  CHECK_EQ_INT(201, tsrv_register(&t, "n1", 4, NULL));
  budget_queue(&t, 0.0002, "demote");
  char *id = tsrv_submit(&t, ALICE, "{\"queue\": \"lab/b\", \"command\": [\"x\"], \"gpus\": 2}");
  REQUIRE(id);
  json_decref(tsrv_heartbeat(&t, "n1", 0, 1000, NULL));
  REQUIRE(tsrv_wait_state(&t, id, "running"));
  CHECK_NEAR(1, metric_reaches(&t, "gpool_queue_budget_alerts_total{queue=\"lab/b\",threshold=\"100\"}", 1), 1e-9);
  char *next = tsrv_submit(&t, ALICE, "{\"queue\": \"lab/b\", \"command\": [\"x\"], \"gpus\": 1, "
                                      "\"priority\": \"training\"}");
  REQUIRE(next);
  CHECK_EQ_STR("opportunistic", last_event(&t, next, "demoted", "to"));
  CHECK_EQ_STR("training", last_event(&t, next, "demoted", "from"));
  CHECK_CONTAINS(last_event(&t, next, "demoted", "reason"), "spent its monthly budget");
  CHECK_EQ_STR("opportunistic", job_str(t.last, "priority"));
  free(id);
  free(next);
  tsrv_stop(&t);
}

GP_TESTS(admins_set_prices_users_read_them_and_a_restart_keeps_them, what_get_answers_put_takes_back,
         without_prices_the_catalogue_is_empty, a_running_fraction_costs_its_share_of_the_price,
         a_budget_alerts_once_at_80_and_100_percent_then_holds_new_jobs,
         a_spent_budget_demotes_new_jobs_to_the_lowest_preemptible_class)
