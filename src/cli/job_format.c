/* SPDX-License-Identifier: Apache-2.0 */
/* Jobs as people read them (job_format.h). Every field may be missing or of the wrong type
 * in a hostile or older server's answer; each reader falls back to "-" or nothing. */
#include "cli/job_format.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli_common.h"
#include "util/units.h"

static const char *str(json_t *o, const char *key) {
  const char *s = json_string_value(json_object_get(o, key));
  return s ? s : "";
}

static int64_t num(json_t *o, const char *key) {
  json_t *v = json_object_get(o, key);
  int64_t x = 0;
  if (json_is_integer(v)) return json_integer_value(v);
  return json_is_real(v) && gp_real_to_int64(json_real_value(v), &x) == 0 ? x : 0;
}

/* A number (integer or real) as a double; 0 when absent. */
static double num_d(json_t *o, const char *key) {
  json_t *v = json_object_get(o, key);
  return json_is_number(v) ? json_number_value(v) : 0;
}

int gp_job_state_final(const char *state) {
  static const char *const final_states[] = {"completed", "failed", "cancelled", "preempted", "timeout", NULL};
  for (int i = 0; final_states[i]; i++)
    if (!strcmp(state, final_states[i])) return 1;
  return 0;
}

void gp_job_fmt_gpus(json_t *job, char *out, size_t cap) {
  int64_t tasks = num(job, "tasks");
  int64_t gpus = num(job, "gpus");
  double frac = gp_cli_num(json_object_get(job, "gpu_fraction"));
  int64_t gmem = num(job, "gpu_mem_mib");
  const char *mig = str(job, "mig");
  char one[48];
  if (*mig) snprintf(one, sizeof one, "mig:%s", mig);
  else if (gmem > 0) {
    char m[24];
    gp_cli_fmt_mib(gmem, m, sizeof m);
    snprintf(one, sizeof one, "%s/GPU", m);
  } else if (frac > 0) gp_cli_fmt_gpus(frac, one, sizeof one);
  else if (gpus > 0) snprintf(one, sizeof one, "%lld", (long long)gpus);
  else snprintf(one, sizeof one, "-");
  if (tasks > 1) snprintf(out, cap, "%lldx%s", (long long)tasks, one);
  else snprintf(out, cap, "%s", one);
}

void gp_job_fmt_nodes(json_t *job, char *out, size_t cap) {
  json_t *pl = json_object_get(job, "placements");
  size_t n = json_array_size(pl), o = 0;
  out[0] = '\0';
  for (size_t i = 0; i < n && o + 1 < cap; i++) {
    if (i == 3) {
      snprintf(out + o, cap - o, "+%zu", n - 3);
      return;
    }
    int w = snprintf(out + o, cap - o, "%s%s", i ? "," : "", str(json_array_get(pl, i), "node"));
    if (w < 0) return;
    o += (size_t)w;
  }
}

int64_t gp_job_elapsed(json_t *job, int64_t now) {
  const char *state = str(job, "state");
  int64_t sub = num(job, "submitted_at"), st = num(job, "started_at"), end = num(job, "ended_at");
  if (gp_job_state_final(state)) return st && end ? end - st : 0;
  if (!strcmp(state, "running") || !strcmp(state, "stopping")) return st ? now - st : 0;
  return sub ? now - sub : 0;
}

const char *gp_job_reason(json_t *job) {
  const char *state = str(job, "state");
  if (!strcmp(state, "pending")) return str(job, "pending_reason");
  if (!strcmp(state, "held")) return "Held";
  if (gp_job_state_final(state)) return str(job, "end_reason");
  return "";
}

static void fmt_time(int64_t t, char *out, size_t cap) {
  time_t tt = (time_t)t;
  struct tm tm;
  if (t <= 0 || !localtime_r(&tt, &tm)) {
    snprintf(out, cap, "-");
    return;
  }
  strftime(out, cap, "%Y-%m-%d %H:%M:%S", &tm);
}

