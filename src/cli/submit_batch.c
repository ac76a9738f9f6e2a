/* SPDX-License-Identifier: Apache-2.0 */
/* `gpool submit`'s options for what a batch job prints, when it starts and what signal it
 * gets before its limit, and the environment it takes along (submit_batch.h): -o/--output
 * and --error file patterns, --open-mode, --begin, Slurm's --signal=[B:]SIG@T and
 * --export. Kept apart from submit_args.c, which maps the options onto these. */
#include "cli/submit_batch.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "protocol/outpath.h"
#include "util/signals.h"
#include "util/units.h"

#define MAX_EXPORT_VARS 512
#define MAX_EXPORT_BYTES (48 * 1024) /* the server takes 64 KiB of command and environment */

static int fail(gp_err *err, const char *where, const char *field, const char *msg) {
  return gp_err_set(err, GP_EINVAL, NULL, 0, field, "%s%s%s", where ? where : "", where ? ": " : "", msg);
}

int gp_submit_output(json_t *req, const char *key, const char *opt, const char *v,
                      const char *where, gp_err *err) {
  const char *why = gp_outpath_check(v);
  if (why) {
    char msg[400];
    snprintf(msg, sizeof msg, "%s '%.200s': %s", opt, v, why);
    return fail(err, where, key, msg);
  }
  json_object_set_new(req, key, json_string(v));
  return 0;
}

int gp_submit_open_mode(json_t *req, const char *v, const char *where, gp_err *err) {
  if (strcmp(v, "append") && strcmp(v, "truncate") && strcmp(v, "a") && strcmp(v, "t"))
    return fail(err, where, "open_mode", "--open-mode takes append or truncate");
  json_object_set_new(req, "open_mode", json_string(v[0] == 'a' ? "append" : "truncate"));
  return 0;
}

/* ---- --begin ---- */

static int64_t unit_s(const char *u) {
  static const struct { const char *name; int64_t s; } units[] = {
      {"", 1}, {"s", 1}, {"sec", 1}, {"secs", 1}, {"second", 1}, {"seconds", 1},
      {"m", 60}, {"min", 60}, {"mins", 60}, {"minute", 60}, {"minutes", 60},
      {"h", 3600}, {"hour", 3600}, {"hours", 3600}, {"d", 86400}, {"day", 86400},
      {"days", 86400}, {"w", 604800}, {"week", 604800}, {"weeks", 604800}};
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
    if (!strcasecmp(u, units[i].name)) return units[i].s;
  return 0;
}

/* The next time of day hh:mm:ss at or after now (local time). */
static int64_t next_time_of_day(int64_t now, int hh, int mm, int ss, bool today_ok) {
  time_t t = (time_t)now;
  struct tm tm;
  localtime_r(&t, &tm);
  tm.tm_hour = hh;
  tm.tm_min = mm;
  tm.tm_sec = ss;
  tm.tm_isdst = -1;
  int64_t at = (int64_t)mktime(&tm);
  if (at < now || (!today_ok && at == now)) {
    tm.tm_mday++;
    tm.tm_hour = hh;
    tm.tm_min = mm;
    tm.tm_sec = ss;
    tm.tm_isdst = -1;
    at = (int64_t)mktime(&tm);
  }
  return at;
}

static bool time_of_day(const char *s, int *hh, int *mm, int *ss) {
  char tail;
  *ss = 0;
  int n = sscanf(s, "%2d:%2d:%2d%c", hh, mm, ss, &tail);
  if (n != 3 && n != 2) return false;
  if (n == 2 && strchr(s + 3, ':')) return false;
  size_t len = strlen(s);
  if (len != 5 && len != 8) return false;
  return *hh >= 0 && *hh < 24 && *mm >= 0 && *mm < 60 && *ss >= 0 && *ss < 60;
}

