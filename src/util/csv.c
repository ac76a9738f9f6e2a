/* SPDX-License-Identifier: Apache-2.0 */
/* RFC 4180 fields (csv.h). */
#include "util/csv.h"

#include <string.h>

void gp_csv_field(gp_buf *b, const char *s) {
  if (!s) return;
  if (!s[strcspn(s, ",\"\r\n")]) {
    gp_buf_puts(b, s);
    return;
  }
  gp_buf_append(b, "\"", 1);
  for (const char *p = s; *p;) {
    const char *q = strchr(p, '"');
    size_t n = q ? (size_t)(q - p) : strlen(p);
    gp_buf_append(b, p, n);
    if (!q) break;
    gp_buf_append(b, "\"\"", 2);
    p = q + 1;
  }
  gp_buf_append(b, "\"", 1);
}
