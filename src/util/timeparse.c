/* SPDX-License-Identifier: Apache-2.0 */
/* Parses points in time (timeparse.h) without the C library's locale and time zone. */
#include "util/timeparse.h"

#include <string.h>

/* Reads exactly n digits. */
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

static bool leap(int y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

/* Days from 1970-01-01 to y-m-d (proleptic Gregorian). */
static int64_t days_from_civil(int y, int m, int d) {
  y -= m <= 2;
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  int64_t yoe = y - era * 400;
  int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

bool gp_parse_time(const char *s, int64_t *ret) {
  if (!s || !*s) return false;
  size_t n = strlen(s);
  if (strspn(s, "0123456789") == n) {
    if (n > 12) return false; /* beyond year 33000 */
    int64_t v = 0;
    for (const char *c = s; *c; c++) v = v * 10 + (*c - '0');
    *ret = v;
    return true;
  }
  const char *p = s;
  int y, mo, d, h = 0, mi = 0, se = 0;
  if (!digits(&p, 4, &y) || *p++ != '-' || !digits(&p, 2, &mo) || *p++ != '-' || !digits(&p, 2, &d))
    return false;
  static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] + (mo == 2 && leap(y))) return false;
  int64_t off = 0;
  if (*p) {
    if (*p != 'T' && *p != 't' && *p != ' ') return false;
    p++;
    if (!digits(&p, 2, &h) || *p++ != ':' || !digits(&p, 2, &mi) || *p++ != ':' || !digits(&p, 2, &se))
      return false;
    if (h > 23 || mi > 59 || se > 60) return false;
    if (*p == '.') {
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
      return false;
    }
    if (*p) return false;
  }
  int64_t t = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se - off;
  if (t < 0) return false;
  *ret = t;
  return true;
}