int gp_submit_parse_begin(const char *v, int64_t now, int64_t *ret) {
  if (!v || !*v || strlen(v) > 64) return -1;
  if (!strcasecmp(v, "now") || !strcasecmp(v, "today")) {
    *ret = now;
    return 0;
  }
  if (!strncasecmp(v, "now+", 4)) {
    const char *p = v + 4;
    if (!isdigit((unsigned char)*p)) return -1;
    char *end;
    long long n = strtoll(p, &end, 10);
    int64_t u = unit_s(end);
    if (!u || n < 0 || n > 366LL * 86400 * 10 / u) return -1;
    *ret = now + n * u;
    return 0;
  }
  static const struct { const char *name; int hh; } named[] = {
      {"midnight", 0}, {"noon", 12}, {"fika", 15}, {"teatime", 16}};
  for (size_t i = 0; i < sizeof named / sizeof named[0]; i++)
    if (!strcasecmp(v, named[i].name)) {
      *ret = next_time_of_day(now, named[i].hh, 0, 0, false);
      return 0;
    }
  if (!strcasecmp(v, "tomorrow")) {
    *ret = next_time_of_day(now, 0, 0, 0, false);
    return 0;
  }
  int hh, mm, ss;
  if (time_of_day(v, &hh, &mm, &ss)) {
    *ret = next_time_of_day(now, hh, mm, ss, true);
    return 0;
  }
  /* YYYY-MM-DD[THH:MM[:SS]], local time. */
  int y, mo, d;
  char rest[16] = "";
  if (sscanf(v, "%4d-%2d-%2d%15s", &y, &mo, &d, rest) < 3 || strlen(v) < 10 || v[4] != '-' ||
      v[7] != '-')
    return -1;
  hh = mm = ss = 0;
  if (rest[0] && (rest[0] != 'T' || !time_of_day(rest + 1, &hh, &mm, &ss))) return -1;
  if (y < 1970 || y > 9999 || mo < 1 || mo > 12 || d < 1 || d > 31) return -1;
  struct tm tm = {.tm_year = y - 1900, .tm_mon = mo - 1, .tm_mday = d, .tm_hour = hh,
                  .tm_min = mm, .tm_sec = ss, .tm_isdst = -1};
  time_t at = mktime(&tm);
  if (at == (time_t)-1 || tm.tm_mday != d) return -1; /* 2026-02-30 */
  *ret = (int64_t)at;
  return 0;
}

int gp_submit_begin(json_t *req, const char *v, const char *where, gp_err *err) {
  int64_t at;
  if (gp_submit_parse_begin(v, (int64_t)time(NULL), &at)) {
    char msg[300];
    snprintf(msg, sizeof msg,
             "--begin '%.64s' is not a time (e.g. now+1hour, now+30min, now+60, 16:00, "
             "midnight, noon, tomorrow, 2026-12-24T10:00)", v);
    return fail(err, where, "begin_at", msg);
  }
  json_object_set_new(req, "begin_at", json_integer(at));
  return 0;
}

/* ---- --signal ---- */

int gp_submit_signal(json_t *req, const char *v, bool slurm_form, const char *where, gp_err *err) {
  const char *p = v;
  bool batch = false;
  if ((p[0] == 'B' || p[0] == 'R') && p[1] == ':') {
    batch = p[0] == 'B'; /* R: (reservation) has no meaning in gpool: all processes */
    p += 2;
    slurm_form = true;
  }
  char name[32];
  size_t len = strcspn(p, "@");
  if (p[len] == '@') slurm_form = true;
  if (len == 0 || len >= sizeof name) return fail(err, where, "signal", "--signal takes [B:]SIG[@seconds], e.g. B:USR1@60");
  memcpy(name, p, len);
  name[len] = '\0';
  const char *sig = gp_signal_job_name(name);
  if (!sig) {
    char msg[200];
    snprintf(msg, sizeof msg, "--signal: '%s' is not a signal name a job can catch (e.g. USR1, TERM)", name);
    return fail(err, where, "signal", msg);
  }
  if (!slurm_form) { /* gpool's --signal NAME: the signal sent when the job is stopped */
    json_object_set_new(req, "signal", json_string(sig));
    return 0;
  }
  /* Slurm's: a warning; at the limit the job gets TERM, then KILL after its grace period. */
  json_object_set_new(req, "warn_signal", json_string(sig));
  int64_t t = 60; /* Slurm's default lead time */
  if (p[len] == '@' && (gp_parse_int64(p + len + 1, &t) || t < 0 || t > 65535))
    return fail(err, where, "signal", "--signal: bad @seconds (0 to 65535) in [B:]SIG@seconds");
  json_object_set_new(req, "warn_before_s", json_integer(t));
  json_object_set_new(req, "warn_batch", json_boolean(batch));
  return 0;
}

/* ---- --export ---- */

static bool env_name_ok(const char *s, size_t n) {
  if (n == 0 || n > 256 || isdigit((unsigned char)s[0])) return false;
  for (size_t i = 0; i < n; i++)
    if (!isalnum((unsigned char)s[i]) && s[i] != '_') return false;
  return true;
}

