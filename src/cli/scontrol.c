/* SPDX-License-Identifier: Apache-2.0 */
/* Slurm's `scontrol show hostnames [LIST]` (and its alias `show hostname`) for Slurm
 * scripts run by gpool: the gpool binary answers when called as `scontrol`, through the
 * link the agent puts first on every job's PATH (agent/slurm_env.c). It prints the hosts of
 * LIST, by default $SLURM_JOB_NODELIST, one per line as Slurm does; `show job ID` and
 * `requeue ID` are slurm_scontrol_job.c's. Nothing else of
 * scontrol is imitated: any other use says so and fails rather than answer wrongly. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/slurm.h"
#include "util/hostlist.h"

/* Slurm's own scontrol expands any list; a bound keeps a hostile one from flooding. */
#define SCONTROL_MAX_HOSTS 100000

static int print_name(void *ctx, const char *name) {
  (void)ctx;
  return puts(name) < 0 ? 1 : 0; /* 1: not a GP_E* code */
}

int gp_cmd_scontrol(int argc, char **argv) {
  /* `show job ID` asks the server (slurm_scontrol_job.c). */
  if (argc == 4 && strcmp(argv[1], "show") == 0 && strcmp(argv[2], "job") == 0)
    return gp_slurm_show_job(argv[3]);
  if (argc >= 2 && strcmp(argv[1], "requeue") == 0) return gp_slurm_requeue(argc - 2, argv + 2);
  bool show = argc >= 3 && argc <= 4 && strcmp(argv[1], "show") == 0 &&
              (strcmp(argv[2], "hostnames") == 0 || strcmp(argv[2], "hostname") == 0);
  if (!show) {
    fprintf(stderr, "scontrol: gpool's scontrol answers only 'scontrol show hostnames [LIST]', 'scontrol show job ID' "
                    "and 'scontrol requeue ID' "
                    "(gpool runs this job; see 'gpool show $SLURM_JOB_ID' for the rest)\n");
    return 1;
  }
  const char *list = argc == 4 ? argv[3] : getenv("SLURM_JOB_NODELIST");
  if (!list || !*list) {
    fprintf(stderr, "scontrol: error: host list is empty (no LIST and no SLURM_JOB_NODELIST)\n");
    return 1;
  }
  gp_err err = {0};
  int rc = gp_hostlist_expand(list, SCONTROL_MAX_HOSTS, print_name, NULL, NULL, &err);
  if (rc == 1) {
    perror("scontrol: writing the host names");
    return 1;
  }
  if (rc) {
    fprintf(stderr, "scontrol: error: host list '%.200s': %s\n", list, err.message);
    return 1;
  }
  if (fflush(stdout) != 0) {
    perror("scontrol: writing the host names");
    return 1;
  }
  return 0;
}
