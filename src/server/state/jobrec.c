/* SPDX-License-Identifier: Apache-2.0 */
/* A job's load record (jobrec.h): the job's fields one after another in a fixed order,
 * each an integer ("-12;") or a string given by its length ("5:hello"; "~" for none), so
 * that reading one is a scan with no tokenising, no tree and one allocation per string.
 * The sections only some jobs have (mail, container, array, attempts, use figures, steps)
 * travel as one JSON object at the end, read through the document's own readers when
 * present, which most pending jobs leave empty. A parse of the whole JSON document was
 * about 20 µs a job, nearly all of a restart (docs/perf/server.md).
 *
 * The record is the server's own writing, but a store is a file a person can damage: every
 * length, count and range is checked, strings must be UTF-8 without NUL, and a record that
 * does not read names the part; the load then reads that job's document instead.
 *
 * A leaf: the job's rest is made and read by jobdoc.c and jobjson.c, which call this file,
 * so that it stays out of the server's circle of files (tests/tree/circles_test.sh). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/limits.h"
#include "server/state/jobrec.h"
#include "server/state/state.h" /* its limits only: this file calls nothing of the server's */
#include "snapshot/policy_read.h"
#include "util/mem.h"

/* The record's first bytes: its format's version, which a later format changes. A JSON
 * document starts with '{'. */
#define REC_MAGIC "gpj1;"
#define MAX_STR 65536 /* a command word or an environment value (jobjson.c's largest) */

bool gp__srv_job_is_rec(const char *text) {
  return text && strncmp(text, REC_MAGIC, sizeof REC_MAGIC - 1) == 0;
}

/* ---- writing ---- */

static void put_i(gp_buf *b, long long v) { gp_buf_printf(b, "%lld;", v); }

static void put_sn(gp_buf *b, const char *s, size_t n) {
  gp_buf_printf(b, "%zu:", n);
  gp_buf_append(b, s, n);
}

static void put_s(gp_buf *b, const char *s) {
  if (s) put_sn(b, s, strlen(s));
  else gp_buf_append(b, "~", 1);
}

static void put_sv(gp_buf *b, char **v, int n) {
  put_i(b, n);
  for (int i = 0; i < n; i++) put_s(b, v[i]);
}

char *gp__srv_rec_encode(const gp_srv_job *j, const char *rest, size_t rest_len) {
  gp_buf b;
  gp_buf_init(&b, 0);
  gp_buf_puts(&b, REC_MAGIC);
  put_i(&b, j->id);
  put_s(&b, gp_job_state_name(j->state));
  put_s(&b, j->name ? j->name : ""); /* as the document writes it */
  put_s(&b, j->queue);
  put_s(&b, j->user);
  put_s(&b, j->priority);
  put_i(&b, (long long)json_array_size(j->command));
  for (size_t i = 0; i < json_array_size(j->command); i++) {
    const json_t *w = json_array_get(j->command, i);
    put_sn(&b, json_string_value(w), json_string_length(w));
  }
  put_i(&b, (long long)json_object_size(j->env));
  const char *k;
  json_t *v;
  json_object_foreach(j->env, k, v) {
    put_s(&b, k);
    put_sn(&b, json_string_value(v), json_string_length(v));
  }
  put_s(&b, j->workdir);
  long long ints[] = {j->gpus, j->tasks, j->tasks_per_node, j->nodes, j->gpu_milli,
                      j->gpu_mem_mib, j->cpu_milli, j->mem_mib, j->time_limit, j->requeue,
                      j->grace_s, j->allow_spot, j->exclusive, j->output_append,
                      j->warn_before_s, j->warn_batch, j->begin_at, j->batch, j->singleton};
  for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) put_i(&b, ints[i]);
  put_s(&b, j->mig);
  put_sv(&b, j->gpu_types, j->n_gpu_types);
  put_s(&b, j->signal);
  put_s(&b, j->model);
  put_s(&b, j->output);
  put_s(&b, j->error);
  put_s(&b, j->warn_signal);
  put_i(&b, j->n_selector);
  for (int i = 0; i < j->n_selector; i++) {
    put_s(&b, j->selector[i].key);
    put_s(&b, j->selector[i].value);
  }
  put_sv(&b, j->after, j->n_after);
  put_sv(&b, j->after_ok, j->n_after_ok);
  put_sv(&b, j->after_any, j->n_after_any);
  put_sv(&b, j->after_not_ok, j->n_after_not_ok);
  long long life[] = {j->restarts, j->array_job, j->array_index, j->service_rev,
                      j->has_exit_code, j->exit_code, j->exit_signal, j->submitted_at,
                      j->started_at, j->ended_at, j->last_checkpoint_at};
  for (size_t i = 0; i < sizeof life / sizeof life[0]; i++) put_i(&b, life[i]);
  put_s(&b, j->service);
  put_s(&b, j->end_reason);
  put_s(&b, j->stop_reason);
  if (rest) put_sn(&b, rest, rest_len);
  else put_s(&b, NULL);
  char *out = gp_buf_steal(&b);
  gp_buf_done(&b);
  return out;
}

