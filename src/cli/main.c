/* SPDX-License-Identifier: Apache-2.0 */
/* gpool's entry point: finds the subcommand and runs it. */
#include <stdio.h>
#include <string.h>

#include "agent/container.h"
#include "cli/commands.h"
#include "cli/slurm.h"
#include "util/mem.h"

#define GPOOL_VERSION "0.1.0"

typedef struct command {
  const char *name;
  const char *help;
  int (*run)(int argc, char **argv);
} command;

#define GP_COMMAND_ENTRY(fn, name, help) {name, help, gp_cmd_##fn},
static const command commands[] = {GP_COMMANDS(GP_COMMAND_ENTRY)};

static void usage(FILE *out) {
  fprintf(out, "gpool %s: a GPU cluster resource manager\n\nUsage: gpool COMMAND [OPTIONS]\n\n"
               "Commands:\n", GPOOL_VERSION);
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    fprintf(out, "  %-12s %s\n", commands[i].name, commands[i].help);
  fprintf(out, "  %-12s %s\n  %-12s %s\n\nRun 'gpool COMMAND --help' for a command's options.\n",
          "help", "show this help", "version", "print the version");
}

int main(int argc, char **argv) {
  gp_mem_keep_freed();
  /* Called through a job's <data>/bin/scontrol link (docs/agent.md). */
  const char *self = argc > 0 ? strrchr(argv[0], '/') : NULL;
  self = self ? self + 1 : argc > 0 ? argv[0] : "";
  /* ... and through the other Slurm names (`gpool slurm-shims`, docs/slurm.md). */
  if (strcmp(self, "scontrol") == 0) return gp_cmd_scontrol(argc, argv);
  if (strcmp(self, "sbatch") == 0) return gp_cmd_sbatch(argc, argv);
  if (strcmp(self, "squeue") == 0) return gp_cmd_squeue(argc, argv);
  if (strcmp(self, "scancel") == 0) return gp_cmd_scancel(argc, argv);
  if (strcmp(self, "sinfo") == 0) return gp_cmd_sinfo(argc, argv);
  if (strcmp(self, "sacct") == 0) return gp_cmd_sacct(argc, argv);
  /* The agent's container tasks (src/agent/container_task.c). */
  if (argc > 1 && strcmp(argv[1], "__container-task") == 0)
    return gp_agent_container_task_main(argc - 1, argv + 1);
  if (strcmp(self, "srun") == 0) return gp_cmd_srun(argc, argv);
  if (argc < 2 || strcmp(argv[1], "help") == 0 || strcmp(argv[1], "--help") == 0 ||
      strcmp(argv[1], "-h") == 0) {
    usage(stdout);
    return argc < 2 ? 2 : 0;
  }
  if (strcmp(argv[1], "version") == 0 || strcmp(argv[1], "--version") == 0) {
    printf("gpool %s\n", GPOOL_VERSION);
    return 0;
  }
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
    const char *name = commands[i].name;
    const char *space = strchr(name, ' ');
    if (!space) {
      if (strcmp(argv[1], name) == 0) return commands[i].run(argc - 1, argv + 1);
    } else if (strncmp(argv[1], name, (size_t)(space - name)) == 0 &&
               argv[1][space - name] == '\0' && argc > 2 && strcmp(argv[2], space + 1) == 0) {
      return commands[i].run(argc - 2, argv + 2);
    }
  }
  if (strcmp(argv[1], "sim") == 0) {
    fprintf(stderr, "gpool sim: expected one of: frag, replay, compare\n");
    return 2;
  }
  fprintf(stderr, "gpool: unknown command '%s' (see 'gpool help')\n", argv[1]);
  return 2;
}
