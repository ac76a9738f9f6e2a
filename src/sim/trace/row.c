/* SPDX-License-Identifier: Apache-2.0 */
/* The one converter from an input row (any format) to a gp_trace_job. Every field is
 * checked: a number must be a number, times and sizes stay within bounds, and the first
 * problem is reported with the row's line and the column's name as the file spells it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/trace/reader.h"
#include "util/calendar.h"
#include "util/mem.h"
#include "util/units.h"

static bool present(const gp__sim_trace_row *r, gp__sim_trace_col c) { return r->v[c] && *r->v[c]; }

static const char *colname(const gp__sim_trace_row *r, gp__sim_trace_col c, const char *fallback) {
  return r->name[c] ? r->name[c] : fallback;
}

static bool digits(const char *s, int n, int64_t *ret) {
  int64_t v = 0;
  for (int i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (s[i] - '0');
  }
  *ret = v;
  return true;
}

int gp__sim_trace_parse_time(const char *s, int64_t *ret) {
  size_t n = strlen(s);
  if (n >= 19 && s[4] == '-' && s[7] == '-' && (s[10] == ' ' || s[10] == 'T') && s[13] == ':' &&
      s[16] == ':') {
    int64_t y, mo, d, h, mi, se;
    if (!digits(s, 4, &y) || !digits(s + 5, 2, &mo) || !digits(s + 8, 2, &d) ||
        !digits(s + 11, 2, &h) || !digits(s + 14, 2, &mi) || !digits(s + 17, 2, &se))
      return GP_EINVAL;
    const char *rest = s + 19;
    if (*rest == 'Z') rest++;
    static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (*rest || mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] || h > 23 || mi > 59 || se > 60)
      return GP_EINVAL;
    *ret = gp_days_from_civil(y, (int)mo, (int)d) * GP_DAY_S + h * 3600 + mi * 60 + se;
    return 0;
  }
  double v;
  if (gp_parse_double(s, &v) || v < 0 || v > (double)GP_TRACE_MAX_TIME) return GP_EINVAL;
  *ret = (int64_t)llround(v);
  return 0;
}

/* Seconds as a number (fractions rounded) or a duration ("4h", "1-00:00:00"). */
static int parse_seconds(const char *s, bool allow_units, int64_t *ret) {
  double v;
  if (gp_parse_double(s, &v) == 0) {
    if (v < 0 || v > (double)GP_TRACE_MAX_TIME) return GP_EINVAL;
    *ret = (int64_t)llround(v);
    return 0;
  }
  int64_t d;
  if (!allow_units || gp_parse_duration_s(s, &d) || d < 0 || d > GP_TRACE_MAX_TIME)
    return GP_EINVAL;
  *ret = d;
  return 0;
}

static int bad(gp_trace *t, const gp__sim_trace_row *r, gp__sim_trace_col c, const char *fallback,
               gp_err *err, const char *what) {
  const char *v = r->v[c] ? r->v[c] : "";
  return gp_err_set(err, GP_EINVAL, t->source, r->line, colname(r, c, fallback),
                    "%s (got \"%.40s\")", what, v);
}

static int intern_opt(gp_trace *t, const gp__sim_trace_row *r, gp__sim_trace_col c, int *ret,
                      gp_err *err) {
  *ret = -1;
  if (!present(r, c)) return 0;
  return gp__sim_trace_intern(t, r->v[c], strlen(r->v[c]), ret, err);
}

