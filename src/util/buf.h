/* SPDX-License-Identifier: Apache-2.0 */
/* A growable text buffer with a hard cap (so a hostile peer cannot make it grow without
 * bound). Once the cap is hit the buffer is marked truncated and further appends are
 * ignored; callers check gp_buf_truncated() before using the result. */
#ifndef GP_UTIL_BUF_H
#define GP_UTIL_BUF_H

#include <stdbool.h>
#include <stddef.h>

typedef struct gp_buf {
  char *data;      /* NUL-terminated; owned */
  size_t len;
  size_t cap;
  size_t max;      /* hard cap in bytes; 0 means 64 MiB */
  bool truncated;
} gp_buf;

void gp_buf_init(gp_buf *b, size_t max);
void gp_buf_done(gp_buf *b);                        /* frees data; accepts a zeroed buf */
void gp_buf_reset(gp_buf *b);                       /* empties, keeps memory */
void gp_buf_append(gp_buf *b, const char *s, size_t n);
void gp_buf_puts(gp_buf *b, const char *s);
void gp_buf_printf(gp_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline bool gp_buf_truncated(const gp_buf *b) { return b->truncated; }
/* Hands the string to the caller (who frees it) and leaves the buffer empty. */
char *gp_buf_steal(gp_buf *b);

#endif
