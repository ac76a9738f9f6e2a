/* SPDX-License-Identifier: Apache-2.0 */
/* The job fields that Slurm batch scripts bring (docs/user-guide.md, "Output files, begin
 * time, signals"): the -o/--error file patterns and --open-mode, --begin, Slurm's
 * --signal=[B:]SIG@T (the signal, its lead time and scope), and `batch`: a script that
 * runs once on the first node of its allocation (docs/slurm.md). Read from a submission
 * or a stored document, written into the API's and the store's JSON (jobdoc.c writes the
 * same keys). Kept apart from jobjson.c, which holds the fields every job has. */
#include <stdlib.h>
#include <string.h>

#include "protocol/outpath.h"
#include "server/state/state.h"
#include "util/mem.h"
#include "util/signals.h"

static int pattern(const json_t *o, const char *key, char **out, gp_err *err) {
  const json_t *v = json_object_get(o, key);
  if (!v || json_is_null(v)) return 0;
  if (!json_is_string(v)) return gp_err_set(err, GP_EINVAL, NULL, 0, key, "must be a string");
  const char *s = json_string_value(v);
  /* A NUL inside the JSON string would cut the name short: refused, as any control byte. */
  const char *why = strlen(s) != json_string_length(v) ? "the file name contains a NUL byte"
                                                        : gp_outpath_check(s);
  if (why) return gp_err_set(err, GP_EINVAL, NULL, 0, key, "%s", why);
  free(*out);
  *out = gp_xstrdup(s);
  return 0;
}

static int int_in(const json_t *o, const char *key, int64_t lo, int64_t hi, int64_t *out, gp_err *err) {
  const json_t *v = json_object_get(o, key);
  if (!v || json_is_null(v)) return 0;
  if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
    return gp_err_set(err, GP_EINVAL, NULL, 0, key, "must be an integer between %lld and %lld",
                      (long long)lo, (long long)hi);
  *out = json_integer_value(v);
  return 0;
}

int gp__srv_job_read_batch(const json_t *o, gp_srv_job *j, gp_err *err) {
  int r;
  if ((r = pattern(o, "output", &j->output, err)) || (r = pattern(o, "error", &j->error, err)))
    return r;
  const json_t *mode = json_object_get(o, "open_mode");
  if (mode && !json_is_null(mode)) {
    const char *m = json_string_value(mode);
    if (!m || (strcmp(m, "append") && strcmp(m, "truncate")))
      return gp_err_set(err, GP_EINVAL, NULL, 0, "open_mode", "must be \"append\" or \"truncate\"");
    j->output_append = !strcmp(m, "append");
  }
  const json_t *ws = json_object_get(o, "warn_signal");
  if (ws && !json_is_null(ws)) {
    const char *name = gp_signal_job_name(json_string_value(ws) ? json_string_value(ws) : "");
    if (!name)
      return gp_err_set(err, GP_EINVAL, NULL, 0, "warn_signal", "must be a signal a job can catch, such as USR1");
    free(j->warn_signal);
    j->warn_signal = gp_xstrdup(name);
  }
  int64_t v = j->warn_before_s;
  if ((r = int_in(o, "warn_before_s", 0, 86400, &v, err))) return r;
  j->warn_before_s = (int)v;
  const json_t *b = json_object_get(o, "warn_batch");
  if (b && !json_is_null(b)) {
    if (!json_is_boolean(b)) return gp_err_set(err, GP_EINVAL, NULL, 0, "warn_batch", "must be true or false");
    j->warn_batch = json_is_true(b);
  }
  const json_t *bt = json_object_get(o, "batch");
  if (bt && !json_is_null(bt)) {
    if (!json_is_boolean(bt)) return gp_err_set(err, GP_EINVAL, NULL, 0, "batch", "must be true or false");
    j->batch = json_is_true(bt);
  }
  /* Up to year 9999: any later "begin" is a mistake worth an error. */
  return int_in(o, "begin_at", 0, INT64_C(253402300799), &j->begin_at, err);
}

void gp__srv_job_batch_json(json_t *o, const gp_srv_job *j) {
  json_object_set_new(o, "output", j->output ? json_string(j->output) : json_null());
  json_object_set_new(o, "error", j->error ? json_string(j->error) : json_null());
  json_object_set_new(o, "open_mode", json_string(j->output_append ? "append" : "truncate"));
  json_object_set_new(o, "warn_signal", j->warn_signal ? json_string(j->warn_signal) : json_null());
  json_object_set_new(o, "warn_before_s", json_integer(j->warn_before_s));
  json_object_set_new(o, "warn_batch", json_boolean(j->warn_batch));
  json_object_set_new(o, "begin_at", j->begin_at ? json_integer(j->begin_at) : json_null());
  json_object_set_new(o, "batch", json_boolean(j->batch));
}