/* "04:44:32 (in 30m)" for a future time, local clock; the date too when not today. */
static void fmt_when(int64_t t, int64_t now, char *out, size_t cap) {
  time_t tt = (time_t)t, nn = (time_t)now;
  struct tm tm, tn;
  char clock[40], in[32];
  if (!localtime_r(&tt, &tm) || !localtime_r(&nn, &tn)) {
    snprintf(out, cap, "-");
    return;
  }
  strftime(clock, sizeof clock, tm.tm_yday == tn.tm_yday && tm.tm_year == tn.tm_year ? "%H:%M:%S" : "%Y-%m-%d %H:%M:%S", &tm);
  gp_cli_fmt_duration(t - now, in, sizeof in);
  if (t > now) snprintf(out, cap, "%s (in %s)", clock, in);
  else snprintf(out, cap, "%s", clock);
}

/* A running job's idleness and its queue's verdict, from the job's `idle` object: "under 5%
 * SM since 10:02:11 (12m); policy: requeue at 10:12:11 (in 2m)". Nothing when it is not
 * idle (or its use is unknown). */
static void fmt_idle(json_t *job, int64_t now, gp_buf *out) {
  json_t *idle = json_object_get(job, "idle");
  int64_t since = num(idle, "since");
  if (!json_is_object(idle) || since <= 0) return;
  char when[80], d[64];
  fmt_when(since, now, when, sizeof when);
  gp_cli_fmt_duration(now > since ? now - since : 0, d, sizeof d);
  gp_buf_printf(out, "under %g%% SM since %s (%s); ", gp_cli_num(json_object_get(idle, "threshold_pct")),
                when, d);
  const char *action = str(idle, "action");
  if (!*action) {
    gp_buf_puts(out, "its queue has no idle policy");
    return;
  }
  int64_t due = num(idle, "due_at");
  fmt_when(due, now, when, sizeof when);
  if (json_is_true(json_object_get(idle, "acted")))
    gp_buf_printf(out, "policy: %s at %s", !strcmp(action, "notify") ? "notified" : action, when);
  else if (due > now)
    gp_buf_printf(out, "policy: %s at %s", action, when);
  else
    gp_buf_printf(out, "policy: %s now", action);
  if (*str(idle, "why")) gp_buf_printf(out, " (%s)", str(idle, "why"));
}

static void join_strings(json_t *arr, const char *sep, gp_buf *out) {
  size_t i;
  json_t *v;
  json_array_foreach(arr, i, v) {
    if (json_is_string(v)) gp_buf_printf(out, "%s%s", i ? sep : "", json_string_value(v));
    else if (json_is_integer(v)) gp_buf_printf(out, "%s%lld", i ? sep : "", (long long)json_integer_value(v));
  }
}

/* Each run of the job: its number, start, end (or "running"), nodes and why it ended. */
static void format_attempts(json_t *attempts, gp_buf *out) {
  if (!json_array_size(attempts)) return;
  gp_buf_puts(out, "  attempts\n");
  size_t i;
  json_t *a;
  json_array_foreach(attempts, i, a) {
    char t0[64], t1[64];
    fmt_time(num(a, "start"), t0, sizeof t0);
    if (json_is_integer(json_object_get(a, "end"))) fmt_time(num(a, "end"), t1, sizeof t1);
    else snprintf(t1, sizeof t1, "running");
    gp_buf_printf(out, "    %-3lld %s .. %s  on ", (long long)num(a, "attempt"), t0, t1);
    join_strings(json_object_get(a, "nodes"), ",", out);
    if (*str(a, "end_reason")) gp_buf_printf(out, ": %s", str(a, "end_reason"));
    gp_buf_puts(out, "\n");
  }
}

