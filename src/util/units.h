/* SPDX-License-Identifier: Apache-2.0 */
/* Parsers for the quantities users type: memory sizes and durations, Slurm-style. */
#ifndef GP_UTIL_UNITS_H
#define GP_UTIL_UNITS_H

#include <stdint.h>

/* "64G", "64GB", "64Gi", "512M", "1T", "1024" (plain numbers are MiB) -> MiB.
 * Returns 0, or GP_EINVAL for anything else (negative, overflow, junk). */
int gp_parse_mem_mib(const char *s, int64_t *ret_mib);

/* "90" (seconds), "30s", "15m", "4h", "2d", "1h30m", Slurm's "MM:SS", "HH:MM:SS",
 * "D-HH:MM:SS" -> seconds. Returns 0 or GP_EINVAL. */
int gp_parse_duration_s(const char *s, int64_t *ret_s);

/* A strict integer / number: the whole string must parse. Returns 0 or GP_EINVAL. */
int gp_parse_int64(const char *s, int64_t *ret);
int gp_parse_double(const char *s, double *ret);

/* A number read as a real (JSON's 3.0, 1e3) as an integer, truncated toward zero. Returns 0,
 * or GP_EINVAL when it is not finite or outside int64's range, where a cast is undefined. */
int gp_real_to_int64(double v, int64_t *ret);

#endif
