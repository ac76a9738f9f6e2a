/* SPDX-License-Identifier: Apache-2.0 */
/* The session protocol's messages, parsed and bounded (session.h). */
#include "protocol/session.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/limits.h"
#include "util/mem.h"

static int bad(gp_err *err, const char *field, const char *msg) {
  return gp_err_set(err, GP_EINVAL, NULL, 0, field, "%s", msg);
}

static bool small_int(const json_t *v, int lo, int hi, int *out) {
  if (!v) return true;
  if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi) return false;
  *out = (int)json_integer_value(v);
  return true;
}

int gp_proto_session_start_parse(const void *text, size_t len, gp_proto_session_start *s, gp_err *err) {
  memset(s, 0, sizeof *s);
  json_error_t je;
  json_t *o = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
  int rc = 0;
  if (!json_is_object(o)) {
    json_decref(o);
    return bad(err, "start", "the session's first message must be a JSON object");
  }
  const char *kind = json_string_value(json_object_get(o, "kind"));
  if (kind && strcmp(kind, "exec") == 0) s->kind = GP_PROTO_SES_EXEC;
  else if (kind && strcmp(kind, "forward") == 0) s->kind = GP_PROTO_SES_FORWARD;
  else if (kind && strcmp(kind, "attach") == 0) s->kind = GP_PROTO_SES_ATTACH;
  else rc = bad(err, "kind", "kind must be exec, forward or attach");
  const json_t *cmd = json_object_get(o, "command");
  if (!rc && s->kind == GP_PROTO_SES_EXEC) {
    size_t n = json_array_size(cmd), total = 0;
    if (!json_is_array(cmd) || n < 1 || n > GP_PROTO_SES_MAX_ARGS)
      rc = bad(err, "command", "command must be a list of 1 to 256 words");
    for (size_t i = 0; !rc && i < n; i++) {
      const json_t *w = json_array_get(cmd, i);
      size_t wl = json_string_length(w);
      if (!json_is_string(w) || memchr(json_string_value(w), 0, wl) || (i == 0 && wl == 0))
        rc = bad(err, "command", "each word of command must be text without NUL (the first not empty)");
      total += wl + 1;
    }
    if (!rc && total > 60 * 1024) rc = bad(err, "command", "command must total at most 60 KiB");
    if (!rc) {
      s->argv = gp_xcalloc(n + 1, sizeof *s->argv);
      for (size_t i = 0; i < n; i++) s->argv[i] = gp_xstrdup(json_string_value(json_array_get(cmd, i)));
      s->n_argv = (int)n;
    }
  }
  const json_t *end = json_object_get(o, "end_task");
  if (!rc && end && !json_is_boolean(end)) rc = bad(err, "end_task", "end_task must be true or false");
  s->end_task = json_is_true(end) && s->kind == GP_PROTO_SES_EXEC;
  const json_t *tty = json_object_get(o, "tty");
  if (!rc && tty && !json_is_boolean(tty)) rc = bad(err, "tty", "tty must be true or false");
  s->tty = json_is_true(tty);
  if (!rc && !small_int(json_object_get(o, "cols"), 1, 10000, &s->cols)) rc = bad(err, "cols", "cols must be 1 to 10000");
  if (!rc && !small_int(json_object_get(o, "rows"), 1, 10000, &s->rows)) rc = bad(err, "rows", "rows must be 1 to 10000");
  const json_t *term = json_object_get(o, "term");
  if (!rc && term) {
    const char *t = json_string_value(term);
    size_t tl = t ? strlen(t) : 0;
    bool ok = t && tl > 0 && tl < sizeof s->term && strspn(t, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.+-_") == tl;
    if (!ok) rc = bad(err, "term", "term must be a terminal name (letters, digits, . + - _; at most 63)");
    else snprintf(s->term, sizeof s->term, "%s", t);
  }
  if (!rc && s->kind == GP_PROTO_SES_FORWARD &&
      (!small_int(json_object_get(o, "port"), 1, 65535, &s->port) || !s->port))
    rc = bad(err, "port", "port must be 1 to 65535");
  json_decref(o);
  if (rc) gp_proto_session_start_done(s);
  return rc;
}

void gp_proto_session_start_done(gp_proto_session_start *s) {
  for (int i = 0; s->argv && i < s->n_argv; i++) free(s->argv[i]);
  free(s->argv);
  s->argv = NULL;
  s->n_argv = 0;
}

bool gp_proto_session_size_parse(const void *data, size_t len, int *cols, int *rows) {
  json_t *o = json_loadb(data, len, JSON_REJECT_DUPLICATES, NULL);
  int c = 0, r = 0;
  bool ok = json_is_object(o) && small_int(json_object_get(o, "cols"), 1, 10000, &c) &&
            small_int(json_object_get(o, "rows"), 1, 10000, &r) && c && r;
  json_decref(o);
  if (ok) *cols = c, *rows = r;
  return ok;
}

int gp_proto_session_signal_parse(const void *data, size_t len) {
  static const struct {
    const char *name;
    int sig;
  } ok[] = {{"INT", SIGINT},   {"QUIT", SIGQUIT}, {"TSTP", SIGTSTP}, {"CONT", SIGCONT}, {"TERM", SIGTERM},
            {"HUP", SIGHUP},   {"KILL", SIGKILL}, {"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"WINCH", SIGWINCH}};
  json_t *o = json_loadb(data, len, JSON_REJECT_DUPLICATES, NULL);
  const char *name = json_string_value(json_object_get(o, "signal"));
  int sig = 0;
  for (size_t i = 0; name && i < sizeof ok / sizeof *ok; i++)
    if (strcmp(name, ok[i].name) == 0) sig = ok[i].sig;
  json_decref(o);
  return sig;
}

uint8_t *gp_proto_session_status(const json_t *status, size_t *len) {
  char *t = json_dumps(status, JSON_COMPACT);
  size_t n = t ? strlen(t) : 0;
  uint8_t *m = gp_xmalloc(n + 1);
  m[0] = GP_PROTO_SES_STATUS;
  if (n) memcpy(m + 1, t, n);
  free(t);
  *len = n + 1;
  return m;
}