/* A shell-like rendering of the command: words with spaces get quotes. */
static void fmt_command(json_t *cmd, gp_buf *out) {
  size_t i;
  json_t *v;
  json_array_foreach(cmd, i, v) {
    const char *w = json_string_value(v);
    if (!w) continue;
    if (i) gp_buf_puts(out, " ");
    if (!*w || strpbrk(w, " \t\"'$`\\")) gp_buf_printf(out, "'%s'", w);
    else gp_buf_puts(out, w);
  }
}

/* Its srun steps: id, tasks on nodes, state, exit code (and a failed task's reason), the
 * command. */
static void format_steps(json_t *steps, gp_buf *out) {
  if (!json_array_size(steps)) return;
  gp_buf_puts(out, "  steps\n");
  size_t i;
  json_t *s;
  json_array_foreach(steps, i, s) {
    json_t *ec = json_object_get(s, "exit_code");
    char code[32] = "";
    if (json_is_integer(ec)) snprintf(code, sizeof code, " exit %lld", (long long)json_integer_value(ec));
    gp_buf_printf(out, "    %-4lld %lld tasks on ", (long long)num(s, "id"), (long long)num(s, "ntasks"));
    join_strings(json_object_get(s, "nodes"), ",", out);
    gp_buf_printf(out, "  %s%s", str(s, "state"), code);
    if (*str(s, "reason")) gp_buf_printf(out, " (%s)", str(s, "reason"));
    gp_buf_puts(out, "  ");
    fmt_command(json_object_get(s, "command"), out);
    gp_buf_puts(out, "\n");
    size_t k;
    json_t *t;
    json_array_foreach(json_object_get(s, "tasks"), k, t) {
      const char *why = str(t, "reason");
      if (!*why || !strcmp(why, "exited")) continue;
      gp_buf_printf(out, "           task %zu on %s: %s%s%s\n", k, str(t, "node"), why, *str(t, "message") ? ": " : "",
                    str(t, "message"));
    }
  }
}

