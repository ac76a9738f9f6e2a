/* SPDX-License-Identifier: Apache-2.0 */
/* Points in time in the three forms users write, the malformed ones refused, and the
 * day, week and month bounds reports and budgets step by. */
#include "test.h"
#include "util/calendar.h"

static void times_in_each_form(void) {
  int64_t t = 0;
  CHECK(gp_parse_time("1767225600", &t));
  CHECK_EQ_INT(1767225600, t);
  CHECK(gp_parse_time("2026-01-01", &t));
  CHECK_EQ_INT(1767225600, t);
  CHECK(gp_parse_time("2026-01-01T00:00:00Z", &t));
  CHECK_EQ_INT(1767225600, t);
  CHECK(gp_parse_time("2026-01-01T02:30:00.25+02:30", &t));
  CHECK_EQ_INT(1767225600, t);
  CHECK(gp_parse_time("2024-02-29", &t));
  CHECK_EQ_INT(1709164800, t);
  CHECK(gp_parse_time("1970-01-01", &t));
  CHECK_EQ_INT(0, t);
}

static void malformed_times_refused(void) {
  static const char *const bad[] = {"", "-5", "2026-13-01", "2026-02-29", "2026-04-31",
                                    "2026-01-01T24:00:00Z", "2026-01-01T00:00:00",
                                    "2026-01-01T00:00Z", "2026-1-01", "yesterday",
                                    "2026-01-01Z", "1e9", "2026-01-01T00:00:00+0200",
                                    "9999999999999", NULL};
  for (int i = 0; bad[i]; i++) {
    int64_t t = 42;
    CHECK(!gp_parse_time(bad[i], &t));
    CHECK_EQ_INT(42, t);
  }
}

static void bounds_and_text(void) {
  int64_t t = 0;
  REQUIRE(gp_parse_time("2026-12-31T23:59:59Z", &t));
  CHECK_EQ_INT(1798761599 - 86399, gp_day_start(t));
  CHECK_EQ_INT(gp_days_from_civil(2026, 12, 28) * GP_DAY_S, gp_week_start(t)); /* a Monday */
  CHECK_EQ_INT(gp_days_from_civil(2026, 12, 1) * GP_DAY_S, gp_month_start(t));
  CHECK_EQ_INT(gp_days_from_civil(2027, 1, 1) * GP_DAY_S, gp_next_month(t));
  char text[GP_TIME_TEXT_LEN];
  gp_format_time(t, text);
  CHECK_EQ_STR("2026-12-31T23:59:59Z", text);
  CHECK(gp_parse_date("2024-02-29", &t));
  CHECK(!gp_parse_date("2024-02-29T00:00:00Z", &t));
  CHECK(gp_parse_time("9999-12-31T23:59:59Z", &t));
  CHECK_EQ_INT(GP_CALENDAR_MAX, t);
  CHECK(!gp_parse_time("253402300800", &t));
}

GP_TESTS(times_in_each_form, malformed_times_refused, bounds_and_text)
