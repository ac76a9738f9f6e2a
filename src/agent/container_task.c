/* SPDX-License-Identifier: Apache-2.0 */
/* `gpool __container-task JOBDIR TIMEOUT_S MODE N EXISTS... N PULL... N INSPECT... RUN...`:
 * the process the launcher starts in a container job's place. MODE "check": pull unless
 * EXISTS says the image is here; "present": no pull (the agent's inventory holds it);
 * "verify": the pull runs either way, so that the registry says whether this job's user may
 * read the image (image_access.c; with the layers here the engine fetches the manifest only).
 * The pull runs within TIMEOUT_S (then it is killed: no endless retry), its progress
 * measured (pull_progress.c, with INSPECT: the manifest's sizes; N may be 0); on failure the
 * final reason ("image not found: REF", "unauthorized: REF", "registry unreachable: REF")
 * goes to JOBDIR/container.failure for the agent's end report and it exits 125; else it
 * execs the run, which so keeps the job's pid, process group and signals. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/container.h"

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Runs argv; its stderr (the first `size` - 1 bytes) in buf; with prog, its TMPDIR is
 * prog's and its progress is measured four times a second. Returns its exit status, -2
 * on timeout (it is killed), -1 when it cannot start. */
static int run(char **argv, int timeout_s, char *buf, size_t size, gp_agent_pull_progress *prog) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) return -1;
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    int null = open("/dev/null", O_RDWR);
    dup2(null, 0);
    dup2(null, 1);
    dup2(p[1], 2);
    if (prog && prog->tmp[0]) setenv("TMPDIR", prog->tmp, 1); /* where its blobs are written */
    execvp(argv[0], argv);
    _exit(127);
  }
  close(p[1]);
  size_t len = 0;
  int64_t deadline = now_ms() + (int64_t)timeout_s * 1000, next_tick = 0;
  bool timed_out = false;
  for (;;) {
    int64_t left = deadline - now_ms();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    struct pollfd pf = {.fd = p[0], .events = POLLIN};
    int slice = prog ? 250 : 1000;
    int r = poll(&pf, 1, (int)(left > slice ? slice : left));
    if (prog && now_ms() >= next_tick) {
      gp_agent_pull_progress_tick(prog);
      next_tick = now_ms() + 250;
    }
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;
    char tmp[1024];
    ssize_t n = read(p[0], tmp, sizeof tmp);
    if (n <= 0) break;
    if (write(2, tmp, (size_t)n) < 0) {} /* the job's stderr log sees the engine's words */
    size_t take = (size_t)n < size - 1 - len ? (size_t)n : size - 1 - len;
    memcpy(buf + len, tmp, take);
    len += take;
  }
  buf[len] = '\0';
  close(p[0]);
  if (timed_out) kill(pid, SIGKILL);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
  if (timed_out) return -2;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* A one-line file written whole (rename), which the agent reads for its events. */
static void marker(const char *dir, const char *name, const char *text) {
  char path[1024], tmp[1100];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "we");
  if (f) {
    fprintf(f, "%s\n", text);
    fclose(f);
    rename(tmp, path);
  }
}

static void failure(const char *dir, const char *text) {
  char path[1024], tmp[1100];
  snprintf(path, sizeof path, "%s/container.failure", dir);
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "we");
  if (f) {
    fprintf(f, "%s\n", text);
    fclose(f);
    rename(tmp, path);
  }
  fprintf(stderr, "gpool: %s\n", text);
}

/* The count at argv[i] and its words: false when they do not fit before argc. */
static bool group(int argc, char **argv, int *i, int min, char ***ret, int *ret_n) {
  if (*i >= argc) return false;
  int n = atoi(argv[*i]);
  if (n < min || n > argc - *i - 2) return false;
  *ret = argv + *i + 1;
  *ret_n = n;
  *i += n + 1;
  return true;
}

int gp_agent_container_task_main(int argc, char **argv) {
  /* argv: __container-task JOBDIR TIMEOUT MODE N exists... N pull... N inspect... run... */
  if (argc < 8) {
    fprintf(stderr, "gpool __container-task: internal command of the agent\n");
    return 2;
  }
  const char *dir = argv[1];
  int timeout = atoi(argv[2]);
  const char *mode = argv[3];
  bool verify = !strcmp(mode, "verify"), present = !strcmp(mode, "present");
  if (timeout <= 0 || (!verify && !present && strcmp(mode, "check"))) return 2;
  int i = 4, n_exists, n_pull, n_inspect;
  char **exists, **pull, **inspect;
  if (!group(argc, argv, &i, 0, &exists, &n_exists) || !group(argc, argv, &i, 1, &pull, &n_pull) ||
      !group(argc, argv, &i, 0, &inspect, &n_inspect) || i >= argc)
    return 2;
  char **run_argv = argv + i;
  const char *image = pull[n_pull - 1];
  char *saved = run_argv[0];
  /* The counts' own words end the arrays: each is followed by the next count. */
  exists[n_exists] = NULL;
  pull[n_pull] = NULL;
  inspect[n_inspect] = NULL;
  char out[8192];
  /* Present: no check (the agent's inventory holds the image, and the run pulls it itself
   * in the rare case it went since, --pull=missing). */
  bool here = present || (n_exists == 0 && verify);
  if (!here && n_exists > 0) here = run(exists, 60, out, sizeof out, NULL) == 0;
  char auth[1024];
  snprintf(auth, sizeof auth, "%s/container.auth", dir);
  int rc = 0;
  if (here && verify) {
    /* The image is here, but a user's own credential may have brought it: the registry
     * says whether this job's user may read it (the manifest only: the layers are here). */
    fprintf(stderr, "gpool: checking that the registry lets this job read image %s\n", image);
    rc = run(pull, timeout, out, sizeof out, NULL);
    if (rc != 0) {
      char text[700];
      if (rc == -2) snprintf(text, sizeof text, "image pull timed out: %s (after %d s)", image, timeout);
      else snprintf(text, sizeof text, "%s: %s", gp_agent_container_pull_reason(out), image);
      unlink(auth);
      failure(dir, text);
      return 125;
    }
  } else if (!here) {
    fprintf(stderr, "gpool: pulling image %s\n", image);
    char line[800];
    snprintf(line, sizeof line, "pulling image %s", image);
    marker(dir, "container.pulling", line);
    int64_t t0 = now_ms();
    gp_agent_pull_progress prog;
    gp_agent_pull_progress_start(&prog, dir, n_inspect > 0 ? inspect : NULL, image);
    rc = run(pull, timeout, out, sizeof out, &prog);
    gp_agent_pull_progress_end(&prog);
    char text[700];
    if (rc == -2) {
      snprintf(text, sizeof text, "image pull timed out: %s (after %d s)", image, timeout);
    } else if (rc != 0) {
      snprintf(text, sizeof text, "%s: %s", gp_agent_container_pull_reason(out), image);
    } else {
      snprintf(line, sizeof line, "pulled image %s in %.1f s", image, (double)(now_ms() - t0) / 1000.0);
      fprintf(stderr, "gpool: %s\n", line);
    }
    if (rc != 0) snprintf(line, sizeof line, "%s", text);
    unlink(auth); /* the owner's credential served this pull only */
    marker(dir, "container.pulled", line); /* the pull's end, whichever */
    if (rc != 0) {
      failure(dir, text);
      return 125;
    }
  }
  unlink(auth); /* present or not, nothing after the pull reads it */
  run_argv[0] = saved;
  execvp(run_argv[0], run_argv);
  fprintf(stderr, "gpool: cannot run %s: %s\n", run_argv[0], strerror(errno));
  return 127;
}
