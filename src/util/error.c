/* SPDX-License-Identifier: Apache-2.0 */
/* Error names and the error-detail helpers declared in error.h. */
#include "util/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *gp_strerror(int code) {
  switch (code) {
  case GP_OK: return "success";
  case GP_EINVAL: return "invalid argument";
  case GP_ENOMEM: return "out of memory";
  case GP_ENOENT: return "not found";
  case GP_EEXIST: return "already exists";
  case GP_EIO: return "input/output error";
  case GP_ELIMIT: return "limit exceeded";
  case GP_EPERM: return "permission denied";
  case GP_ESTATE: return "not allowed in the current state";
  case GP_EPARSE: return "parse error";
  case GP_ETIMEOUT: return "timed out";
  case GP_EUNSUPP: return "not supported";
  default: return "unknown error";
  }
}

int gp_err_set(gp_err *err, int code, const char *file, int line, const char *field,
               const char *fmt, ...) {
  if (!err) return code;
  err->code = code;
  err->line = line;
  snprintf(err->file, sizeof err->file, "%s", file ? file : "");
  snprintf(err->field, sizeof err->field, "%s", field ? field : "");
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err->message, sizeof err->message, fmt, ap);
  va_end(ap);
  return code;
}

void gp_err_format(const gp_err *err, char *buf, unsigned long size) {
  size_t n = 0;
  buf[0] = '\0';
  if (err->file[0]) n += (size_t)snprintf(buf + n, size - n, "%s:", err->file);
  if (err->line && n < size) n += (size_t)snprintf(buf + n, size - n, "%d:", err->line);
  if (n && n < size) n += (size_t)snprintf(buf + n, size - n, " ");
  if (err->field[0] && n < size) n += (size_t)snprintf(buf + n, size - n, "%s: ", err->field);
  if (n < size) snprintf(buf + n, size - n, "%s", err->message[0] ? err->message : gp_strerror(err->code));
}
