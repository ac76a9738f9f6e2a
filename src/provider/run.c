/* SPDX-License-Identifier: Apache-2.0 */
/* One provider call from request to checked answer: the request is written, the child
 * run (spawn.c), and its exit and output judged (answer.c); names and the safe-string
 * rules live here too. The provider's environment is clean: a fixed PATH, the template's
 * name and the template's `env`, so nothing of the server's environment (tokens, keys)
 * leaks into a script. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "provider/prov_int.h"
#include "util/mem.h"

static const char *const verb_names[] = {"create", "delete", "list"};
static const char *const class_names[] = {"ok", "capacity", "quota", "auth", "transient",
                                          "invalid", "broken"};

const char *gp_provider_verb_name(gp_provider_verb v) {
  return (unsigned)v < 3 ? verb_names[v] : "unknown";
}

int gp_provider_verb_parse(const char *s, gp_provider_verb *ret) {
  for (int i = 0; s && i < 3; i++)
    if (strcmp(s, verb_names[i]) == 0) {
      *ret = (gp_provider_verb)i;
      return 0;
    }
  return GP_EINVAL;
}

const char *gp_provider_class_name(gp_provider_class c) {
  return (unsigned)c < sizeof class_names / sizeof class_names[0] ? class_names[c] : "unknown";
}

static bool safe_chars(const char *s, size_t max, const char *extra) {
  size_t n = s ? strlen(s) : 0;
  if (n == 0 || n > max) return false;
  for (size_t i = 0; i < n; i++) {
    unsigned char ch = (unsigned char)s[i];
    bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              (ch && strchr(extra, ch));
    if (!ok) return false;
  }
  return true;
}

bool gp_provider_id_valid(const char *s) { return safe_chars(s, GP_PROVIDER_ID_MAX, "._:@/-"); }

bool gp_provider_node_valid(const char *s) {
  return safe_chars(s, GP_PROVIDER_NODE_MAX, "._-") && s[0] != '.' && s[0] != '-';
}

void gp__prov_clean(char *dst, size_t size, const char *s, size_t n, bool keep_newline) {
  if (!size) return;
  size_t k = n < size - 1 ? n : size - 1;
  /* Cut before a UTF-8 continuation byte so the text stays valid where it was. */
  while (k > 0 && k < n && ((unsigned char)s[k] & 0xC0) == 0x80) k--;
  for (size_t i = 0; i < k; i++) {
    unsigned char ch = (unsigned char)s[i];
    dst[i] = (ch < 0x20 && !(keep_newline && ch == '\n')) || ch == 0x7f ? '?' : (char)ch;
  }
  dst[k] = '\0';
}

int gp__prov_error(gp_provider_error *e, gp_provider_class cls, int ret, const char *fmt, ...) {
  e->cls = cls;
  e->retry_after_s = -1;
  char text[GP_PROVIDER_MESSAGE_MAX + 1];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  gp__prov_clean(e->message, sizeof e->message, text, strlen(text), false);
  return ret;
}

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static char **make_env(const gp_provider_template *t) {
  int n = t->n_env > 0 && t->n_env <= GP_PROVIDER_MAX_ENV ? t->n_env : 0;
  char **env = gp_xcalloc((size_t)n + 3, sizeof *env);
  int k = 0;
  env[k++] = strdup("PATH=/usr/local/bin:/usr/bin:/bin");
  size_t len = strlen(t->name) + sizeof "GPOOL_TEMPLATE=";
  env[k] = gp_xmalloc(len);
  snprintf(env[k++], len, "GPOOL_TEMPLATE=%s", t->name);
  for (int i = 0; i < n; i++)
    if (t->env[i] && strchr(t->env[i], '=')) env[k++] = strdup(t->env[i]);
  return env;
}

static void free_env(char **env) {
  for (int i = 0; env[i]; i++) free(env[i]);
  free(env);
}

int gp_provider_run(const gp_provider_request *req, gp_provider_result *res,
                    gp_provider_error *e) {
  memset(res, 0, sizeof *res);
  memset(e, 0, sizeof *e);
  e->retry_after_s = -1;
  int64_t begin = now_ms();
  if ((unsigned)req->verb > GP_PROVIDER_LIST)
    return gp__prov_error(e, GP_PROVIDER_INVALID, GP_EINVAL, "unknown verb");
  if (req->deadline_ms <= begin)
    return gp__prov_error(e, GP_PROVIDER_INVALID, GP_EINVAL, "the deadline has passed");
  char *input = gp__prov_request_json(req, e);
  if (!input) return GP_EINVAL;
  char **env = make_env(req->tmpl);
  gp__prov_child c;
  int r = gp__prov_spawn(req->tmpl->provider, gp_provider_verb_name(req->verb), env, input,
                         req->deadline_ms, &c);
  free_env(env);
  free(input);
  res->elapsed_ms = now_ms() - begin;
  res->exit_status = c.exit_status;
  res->stderr_text = gp_xmalloc(c.err.len + 1);
  gp__prov_clean(res->stderr_text, c.err.len + 1, c.err.data ? c.err.data : "", c.err.len, true);
  if (r) {
    r = gp__prov_error(e, GP_PROVIDER_BROKEN, GP_EIO, "%s", c.spawn_error);
  } else if (c.out_too_long) {
    r = gp__prov_error(e, GP_PROVIDER_BROKEN, GP_EIO,
                       "the provider wrote more than %d bytes on stdout; stopped",
                       GP_PROVIDER_MAX_STDOUT);
  } else if (c.timed_out) {
    r = gp__prov_error(e, GP_PROVIDER_BROKEN, GP_EIO,
                       "the provider did not exit within %lld ms (its deadline); stopped with "
                       "its process group",
                       (long long)(req->deadline_ms - begin));
  } else if (c.signal) {
    r = gp__prov_error(e, GP_PROVIDER_BROKEN, GP_EIO, "the provider was killed by signal %d",
                       c.signal);
  } else if (!c.exited) {
    r = gp__prov_error(e, GP_PROVIDER_BROKEN, GP_EIO, "the provider could not be waited for");
  } else {
    r = gp__prov_answer_read(req, c.out.data ? c.out.data : "", c.out.len, c.exit_status, res, e);
  }
  gp__prov_child_done(&c);
  return r;
}

void gp_provider_result_done(gp_provider_result *res) {
  if (!res) return;
  free(res->instances);
  free(res->stderr_text);
  memset(res, 0, sizeof *res);
}
