/* SPDX-License-Identifier: Apache-2.0 */
/* What gpool's Slurm commands share (slurm.h): state codes, Slurm's time forms, job ids
 * and node lists as Slurm prints them, and paging through job listings. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "cli/slurm.h"
#include "util/hostlist.h"
#include "util/mem.h"

static const struct {
  const char *state, *code, *name;
} states[] = {
  {"pending", "PD", "PENDING"},     {"held", "PD", "PENDING"},
  {"running", "R", "RUNNING"},      {"stopping", "CG", "COMPLETING"},
  {"completed", "CD", "COMPLETED"}, {"failed", "F", "FAILED"},
  {"cancelled", "CA", "CANCELLED"}, {"timeout", "TO", "TIMEOUT"},
  {"preempted", "PR", "PREEMPTED"},
};
#define N_STATES (sizeof states / sizeof states[0])

const char *gp_slurm_state_code(const char *state) {
  for (size_t i = 0; state && i < N_STATES; i++)
    if (strcmp(state, states[i].state) == 0) return states[i].code;
  return "??";
}

const char *gp_slurm_state_long(const char *state) {
  for (size_t i = 0; state && i < N_STATES; i++)
    if (strcmp(state, states[i].state) == 0) return states[i].name;
  return "UNKNOWN";
}

bool gp_slurm_state_word(const char *word, json_t *set) {
  bool any = false;
  for (size_t i = 0; i < N_STATES; i++) {
    if (strcasecmp(word, "all") == 0 || strcasecmp(word, states[i].code) == 0 ||
        strcasecmp(word, states[i].name) == 0) {
      json_object_set_new(set, states[i].state, json_true());
      any = true;
    }
  }
  return any;
}

void gp_slurm_fmt_elapsed(int64_t s, char *out, size_t cap) {
  if (s < 0) s = 0;
  long long d = s / 86400, h = s / 3600 % 24, m = s / 60 % 60, sec = s % 60;
  if (d) snprintf(out, cap, "%lld-%02lld:%02lld:%02lld", d, h, m, sec);
  else if (h) snprintf(out, cap, "%lld:%02lld:%02lld", h, m, sec);
  else snprintf(out, cap, "%lld:%02lld", m, sec);
}

void gp_slurm_fmt_limit(int64_t s, char *out, size_t cap) {
  if (s <= 0) snprintf(out, cap, "UNLIMITED");
  else gp_slurm_fmt_elapsed(s, out, cap); /* squeue prints both alike: "10:00", "1:00:00" */
}

void gp_slurm_fmt_time(int64_t t, const char *none, char *out, size_t cap) {
  time_t tt = (time_t)t;
  struct tm tm;
  if (t <= 0 || !localtime_r(&tt, &tm) || strftime(out, cap, "%Y-%m-%dT%H:%M:%S", &tm) == 0)
    snprintf(out, cap, "%s", none);
}

int64_t gp_slurm_int(json_t *obj, const char *key) {
  json_t *v = json_object_get(obj, key);
  return json_is_integer(v) ? (int64_t)json_integer_value(v) : json_is_real(v) ? (int64_t)json_real_value(v) : 0;
}

const char *gp_slurm_str(json_t *obj, const char *key, const char *none) {
  const char *s = json_string_value(json_object_get(obj, key));
  return s && *s ? s : none;
}

const char *gp_slurm_job_id(json_t *job) {
  const char *a = json_string_value(json_object_get(job, "array_id"));
  return a ? a : gp_slurm_str(job, "id", "?");
}

bool gp_slurm_id_matches(json_t *job, const char *word) {
  const char *id = json_string_value(json_object_get(job, "id"));
  const char *a = json_string_value(json_object_get(job, "array_id"));
  const char *parent = json_string_value(json_object_get(job, "array_job_id"));
  return (id && strcmp(id, word) == 0) || (a && strcmp(a, word) == 0) ||
         (parent && strcmp(parent, word) == 0);
}

int gp_slurm_nodelist(json_t *job, char *out, size_t cap) {
  json_t *pl = json_object_get(job, "placements");
  size_t n = json_array_size(pl);
  const char **names = gp_xcalloc(n ? n : 1, sizeof *names);
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    const char *name = json_string_value(json_object_get(json_array_get(pl, i), "node"));
    if (!name || !*name) continue;
    bool seen = false;
    for (size_t j = 0; j < k && !seen; j++) seen = strcmp(names[j], name) == 0;
    if (!seen) names[k++] = name;
  }
  out[0] = '\0';
  if (k && gp_hostlist_compress(names, k, out, cap) != 0) {
    /* A name a hostlist cannot hold: the names joined, as much as fits. */
    size_t len = 0;
    for (size_t j = 0; j < k && len + 2 < cap; j++)
      len += (size_t)snprintf(out + len, cap - len, "%s%s", j ? "," : "", names[j]);
  }
  free(names);
  return (int)k;
}

int64_t gp_slurm_elapsed(json_t *job, int64_t now) {
  int64_t start = gp_slurm_int(job, "started_at"), end = gp_slurm_int(job, "ended_at");
  if (start <= 0) return 0;
  return (end > 0 ? end : now) - start;
}

int gp_slurm_fetch_jobs(gp_cli *cli, const char *base, const char *cursor_key, json_t *all) {
  char path[2600];
  char *next = NULL;
  snprintf(path, sizeof path, "%slimit=10000", base);
  for (;;) {
    json_t *page = NULL;
    int code = gp_cli_call(cli, "GET", path, NULL, &page);
    if (code) {
      free(next);
      return code;
    }
    size_t i;
    json_t *job;
    json_array_foreach(json_object_get(page, "jobs"), i, job) json_array_append(all, job);
    const char *cursor = json_string_value(json_object_get(page, "next"));
    free(next);
    next = cursor && strlen(cursor) < 200 ? gp_xstrdup(cursor) : NULL;
    json_decref(page);
    if (!next) return 0;
    snprintf(path, sizeof path, "%slimit=10000&%s=%s", base, cursor_key, next);
  }
}

int gp_slurm_usage(const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "%s: error: ", cmd);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  return 2;
}

int gp_slurm_connect(gp_cli *cli, const char *cmd) {
  cli->cmd = cmd;
  return gp_cli_connect(cli);
}