void gp_job_fmt_show(json_t *job, int64_t now, gp_buf *out) {
  char gpus[64], t[64], d[64];
  const char *state = str(job, "state");
  gp_buf_printf(out, "Job %s", str(job, "id"));
  if (*str(job, "name")) gp_buf_printf(out, " (%s)", str(job, "name"));
  gp_buf_printf(out, ": %s", state);
  if (!strcmp(state, "pending") && *str(job, "pending_reason")) gp_buf_printf(out, " (%s)", str(job, "pending_reason"));
  if (gp_job_state_final(state) && json_is_integer(json_object_get(job, "exit_code")))
    gp_buf_printf(out, ", exit code %lld", (long long)num(job, "exit_code"));
  gp_buf_puts(out, "\n");
  gp_buf_printf(out, "  user       %s\n  queue      %s\n", str(job, "user"), str(job, "queue"));
  if (*str(job, "priority")) gp_buf_printf(out, "  priority   %s\n", str(job, "priority"));
  gp_buf_puts(out, "  command    ");
  fmt_command(json_object_get(job, "command"), out);
  gp_buf_printf(out, "\n  workdir    %s\n", str(job, "workdir"));

  gp_job_fmt_gpus(job, gpus, sizeof gpus);
  gp_buf_printf(out, "  request    GPUs %s", gpus);
  if (json_array_size(json_object_get(job, "gpu_types"))) {
    gp_buf_puts(out, " (");
    join_strings(json_object_get(job, "gpu_types"), ", ", out);
    gp_buf_puts(out, ")");
  }
  if (num(job, "cpus")) gp_buf_printf(out, ", %lld CPUs", (long long)num(job, "cpus"));
  if (num(job, "mem_mib")) {
    gp_cli_fmt_mib(num(job, "mem_mib"), t, sizeof t);
    gp_buf_printf(out, ", %s memory", t);
  }
  if (num(job, "time_limit")) {
    gp_cli_fmt_duration(num(job, "time_limit"), t, sizeof t);
    gp_buf_printf(out, ", time limit %s", t);
  }
  if (num(job, "nodes") > 0) gp_buf_printf(out, ", on exactly %lld node%s", (long long)num(job, "nodes"),
                                           num(job, "nodes") == 1 ? "" : "s");
  if (num(job, "tasks_per_node") > 0)
    gp_buf_printf(out, ", at most %lld tasks a node", (long long)num(job, "tasks_per_node"));
  if (json_is_true(json_object_get(job, "exclusive"))) gp_buf_puts(out, ", exclusive nodes");
  gp_buf_puts(out, "\n");
  gp_buf_printf(out, "  on stop    %s, signal %s, grace %llds; restarts %lld\n",
                json_is_true(json_object_get(job, "requeue")) ? "requeue" : "no requeue",
                *str(job, "signal") ? str(job, "signal") : "TERM", (long long)num(job, "grace_s"),
                (long long)num(job, "restarts"));
  if (num(job, "warn_before_s") || *str(job, "warn_signal"))
    gp_buf_printf(out, "  warning    SIG%s %llds before the limit, to %s\n", str(job, "warn_signal"),
                  (long long)num(job, "warn_before_s"),
                  json_is_true(json_object_get(job, "warn_batch")) ? "the batch shell" : "every process");
  if (json_is_true(json_object_get(job, "batch")))
    gp_buf_printf(out, "  runs       once, as the batch step on the first node%s\n",
                  num(job, "tasks") > 1 ? "; the other tasks hold their share for srun" : "");
  else if (num(job, "tasks") > 1)
    gp_buf_puts(out, "  runs       the command in every task\n");
  if (num(job, "begin_at")) {
    fmt_time(num(job, "begin_at"), t, sizeof t);
    gp_buf_printf(out, "  begins     not before %s\n", t);
  }
  if (*str(job, "output") || *str(job, "error"))
    gp_buf_printf(out, "  files      %s%s%s (%s)\n", *str(job, "output") ? str(job, "output") : "-",
                  *str(job, "error") ? ", stderr " : "", str(job, "error"), str(job, "open_mode"));
  static const char *const deps[][2] = {{"after", "after"}, {"after_ok", "afterok"}, {"after_any", "afterany"},
                                        {"after_not_ok", "afternotok"}, {"after_corr", "aftercorr"}};
  for (int i = 0; i < 5; i++)
    if (json_array_size(json_object_get(job, deps[i][0]))) {
      gp_buf_printf(out, "  depends    %s ", deps[i][1]);
      join_strings(json_object_get(job, deps[i][0]), ",", out);
      gp_buf_puts(out, "\n");
    }
  if (json_is_true(json_object_get(job, "singleton"))) gp_buf_puts(out, "  depends    singleton\n");
  json_t *arr = json_object_get(job, "array");
  if (json_is_object(arr))
    gp_buf_printf(out, "  array      %s: %lld elements, %lld pending, %lld running, %lld ended (%lld failed, %lld cancelled)\n",
                  str(arr, "spec"), (long long)num(arr, "count"), (long long)num(arr, "n_pending"),
                  (long long)num(arr, "n_running"), (long long)num(arr, "n_ended"), (long long)num(arr, "n_failed"),
                  (long long)num(arr, "n_cancelled"));
  if (*str(job, "array_id"))
    gp_buf_printf(out, "  array      element %lld of array %s (%s)\n", (long long)num(job, "array_index"),
                  str(job, "array_job_id"), str(job, "array_id"));
  json_t *pl = json_object_get(job, "placements");
  if (json_array_size(pl)) {
    gp_buf_puts(out, "  placement\n");
    size_t i;
    json_t *p;
    json_array_foreach(pl, i, p) {
      gp_buf_printf(out, "    %-12s GPUs ", str(p, "node"));
      join_strings(json_object_get(p, "gpu_ids"), ",", out);
      int64_t milli = num(p, "gpu_milli");
      if (milli > 0 && milli < 1000) gp_buf_printf(out, " (%lld/1000 of each)", (long long)milli);
      if (*str(p, "mig_uuid")) gp_buf_printf(out, "  %s", str(p, "mig_uuid"));
      else if (json_array_size(json_object_get(p, "gpu_uuids"))) {
        gp_buf_puts(out, "  ");
        join_strings(json_object_get(p, "gpu_uuids"), ",", out);
      }
      gp_buf_puts(out, "\n");
    }
  }
  if (*str(job, "enforcement")) gp_buf_printf(out, "  enforced   %s\n", str(job, "enforcement"));
  format_attempts(json_object_get(job, "attempts"), out);
  format_steps(json_object_get(job, "steps"), out);

  json_t *tl = json_object_get(job, "timeline");
  if (json_array_size(tl)) {
    gp_buf_puts(out, "  timeline\n");
    size_t i;
    json_t *ev;
    json_array_foreach(tl, i, ev) {
      fmt_time(num(ev, "at"), t, sizeof t);
      gp_buf_printf(out, "    %s  %s", t, str(ev, "event"));
      if (*str(ev, "node")) gp_buf_printf(out, " on %s", str(ev, "node"));
      if (*str(ev, "state")) gp_buf_printf(out, " %s", str(ev, "state"));
      if (json_is_integer(json_object_get(ev, "exit_code")))
        gp_buf_printf(out, " (exit code %lld)", (long long)num(ev, "exit_code"));
      if (*str(ev, "reason")) gp_buf_printf(out, ": %s", str(ev, "reason"));
      /* A pull's phase says what it does: "pulling image REF (3.1 of 9.8 GB)". */
      else if (*str(ev, "message") && (!strcmp(str(ev, "event"), "pulling_image") ||
                                       !strcmp(str(ev, "event"), "image_pulled")))
        gp_buf_printf(out, ": %s", str(ev, "message"));
      gp_buf_puts(out, "\n");
    }
  }
  if (!strcmp(state, "pending") && num(job, "reservation_at") > 0) {
    char when[80];
    fmt_when(num(job, "reservation_at"), now, when, sizeof when);
    gp_buf_printf(out, "  reserved   to start by %s\n", when);
  }
  gp_cli_fmt_duration(gp_job_elapsed(job, now), d, sizeof d);
  if (!strcmp(state, "running") || !strcmp(state, "stopping")) gp_buf_printf(out, "  running for %s\n", d);
  else if (gp_job_state_final(state) && num(job, "started_at")) gp_buf_printf(out, "  ran for %s\n", d);
  else if (!gp_job_state_final(state)) gp_buf_printf(out, "  waiting for %s\n", d);

  json_t *u = json_object_get(job, "usage");
  if (json_is_object(u) && json_object_size(u)) {
    gp_buf_puts(out, "  usage     ");
    if (json_object_get(u, "avg_sm_util_pct"))
      gp_buf_printf(out, " avg SM %.0f%%,", gp_cli_num(json_object_get(u, "avg_sm_util_pct")));
    if (json_object_get(u, "peak_sm_util_pct"))
      gp_buf_printf(out, " peak SM %.0f%%,", gp_cli_num(json_object_get(u, "peak_sm_util_pct")));
    if (json_object_get(u, "peak_mem_mib")) {
      gp_cli_fmt_mib((int64_t)gp_cli_num(json_object_get(u, "peak_mem_mib")), t, sizeof t);
      gp_buf_printf(out, " peak GPU memory %s,", t);
    }
    if (json_object_get(u, "energy_j"))
      gp_buf_printf(out, " energy %.1f kJ,", gp_cli_num(json_object_get(u, "energy_j")) / 1000.0);
    if (json_object_get(u, "idle_s")) {
      gp_cli_fmt_duration((int64_t)gp_cli_num(json_object_get(u, "idle_s")), t, sizeof t);
      gp_buf_printf(out, " idle %s,", t);
    }
    if (out->len && out->data[out->len - 1] == ',') out->data[--out->len] = '\0';
    gp_buf_puts(out, "\n");
  }
  if (!strcmp(state, "running") && num(json_object_get(job, "idle"), "since") > 0) {
    gp_buf_puts(out, "  idle       ");
    fmt_idle(job, now, out);
    gp_buf_puts(out, "\n");
  }
}

