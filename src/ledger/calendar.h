/* SPDX-License-Identifier: Apache-2.0 */
/* UTC calendar arithmetic for the ledger: dates in prices ("YYYY-MM-DD", 00:00 UTC) and the
 * starts of days, weeks (Monday) and calendar months that reports step by. Times are Unix
 * seconds in [0, GP_LEDGER_TIME_MAX), years 1970 to 9999; no time zone, no clock. */
#ifndef GP_LEDGER_CALENDAR_H
#define GP_LEDGER_CALENDAR_H

#include <stdbool.h>
#include <stdint.h>

#define GP_LEDGER_TIME_MAX INT64_C(253402300800) /* 10000-01-01T00:00:00Z */

/* Days since 1970-01-01 of a proleptic Gregorian date (month 1-12). */
int64_t gp__ledger_days_from_civil(int64_t y, int m, int d);
/* The date of a day number (inverse of the above). */
void gp__ledger_civil_from_days(int64_t days, int64_t *y, int *m, int *d);
/* Parses exactly "YYYY-MM-DD", a real date in 1970..9999, into Unix seconds at 00:00 UTC. */
bool gp__ledger_parse_date(const char *s, int64_t *ret);
/* Start of the day, week (Monday 00:00) or month holding t (t >= 0). */
int64_t gp__ledger_day_start(int64_t t);
int64_t gp__ledger_week_start(int64_t t);
int64_t gp__ledger_month_start(int64_t t);
/* Start of the month after the one holding t. */
int64_t gp__ledger_next_month(int64_t t);

#endif
