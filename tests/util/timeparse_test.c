/* SPDX-License-Identifier: Apache-2.0 */
/* Points in time in the three forms users write, and the malformed ones refused. */
#include "test.h"
#include "util/timeparse.h"

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

GP_TESTS(times_in_each_form, malformed_times_refused)
