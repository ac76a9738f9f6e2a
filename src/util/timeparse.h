/* SPDX-License-Identifier: Apache-2.0 */
/* Points in time as users write them: Unix seconds ("1767225600"), a date ("2026-01-01",
 * 00:00 UTC) or RFC 3339 ("2026-01-01T12:00:00Z", "2026-01-01T12:00:00.5+02:00"). */
#ifndef GP_UTIL_TIMEPARSE_H
#define GP_UTIL_TIMEPARSE_H

#include <stdbool.h>
#include <stdint.h>

/* Unix seconds (UTC) in *ret; false (and *ret untouched) when `s` is none of the forms,
 * or a field is out of range (month 13, day 31 of a 30-day month, hour 24, ...). Fractions
 * of a second are dropped. */
bool gp_parse_time(const char *s, int64_t *ret);

#endif
