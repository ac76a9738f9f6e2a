/* SPDX-License-Identifier: Apache-2.0 */
/* The capped buffer grows, formats, and stops at its cap instead of growing forever. */
#include "test.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/mem.h"

static void buf_formats_and_grows(void) {
  gp_buf b;
  gp_buf_init(&b, 0);
  for (int i = 0; i < 1000; i++) gp_buf_printf(&b, "%d,", i);
  CHECK(!gp_buf_truncated(&b));
  CHECK(b.len > 3000);
  CHECK(strncmp(b.data, "0,1,2,", 6) == 0);
  gp_buf_done(&b);
}

static void buf_stops_at_its_cap(void) {
  gp_buf b;
  gp_buf_init(&b, 16);
  gp_buf_puts(&b, "0123456789");
  gp_buf_puts(&b, "0123456789");
  CHECK(gp_buf_truncated(&b));
  CHECK_EQ_STR("0123456789", b.data);
  gp_buf_done(&b);
}

static void arena_strings_survive_until_free(void) {
  gp_arena *a = gp_arena_new();
  char *s = gp_arena_printf(a, "job-%d", 42);
  for (int i = 0; i < 10000; i++) gp_arena_alloc(a, 100);
  CHECK_EQ_STR("job-42", s);
  gp_arena_free(a);
}

static void error_format_names_file_line_and_field(void) {
  gp_err e = {0};
  CHECK_EQ_INT(GP_EINVAL, gp_err_set(&e, GP_EINVAL, "c.yaml", 7, "jobs[0].gpus", "must be >= 0"));
  char out[256];
  gp_err_format(&e, out, sizeof out);
  CHECK_EQ_STR("c.yaml:7: jobs[0].gpus: must be >= 0", out);
}

GP_TESTS(buf_formats_and_grows, buf_stops_at_its_cap, arena_strings_survive_until_free,
         error_format_names_file_line_and_field)
