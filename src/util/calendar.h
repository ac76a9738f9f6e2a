/* SPDX-License-Identifier: Apache-2.0 */
/* UTC calendar arithmetic and the points in time users write, without the C library's
 * locale, time zone or clock: day numbers, the starts of days, weeks (Monday) and calendar
 * months that reports, budgets and prices step by, and the three ways a time is written
 * (Unix seconds "1767225600", a date "2026-01-01" at 00:00 UTC, RFC 3339
 * "2026-01-01T12:00:00Z" or "...T12:00:00.5+02:00"). Times are Unix seconds in
 * [0, GP_CALENDAR_MAX]: years 1970 to 9999. */
#ifndef GP_UTIL_CALENDAR_H
#define GP_UTIL_CALENDAR_H

#include <stdbool.h>
#include <stdint.h>

#define GP_CALENDAR_MAX INT64_C(253402300799) /* 9999-12-31T23:59:59Z */
#define GP_DAY_S 86400
#define GP_TIME_TEXT_LEN 32                   /* "9999-12-31T23:59:59Z" and the NUL */

/* Days since 1970-01-01 of a proleptic Gregorian date (month 1-12), and back. */
int64_t gp_days_from_civil(int64_t y, int m, int d);
void gp_civil_from_days(int64_t days, int64_t *y, int *m, int *d);
/* Exactly "YYYY-MM-DD", a real date in 1970..9999, as Unix seconds at 00:00 UTC. */
bool gp_parse_date(const char *s, int64_t *ret);
/* Any of the three forms, in [0, GP_CALENDAR_MAX]; false (and *ret untouched) for anything
 * else or a field out of range (month 13, day 31 of a 30-day month, hour 24, a time
 * without its zone). Fractions of a second are dropped; a leap second (:60) reads as the
 * next second. */
bool gp_parse_time(const char *s, int64_t *ret);
/* RFC 3339 in UTC: "2026-01-31T12:00:00Z". */
void gp_format_time(int64_t t, char out[GP_TIME_TEXT_LEN]);
/* Start of the day, week (Monday 00:00) or month holding t (t >= 0), and of the month
 * after the one holding t. */
int64_t gp_day_start(int64_t t);
int64_t gp_week_start(int64_t t);
int64_t gp_month_start(int64_t t);
int64_t gp_next_month(int64_t t);

#endif