/* When a job arrives and how long it runs. */
static int read_times(gp_trace *t, gp_trace_format fmt, const gp__sim_trace_row *r, gp_trace_job *ret,
                      gp_err *err) {
  gp_trace_job j = *ret;
  const char *submit_name = fmt == GP_TRACE_OPENB ? "creation_time" : "submit_time";
  if (!present(r, GP__COL_SUBMIT))
    return bad(t, r, GP__COL_SUBMIT, submit_name, err, "missing submit time");
  if (gp__sim_trace_parse_time(r->v[GP__COL_SUBMIT], &j.submit))
    return bad(t, r, GP__COL_SUBMIT, submit_name, err,
               "expected seconds or \"YYYY-MM-DD HH:MM:SS\"");

  if (fmt == GP_TRACE_OPENB) {
    /* A pod's run time is deletion - creation; without both it cannot be replayed. */
    int64_t end;
    if (!present(r, GP__COL_END))
      return bad(t, r, GP__COL_END, "deletion_time", err, "missing deletion time");
    if (gp__sim_trace_parse_time(r->v[GP__COL_END], &end))
      return bad(t, r, GP__COL_END, "deletion_time", err, "expected seconds");
    if (end < j.submit)
      return bad(t, r, GP__COL_END, "deletion_time", err, "deleted before it was created");
    j.duration = end - j.submit;
  } else {
    if (!present(r, GP__COL_DURATION))
      return bad(t, r, GP__COL_DURATION, "duration", err, "missing duration");
    if (parse_seconds(r->v[GP__COL_DURATION], fmt != GP_TRACE_PHILLY, &j.duration))
      return bad(t, r, GP__COL_DURATION, "duration", err,
                 "expected a non-negative number of seconds");
  }
  *ret = j;
  return 0;
}

