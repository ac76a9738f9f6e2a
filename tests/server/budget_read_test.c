/* SPDX-License-Identifier: Apache-2.0 */
/* A queue's budget: the config key and the queues API read it alike, every mistake names
 * the key, and periods start at 00:00 UTC (the day, the Monday, the 1st). */
#include "test.h"
#include "server/state/budget.h"
#include "ledger/prices.h"
#include "server/state/config.h"

static gp_err config_fails(const char *text) {
  gp_server_config *c = NULL;
  gp_err e = {0};
  CHECK(gp_server_config_parse("server.yaml", text, strlen(text), &c, &e) != 0);
  gp_server_config_free(c);
  return e;
}

static void a_config_queue_reads_its_budget(void) {
  const char *text =
      "queues:\n"
      "  - {name: a, deserved: 4, budget: {gpu_hours: 500, period: month, action: hold_new}}\n"
      "  - {name: b, deserved: 4}\n"
      "  - name: c\n"
      "    budget: {amount: 1200.5, period: week}\n"
      "prices:\n"
      "  currency: EUR\n"
      "  gpu_hour: [{model: H100-80GB, capacity: on-demand, price: 6.5}]\n";
  gp_server_config *c = NULL;
  gp_err e = {0};
  REQUIRE(gp_server_config_parse("server.yaml", text, strlen(text), &c, &e) == 0);
  CHECK(c->queues[0].budget.set && !c->queues[0].budget.money);
  CHECK_NEAR(500, c->queues[0].budget.limit, 1e-9);
  CHECK_EQ_INT(GP_BUDGET_MONTH, c->queues[0].budget.period);
  CHECK_EQ_INT(GP_BUDGET_HOLD_NEW, c->queues[0].budget.action);
  CHECK(!c->queues[1].budget.set);
  CHECK(c->queues[2].budget.set && c->queues[2].budget.money);
  CHECK_EQ_INT(GP_BUDGET_WEEK, c->queues[2].budget.period);
  CHECK_EQ_INT(GP_BUDGET_NONE, c->queues[2].budget.action);
  REQUIRE(c->prices != NULL);
  CHECK_EQ_STR("EUR", c->prices->currency);
  gp_server_config_free(c);
}

static void a_bad_budget_names_its_key(void) {
  gp_err e = config_fails("queues:\n  - {name: a, budget: {gpu_hours: 5, amount: 3, period: day}}\n");
  CHECK_EQ_STR("queues[0].budget", e.field);
  CHECK_EQ_INT(2, e.line);
  e = config_fails("queues:\n  - {name: a, budget: {gpu_hours: 5, period: year}}\n");
  CHECK_EQ_STR("queues[0].budget.period", e.field);
  CHECK_CONTAINS(e.message, "day, week or month");
  e = config_fails("queues:\n  - {name: a, budget: {gpu_hours: -1, period: day}}\n");
  CHECK_EQ_STR("queues[0].budget.gpu_hours", e.field);
  e = config_fails("queues:\n  - {name: a, budget: {gpu_hours: 1, period: day, action: kill}}\n");
  CHECK_EQ_STR("queues[0].budget.action", e.field);
  e = config_fails("queues:\n  - {name: a, budget: {gpu_hours: 1, period: day, colour: red}}\n");
  CHECK_CONTAINS(e.field, "colour");
  e = config_fails("queues:\n  - {name: a, budget: {gpu_hours: 1}}\n");
  CHECK_EQ_STR("queues[0].budget.period", e.field);
  /* Money needs a catalogue to be measured in. */
  e = config_fails("queues:\n  - {name: a, budget: {amount: 100, period: day}}\n");
  CHECK_EQ_STR("queues[0].budget.amount", e.field);
  CHECK_CONTAINS(e.message, "prices");
  e = config_fails("prices: {gpu_hour: [{model: H100-80GB, capacity: cheap, price: 1}]}\n");
  CHECK_EQ_STR("prices.gpu_hour[0].capacity", e.field);
}

static void the_api_form_reads_the_same(void) {
  gp_budget b = {0};
  gp_err e = {0};
  json_t *v = json_loads("{\"amount\": 99.5, \"period\": \"day\", \"action\": \"demote\"}", 0, NULL);
  REQUIRE(gp_budget_from_json(v, "budget", &b, &e) == 0);
  CHECK(b.set && b.money);
  CHECK_EQ_INT(GP_BUDGET_DEMOTE, b.action);
  json_t *out = gp_budget_to_json(&b);
  CHECK_NEAR(99.5, json_number_value(json_object_get(out, "amount")), 1e-9);
  CHECK_EQ_STR("demote", json_string_value(json_object_get(out, "action")));
  json_decref(out);
  json_decref(v);
  v = json_loads("{\"gpu_hours\": \"lots\", \"period\": \"day\"}", 0, NULL);
  CHECK(gp_budget_from_json(v, "budget", &b, &e) != 0);
  CHECK_EQ_STR("budget.gpu_hours", e.field);
  CHECK_EQ_STR("", e.file);
  json_decref(v);
  v = json_string("500");
  CHECK(gp_budget_from_json(v, "budget", &b, &e) != 0);
  CHECK_EQ_STR("budget", e.field);
  json_decref(v);
  CHECK(gp_budget_from_json(json_null(), "budget", &b, &e) == 0);
  CHECK(!b.set);
}

static void periods_start_at_midnight_utc(void) {
  int64_t at = 1780000000; /* 2026-05-28 (a Thursday) 20:26:40 UTC */
  CHECK_EQ_INT(1779926400, gp_budget_period_start(GP_BUDGET_DAY, at));   /* 2026-05-28 */
  CHECK_EQ_INT(1780012800, gp_budget_period_end(GP_BUDGET_DAY, at));
  CHECK_EQ_INT(1779667200, gp_budget_period_start(GP_BUDGET_WEEK, at));  /* Mon 2026-05-25 */
  CHECK_EQ_INT(1780272000, gp_budget_period_end(GP_BUDGET_WEEK, at));    /* Mon 2026-06-01 */
  CHECK_EQ_INT(1777593600, gp_budget_period_start(GP_BUDGET_MONTH, at)); /* 2026-05-01 */
  CHECK_EQ_INT(1780272000, gp_budget_period_end(GP_BUDGET_MONTH, at));   /* 2026-06-01 */
  /* December rolls over into the next year. */
  CHECK_EQ_INT(1798761600, gp_budget_period_end(GP_BUDGET_MONTH, 1797000000)); /* 2027-01-01 */
  /* The first second of a period is in it. */
  CHECK_EQ_INT(1779667200, gp_budget_period_start(GP_BUDGET_WEEK, 1779667200));
}

GP_TESTS(a_config_queue_reads_its_budget, a_bad_budget_names_its_key, the_api_form_reads_the_same,
         periods_start_at_midnight_utc)
