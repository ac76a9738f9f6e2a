/* SPDX-License-Identifier: Apache-2.0 */
/* The capped growable buffer declared in buf.h. */
#include "util/buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/mem.h"

#define GP_BUF_DEFAULT_MAX ((size_t)64 << 20)

void gp_buf_init(gp_buf *b, size_t max) {
  memset(b, 0, sizeof *b);
  b->max = max ? max : GP_BUF_DEFAULT_MAX;
}

void gp_buf_done(gp_buf *b) {
  free(b->data);
  b->data = NULL;
  b->len = b->cap = 0;
}

void gp_buf_reset(gp_buf *b) {
  b->len = 0;
  b->truncated = false;
  if (b->data) b->data[0] = '\0';
}

static bool reserve(gp_buf *b, size_t extra) {
  size_t max = b->max ? b->max : GP_BUF_DEFAULT_MAX;
  if (b->len + extra + 1 > max) {
    b->truncated = true;
    return false;
  }
  if (b->len + extra + 1 > b->cap) {
    size_t c = b->cap ? b->cap : 256;
    while (c < b->len + extra + 1) c *= 2;
    if (c > max) c = max;
    b->data = gp_xrealloc(b->data, c);
    b->cap = c;
  }
  return true;
}

void gp_buf_append(gp_buf *b, const char *s, size_t n) {
  if (b->truncated || !reserve(b, n)) return;
  memcpy(b->data + b->len, s, n);
  b->len += n;
  b->data[b->len] = '\0';
}

void gp_buf_puts(gp_buf *b, const char *s) { gp_buf_append(b, s, strlen(s)); }

void gp_buf_printf(gp_buf *b, const char *fmt, ...) {
  if (b->truncated) return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0 || !reserve(b, (size_t)n)) return;
  va_start(ap, fmt);
  vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
}

char *gp_buf_steal(gp_buf *b) {
  char *s = b->data ? b->data : gp_xstrdup("");
  b->data = NULL;
  b->len = b->cap = 0;
  return s;
}
