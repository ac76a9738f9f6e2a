/* SPDX-License-Identifier: Apache-2.0 */
/* Whom a job runs as: the job's user on a shared node (never root unless the config allows
 * it, never an unknown user), or whoever runs the agent in a personal pool. The start of
 * a job task (agent_start.c), srun's step tasks (agent_steps.c) and sessions' processes
 * (session_proc.c) all run as the user this says. */
#include "agent/agent_int.h"

#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/launcher.h"

int gp__agent_resolve_user(gp_agent *a, const char *user, gp__agent_creds *c, char *msg, size_t size) {
  memset(c, 0, sizeof *c);
  struct passwd pw, *res = NULL;
  char buf[8192];
  if (a->cfg.personal || !a->is_root) {
    /* A personal pool: every job runs as whoever runs the agent. */
    if (getpwuid_r(geteuid(), &pw, buf, sizeof buf, &res) == 0 && res) {
      snprintf(c->home, sizeof c->home, "%s", pw.pw_dir);
      snprintf(c->name, sizeof c->name, "%s", pw.pw_name);
      snprintf(c->shell, sizeof c->shell, "%s", pw.pw_shell);
    }
    const char *home = getenv("HOME");
    if (home && *home) snprintf(c->home, sizeof c->home, "%s", home);
    return 0;
  }
  if (!user || !*user) {
    snprintf(msg, size, "the job names no user");
    return -1;
  }
  if (getpwnam_r(user, &pw, buf, sizeof buf, &res) != 0 || !res) {
    snprintf(msg, size, "user '%.64s' has no account on node %s", user, a->cfg.name);
    return -1;
  }
  if (pw.pw_uid == 0 && !a->cfg.allow_root_jobs) {
    snprintf(msg, size, "refusing to run a job as root (set allow_root_jobs: true in the "
                        "agent config to allow it)");
    return -1;
  }
  c->switch_user = true;
  c->uid = pw.pw_uid;
  c->gid = pw.pw_gid;
  int n = GP_LAUNCH_MAX_GROUPS;
  if (getgrouplist(pw.pw_name, pw.pw_gid, c->groups, &n) < 0) n = GP_LAUNCH_MAX_GROUPS;
  c->n_groups = n;
  snprintf(c->home, sizeof c->home, "%s", pw.pw_dir);
  snprintf(c->name, sizeof c->name, "%s", pw.pw_name);
  snprintf(c->shell, sizeof c->shell, "%s", pw.pw_shell);
  return 0;
}
