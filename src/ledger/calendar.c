/* SPDX-License-Identifier: Apache-2.0 */
/* UTC calendar arithmetic (see calendar.h). Day numbers use a year that starts in March, so
 * the leap day is the last day of the year and a month's first day is a linear function of
 * the month (the 153/5 pattern of 31- and 30-day months); 400-year eras repeat exactly. */
#include "ledger/calendar.h"

#include <string.h>

#define DAY_S 86400
#define ERA_DAYS 146097          /* days in 400 Gregorian years */
#define EPOCH_DAYS 719468        /* day number of 1970-01-01 counted from 0000-03-01 */

int64_t gp__ledger_days_from_civil(int64_t y, int m, int d) {
  y -= m <= 2;
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  int64_t yoe = y - era * 400;                               /* [0, 399] */
  int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1; /* [0, 365] */
  int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;       /* [0, 146096] */
  return era * ERA_DAYS + doe - EPOCH_DAYS;
}

void gp__ledger_civil_from_days(int64_t days, int64_t *y, int *m, int *d) {
  days += EPOCH_DAYS;
  int64_t era = (days >= 0 ? days : days - (ERA_DAYS - 1)) / ERA_DAYS;
  int64_t doe = days - era * ERA_DAYS;
  int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  int64_t mp = (5 * doy + 2) / 153;
  *d = (int)(doy - (153 * mp + 2) / 5 + 1);
  *m = (int)(mp < 10 ? mp + 3 : mp - 9);
  *y = yoe + era * 400 + (*m <= 2);
}

static int digits(const char *s, int n) {
  int v = 0;
  for (int i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9') return -1;
    v = v * 10 + (s[i] - '0');
  }
  return v;
}

static bool leap(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

bool gp__ledger_parse_date(const char *s, int64_t *ret) {
  static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (!s || strlen(s) != 10 || s[4] != '-' || s[7] != '-') return false;
  int y = digits(s, 4), m = digits(s + 5, 2), d = digits(s + 8, 2);
  if (y < 1970 || m < 1 || m > 12 || d < 1) return false;
  if (d > mdays[m - 1] + (m == 2 && leap(y))) return false;
  *ret = gp__ledger_days_from_civil(y, m, d) * DAY_S;
  return true;
}

int64_t gp__ledger_day_start(int64_t t) { return t - t % DAY_S; }

int64_t gp__ledger_week_start(int64_t t) {
  int64_t days = t / DAY_S;
  int64_t since_monday = (days + 3) % 7; /* 1970-01-01 was a Thursday */
  return (days - since_monday) * DAY_S;
}

int64_t gp__ledger_month_start(int64_t t) {
  int64_t y;
  int m, d;
  gp__ledger_civil_from_days(t / DAY_S, &y, &m, &d);
  return gp__ledger_days_from_civil(y, m, 1) * DAY_S;
}

int64_t gp__ledger_next_month(int64_t t) {
  int64_t y;
  int m, d;
  gp__ledger_civil_from_days(t / DAY_S, &y, &m, &d);
  return m == 12 ? gp__ledger_days_from_civil(y + 1, 1, 1) * DAY_S
                 : gp__ledger_days_from_civil(y, m + 1, 1) * DAY_S;
}