/* ---- reading ---- */

typedef struct rd {
  const char *p, *end;
  const char *bad;      /* the part that did not read, NULL while all did */
} rd;

static bool fail(rd *r, const char *what) {
  if (!r->bad) r->bad = what;
  return false;
}

static bool get_i(rd *r, long long lo, long long hi, const char *what, long long *out) {
  if (r->bad) return false;
  const char *p = r->p;
  bool neg = p < r->end && *p == '-';
  if (neg) p++;
  unsigned long long v = 0;
  const char *digits = p;
  while (p < r->end && *p >= '0' && *p <= '9' && p - digits < 19) v = v * 10 + (unsigned)(*p++ - '0');
  if (p == digits || p >= r->end || *p != ';' || v > (unsigned long long)INT64_MAX) return fail(r, what);
  long long x = neg ? -(long long)v : (long long)v;
  if (x < lo || x > hi) return fail(r, what);
  r->p = p + 1;
  *out = x;
  return true;
}

/* Well-formed UTF-8 (what jansson accepts), without NUL bytes. */
static bool utf8_ok(const unsigned char *s, size_t n) {
  for (size_t i = 0; i < n;) {
    unsigned c = s[i];
    size_t len = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
    if (!c || !len || i + len > n || (len == 2 && c < 0xc2) || (len == 4 && c > 0xf4)) return false;
    unsigned cp = len == 1 ? c : c & (0x7f >> len);
    for (size_t k = 1; k < len; k++) {
      if ((s[i + k] & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (s[i + k] & 0x3f);
    }
    if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
      return false;
    i += len;
  }
  return true;
}

/* A string of at most `max` bytes: *s points into the record (not terminated), *n its
 * length; *s NULL for "~" (none). */
static bool get_sn(rd *r, size_t max, const char *what, const char **s, size_t *n) {
  if (r->bad) return false;
  if (r->p < r->end && *r->p == '~') {
    r->p++;
    *s = NULL;
    *n = 0;
    return true;
  }
  size_t len = 0;
  const char *p = r->p, *digits = p;
  while (p < r->end && *p >= '0' && *p <= '9' && p - digits < 9) len = len * 10 + (size_t)(*p++ - '0');
  if (p == digits || p >= r->end || *p != ':' || len > max || len > (size_t)(r->end - p - 1) ||
      !utf8_ok((const unsigned char *)p + 1, len))
    return fail(r, what);
  *s = p + 1;
  *n = len;
  r->p = p + 1 + len;
  return true;
}

/* A string copied (NULL for none); `need`: none is damage. */
static bool get_s(rd *r, size_t max, bool need, const char *what, char **out) {
  const char *s;
  size_t n;
  if (!get_sn(r, max, what, &s, &n)) return false;
  if (!s && need) return fail(r, what);
  free(*out);
  *out = s ? gp_xstrndup(s, n) : NULL;
  return true;
}

static bool get_sv(rd *r, int max, size_t max_len, const char *what, char ***out, int *n_out) {
  long long n;
  if (!get_i(r, 0, max, what, &n)) return false;
  char **v = gp_xcalloc((size_t)n + 1, sizeof *v);
  int got = 0;
  while (got < n && get_s(r, max_len, true, what, &v[got])) got++;
  if (got < n) {
    for (int i = 0; i < got; i++) free(v[i]);
    free(v);
    return false;
  }
  *out = v;
  *n_out = (int)n;
  return true;
}

static bool get_json_str(rd *r, const char *what, json_t **out) {
  const char *s;
  size_t n;
  if (!get_sn(r, MAX_STR, what, &s, &n)) return false;
  if (!s) return fail(r, what);
  *out = json_stringn_nocheck(s, n); /* checked as UTF-8 without NUL above */
  return true;
}

static bool read_fields(rd *r, gp_srv_job *j) {
  long long v;
  if (!get_i(r, 1, INT64_MAX, "id", &v)) return false;
  j->id = v;
  snprintf(j->idstr, sizeof j->idstr, "%lld", v);
  char *st = NULL;
  bool ok = get_s(r, 32, true, "state", &st) && !gp_job_state_parse(st, &j->state);
  free(st);
  if (!ok) return fail(r, "state");
  if (!get_s(r, 256, true, "name", &j->name) || !get_s(r, GP_READ_MAX_NAME, true, "queue", &j->queue) ||
      !get_s(r, 4096, true, "user", &j->user) ||
      !get_s(r, GP_READ_MAX_NAME, false, "priority", &j->priority))
    return false;
  if (!*j->queue) return fail(r, "queue");
  if (!get_i(r, 0, GP_PROTO_MAX_ARGS, "command", &v)) return false;
  for (long long i = 0; i < v; i++) {
    json_t *w;
    if (!get_json_str(r, "command", &w)) return false;
    json_array_append_new(j->command, w);
  }
  if (!get_i(r, 0, 1024, "env", &v)) return false;
  for (long long i = 0; i < v; i++) {
    const char *k;
    size_t kn;
    json_t *val;
    if (!get_sn(r, 4096, "env", &k, &kn) || !k || !kn || memchr(k, '=', kn) || !get_json_str(r, "env", &val))
      return fail(r, "env");
    char key[4097];
    memcpy(key, k, kn);
    key[kn] = '\0';
    json_object_set_new_nocheck(j->env, key, val);
  }
  if (!get_s(r, MAX_STR, false, "workdir", &j->workdir)) return false;
  static const struct { const char *what; long long lo, hi; } lim[] = {
      {"gpus", 0, GP_MAX_NODE_GPUS}, {"tasks", 1, GP_SRV_MAX_TASKS}, {"tasks_per_node", 0, GP_SRV_MAX_TASKS},
      {"nodes", 0, GP_SRV_MAX_TASKS}, {"gpu_fraction", 0, 1000}, {"gpu_mem_mib", 0, 1LL << 40},
      {"cpus", 0, 100000000}, {"mem_mib", 0, 1LL << 40}, {"time_limit", 0, 366LL * 86400},
      {"requeue", 0, 1}, {"grace_s", 0, 86400}, {"allow_spot", 0, 1}, {"exclusive", 0, 1},
      {"open_mode", 0, 1}, {"warn_before_s", 0, 86400}, {"warn_batch", 0, 1},
      {"begin_at", 0, 253402300799LL}, {"batch", 0, 1}, {"singleton", 0, 1}};
  long long x[sizeof lim / sizeof lim[0]];
  for (size_t i = 0; i < sizeof lim / sizeof lim[0]; i++)
    if (!get_i(r, lim[i].lo, lim[i].hi, lim[i].what, &x[i])) return false;
  j->gpus = (int)x[0], j->tasks = (int)x[1], j->tasks_per_node = (int)x[2], j->nodes = (int)x[3];
  j->gpu_milli = (int)x[4], j->gpu_mem_mib = x[5], j->cpu_milli = x[6], j->mem_mib = x[7];
  j->time_limit = x[8], j->requeue = x[9], j->grace_s = (int)x[10], j->allow_spot = x[11];
  j->exclusive = x[12], j->output_append = x[13], j->warn_before_s = (int)x[14];
  j->warn_batch = x[15], j->begin_at = x[16], j->batch = x[17], j->singleton = x[18];
  if (j->nodes > j->tasks) return fail(r, "nodes");
  char *signal = NULL;
  if (!get_s(r, 32, false, "mig", &j->mig) ||
      !get_sv(r, 64, 64, "gpu_types", &j->gpu_types, &j->n_gpu_types) ||
      !get_s(r, 16, false, "signal", &signal))
    return false;
  if (signal) { /* none: the default the job started with, as for a document */
    free(j->signal);
    j->signal = signal;
  }
  if (!get_s(r, 128, false, "model", &j->model) || !get_s(r, MAX_STR, false, "output", &j->output) ||
      !get_s(r, MAX_STR, false, "error", &j->error) ||
      !get_s(r, 16, false, "warn_signal", &j->warn_signal) || !get_i(r, 0, 64, "node_selector", &v))
    return false;
  j->selector = gp_xcalloc((size_t)v + 1, sizeof *j->selector);
  for (; j->n_selector < v; j->n_selector++) {
    char *key = NULL, *val = NULL;
    if (!get_s(r, 256, true, "node_selector", &key) || !get_s(r, 256, true, "node_selector", &val)) {
      free(key);
      return false;
    }
    j->selector[j->n_selector] = (gp_label){key, val};
  }
  if (!get_sv(r, GP_SRV_MAX_DEPS, 24, "after", &j->after, &j->n_after) ||
      !get_sv(r, GP_SRV_MAX_DEPS, 24, "after_ok", &j->after_ok, &j->n_after_ok) ||
      !get_sv(r, GP_SRV_MAX_DEPS, 24, "after_any", &j->after_any, &j->n_after_any) ||
      !get_sv(r, GP_SRV_MAX_DEPS, 24, "after_not_ok", &j->after_not_ok, &j->n_after_not_ok))
    return false;
  static const struct { const char *what; long long lo, hi; } life[] = {
      {"restarts", 0, INT32_MAX}, {"array_job_id", 0, INT64_MAX}, {"array_index", 0, INT64_MAX},
      {"service_rev", INT32_MIN, INT32_MAX}, {"exit_code", 0, 1}, {"exit_code", INT32_MIN, INT32_MAX},
      {"exit_signal", 0, 128}, {"submitted_at", INT64_MIN, INT64_MAX}, {"started_at", INT64_MIN, INT64_MAX},
      {"ended_at", INT64_MIN, INT64_MAX}, {"last_checkpoint_at", INT64_MIN, INT64_MAX}};
  long long y[sizeof life / sizeof life[0]];
  for (size_t i = 0; i < sizeof life / sizeof life[0]; i++)
    if (!get_i(r, life[i].lo, life[i].hi, life[i].what, &y[i])) return false;
  j->restarts = (int)y[0], j->array_job = y[1], j->array_index = y[2], j->service_rev = (int)y[3];
  j->has_exit_code = y[4], j->exit_code = (int)y[5], j->exit_signal = (int)y[6];
  j->submitted_at = y[7], j->started_at = y[8], j->ended_at = y[9], j->last_checkpoint_at = y[10];
  return get_s(r, 64, false, "service", &j->service) &&
         get_s(r, MAX_STR, false, "end_reason", &j->end_reason) &&
         get_s(r, MAX_STR, false, "stop_reason", &j->stop_reason);
}

int gp__srv_rec_decode(const char *rec, gp_srv_job *j, const char **rest, size_t *rest_len,
                       gp_err *err) {
  *rest = NULL;
  *rest_len = 0;
  if (!gp__srv_job_is_rec(rec))
    return gp_err_set(err, GP_EPARSE, NULL, 0, NULL, "load record: not of a format this gpool reads");
  rd r = {rec + sizeof REC_MAGIC - 1, rec + strlen(rec), NULL};
  if (read_fields(&r, j) && get_sn(&r, SIZE_MAX / 2, "rest", rest, rest_len) && r.p != r.end)
    fail(&r, "its end");
  if (r.bad) return gp_err_set(err, GP_EPARSE, NULL, 0, r.bad, "load record: %s does not read", r.bad);
  return 0;
}
