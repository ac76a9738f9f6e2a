/* SPDX-License-Identifier: Apache-2.0 */
/* CSV fields as RFC 4180 reads them: plain text as it is; a comma, quote, CR or LF quoted
 * with its quotes doubled; NULL an empty field. */
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
  CHECK_EQ_STR("it's; fine", field(&b, "it's; fine"));
  gp_buf_done(&b);
}

GP_TESTS(csv_quotes_only_what_needs_it)
