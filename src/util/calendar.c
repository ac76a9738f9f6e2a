/* SPDX-License-Identifier: Apache-2.0 */
/* UTC calendar arithmetic and time parsing (see calendar.h). Day numbers use a year that
 * starts in March, so the leap day is the last day of the year and a month's first day is
 * a linear function of the month (the 153/5 pattern of 31- and 30-day months); 400-year
 * eras repeat exactly. */
#include "util/calendar.h"

#include <stdio.h>
#include <string.h>

#define ERA_DAYS 146097          /* days in 400 Gregorian years */
#define EPOCH_DAYS 719468        /* day number of 1970-01-01 counted from 0000-03-01 */

int64_t gp_days_from_civil(int64_t y, int m, int d) {
  y -= m <= 2;
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  int64_t yoe = y - era * 400;                                  /* [0, 399] */
  int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1; /* [0, 365] */
  int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;          /* [0, 146096] */
  return era * ERA_DAYS + doe - EPOCH_DAYS;
}

void gp_civil_from_days(int64_t days, int64_t *y, int *m, int *d) {
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

/* Reads exactly n digits at *p, advancing it. */
static bool digits(const char **p, int n, int *ret) {
  int v = 0;
  for (int i = 0; i < n; i++) {
    char c = (*p)[i];
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *p += n;
  *ret = v;
  return true;
}

static bool leap(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

/* "YYYY-MM-DD" at *p (advancing it), a real date from 1970 on. */
static bool date_at(const char **p, int *y, int *m, int *d) {
  static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (!digits(p, 4, y) || *(*p)++ != '-' || !digits(p, 2, m) || *(*p)++ != '-' || !digits(p, 2, d))
    return false;
  return *y >= 1970 && *m >= 1 && *m <= 12 && *d >= 1 && *d <= mdays[*m - 1] + (*m == 2 && leap(*y));
}

bool gp_parse_date(const char *s, int64_t *ret) {
  int y, m, d;
  if (!s || strlen(s) != 10 || !date_at(&s, &y, &m, &d)) return false;
  *ret = gp_days_from_civil(y, m, d) * GP_DAY_S;
  return true;
}

bool gp_parse_time(const char *s, int64_t *ret) {
  if (!s || !*s || strlen(s) > 40) return false;
  size_t n = strlen(s);
  if (strspn(s, "0123456789") == n) { /* Unix seconds */
    if (n > 12) return false;
    int64_t v = 0;
    for (const char *c = s; *c; c++) v = v * 10 + (*c - '0');
    if (v > GP_CALENDAR_MAX) return false;
    *ret = v;
    return true;
  }
  const char *p = s;
  int y, mo, d, h = 0, mi = 0, se = 0;
  if (!date_at(&p, &y, &mo, &d)) return false;
  int64_t off = 0;
  if (*p) {
    if (*p != 'T' && *p != 't' && *p != ' ') return false;
    p++;
    if (!digits(&p, 2, &h) || *p++ != ':' || !digits(&p, 2, &mi) || *p++ != ':' || !digits(&p, 2, &se))
      return false;
    if (h > 23 || mi > 59 || se > 60) return false;
    if (*p == '.') { /* fractions are dropped: the ledger counts whole seconds */
      p++;
      if (*p < '0' || *p > '9') return false;
      while (*p >= '0' && *p <= '9') p++;
    }
    if (*p == 'Z' || *p == 'z') {
      p++;
    } else if (*p == '+' || *p == '-') {
      int sign = *p++ == '-' ? -1 : 1, oh, om;
      if (!digits(&p, 2, &oh) || *p++ != ':' || !digits(&p, 2, &om) || oh > 23 || om > 59)
        return false;
      off = sign * (oh * 3600 + om * 60);
    } else {
      return false; /* a time without its zone would mean the server's, which is a guess */
    }
    if (*p) return false;
  }
  int64_t t = gp_days_from_civil(y, mo, d) * GP_DAY_S + h * 3600 + mi * 60 + se - off;
  if (t < 0 || t > GP_CALENDAR_MAX) return false;
  *ret = t;
  return true;
}

void gp_format_time(int64_t t, char out[GP_TIME_TEXT_LEN]) {
  int64_t days = t / GP_DAY_S, rest = t % GP_DAY_S;
  if (rest < 0) {
    rest += GP_DAY_S;
    days--;
  }
  int64_t y;
  int m, d;
  gp_civil_from_days(days, &y, &m, &d);
  snprintf(out, GP_TIME_TEXT_LEN, "%04lld-%02d-%02dT%02d:%02d:%02dZ", (long long)y, m, d,
           (int)(rest / 3600), (int)(rest / 60 % 60), (int)(rest % 60));
}

int64_t gp_day_start(int64_t t) { return t - t % GP_DAY_S; }

int64_t gp_week_start(int64_t t) {
  int64_t days = t / GP_DAY_S;
  int64_t since_monday = (days + 3) % 7; /* 1970-01-01 was a Thursday */
  return (days - since_monday) * GP_DAY_S;
}

int64_t gp_month_start(int64_t t) {
  int64_t y;
  int m, d;
  gp_civil_from_days(t / GP_DAY_S, &y, &m, &d);
  return gp_days_from_civil(y, m, 1) * GP_DAY_S;
}

int64_t gp_next_month(int64_t t) {
  int64_t y;
  int m, d;
  gp_civil_from_days(t / GP_DAY_S, &y, &m, &d);
  return m == 12 ? gp_days_from_civil(y + 1, 1, 1) * GP_DAY_S
                 : gp_days_from_civil(y, m + 1, 1) * GP_DAY_S;
}
