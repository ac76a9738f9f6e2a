/* SPDX-License-Identifier: Apache-2.0 */
/* `gpool submit`'s batch options (src/cli/submit_batch.c) and the output file patterns they
 * carry (src/protocol/outpath.c): --begin's forms against a fixed clock, --export over a
 * given environment with its bounds, --signal's two forms, and the patterns' checks and
 * expansion. */
#include "test.h"

#include <jansson.h>
#include <stdlib.h>
#include <time.h>

#include "cli/submit_batch.h"
#include "protocol/outpath.h"

/* 2026-12-06 17:30:00 UTC. */
#define NOW INT64_C(1796578200)

static void begin_forms(void) {
  setenv("TZ", "UTC", 1);
  tzset();
  int64_t at = 0;
  CHECK(gp_submit_parse_begin("now+3", NOW, &at) == 0);
  CHECK_EQ_INT(NOW + 3, at);
  CHECK(gp_submit_parse_begin("now+1hour", NOW, &at) == 0);
  CHECK_EQ_INT(NOW + 3600, at);
  CHECK(gp_submit_parse_begin("now+30min", NOW, &at) == 0);
  CHECK_EQ_INT(NOW + 1800, at);
  CHECK(gp_submit_parse_begin("now+2days", NOW, &at) == 0);
  CHECK_EQ_INT(NOW + 2 * 86400, at);
  CHECK(gp_submit_parse_begin("midnight", NOW, &at) == 0);
  CHECK_EQ_INT(NOW + 6 * 3600 + 1800, at); /* the next 00:00 */
  CHECK(gp_submit_parse_begin("tomorrow", NOW, &at) == 0);
  CHECK_EQ_INT(NOW + 6 * 3600 + 1800, at);
  CHECK(gp_submit_parse_begin("noon", NOW, &at) == 0);
  CHECK_EQ_INT(NOW + 18 * 3600 + 1800, at); /* 12:00 passed today: tomorrow's */
  CHECK(gp_submit_parse_begin("18:00", NOW, &at) == 0);
  CHECK_EQ_INT(NOW + 1800, at);
  CHECK(gp_submit_parse_begin("2026-12-24T10:00", NOW, &at) == 0);
  CHECK_EQ_INT(INT64_C(1798106400), at);
  CHECK(gp_submit_parse_begin("2026-12-24", NOW, &at) == 0);
  CHECK_EQ_INT(INT64_C(1798070400), at);
  static const char *const bad[] = {"", "later", "now+", "now+3fortnights", "now-3", "25:00",
                                    "2026-02-30", "2026-12-24T10", "2026-13-01", "noon2"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    if (gp_submit_parse_begin(bad[i], NOW, &at) == 0) GP_FAIL_("'%s' must be refused", bad[i]);
  }
  json_t *req = json_object();
  gp_err err = {0};
  CHECK(gp_submit_begin(req, "whenever", "job.sh:3", &err) != 0);
  CHECK_EQ_STR("begin_at", err.field);
  CHECK_CONTAINS(err.message, "job.sh:3: --begin 'whenever'");
  json_decref(req);
}

static void export_modes(void) {
  char *envp[] = {"HOME=/home/alice", "GP_A=1", "GP_B=two", "GPOOL_TOKEN=secret", "GPOOL_JOB_ID=7",
                  "SLURM_JOB_ID=9", "BASH_FUNC_f%%=() { :; }", "_=/usr/bin/gpool", NULL};
  gp_err err = {0};
  /* #SBATCH script, no --export: ALL, less what is never taken; -e wins. */
  json_t *req = json_pack("{s:{s:s}}", "env", "GP_B", "from-e");
  CHECK(gp_submit_apply_export(req, true, envp, &err) == 0);
  json_t *env = json_object_get(req, "env");
  CHECK_EQ_STR("1", json_string_value(json_object_get(env, "GP_A")));
  CHECK_EQ_STR("from-e", json_string_value(json_object_get(env, "GP_B")));
  CHECK_EQ_STR("/home/alice", json_string_value(json_object_get(env, "HOME")));
  CHECK(json_object_get(env, "GPOOL_TOKEN") == NULL);
  CHECK(json_object_get(env, "GPOOL_JOB_ID") == NULL);
  CHECK(json_object_get(env, "SLURM_JOB_ID") == NULL);
  CHECK(json_object_get(env, "_") == NULL);
  CHECK_EQ_INT(3, (long long)json_object_size(env));
  json_decref(req);
  /* gpool's own submit: NONE. */
  req = json_object();
  CHECK(gp_submit_apply_export(req, false, envp, &err) == 0);
  CHECK(json_object_get(req, "env") == NULL);
  json_decref(req);
  /* A list: named ones from the environment, NAME=value as given. */
  req = json_object();
  CHECK(gp_submit_export(req, "GP_A,X=a b,MISSING", NULL, &err) == 0);
  CHECK(gp_submit_apply_export(req, true, envp, &err) == 0);
  env = json_object_get(req, "env");
  CHECK_EQ_INT(2, (long long)json_object_size(env));
  CHECK_EQ_STR("a b", json_string_value(json_object_get(env, "X")));
  CHECK(json_object_get(req, "_export") == NULL);
  json_decref(req);
  /* --export=NONE on a #SBATCH script. */
  req = json_object();
  CHECK(gp_submit_export(req, "NONE", NULL, &err) == 0);
  CHECK(gp_submit_apply_export(req, true, envp, &err) == 0);
  CHECK(json_object_get(req, "env") == NULL);
  json_decref(req);
  /* Bad spellings name the option. */
  req = json_object();
  CHECK(gp_submit_export(req, "ALL,1BAD", NULL, &err) != 0);
  CHECK_EQ_STR("export", err.field);
  CHECK_CONTAINS(err.message, "--export");
  json_decref(req);
  /* Past the bounds: an error, never a silent cut. */
  size_t n = 600;
  char **big = calloc(n + 1, sizeof *big);
  for (size_t i = 0; i < n; i++) {
    big[i] = malloc(32);
    snprintf(big[i], 32, "V%zu=x", i);
  }
  req = json_object();
  CHECK(gp_submit_apply_export(req, true, big, &err) == GP_ELIMIT);
  CHECK_CONTAINS(err.message, "600 variables");
  json_decref(req);
  for (size_t i = 0; i < n; i++) free(big[i]);
  free(big);
}

