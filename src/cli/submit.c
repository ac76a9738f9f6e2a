/* SPDX-License-Identifier: Apache-2.0 */
/* `gpool submit`: reads options and a script's directives (submit_args.h), resolves GPU
 * model names against the fleet, POSTs the job and prints its id (or the job with -o json).
 * The id is printed only after the server's 201, which means the job is durable. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/advise.h"
#include "cli/cli_common.h"
#include "cli/commands.h"
#include "cli/slurm.h"
#include "cli/submit_args.h"
#include "cli/submit_batch.h"
#include "util/mem.h"

extern char **environ;

static const char usage_text[] =
  "Usage: gpool submit [OPTIONS] -- COMMAND [ARGS...]\n"
  "       gpool submit [OPTIONS] SCRIPT [ARGS...]   (#GPOOL and #SBATCH lines are read)\n"
  "\n"
  "  -q, --queue Q          queue (default: your default queue)\n"
  "  -g, --gpus N           whole GPUs per task (also --gpus-per-task)\n"
  "      --gpu-type T[,T]   accepted GPU models (h100 matches H100-80GB, ...)\n"
  "      --gres gpu[:T]:N   Slurm spelling of -g/--gpu-type\n"
  "      --gpu-fraction F   a share of one GPU (0 < F < 1)\n"
  "      --gpu-mem SIZE     a share of one GPU by memory (e.g. 20G)\n"
  "      --mig PROFILE      a MIG instance (e.g. 1g.10gb)\n"
  "  -N, --nodes N          gang of N tasks started together (tasks may share a node;\n"
  "                         --ntasks-per-node 1 puts each on its own node; #SBATCH -N N\n"
  "                         is Slurm's: N distinct nodes)\n"
  "      --ntasks N         gang of N tasks (with -N: at most N/nodes on one node)\n"
  "      --ntasks-per-node K  at most K tasks on one node (-N N: N x K tasks)\n"
  "  -c, --cpus N           CPUs per task\n"
  "      --mem SIZE         host memory per task (e.g. 64G)\n"
  "      --exclusive        whole nodes: no other job on the nodes of its tasks\n"
  "  -t, --time DURATION    time limit (4h, 30m, 1-00:00:00)\n"
  "  -p, --priority CLASS   priority class\n"
  "      --requeue          requeue when preempted or its node is lost (--no-requeue)\n"
  "      --grace DURATION   time between the checkpoint signal and SIGKILL\n"
  "      --signal SIG       checkpoint signal (default TERM)\n"
  "      --signal [B:]SIG@T send SIG T seconds before the time limit (B: the batch shell only)\n"
  "      --begin TIME       start no earlier (now+1hour, now+30min, 16:00, tomorrow, 2026-12-24T10:00)\n"
  "      --after ID         start after job ID has started\n"
  "      --afterok ID       start after job ID completed successfully\n"
  "      --afterany ID      start after job ID ended in any way\n"
  "      --dependency LIST  Slurm's form: afterok:12,afternotok:13,aftercorr:14,singleton\n"
  "      --array SPEC       a job array: 0-99, 0-99:2%8 (at most 8 at once), 1,3,5-7\n"
  "  -n, --name NAME        job name\n"
  "      --hold             submit held (gpool release ID starts it)\n"
  "      --allow-spot       may run on spot capacity (--no-spot: may not)\n"
  "      --node-selector KEY=VALUE  run only on nodes with this label (repeatable)\n"
  "  -D, --workdir DIR      working directory (default: the current one)\n"
  "  -e, --env NAME=VALUE   set a variable in the job's environment\n"
  "      --export ALL|NONE|VAR[=VALUE],...  take the submitting environment along\n"
  "                         (default NONE; ALL for a script with #SBATCH lines)\n"
  "  -o FILE, --error FILE  write stdout (and stderr, without --error) to FILE on the node,\n"
  "                         relative to the workdir; Slurm's %j %x %A %a %N %t %u %% patterns\n"
  "      --open-mode append|truncate  (default truncate)\n"
  "      --image REF        run each task in this container image (docs/containers.md)\n"
  "      --model NAME       prefer nodes whose models_dir holds NAME (docs/services.md)\n"
  "      --container-mounts SRC:DST[:ro],...  bind mounts (--image); also pyxis's #SBATCH form\n"
  "      --container-workdir DIR  working directory inside the container\n"
  "      --container-env NAME,...  the job's variables that override the image's\n"
  "      --container-writable  a writable root filesystem\n"
  "      --no-container-mount-home  do not mount the user's home\n"
  "  -o json                print the job as JSON instead of its id (-o table: its id)\n"
  "      --advise           first print the advice on this job's name (stderr)\n"
  "      --server URL, --token TOKEN, --ca FILE\n";

int gp_submit_read_script(const char *path, char **ret_text, size_t *ret_len, gp_err *err) {
  FILE *f = fopen(path, "rb");
  if (!f) return gp_err_set(err, GP_EIO, path, 0, NULL, "cannot read the script: %s", strerror(errno));
  char *text = gp_xmalloc(GP_SUBMIT_MAX_SCRIPT + 2);
  size_t n = fread(text, 1, GP_SUBMIT_MAX_SCRIPT + 1, f);
  int bad = ferror(f);
  fclose(f);
  if (bad) {
    free(text);
    return gp_err_set(err, GP_EIO, path, 0, NULL, "cannot read the script");
  }
  text[n] = '\0';
  *ret_text = text;
  *ret_len = n;
  return 0;
}

/* The rest of a submission, shared with sbatch (slurm.h). */
int gp_submit_send(gp_submit *sp, gp_cli *clip, const char *text, int mode) {
  json_t *answer = NULL, *nodes = NULL;
  int code = 0, rc;
  gp_err err = {0};
  char cwd[4096];
  if (!getcwd(cwd, sizeof cwd)) snprintf(cwd, sizeof cwd, "/");
  if ((rc = gp_submit_finish(sp, cwd, text, &err)) ||
      (rc = gp_submit_apply_export(sp->req, sp->sbatch, environ, &err))) {
    code = gp_cli_usage_error(mode ? "sbatch" : "submit", "%s", err.message);
    goto out;
  }
  if (sp->warnings.len) fprintf(stderr, "%s", sp->warnings.data);
  if ((code = gp_cli_connect(clip))) goto out;

  if (json_object_get(sp->req, "gpu_types")) {
    if ((code = gp_cli_call(clip, "GET", "/v1/nodes", NULL, &nodes))) goto out;
    if ((rc = gp_submit_resolve_types(sp->req, nodes, &err))) {
      code = gp_cli_fail(clip, rc, &err);
      goto out;
    }
  }
  /* Advice on the job's earlier runs, before this one starts; it never stops the submission. */
  if (sp->advise) gp_cli_advise_name(clip, json_string_value(json_object_get(sp->req, "name")), stderr);
  if ((code = gp_cli_call(clip, "POST", "/v1/jobs", sp->req, &answer))) goto out;
  json_t *job = json_object_get(answer, "job");
  if (clip->json) {
    gp_cli_print_json(job ? job : answer);
  } else {
    const char *id = json_string_value(json_object_get(job, "id"));
    if (!id) {
      fprintf(stderr, "%s: the server accepted the job but sent no id\n", mode ? "sbatch" : "gpool submit");
      code = 1;
      goto out;
    }
    if (mode == 1) printf("Submitted batch job %s\n", id);
    else printf("%s\n", id);
  }
out:
  json_decref(answer);
  json_decref(nodes);
  return code;
}

int gp_cmd_submit(int argc, char **argv) {
  gp_cli cli = {.cmd = "submit"};
  gp_submit s;
  gp_submit_init(&s);
  gp_err err = {0};
  char *text = NULL;
  int code = 0;
  int rc = gp_submit_parse_args(&s, argc, argv, &err);
  if (rc) {
    code = gp_cli_usage_error("submit", "%s", err.message);
    goto out;
  }
  if (s.help) {
    fputs(usage_text, stdout);
    goto out;
  }
  cli.server = s.server;
  cli.token = s.token;
  cli.ca = s.ca;
  cli.json = s.json_out;

  struct stat st;
  if (!s.dashdash && s.n_args > 0 && stat(s.args[0], &st) == 0 && S_ISREG(st.st_mode)) {
    size_t len = 0;
    s.script = s.args[0];
    if ((rc = gp_submit_read_script(s.script, &text, &len, &err)) ||
        (rc = gp_submit_parse_script(&s, s.script, text, len, &err))) {
      code = gp_cli_fail(&cli, rc, &err);
      goto out;
    }
  }
  code = gp_submit_send(&s, &cli, text, 0);
out:
  free(text);
  gp_submit_done(&s);
  gp_cli_done(&cli);
  return code;
}