/* A sentence for a machine-readable pending reason when the server sent none. */
static const char *reason_sentence(const char *r) {
  static const char *const map[][2] = {
    {"Priority", "jobs ahead of it in the queue order go first"},
    {"QueueLimit", "its queue (or a parent queue) is at its GPU limit"},
    {"Resources", "there are not enough free GPUs, CPUs or memory that fit its request right now"},
    {"Reservation", "starting it now would delay a bigger job that has a reservation"},
    {"Dependency", "it waits for the jobs it depends on"},
    {"Held", "it is held"},
    {"NoMatchingNodes", "no node that is up can satisfy its request"},
    {"GpuModelUnavailable", "no node with the GPU model it asks for is available"},
    {"WaitingForPreemption", "GPUs are being freed for it: the jobs it preempts are stopping"},
    {"UserGpuLimit", "its user holds the most GPUs its queue allows one user"},
    {"UserGpuHours", "its user used the GPU-hours its queue allows one user this period"},
  };
  for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
    if (!strcmp(r, map[i][0])) return map[i][1];
  return NULL;
}

/* The scheduler's sentence without a raw clock value ("... from t=1796015677."): the CLI
 * says the time itself, from reservation_at. Copies msg into out (cap bytes). */
static void strip_raw_time(const char *msg, char *out, size_t cap) {
  snprintf(out, cap, "%s", msg);
  char *t = out;
  while ((t = strstr(t, "t=")) != NULL) {
    if ((t == out || t[-1] == ' ') && t[2] >= '0' && t[2] <= '9') break;
    t += 2;
  }
  if (!t) return;
  char *cut = t;
  /* drop the little word that introduced it ("from", "at", "by") */
  static const char *const lead[] = {" from ", " at ", " by ", " until "};
  for (size_t i = 0; i < sizeof lead / sizeof lead[0]; i++) {
    size_t n = strlen(lead[i]);
    if ((size_t)(t - out) >= n && !strncmp(t - n, lead[i], n)) {
      cut = t - n;
      break;
    }
  }
  *cut = '\0';
  size_t len = strlen(out);
  while (len && (out[len - 1] == ' ' || out[len - 1] == ',' || out[len - 1] == ':')) out[--len] = '\0';
}

