/* SPDX-License-Identifier: Apache-2.0 */
/* Field readers for the protocol's decoders (proto_int.h). Each one either yields a value
 * inside its bounds or an error naming the field, so a decoder reads as a list of fields. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "protocol/proto_int.h"

int gp__proto_bad(gp_err *err, const char *ctx, const char *key, const char *fmt, ...) {
  char field[128], msg[512];
  if (ctx) snprintf(field, sizeof field, "%s.%s", ctx, key);
  else snprintf(field, sizeof field, "%s", key);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return gp_err_set(err, GP_EINVAL, NULL, 0, field, "%s", msg);
}

int gp__proto_str_ref(const json_t *o, const char *ctx, const char *key, size_t max,
                      const char **ret, gp_err *err) {
  const json_t *v = json_object_get(o, key);
  *ret = NULL;
  if (!v || json_is_null(v)) return 0;
  if (!json_is_string(v) || json_string_length(v) > max ||
      strlen(json_string_value(v)) != json_string_length(v))
    return gp__proto_bad(err, ctx, key, "%s must be a string of at most %zu bytes", key, max);
  *ret = json_string_value(v);
  return 0;
}

int gp__proto_str_into(const json_t *o, const char *ctx, const char *key, char *buf, size_t max,
                       bool required, gp_err *err) {
  const char *s;
  int r = gp__proto_str_ref(o, ctx, key, max - 1, &s, err);
  if (r) return r;
  if (!s && required) return gp__proto_bad(err, ctx, key, "%s is missing", key);
  snprintf(buf, max, "%s", s ? s : "");
  return 0;
}

int gp__proto_int(const json_t *o, const char *ctx, const char *key, int64_t min, int64_t max,
                  bool required, int64_t dflt, int64_t *ret, gp_err *err) {
  const json_t *v = json_object_get(o, key);
  if (!v || json_is_null(v)) {
    if (required) return gp__proto_bad(err, ctx, key, "%s is missing", key);
    *ret = dflt;
    return 0;
  }
  if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max)
    return gp__proto_bad(err, ctx, key, "%s must be an integer from %lld to %lld", key,
                         (long long)min, (long long)max);
  *ret = json_integer_value(v);
  return 0;
}

void gp__proto_set_str(json_t *o, const char *key, const char *s) {
  json_object_set_new(o, key, s ? json_string(s) : json_null());
}
