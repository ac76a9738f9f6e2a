/* SPDX-License-Identifier: Apache-2.0 */
/* `scontrol show job ID` (slurm.h): the job's document (GET /v1/jobs/ID) in Slurm's
 * key=value layout, with the keys gpool has a value for; none is made up. And `scontrol
 * requeue ID[,ID...]` (POST /v1/jobs/ID/requeue), which a job may ask for itself with its
 * step credential (GPOOL_JOB_KEY), as a batch script's signal trap does. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/slurm.h"

static void dur(int64_t s, char *out, size_t cap) {
  if (s < 0) s = 0;
  if (s >= 86400)
    snprintf(out, cap, "%lld-%02lld:%02lld:%02lld", (long long)(s / 86400), (long long)(s / 3600 % 24),
             (long long)(s / 60 % 60), (long long)(s % 60));
  else
    snprintf(out, cap, "%02lld:%02lld:%02lld", (long long)(s / 3600), (long long)(s / 60 % 60),
             (long long)(s % 60));
}

int gp_slurm_show_job(const char *id) {
  if (!gp_cli_valid_job_id(id)) return gp_slurm_usage("scontrol", "invalid job id '%.100s'", id);
  gp_cli cli = {0};
  json_t *answer = NULL;
  char path[300];
  snprintf(path, sizeof path, "/v1/jobs/%s", id);
  int code = gp_slurm_connect(&cli, "scontrol");
  if (!code) code = gp_cli_call(&cli, "GET", path, NULL, &answer);
  if (code) {
    gp_cli_done(&cli);
    return code;
  }
  json_t *j = json_object_get(answer, "job");
  const char *state = gp_slurm_str(j, "state", "");
  char nodes[4096], t1[64], t2[64], t3[64], lim[64], run[64];
  int n_nodes = gp_slurm_nodelist(j, nodes, sizeof nodes);
  printf("JobId=%s JobName=%s\n", gp_slurm_str(j, "id", "?"), gp_slurm_str(j, "name", ""));
  if (json_object_get(j, "array_job_id"))
    printf("   ArrayJobId=%s ArrayTaskId=%lld\n", gp_slurm_str(j, "array_job_id", ""),
           (long long)gp_slurm_int(j, "array_index"));
  printf("   UserId=%s\n", gp_slurm_str(j, "user", ""));
  const char *reason = gp_slurm_str(j, "pending_reason", "None");
  printf("   JobState=%s Reason=%s\n", gp_slurm_state_long(state), reason);
  json_t *code_v = json_object_get(j, "exit_code");
  int64_t sig = gp_slurm_int(j, "exit_signal"); /* killed by a signal: Slurm's 0:N */
  printf("   Requeue=%d Restarts=%lld ExitCode=%lld:%lld\n", json_is_true(json_object_get(j, "requeue")),
         (long long)gp_slurm_int(j, "restarts"),
         sig > 0 ? 0LL : json_is_integer(code_v) ? (long long)json_integer_value(code_v) : 0LL,
         (long long)(sig > 0 ? sig : 0));
  dur(gp_slurm_elapsed(j, gp_cli_now()), run, sizeof run);
  int64_t limit = gp_slurm_int(j, "time_limit");
  if (limit > 0) dur(limit, lim, sizeof lim);
  else snprintf(lim, sizeof lim, "UNLIMITED");
  printf("   RunTime=%s TimeLimit=%s\n", run, lim);
  gp_slurm_fmt_time(gp_slurm_int(j, "submitted_at"), "Unknown", t1, sizeof t1);
  gp_slurm_fmt_time(gp_slurm_int(j, "started_at"), "Unknown", t2, sizeof t2);
  gp_slurm_fmt_time(gp_slurm_int(j, "ended_at"), "Unknown", t3, sizeof t3);
  printf("   SubmitTime=%s StartTime=%s EndTime=%s\n", t1, t2, t3);
  printf("   Partition=%s\n", gp_slurm_str(j, "queue", ""));
  printf("   NodeList=%s\n", n_nodes ? nodes : "(null)");
  printf("   NumNodes=%d NumTasks=%lld CPUs/Task=%lld\n", n_nodes ? n_nodes : 1,
         (long long)gp_slurm_int(j, "tasks"), (long long)gp_slurm_int(j, "cpus"));
  printf("   TRES=gres/gpu=%lld,mem=%lldM\n", (long long)gp_slurm_int(j, "gpus"),
         (long long)gp_slurm_int(j, "mem_mib"));
  json_t *cmd = json_object_get(j, "command");
  printf("   Command=");
  for (size_t i = 0; i < json_array_size(cmd); i++)
    printf("%s%s", i ? " " : "", json_string_value(json_array_get(cmd, i)) ? json_string_value(json_array_get(cmd, i)) : "");
  printf("\n   WorkDir=%s\n", gp_slurm_str(j, "workdir", ""));
  if (gp_slurm_str(j, "output", NULL)) printf("   StdOut=%s\n", gp_slurm_str(j, "output", ""));
  if (gp_slurm_str(j, "error", NULL)) printf("   StdErr=%s\n", gp_slurm_str(j, "error", ""));
  json_decref(answer);
  gp_cli_done(&cli);
  return 0;
}

int gp_slurm_requeue(int n, char **words) {
  if (n < 1) return gp_slurm_usage("scontrol", "requeue takes job ids: scontrol requeue ID[,ID...]");
  const char *mine = getenv("SLURM_JOB_ID"), *key = getenv("GPOOL_JOB_KEY");
  int worst = 0;
  for (int w = 0; w < n; w++) {
    char list[1024];
    if (strlen(words[w]) >= sizeof list) return gp_slurm_usage("scontrol", "job id list too long");
    snprintf(list, sizeof list, "%s", words[w]);
    for (char *save = NULL, *id = strtok_r(list, ",", &save); id; id = strtok_r(NULL, ",", &save)) {
      if (!gp_cli_valid_job_id(id)) return gp_slurm_usage("scontrol", "invalid job id '%.100s'", id);
      /* The job's own credential for itself (no token is handed to a job); a user's token
       * for any other. */
      gp_cli cli = {0};
      if (key && *key && mine && strcmp(mine, id) == 0) cli.token = key;
      char path[300];
      snprintf(path, sizeof path, "/v1/jobs/%s/requeue", id);
      json_t *answer = NULL;
      int code = gp_slurm_connect(&cli, "scontrol");
      if (!code) code = gp_cli_call(&cli, "POST", path, NULL, &answer);
      json_decref(answer);
      gp_cli_done(&cli);
      if (code > worst) worst = code;
    }
  }
  return worst;
}

