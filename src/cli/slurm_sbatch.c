/* SPDX-License-Identifier: Apache-2.0 */
/* Slurm's `sbatch [OPTIONS] SCRIPT [ARGS]` (slurm.h): `gpool submit SCRIPT` with the
 * script's #SBATCH lines, and the command line's options read as one more #SBATCH line
 * after them (so they win, as in Slurm). An option gpool would only warn about in a script
 * is refused on the command line, where the user can drop it. Prints "Submitted batch job
 * N", or N with --parsable. Also `gpool slurm-shims DIR`, which makes the links by which
 * the gpool binary answers as these commands. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/slurm.h"
#include "cli/submit_args.h"
#include "util/buf.h"

static const char usage[] =
  "Usage: sbatch [--parsable] [OPTIONS] SCRIPT [ARGS...]\n"
  "OPTIONS are #SBATCH's (see 'gpool submit --help' and docs/slurm.md).\n";

/* Slurm options without a value, so the script is found after them; any other "-x" takes one. */
static bool flag(const char *w) {
  static const char *const flags[] = {"--requeue", "--no-requeue", "-H", "--hold", "--exclusive", NULL};
  for (int i = 0; flags[i]; i++)
    if (strcmp(w, flags[i]) == 0) return true;
  return false;
}

int gp_cmd_sbatch(int argc, char **argv) {
  bool parsable = false;
  gp_buf line = {0};
  gp_buf_puts(&line, "#SBATCH");
  int i = 1;
  for (; i < argc && argv[i][0] == '-' && argv[i][1]; i++) {
    const char *w = argv[i];
    if (strcmp(w, "--") == 0) {
      i++;
      break;
    }
    if (strcmp(w, "--parsable") == 0) {
      parsable = true;
      continue;
    }
    if (strcmp(w, "-h") == 0 || strcmp(w, "--help") == 0) {
      fputs(usage, stdout);
      gp_buf_done(&line);
      return 0;
    }
    bool inline_value = strchr(w, '=') != NULL || (w[1] != '-' && w[2] != '\0');
    int n = flag(w) || inline_value ? 1 : 2;
    if (i + n > argc) {
      gp_buf_done(&line);
      return gp_slurm_usage("sbatch", "option '%s' needs a value", w);
    }
    for (int k = 0; k < n; k++) {
      const char *a = argv[i + k];
      if (strchr(a, '\'') || strchr(a, '\n')) {
        gp_buf_done(&line);
        return gp_slurm_usage("sbatch", "option value '%.100s' holds a quote or a newline", a);
      }
      gp_buf_printf(&line, " '%s'", a);
    }
    i += n - 1;
  }
  if (i >= argc) {
    gp_buf_done(&line);
    return gp_slurm_usage("sbatch", "a batch script is required (gpool's sbatch does not read "
                          "one from stdin, nor take --wrap)");
  }
  gp_buf_puts(&line, "\n");
  gp_submit s;
  gp_submit_init(&s);
  gp_cli cli = {.cmd = "sbatch"};
  gp_err err = {0};
  char *text = NULL;
  size_t len = 0;
  int code = 0, rc;
  struct stat st;
  s.script = argv[i];
  s.args = argv + i;
  s.n_args = argc - i;
  if (stat(s.script, &st) != 0 || !S_ISREG(st.st_mode)) {
    code = gp_slurm_usage("sbatch", "unable to open file %s", s.script);
    goto out;
  }
  if ((rc = gp_submit_read_script(s.script, &text, &len, &err)) ||
      (rc = gp_submit_parse_script(&s, s.script, text, len, &err))) {
    code = gp_cli_fail(&cli, rc, &err);
    goto out;
  }
  size_t before = s.warnings.len;
  if ((rc = gp_submit_parse_script(&s, "sbatch command line", line.data, line.len, &err))) {
    code = gp_slurm_usage("sbatch", "%s", err.message);
    goto out;
  }
  if (s.warnings.len > before) {
    /* "#SBATCH --x is not supported by gpool; ignored": on the command line, refused. */
    /* Each line reads "sbatch command line:1: #SBATCH --x ...; ignored": say it as a refusal. */
    for (char *save = NULL, *w = strtok_r(s.warnings.data + before, "\n", &save); w;
         w = strtok_r(NULL, "\n", &save)) {
      char *opt = strstr(w, "#SBATCH ");
      char *tail = strstr(w, "; ignored");
      if (tail) *tail = '\0';
      fprintf(stderr, "sbatch: error: %s; refused\n", opt ? opt + 8 : w);
    }
    code = 2;
    goto out;
  }
  code = gp_submit_send(&s, &cli, text, parsable ? 2 : 1);
out:
  free(text);
  gp_buf_done(&line);
  gp_submit_done(&s);
  gp_cli_done(&cli);
  return code;
}

int gp_cmd_slurm_shims(int argc, char **argv) {
  if (argc != 2 || argv[1][0] == '-') {
    fprintf(stderr, "Usage: gpool slurm-shims DIR\n  links %s in DIR to this gpool binary; put DIR "
                    "on your PATH (docs/slurm.md)\n", "sbatch squeue scancel sinfo sacct scontrol");
    return argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) ? 0 : 2;
  }
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) {
    perror("gpool slurm-shims: cannot find this binary");
    return 1;
  }
  exe[n] = '\0';
  if (mkdir(argv[1], 0755) != 0 && errno != EEXIST) {
    fprintf(stderr, "gpool slurm-shims: cannot create %s: %s\n", argv[1], strerror(errno));
    return 1;
  }
  static const char *const names[] = {GP_SLURM_SHIMS};
  for (int k = 0; k < GP_SLURM_N_SHIMS; k++) {
    char link[4200], tmp[4300];
    snprintf(link, sizeof link, "%s/%s", argv[1], names[k]);
    snprintf(tmp, sizeof tmp, "%s/.%s.tmp", argv[1], names[k]);
    unlink(tmp);
    if (symlink(exe, tmp) != 0 || rename(tmp, link) != 0) {
      fprintf(stderr, "gpool slurm-shims: cannot link %s: %s\n", link, strerror(errno));
      unlink(tmp);
      return 1;
    }
    printf("%s -> %s\n", link, exe);
  }
  return 0;
}
