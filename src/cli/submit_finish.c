/* SPDX-License-Identifier: Apache-2.0 */
/* The last step of reading `gpool submit`'s arguments (gp_submit_finish, submit_args.h):
 * the command line applied over the script's directives, the GPU share options checked
 * against each other, the command (the words after "--", or the script run by its #!
 * interpreter, once per job for a script with #SBATCH lines), the working directory and the
 * job's default name. */
#include <stdio.h>
#include <string.h>

#include "cli/submit_args.h"

static int64_t get_int(json_t *req, const char *key, int64_t dflt) {
  json_t *v = json_object_get(req, key);
  return json_is_integer(v) ? json_integer_value(v) : dflt;
}

/* The script's #! line as the kernel reads it: the interpreter, then everything after it
 * (trimmed) as one argument, with no quoting ("#!/usr/bin/env python3" -> /usr/bin/env,
 * python3). */
static int interpreter(const char *text, json_t *cmd) {
  if (!text || strncmp(text, "#!", 2)) {
    json_array_append_new(cmd, json_string("/bin/sh"));
    return 0;
  }
  const char *p = text + 2, *end = p + strcspn(p, "\r\n");
  if (end - p > 1000) return GP_EINVAL;
  while (p < end && (*p == ' ' || *p == '\t')) p++;
  const char *prog = p;
  while (p < end && *p != ' ' && *p != '\t') p++;
  if (p == prog) return GP_EINVAL;
  json_array_append_new(cmd, json_stringn(prog, (size_t)(p - prog)));
  while (p < end && (*p == ' ' || *p == '\t')) p++;
  while (end > p && (end[-1] == ' ' || end[-1] == '\t')) end--;
  if (end > p) json_array_append_new(cmd, json_stringn(p, (size_t)(end - p)));
  return 0;
}

int gp_submit_finish(gp_submit *s, const char *cwd, const char *script_text, gp_err *err) {
  /* GPUs asked for on the command line replace the script's, however each spelled them. */
  static const char *const gpu_keys[] = {"gpus", "_gpus_per_node", "_gpus_total"};
  for (size_t k = 0; k < 3; k++)
    if (json_object_get(s->cli, gpu_keys[k]))
      for (size_t m = 0; m < 3; m++) json_object_del(s->req, gpu_keys[m]);
  if (json_object_get(s->cli, "queue")) json_object_del(s->req, "partitions"); /* -q beats -p a,b */
  json_object_update(s->req, s->cli);
  json_t *req = s->req;

  int rc = gp_submit_layout(req, err);
  if (rc) return rc;

  int shares = !!json_object_get(req, "gpu_fraction") + !!json_object_get(req, "gpu_mem_mib") +
               !!json_object_get(req, "mig");
  if (shares > 1)
    return gp_err_set(err, GP_EINVAL, NULL, 0, "gpu_fraction",
                      "choose one of --gpu-fraction, --gpu-mem and --mig");
  if (shares) {
    if (get_int(req, "gpus", 1) != 1)
      return gp_err_set(err, GP_EINVAL, NULL, 0, "gpus",
                        "--gpu-fraction, --gpu-mem and --mig ask for part of one GPU; drop -g %lld",
                        (long long)get_int(req, "gpus", 1));
    json_object_del(req, "gpus");
  }

  json_t *cmd = json_array();
  if (s->dashdash || !s->script) {
    for (int i = 0; i < s->n_args; i++) json_array_append_new(cmd, json_string(s->args[i]));
  } else {
    if (interpreter(script_text, cmd)) {
      json_decref(cmd);
      return gp_err_set(err, GP_EINVAL, s->script, 1, NULL, "cannot read the #! line");
    }
    char path[4096];
    if (s->script[0] == '/')
      snprintf(path, sizeof path, "%s", s->script);
    else
      snprintf(path, sizeof path, "%s/%s", cwd, s->script);
    json_array_append_new(cmd, json_string(path));
    for (int i = 1; i < s->n_args; i++) json_array_append_new(cmd, json_string(s->args[i]));
  }
  if (json_array_size(cmd) == 0) {
    json_decref(cmd);
    return gp_err_set(err, GP_EINVAL, NULL, 0, "command",
                      "nothing to run: give a script (gpool submit job.sh) or a command after -- "
                      "(gpool submit -g 1 -- nvidia-smi)");
  }
  json_object_set_new(req, "command", cmd);
  /* Slurm's batch semantics: a script with #SBATCH lines runs once, on the first node of
   * its allocation, and srun starts its tasks (docs/slurm.md). gpool's own way (a command,
   * or a script without them) runs the command in every task. */
  if (s->sbatch && s->script && !s->dashdash) json_object_set_new(req, "batch", json_true());

  const char *wd = json_string_value(json_object_get(req, "workdir"));
  if (wd && wd[0] != '/') {
    char abs[4096];
    snprintf(abs, sizeof abs, "%s/%s", cwd, wd);
    json_object_set_new(req, "workdir", json_string(abs));
  } else if (!wd) {
    json_object_set_new(req, "workdir", json_string(cwd));
  }
  if (!json_object_get(req, "name")) {
    const char *base = s->script ? s->script : json_string_value(json_array_get(cmd, 0));
    const char *slash = base ? strrchr(base, '/') : NULL;
    if (base) json_object_set_new(req, "name", json_stringn(slash ? slash + 1 : base,
                                                           strnlen(slash ? slash + 1 : base, 255)));
  }
  return 0;
}