int gp__sim_trace_add_row(gp_trace *t, gp_trace_format fmt, const gp_trace_opts *o,
                      const gp__sim_trace_row *r, gp_err *err) {
  gp_trace_job j = {.line = r->line, .user = -1, .priority = -1, .gpu_models = -1, .id = -1};
  bool shapes = fmt == GP_TRACE_OPENB && o->shapes;
  int rc;
  if (!shapes && (rc = read_times(t, fmt, r, &j, err))) return rc;

  /* GPUs: a whole count, or a fraction of one GPU (generic: "0.5"; openb: gpu_milli). */
  if (!present(r, GP__COL_GPUS)) return bad(t, r, GP__COL_GPUS, "gpus", err, "missing GPU count");
  double g;
  if (gp_parse_double(r->v[GP__COL_GPUS], &g) || g < 0 || g > GP_TRACE_MAX_GPUS)
    return bad(t, r, GP__COL_GPUS, "gpus", err, "expected a number of GPUs");
  if (g != floor(g)) {
    if (fmt == GP_TRACE_PHILLY || fmt == GP_TRACE_OPENB || g > 1)
      return bad(t, r, GP__COL_GPUS, "gpus", err,
                 "expected a whole number of GPUs (or a fraction below 1)");
    j.gpu_milli = (int)llround(g * 1000);
    if (j.gpu_milli < 1 || j.gpu_milli > 999)
      return bad(t, r, GP__COL_GPUS, "gpus", err, "a GPU fraction must be 0.001 to 0.999");
  } else {
    j.gpus = (int)g;
  }
  if (fmt == GP_TRACE_OPENB) {
    int64_t milli;
    if (!present(r, GP__COL_GPU_MILLI) || gp_parse_int64(r->v[GP__COL_GPU_MILLI], &milli) ||
        milli < 0 || milli > 1000)
      return bad(t, r, GP__COL_GPU_MILLI, "gpu_milli", err, "expected 0 to 1000");
    if (j.gpus == 1 && milli > 0 && milli < 1000) {
      j.gpus = 0;
      j.gpu_milli = (int)milli;
    } else if (j.gpus > 1 && milli != 1000) {
      return bad(t, r, GP__COL_GPU_MILLI, "gpu_milli", err,
                 "a multi-GPU pod must ask for whole GPUs (1000)");
    } else if (j.gpus == 1 && milli == 0) {
      return bad(t, r, GP__COL_GPU_MILLI, "gpu_milli", err, "a one-GPU pod asks for 0 milli");
    } else if (shapes && j.gpus == 0 && milli != 0) {
      return bad(t, r, GP__COL_GPU_MILLI, "gpu_milli", err, "milli-GPU asked with num_gpu 0");
    }
  }
  if (shapes && !present(r, GP__COL_CPU_MILLI))
    return bad(t, r, GP__COL_CPU_MILLI, "cpu_milli", err, "missing value");
  if (shapes && !present(r, GP__COL_MEM_MIB))
    return bad(t, r, GP__COL_MEM_MIB, "memory_mib", err, "missing value");

  if (present(r, GP__COL_TASKS)) {
    int64_t tasks;
    if (gp_parse_int64(r->v[GP__COL_TASKS], &tasks) || tasks < 1 || tasks > GP_TRACE_MAX_GPUS)
      return bad(t, r, GP__COL_TASKS, "tasks", err, "expected a whole number >= 1");
    if (j.gpu_milli && tasks != 1)
      return bad(t, r, GP__COL_TASKS, "tasks", err, "a GPU fraction runs as one task");
    if (j.gpus % tasks)
      return bad(t, r, GP__COL_TASKS, "tasks", err, "gpus must divide evenly over the tasks");
    j.tasks = (int)tasks;
  }
  if (present(r, GP__COL_TIME_LIMIT)) {
    if (parse_seconds(r->v[GP__COL_TIME_LIMIT], true, &j.time_limit))
      return bad(t, r, GP__COL_TIME_LIMIT, "time_limit", err,
                 "expected seconds or a duration such as 4h or 1-00:00:00");
  }
  if (present(r, GP__COL_IDLE_TAIL)) {
    /* The stretch at the end of the run that holds GPUs without using them: part of the
     * run, so never longer than it. */
    if (parse_seconds(r->v[GP__COL_IDLE_TAIL], true, &j.idle_tail))
      return bad(t, r, GP__COL_IDLE_TAIL, "idle_tail", err,
                 "expected seconds or a duration such as 30m");
    if (j.idle_tail > j.duration)
      return bad(t, r, GP__COL_IDLE_TAIL, "idle_tail", err,
                 "longer than the job's duration");
  }
  if (present(r, GP__COL_CPU_MILLI) &&
      (gp_parse_int64(r->v[GP__COL_CPU_MILLI], &j.cpu_milli) || j.cpu_milli < 0 ||
       j.cpu_milli > ((int64_t)1 << 40)))
    return bad(t, r, GP__COL_CPU_MILLI, "cpu_milli", err, "expected a non-negative integer");
  if (present(r, GP__COL_MEM_MIB) &&
      (gp_parse_int64(r->v[GP__COL_MEM_MIB], &j.mem_mib) || j.mem_mib < 0 ||
       j.mem_mib > ((int64_t)1 << 40)))
    return bad(t, r, GP__COL_MEM_MIB, "memory_mib", err, "expected a non-negative integer");

  /* Names: a queue is needed for fair share; the generic and openb formats default it. */
  if (present(r, GP__COL_QUEUE)) {
    if (strlen(r->v[GP__COL_QUEUE]) > 200)
      return bad(t, r, GP__COL_QUEUE, "queue", err, "queue name longer than 200 bytes");
    if (gp__sim_trace_intern(t, r->v[GP__COL_QUEUE], strlen(r->v[GP__COL_QUEUE]), &j.queue, err))
      return err->code;
  } else if (fmt == GP_TRACE_PHILLY) {
    return bad(t, r, GP__COL_QUEUE, "cluster", err, "missing virtual cluster");
  } else if (gp__sim_trace_intern(t, "default", 7, &j.queue, err)) {
    return err->code;
  }
  for (gp__sim_trace_col c = GP__COL_USER; c <= GP__COL_ID; c++)
    if (present(r, c) && strlen(r->v[c]) > 200)
      return bad(t, r, c, "name", err, "value longer than 200 bytes");
  if (intern_opt(t, r, GP__COL_USER, &j.user, err) ||
      intern_opt(t, r, GP__COL_PRIORITY, &j.priority, err) ||
      intern_opt(t, r, GP__COL_GPU_MODEL, &j.gpu_models, err) ||
      intern_opt(t, r, GP__COL_ID, &j.id, err))
    return err->code;

  if (t->n_jobs >= GP_TRACE_MAX_JOBS)
    return gp_err_set(err, GP_ELIMIT, t->source, r->line, NULL, "more than %d jobs",
                      GP_TRACE_MAX_JOBS);
  if ((t->n_jobs & (t->n_jobs - 1)) == 0)
    t->jobs = gp_xrealloc(t->jobs, (t->n_jobs ? t->n_jobs * 2 : 1) * sizeof *t->jobs);
  if (present(r, GP__COL_IDLE_TAIL)) t->has_idle_tail = true;
  t->jobs[t->n_jobs++] = j;
  return 0;
}
