/* SPDX-License-Identifier: Apache-2.0 */
/* Memory-size and duration parsers declared in units.h. */
#include "util/units.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/error.h"

int gp_parse_int64(const char *s, int64_t *ret) {
  if (!s || !*s || isspace((unsigned char)*s)) return GP_EINVAL;
  errno = 0;
  char *end;
  long long v = strtoll(s, &end, 10);
  if (errno || *end) return GP_EINVAL;
  *ret = v;
  return 0;
}

int gp_parse_double(const char *s, double *ret) {
  if (!s || !*s || isspace((unsigned char)*s)) return GP_EINVAL;
  errno = 0;
  char *end;
  double v = strtod(s, &end);
  if (errno || *end || !isfinite(v)) return GP_EINVAL;
  *ret = v;
  return 0;
}

int gp_real_to_int64(double v, int64_t *ret) {
  /* -2^63 is exact as a double; 2^63 is the first value past INT64_MAX. */
  if (!isfinite(v) || v < -9223372036854775808.0 || v >= 9223372036854775808.0) return GP_EINVAL;
  *ret = (int64_t)v;
  return 0;
}

int gp_parse_mem_mib(const char *s, int64_t *ret_mib) {
  if (!s || !isdigit((unsigned char)*s)) return GP_EINVAL;
  errno = 0;
  char *end;
  double v = strtod(s, &end);
  if (errno || v < 0) return GP_EINVAL;
  double mult;
  if (!*end || !strcasecmp(end, "m") || !strcasecmp(end, "mb") || !strcasecmp(end, "mi") ||
      !strcasecmp(end, "mib"))
    mult = 1;
  else if (!strcasecmp(end, "k") || !strcasecmp(end, "kb") || !strcasecmp(end, "ki") ||
           !strcasecmp(end, "kib"))
    mult = 1.0 / 1024;
  else if (!strcasecmp(end, "g") || !strcasecmp(end, "gb") || !strcasecmp(end, "gi") ||
           !strcasecmp(end, "gib"))
    mult = 1024;
  else if (!strcasecmp(end, "t") || !strcasecmp(end, "tb") || !strcasecmp(end, "ti") ||
           !strcasecmp(end, "tib"))
    mult = 1024.0 * 1024;
  else
    return GP_EINVAL;
  double mib = ceil(v * mult);
  if (mib > 9e15) return GP_EINVAL;
  *ret_mib = (int64_t)mib;
  return 0;
}

/* Slurm's colon forms: MM:SS, HH:MM:SS, with an optional "D-" prefix. */
static int parse_colon_duration(const char *s, int64_t *ret) {
  int64_t days = 0;
  const char *dash = strchr(s, '-');
  if (dash) {
    char *end;
    errno = 0;
    days = strtoll(s, &end, 10);
    if (errno || end != dash || days < 0 || days > 1000000) return GP_EINVAL;
    s = dash + 1;
  }
  int64_t parts[3];
  int n = 0;
  while (*s) {
    if (n == 3 || !isdigit((unsigned char)*s)) return GP_EINVAL;
    char *end;
    errno = 0;
    parts[n] = strtoll(s, &end, 10);
    /* Bounded so the arithmetic below cannot overflow: no field is above 10^9. */
    if (errno || parts[n] > 1000000000) return GP_EINVAL;
    n++;
    if (*end == ':') end++;
    else if (*end) return GP_EINVAL;
    s = end;
  }
  if (n == 0) return GP_EINVAL; /* "1-" names days and nothing else */
  int64_t secs;
  if (n == 1) secs = dash ? parts[0] * 3600 : parts[0] * 60;  /* Slurm: "M" or "D-H" */
  else if (n == 2) secs = dash ? parts[0] * 3600 + parts[1] * 60 : parts[0] * 60 + parts[1];
  else secs = parts[0] * 3600 + parts[1] * 60 + parts[2];
  *ret = days * 86400 + secs;
  return 0;
}

int gp_parse_duration_s(const char *s, int64_t *ret_s) {
  if (!s || !isdigit((unsigned char)*s) || strlen(s) > 64) return GP_EINVAL;
  if (strchr(s, ':') || strchr(s, '-')) return parse_colon_duration(s, ret_s);
  int64_t total = 0;
  while (*s) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || v < 0) return GP_EINVAL;
    double unit = 1;
    if (*end) {
      switch (tolower((unsigned char)*end)) {
      case 's': unit = 1; break;
      case 'm': unit = 60; break;
      case 'h': unit = 3600; break;
      case 'd': unit = 86400; break;
      case 'w': unit = 7 * 86400; break;
      default: return GP_EINVAL;
      }
      end++;
      if (unit == 1 && !strncasecmp(end, "ec", 2)) end += 2;
      else if (unit == 60 && !strncasecmp(end, "in", 2)) end += 2;
    } else if (total) {
      return GP_EINVAL; /* "1h30" is ambiguous */
    }
    if (v * unit > 9e15) return GP_EINVAL;
    total += (int64_t)llround(v * unit);
    s = end;
  }
  *ret_s = total;
  return 0;
}