/* The reason of the job's last `event` set by a queue budget ("held", "demoted"), or "".
 * A budget's hold outlasts its owner's hold and release (a "held" by the owner, a
 * "released" of hold "user"): only another release lifts it. */
static const char *budget_reason(json_t *job, const char *event) {
  json_t *tl = json_object_get(job, "timeline");
  bool held = !strcmp(event, "held");
  for (size_t i = json_array_size(tl); i-- > 0;) {
    json_t *e = json_array_get(tl, i);
    const char *name = str(e, "event");
    if (held && !strcmp(name, "released")) {
      if (!strcmp(str(e, "hold"), "user")) continue;
      return "";
    }
    if (!strcmp(name, event)) {
      if (!strcmp(str(e, "by"), "budget")) return str(e, "reason");
      if (held) continue;
      return "";
    }
  }
  return "";
}

/* The fair-share line of `gpool why`: the factors of the job's queue and of its user in
 * that queue (GET /v1/jobs/{id} gives them; a list does not). */
static void fmt_fairshare(json_t *job, gp_buf *out) {
  json_t *fs = json_object_get(job, "fairshare");
  json_t *q = json_object_get(fs, "queue"), *u = json_object_get(fs, "user");
  if (!json_is_object(q)) return;
  gp_buf_printf(out, "Fair share: queue %s factor %.3f (usage %.3g GPUs over time, %.0f%% of its "
                     "siblings' for a share of %.0f%%)",
                str(job, "queue"), num_d(q, "factor"), num_d(q, "usage_gpus"),
                100 * num_d(q, "effective_usage"), 100 * num_d(q, "share"));
  if (json_is_object(u))
    gp_buf_printf(out, "; user %s factor %.3f (%.0f%% of the queue's usage for a share of %.0f%%)",
                  str(job, "user"), num_d(u, "factor"), 100 * num_d(u, "effective_usage"),
                  100 * num_d(u, "share"));
  gp_buf_puts(out, ".\n");
}