static void signal_forms(void) {
  gp_err err = {0};
  json_t *req = json_object();
  CHECK(gp_submit_signal(req, "USR1", false, NULL, &err) == 0); /* gpool's: the stop signal */
  CHECK_EQ_STR("USR1", json_string_value(json_object_get(req, "signal")));
  CHECK(json_object_get(req, "warn_signal") == NULL);
  json_decref(req);
  req = json_object();
  CHECK(gp_submit_signal(req, "USR2@30", false, NULL, &err) == 0);
  CHECK_EQ_STR("USR2", json_string_value(json_object_get(req, "warn_signal")));
  CHECK_EQ_INT(30, json_integer_value(json_object_get(req, "warn_before_s")));
  CHECK(json_is_false(json_object_get(req, "warn_batch")));
  CHECK(json_object_get(req, "signal") == NULL);
  json_decref(req);
  req = json_object();
  CHECK(gp_submit_signal(req, "B:TERM", true, NULL, &err) == 0); /* Slurm's default: 60 s */
  CHECK_EQ_INT(60, json_integer_value(json_object_get(req, "warn_before_s")));
  CHECK(json_is_true(json_object_get(req, "warn_batch")));
  CHECK(gp_submit_signal(req, "KILL@5", true, NULL, &err) != 0);
  CHECK(gp_submit_signal(req, "USR1@-1", true, NULL, &err) != 0);
  CHECK_EQ_STR("signal", err.field);
  json_decref(req);
}

static void output_patterns(void) {
  CHECK(gp_outpath_check("logs/%x-%j.out") == NULL);
  CHECK(gp_outpath_check("%A_%4a.%N.%t.%u.%%") == NULL);
  CHECK(gp_outpath_check("") != NULL);
  CHECK(gp_outpath_check("x%q") != NULL);
  CHECK(gp_outpath_check("x%") != NULL);
  CHECK(gp_outpath_check("a\nb") != NULL);
  char longname[GP_OUTPATH_MAX + 2];
  memset(longname, 'a', sizeof longname - 1);
  longname[sizeof longname - 1] = '\0';
  CHECK(gp_outpath_check(longname) != NULL);

  gp_outpath_vars v = {.job_id = "42", .name = "my/run", .user = "alice", .node = "gpu7.dc1.example",
                       .task = 3};
  char out[256];
  CHECK(gp_outpath_expand("logs/%x-%j.out", &v, out, sizeof out) == 0);
  CHECK_EQ_STR("logs/my_run-42.out", out); /* a name never makes a directory */
  CHECK(gp_outpath_expand("%N-%3t-%u-%A-%a-%%", &v, out, sizeof out) == 0);
  CHECK_EQ_STR("gpu7-003-alice-42-4294967294-%", out);
  v.array_id = "40";
  v.array_index = "2";
  CHECK(gp_outpath_expand("%A_%a", &v, out, sizeof out) == 0);
  CHECK_EQ_STR("40_2", out);
  CHECK(gp_outpath_expand("%x%x%x", &v, out, 8) == -1); /* does not fit: refused, not cut */

  json_t *req = json_object();
  gp_err err = {0};
  CHECK(gp_submit_output(req, "output", "-o/--output", "x%q", NULL, &err) != 0);
  CHECK_EQ_STR("output", err.field);
  CHECK_CONTAINS(err.message, "-o/--output 'x%q'");
  CHECK(gp_submit_open_mode(req, "sideways", NULL, &err) != 0);
  CHECK(gp_submit_open_mode(req, "append", NULL, &err) == 0);
  json_decref(req);
}

GP_TESTS(begin_forms, export_modes, signal_forms, output_patterns)
