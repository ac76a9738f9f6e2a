/* SPDX-License-Identifier: Apache-2.0 */
/* Slurm's `scancel` through gpool's cancel (slurm.h): job ids (J, an array's every element;
 * J_I, one element) and the filters -u USER, -n NAME, -t STATE, which pick among the active
 * jobs (with ids too, only the ids that match them). Signals (-s) and steps are not gpool's
 * and are refused by name. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/slurm.h"

static const char usage[] =
  "Usage: scancel [JOBID[_INDEX][,...]...] [-u USER] [-n NAME] [-t STATE] [--me]\n";

enum { O_USER = 1, O_NAME, O_STATE, O_ME, O_HELP };
static const gp_opt opts[] = {
  {'u', "user", true, O_USER}, {'n', "name", true, O_NAME}, {0, "jobname", true, O_NAME},
  {'t', "state", true, O_STATE}, {0, "me", false, O_ME},    {0, "help", false, O_HELP},
  {0, NULL, false, 0},
};

#define SCANCEL_MAX_IDS 4096

static int cancel_one(gp_cli *cli, const char *id) {
  char path[300];
  json_t *answer = NULL;
  snprintf(path, sizeof path, "/v1/jobs/%s/cancel", id);
  int code = gp_cli_call(cli, "POST", path, NULL, &answer);
  json_decref(answer);
  return code;
}

int gp_cmd_scancel(int argc, char **argv) {
  const char *user = NULL, *name = NULL;
  bool me = false, filters = false;
  json_t *states = json_object(), *all = json_array(), *who = NULL;
  char *ids[SCANCEL_MAX_IDS];
  int n_ids = 0, code = 0;
  gp_cli cli = {0};
  gp_opt_iter it;
  gp_opt_init(&it, argc, argv, 1);
  for (;;) {
    const char *v = NULL;
    gp_err err = {0};
    int id = gp_opt_next(&it, opts, &v, &err);
    if (id == GP_OPT_END && !it.dashdash) break;
    if (id == GP_OPT_END) continue; /* "--": the ids follow */
    if (id == GP_OPT_POSITIONAL) {
      char buf[4096];
      snprintf(buf, sizeof buf, "%s", v);
      for (char *save = NULL, *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
        if (!gp_cli_valid_job_id(w)) {
          code = gp_slurm_usage("scancel", "invalid job id '%.100s'", w);
          goto out;
        }
        if (n_ids == SCANCEL_MAX_IDS) {
          code = gp_slurm_usage("scancel", "more than %d job ids", SCANCEL_MAX_IDS);
          goto out;
        }
        ids[n_ids++] = strdup(w);
      }
      continue;
    }
    if (id < 0) {
      code = gp_slurm_usage("scancel", "%s (not supported by gpool's scancel)", err.message);
      goto out;
    }
    filters = filters || id != O_HELP;
    if (id == O_HELP) {
      fputs(usage, stdout);
      goto out;
    } else if (id == O_USER) {
      user = v;
    } else if (id == O_NAME) {
      name = v;
    } else if (id == O_ME) {
      me = true;
    } else if (id == O_STATE && !gp_slurm_state_word(v, states)) {
      code = gp_slurm_usage("scancel", "invalid job state '%s' (PD R CG or their names)", v);
      goto out;
    }
  }
  if (!n_ids && !filters) {
    code = gp_slurm_usage("scancel", "no job id given (and no -u, -n, -t or --me filter)");
    goto out;
  }
  if ((code = gp_slurm_connect(&cli, "scancel"))) goto out;
  if (!filters) {
    for (int i = 0; i < n_ids; i++) {
      int rc = cancel_one(&cli, ids[i]);
      if (rc && !code) code = rc;
    }
    goto out;
  }
  if (me) {
    if ((code = gp_cli_call(&cli, "GET", "/v1/whoami", NULL, &who))) goto out;
    user = gp_slurm_str(who, "user", "");
  }
  if ((code = gp_slurm_fetch_jobs(&cli, "/v1/jobs?state=pending,held,running,stopping&", "next", all)))
    goto out;
  json_t *picked = json_object(); /* id -> job */
  size_t i;
  json_t *job;
  json_array_foreach(all, i, job) {
    if (user && strcmp(user, gp_slurm_str(job, "user", "")) != 0) continue;
    if (name && strcmp(name, gp_slurm_str(job, "name", "")) != 0) continue;
    if (json_object_size(states) && !json_object_get(states, gp_slurm_str(job, "state", ""))) continue;
    bool hit = n_ids == 0;
    for (int k = 0; k < n_ids && !hit; k++) hit = gp_slurm_id_matches(job, ids[k]);
    if (hit) json_object_set(picked, gp_slurm_str(job, "id", "?"), job);
  }
  const char *key;
  json_object_foreach(picked, key, job) {
    /* An element whose array is cancelled too goes with it. */
    const char *parent = json_string_value(json_object_get(job, "array_job_id"));
    if (parent && json_object_get(picked, parent)) continue;
    int rc = cancel_one(&cli, key);
    if (rc && !code) code = rc;
  }
  json_decref(picked);
out:
  for (int k = 0; k < n_ids; k++) free(ids[k]);
  json_decref(states);
  json_decref(all);
  json_decref(who);
  gp_cli_done(&cli);
  return code;
}
