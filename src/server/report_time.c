/* SPDX-License-Identifier: Apache-2.0 */
/* The times a report's `from` and `to` accept (report.h): RFC 3339, a bare date (00:00
 * UTC) or Unix seconds, and RFC 3339 on the way out. Calendar arithmetic is done on day
 * numbers (days since 1970-01-01, proleptic Gregorian), so no time zone database or
 * process-wide setting (TZ) is involved. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "server/report.h"
#include "util/units.h"

/* Days since 1970-01-01 of a civil date (month 1-12). */
static int64_t days_from_civil(int64_t y, int m, int d) {
  y -= m <= 2;
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  int64_t yoe = y - era * 400;
  int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, int *m, int *d) {
  z += 719468;
  int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  int64_t doe = z - era * 146097;
  int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  int64_t mp = (5 * doy + 2) / 153;
  *d = (int)(doy - (153 * mp + 2) / 5 + 1);
  *m = (int)(mp < 10 ? mp + 3 : mp - 9);
  *y = yoe + era * 400 + (*m <= 2);
}

static int days_in_month(int64_t y, int m) {
  static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  return m == 2 && leap ? 29 : days[m - 1];
}

/* Reads exactly `n` digits at *p, advancing it. */
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

int gp__srv_report_time_parse(const char *s, int64_t *ret) {
  if (!s || !*s || strlen(s) > 40) return GP_EINVAL;
  if (!strchr(s, '-')) { /* Unix seconds */
    int64_t v;
    if (gp_parse_int64(s, &v) || v < 0 || v > GP_SRV_REPORT_TIME_MAX) return GP_EINVAL;
    *ret = v;
    return 0;
  }
  const char *p = s;
  int y, mo, d, h = 0, mi = 0, sec = 0;
  if (!digits(&p, 4, &y) || *p++ != '-' || !digits(&p, 2, &mo) || *p++ != '-' ||
      !digits(&p, 2, &d))
    return GP_EINVAL;
  if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo)) return GP_EINVAL;
  int64_t offset_s = 0;
  if (*p) {
    if (*p != 'T' && *p != 't' && *p != ' ') return GP_EINVAL;
    p++;
    if (!digits(&p, 2, &h) || *p++ != ':' || !digits(&p, 2, &mi) || *p++ != ':' ||
        !digits(&p, 2, &sec))
      return GP_EINVAL;
    /* A leap second (60) is read as the next second's start, as POSIX time has none. */
    if (h > 23 || mi > 59 || sec > 60) return GP_EINVAL;
    if (*p == '.') { /* fractions are dropped: reports count whole seconds */
      p++;
      if (*p < '0' || *p > '9') return GP_EINVAL;
      while (*p >= '0' && *p <= '9') p++;
    }
    if (*p == 'Z' || *p == 'z') {
      p++;
    } else if (*p == '+' || *p == '-') {
      int sign = *p++ == '-' ? -1 : 1, oh, om;
      if (!digits(&p, 2, &oh) || *p++ != ':' || !digits(&p, 2, &om) || oh > 23 || om > 59)
        return GP_EINVAL;
      offset_s = sign * (oh * 3600 + om * 60);
    } else {
      return GP_EINVAL; /* a time without its zone would mean the server's, which is a guess */
    }
    if (*p) return GP_EINVAL;
  }
  int64_t t = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec - offset_s;
  if (t < 0 || t > GP_SRV_REPORT_TIME_MAX) return GP_EINVAL;
  *ret = t;
  return 0;
}

void gp__srv_report_time_fmt(int64_t t, char out[GP_SRV_REPORT_TIME_LEN]) {
  int64_t days = t / 86400, rest = t % 86400;
  if (rest < 0) {
    rest += 86400;
    days--;
  }
  int64_t y;
  int m, d;
  civil_from_days(days, &y, &m, &d);
  snprintf(out, GP_SRV_REPORT_TIME_LEN, "%04lld-%02d-%02dT%02d:%02d:%02dZ", (long long)y, m, d,
           (int)(rest / 3600), (int)(rest / 60 % 60), (int)(rest % 60));
}

int64_t gp__srv_report_month_start(int64_t t) {
  int64_t y;
  int m, d;
  civil_from_days(t / 86400, &y, &m, &d);
  return days_from_civil(y, m, 1) * 86400;
}