void gp_job_fmt_why(json_t *job, int64_t now, gp_buf *out) {
  const char *id = str(job, "id"), *state = str(job, "state");
  char d[64], nodes[256];
  gp_cli_fmt_duration(gp_job_elapsed(job, now), d, sizeof d);
  gp_job_fmt_nodes(job, nodes, sizeof nodes);
  if (!strcmp(state, "pending")) {
    char msg[600];
    strip_raw_time(str(job, "pending_message"), msg, sizeof msg);
    const char *reason = str(job, "pending_reason");
    const char *sentence = *msg ? msg : reason_sentence(reason);
    gp_buf_printf(out, "Job %s has been pending for %s", id, d);
    if (sentence) {
      size_t n = strlen(sentence);
      gp_buf_printf(out, ": %.*s", (int)(n && sentence[n - 1] == '.' ? n - 1 : n), sentence);
    } else if (*reason) {
      gp_buf_printf(out, " (reason: %s)", reason);
    } else {
      gp_buf_puts(out, "; the scheduler has not looked at it yet");
    }
    int64_t at = num(job, "reservation_at");
    if (at > 0) {
      char when[80];
      fmt_when(at, now, when, sizeof when);
      gp_buf_printf(out, "; it should start by %s", when);
    }
    gp_buf_puts(out, ".\n");
    if (*budget_reason(job, "demoted")) gp_buf_printf(out, "Demoted: %s.\n", budget_reason(job, "demoted"));
    fmt_fairshare(job, out);
  } else if (!strcmp(state, "held")) {
    const char *why = budget_reason(job, "held");
    if (*why) gp_buf_printf(out, "Job %s is held: %s.\n", id, why);
    else gp_buf_printf(out, "Job %s is held: it will not start until you run 'gpool release %s'.\n", id, id);
  } else if (!strcmp(state, "running")) {
    gp_buf_printf(out, "Job %s is not pending: it has been running on %s for %s.\n", id, *nodes ? nodes : "its nodes", d);
    if (num(json_object_get(job, "idle"), "since") > 0) {
      gp_buf_puts(out, "Idle: ");
      fmt_idle(job, now, out);
      gp_buf_puts(out, ".\n");
    }
    if (*budget_reason(job, "demoted")) gp_buf_printf(out, "Demoted: %s.\n", budget_reason(job, "demoted"));
  } else if (!strcmp(state, "stopping")) {
    gp_buf_printf(out, "Job %s is not pending: it is stopping on %s (inside its grace period).\n", id,
                  *nodes ? nodes : "its nodes");
  } else {
    gp_buf_printf(out, "Job %s is not pending: it ended as %s", id, *state ? state : "unknown");
    if (json_is_integer(json_object_get(job, "exit_code")))
      gp_buf_printf(out, " with exit code %lld", (long long)num(job, "exit_code"));
    if (*str(job, "end_reason")) gp_buf_printf(out, " (%s)", str(job, "end_reason"));
    int64_t end = num(job, "ended_at");
    if (end) {
      gp_cli_fmt_duration(now - end, d, sizeof d);
      gp_buf_printf(out, ", %s ago", d);
    }
    gp_buf_puts(out, ".\n");
  }
}
