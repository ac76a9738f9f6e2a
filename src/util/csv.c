/* SPDX-License-Identifier: Apache-2.0 */
/* RFC 4180 fields with formulas neutralised (csv.h). */
#include "util/csv.h"

#include <string.h>

bool gp_csv_is_formula(const char *s) {
  if (!s || !*s) return false;
  if (strchr("=+-@\t\r", s[0])) return true;
  /* Full-width = + - @ (U+FF1D, U+FF0B, U+FF0D, U+FF20), which some spreadsheets fold to
   * their ASCII forms before deciding. */
  const unsigned char *u = (const unsigned char *)s;
  return u[0] == 0xEF && u[1] == 0xBC &&
         (u[2] == 0x9D || u[2] == 0x8B || u[2] == 0x8D || u[2] == 0xA0);
}

void gp_csv_field(gp_buf *b, const char *s) {
  if (!s) return;
  bool formula = gp_csv_is_formula(s);
  /* A semicolon or a tab separates cells in some locales' spreadsheets: quoted, they
   * cannot start a cell of their own. */
  if (!formula && !s[strcspn(s, ",;\"\t\r\n")]) {
    gp_buf_puts(b, s);
    return;
  }
  gp_buf_append(b, formula ? "\"'" : "\"", formula ? 2 : 1);
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
