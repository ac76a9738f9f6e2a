/* SPDX-License-Identifier: Apache-2.0 */
/* The session protocol's messages (src/protocol/session.c): a start is checked field by
 * field (each refusal names its field), resize and signal messages take only what they
 * document. */
#include "protocol/session.h"

#include <signal.h>

#include "test.h"

static int parse(const char *text, gp_proto_session_start *s, gp_err *e) {
  memset(e, 0, sizeof *e);
  return gp_proto_session_start_parse(text, strlen(text), s, e);
}

static void session_start_accepts_each_kind(void) {
  gp_proto_session_start s;
  gp_err e;
  CHECK_EQ_INT(0, parse("{\"kind\":\"exec\",\"command\":[\"bash\",\"-l\"],\"tty\":true,\"cols\":120,\"rows\":40,"
                        "\"term\":\"xterm-256color\",\"end_task\":true}", &s, &e));
  CHECK_EQ_INT(GP_PROTO_SES_EXEC, s.kind);
  CHECK_EQ_INT(2, s.n_argv);
  CHECK_EQ_STR("-l", s.argv[1]);
  CHECK(s.argv[2] == NULL);
  CHECK(s.tty && s.end_task && s.cols == 120 && s.rows == 40);
  CHECK_EQ_STR("xterm-256color", s.term);
  gp_proto_session_start_done(&s);
  CHECK_EQ_INT(0, parse("{\"kind\":\"forward\",\"port\":8888}", &s, &e));
  CHECK(s.kind == GP_PROTO_SES_FORWARD && s.port == 8888 && !s.end_task);
  gp_proto_session_start_done(&s);
  CHECK_EQ_INT(0, parse("{\"kind\":\"attach\"}", &s, &e));
  CHECK_EQ_INT(GP_PROTO_SES_ATTACH, s.kind);
  gp_proto_session_start_done(&s);
}

static void session_start_refuses_naming_the_field(void) {
  static const struct {
    const char *text, *field;
  } bad[] = {
      {"[1]", "start"},
      {"{\"kind\":\"shell\"}", "kind"},
      {"{\"kind\":\"exec\"}", "command"},
      {"{\"kind\":\"exec\",\"command\":[]}", "command"},
      {"{\"kind\":\"exec\",\"command\":[\"\"]}", "command"},
      {"{\"kind\":\"exec\",\"command\":[\"a\\u0000b\"]}", "start"}, /* jansson refuses NUL */
      {"{\"kind\":\"exec\",\"command\":[1]}", "command"},
      {"{\"kind\":\"exec\",\"command\":[\"sh\"],\"tty\":1}", "tty"},
      {"{\"kind\":\"exec\",\"command\":[\"sh\"],\"cols\":0}", "cols"},
      {"{\"kind\":\"exec\",\"command\":[\"sh\"],\"rows\":10001}", "rows"},
      {"{\"kind\":\"exec\",\"command\":[\"sh\"],\"term\":\"x;rm -rf\"}", "term"},
      {"{\"kind\":\"exec\",\"command\":[\"sh\"],\"end_task\":\"yes\"}", "end_task"},
      {"{\"kind\":\"forward\"}", "port"},
      {"{\"kind\":\"forward\",\"port\":65536}", "port"},
      {"{\"kind\":\"forward\",\"port\":0}", "port"},
      {"{\"kind\":\"exec\",\"kind\":\"exec\",\"command\":[\"sh\"]}", "start"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    gp_proto_session_start s;
    gp_err e;
    int rc = parse(bad[i].text, &s, &e);
    if (rc != GP_EINVAL || strcmp(e.field, bad[i].field) != 0)
      GP_FAIL_("%s: expected a refusal naming %s, got %d naming '%s'", bad[i].text, bad[i].field, rc, e.field);
    CHECK(s.argv == NULL);
  }
  /* 257 words, and 61 KiB in words, are over the bounds. */
  char *big = malloc(80000);
  size_t n = (size_t)sprintf(big, "{\"kind\":\"exec\",\"command\":[");
  for (int i = 0; i < 257; i++) n += (size_t)sprintf(big + n, "%s\"w\"", i ? "," : "");
  strcpy(big + n, "]}");
  gp_proto_session_start s;
  gp_err e;
  CHECK_EQ_INT(GP_EINVAL, parse(big, &s, &e));
  n = (size_t)sprintf(big, "{\"kind\":\"exec\",\"command\":[\"");
  memset(big + n, 'x', 62 * 1024);
  n += 62 * 1024;
  strcpy(big + n, "\"]}");
  CHECK_EQ_INT(GP_EINVAL, parse(big, &s, &e));
  CHECK_EQ_STR("command", e.field);
  free(big);
}

static void session_resize_and_signal_messages(void) {
  int c = 0, r = 0;
  CHECK(gp_proto_session_size_parse("{\"cols\":80,\"rows\":24}", 21, &c, &r) && c == 80 && r == 24);
  CHECK(!gp_proto_session_size_parse("{\"cols\":80}", 11, &c, &r));
  CHECK(!gp_proto_session_size_parse("{\"cols\":0,\"rows\":24}", 20, &c, &r));
  CHECK(!gp_proto_session_size_parse("nonsense", 8, &c, &r));
  CHECK_EQ_INT(SIGINT, gp_proto_session_signal_parse("{\"signal\":\"INT\"}", 16));
  CHECK_EQ_INT(SIGTSTP, gp_proto_session_signal_parse("{\"signal\":\"TSTP\"}", 17));
  CHECK_EQ_INT(0, gp_proto_session_signal_parse("{\"signal\":\"SEGV\"}", 17));
  CHECK_EQ_INT(0, gp_proto_session_signal_parse("{\"signal\":9}", 12));
}

/* The status message the agent and the server end a session with: channel 3, then JSON. */
static void session_status_message(void) {
  json_t *o = json_pack("{s:s}", "error", "job 7 ended");
  size_t n = 0;
  uint8_t *m = gp_proto_session_status(o, &n);
  json_decref(o);
  const char *want = "{\"error\":\"job 7 ended\"}";
  REQUIRE(n == strlen(want) + 1);
  CHECK_EQ_INT(GP_PROTO_SES_STATUS, m[0]);
  CHECK(memcmp(m + 1, want, n - 1) == 0);
  free(m);
}

GP_TESTS(session_start_accepts_each_kind, session_start_refuses_naming_the_field, session_resize_and_signal_messages,
         session_status_message)