int gp_submit_export(json_t *req, const char *v, const char *where, gp_err *err) {
  if (!*v || strlen(v) > 65536) return fail(err, where, "export", "--export takes ALL, NONE or VAR1,VAR2=value");
  /* Checked here, applied by gp_submit_apply_export once the environment is at hand. */
  const char *p = v;
  for (;;) {
    size_t n = strcspn(p, ",");
    size_t name_n = strcspn(p, ",=");
    bool word = (n == 3 && !strncmp(p, "ALL", 3)) || (n == 4 && !strncmp(p, "NONE", 4)) ||
                (n == 3 && !strncmp(p, "NIL", 3));
    if (!word && !env_name_ok(p, name_n)) {
      char msg[400];
      snprintf(msg, sizeof msg, "--export: '%.*s' is not ALL, NONE, NAME or NAME=value", (int)(n > 200 ? 200 : n), p);
      return fail(err, where, "export", msg);
    }
    if (!p[n]) break;
    p += n + 1;
  }
  json_object_set_new(req, "_export", json_string(v));
  return 0;
}

/* Skipped by ALL: gpool's variables (its credentials, and those of a job the submitter may
 * run in: the new job gets its own), Slurm's, and the shell's bookkeeping. */
static bool never_exported(const char *name, size_t n) {
  return !strncmp(name, "GPOOL_", 6) || !strncmp(name, "SLURM_", 6) ||
         (n == 3 && !strncmp(name, "PWD", 3)) || (n == 6 && !strncmp(name, "OLDPWD", 6)) ||
         (n == 5 && !strncmp(name, "SHLVL", 5)) || (n == 1 && name[0] == '_');
}

static const char *env_lookup(char **envp, const char *name, size_t n) {
  for (char **e = envp; e && *e; e++)
    if (!strncmp(*e, name, n) && (*e)[n] == '=') return *e + n + 1;
  return NULL;
}

int gp_submit_apply_export(json_t *req, bool sbatch, char **envp, gp_err *err) {
  const char *spec = json_string_value(json_object_get(req, "_export"));
  if (!spec) spec = sbatch ? "ALL" : "NONE";
  json_t *out = json_object();
  const char *p = spec;
  for (;;) {
    size_t n = strcspn(p, ","), name_n = strcspn(p, ",=");
    char name[260];
    if (n == 3 && !strncmp(p, "ALL", 3)) {
      for (char **e = envp; e && *e; e++) {
        size_t k = strcspn(*e, "=");
        if (!(*e)[k] || !env_name_ok(*e, k) || never_exported(*e, k)) continue;
        snprintf(name, sizeof name, "%.*s", (int)k, *e);
        json_object_set_new(out, name, json_string(*e + k + 1));
      }
    } else if (!(n == 4 && !strncmp(p, "NONE", 4)) && !(n == 3 && !strncmp(p, "NIL", 3))) {
      snprintf(name, sizeof name, "%.*s", (int)name_n, p);
      if (name_n < n) {
        json_object_set_new(out, name, json_stringn(p + name_n + 1, n - name_n - 1));
      } else {
        const char *val = env_lookup(envp, p, name_n);
        if (val) json_object_set_new(out, name, json_string(val));
      }
    }
    if (!p[n]) break;
    p += n + 1;
  }
  /* -e/--env wins over what was exported. */
  json_t *env = json_object_get(req, "env");
  if (env) json_object_update(out, env);
  size_t bytes = 0;
  const char *k;
  json_t *val;
  json_object_foreach(out, k, val) bytes += strlen(k) + json_string_length(val) + 2;
  if (json_object_size(out) > MAX_EXPORT_VARS || bytes > MAX_EXPORT_BYTES) {
    int rc = gp_err_set(err, GP_ELIMIT, NULL, 0, "export",
                        "--export=%s: the job's environment would have %zu variables in %zu bytes, "
                        "more than gpool takes (%d variables, %d KiB); pass fewer with "
                        "--export=NONE or --export=VAR1,VAR2",
                        strncmp(spec, "ALL", 3) ? "..." : "ALL", json_object_size(out), bytes,
                        MAX_EXPORT_VARS, MAX_EXPORT_BYTES / 1024);
    json_decref(out);
    return rc;
  }
  json_object_del(req, "_export");
  if (json_object_size(out)) json_object_set_new(req, "env", out);
  else json_decref(out);
  return 0;
}
