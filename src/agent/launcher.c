/* SPDX-License-Identifier: Apache-2.0 */
/* Job launching through a waiting shim (see launcher.h for the process shape). Between fork
 * and exec only system calls run: every string is prepared by the parent, and failures are
 * reported through a close-on-exec pipe as fixed-size records. */
#include "agent/launcher.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/launch_output.h"
#include "util/mem.h"

#define MAX_EXEC_CANDIDATES 64

enum { REC_PID = 1, REC_ERR = 2 };
enum { STAGE_CGROUP = 1, STAGE_STDIO, STAGE_WORKDIR, STAGE_USER, STAGE_EXEC, STAGE_OUTPUT };

typedef struct launch_rec {
  int32_t kind;
  int32_t value;  /* pid or errno */
  int32_t stage;
} launch_rec;

/* ---- async-signal-safe helpers for the children ---- */

static void write_rec(int fd, int32_t kind, int32_t value, int32_t stage) {
  launch_rec r = {kind, value, stage};
  ssize_t n;
  do {
    n = write(fd, &r, sizeof r);
  } while (n < 0 && errno == EINTR);
}

/* Formats a (possibly negative) integer into buf; returns the length. */
static size_t fmt_int(char *buf, long v) {
  char tmp[24];
  size_t n = 0, len = 0;
  unsigned long u = v < 0 ? (unsigned long)(-(v + 1)) + 1 : (unsigned long)v;
  do {
    tmp[n++] = (char)('0' + u % 10);
    u /= 10;
  } while (u);
  if (v < 0) buf[len++] = '-';
  while (n) buf[len++] = tmp[--n];
  return len;
}

static void reset_signals(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = SIG_DFL;
  for (int s = 1; s < NSIG; s++) {
    if (s == SIGKILL || s == SIGSTOP) continue;
    sigaction(s, &sa, NULL);
  }
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
}

/* Closes every descriptor >= 3 but those in keep (sorted ascending, n small). */
static void close_all_but(const int *keep, int n) {
  unsigned lo = 3;
  for (int i = 0; i < n; i++) {
    if (keep[i] < (int)lo) continue;
    if ((unsigned)keep[i] > lo) close_range(lo, (unsigned)keep[i] - 1, 0);
    lo = (unsigned)keep[i] + 1;
  }
  close_range(lo, ~0U, 0);
}

static void sort_fds(int *fds, int n) {
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && fds[j - 1] > fds[j]; j--) {
      int t = fds[j];
      fds[j] = fds[j - 1];
      fds[j - 1] = t;
    }
}

typedef struct child_ctx {
  const gp_launch_spec *spec;
  char *arg_start;       /* this process's argv strings (for the shim's title), or NULL */
  size_t arg_len;
  char title[128];       /* "gpool-shim <dir>" */
  char **candidates;     /* full paths to try for argv[0] */
  int n_candidates;
  int pipe_w, out_fd, err_fd, dir_fd, null_fd;
} child_ctx;

static void run_job(const child_ctx *c) {
  const gp_launch_spec *s = c->spec;
  setpgid(0, 0);
  reset_signals();
  if (s->cgroup_procs) {
    int fd = open(s->cgroup_procs, O_WRONLY | O_CLOEXEC);
    char num[24];
    size_t len = fmt_int(num, (long)getpid());
    if (fd < 0 || write(fd, num, len) != (ssize_t)len) {
      write_rec(c->pipe_w, REC_ERR, errno, STAGE_CGROUP);
      _exit(127);
    }
    close(fd);
  }
  if (dup2(c->null_fd, 0) < 0 || dup2(c->out_fd, 1) < 0 || dup2(c->err_fd, 2) < 0) {
    write_rec(c->pipe_w, REC_ERR, errno, STAGE_STDIO);
    _exit(127);
  }
  if (s->switch_user) {
    if (setgroups((size_t)s->n_groups, s->groups) != 0 || setgid(s->gid) != 0 ||
        setuid(s->uid) != 0 || (s->uid != 0 && setuid(0) == 0)) {
      write_rec(c->pipe_w, REC_ERR, errno ? errno : EPERM, STAGE_USER);
      _exit(127);
    }
  }
  /* After the switch: the user may only work where the user may go. */
  if (s->workdir && chdir(s->workdir) != 0) {
    write_rec(c->pipe_w, REC_ERR, errno, STAGE_WORKDIR);
    _exit(127);
  }
  int saved = ENOENT;
  for (int i = 0; i < c->n_candidates; i++) {
    execve(c->candidates[i], s->argv, s->envp);
    if (errno == EACCES) saved = EACCES;
    else if (errno != ENOENT && errno != ENOTDIR) {
      saved = errno;
      break;
    }
  }
  write_rec(c->pipe_w, REC_ERR, saved, STAGE_EXEC);
  _exit(127);
}

static void run_shim(const child_ctx *c) {
  setsid();
  /* Named apart from the agent it was forked from, so ps and pgrep tell them apart: the
   * command name, and the command line (the argv area it inherited from the agent). */
  prctl(PR_SET_NAME, "gpool-shim", 0, 0, 0);
  if (c->arg_start && c->arg_len > 1) {
    memset(c->arg_start, 0, c->arg_len);
    size_t n = strlen(c->title);
    memcpy(c->arg_start, c->title, n < c->arg_len - 1 ? n : c->arg_len - 1);
  }
  /* The shim must survive whatever the job's group is sent and a terminal hang-up. */
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = SIG_IGN;
  static const int ignored[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2,
                                SIGPIPE, SIGALRM, SIGTSTP, SIGTTIN, SIGTTOU};
  for (size_t i = 0; i < sizeof ignored / sizeof ignored[0]; i++) sigaction(ignored[i], &sa, NULL);
  sa.sa_handler = SIG_DFL;
  sigaction(SIGCHLD, &sa, NULL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);

  int keep[5] = {c->pipe_w, c->out_fd, c->err_fd, c->dir_fd, c->null_fd};
  sort_fds(keep, 5);
  close_all_but(keep, 5);

  /* The user's -o/--error files: the job writes into the copier's pipes instead. */
  child_ctx jc = *c;
  int copy_errno = 0, status = 0;
  pid_t copier = gp__agent_launch_output_start(c->spec, c->out_fd, c->err_fd, c->pipe_w, &jc.out_fd,
                                         &jc.err_fd, &copy_errno);
  if (copier < 0) {
    write_rec(c->pipe_w, REC_ERR, copy_errno, STAGE_OUTPUT);
    close(c->pipe_w);
    status = 127 << 8; /* ended before it ran, as a job whose exec failed */
  } else {
    pid_t pid = fork();
    if (pid < 0) {
      write_rec(c->pipe_w, REC_ERR, errno, STAGE_EXEC);
      _exit(1);
    }
    if (pid == 0) run_job(&jc);
    setpgid(pid, pid); /* also done by the child: whichever runs first wins the race */
    write_rec(c->pipe_w, REC_PID, (int32_t)pid, 0);
    close(c->pipe_w);
    close(c->out_fd);
    close(c->err_fd);
    close(c->null_fd);
    if (copier > 0) {
      close(jc.out_fd);
      close(jc.err_fd);
    }
    while (waitpid(pid, &status, 0) < 0) {
      if (errno != EINTR) _exit(2);
    }
    /* What the job printed last reaches its files before its end is known. Processes it
     * left behind would hold the copier's pipes open: they go now, as the agent would end
     * them on reading the exit file (the group's id cannot be reused while it has members). */
    if (copier > 0) {
      killpg(pid, SIGKILL);
      gp__agent_launch_output_wait(copier, 5000);
    }
  }
  char line[64];
  size_t len = 0;
  if (WIFSIGNALED(status)) {
    len += fmt_int(line + len, -1);
    line[len++] = ' ';
    len += fmt_int(line + len, WTERMSIG(status));
  } else {
    len += fmt_int(line + len, WEXITSTATUS(status));
    line[len++] = ' ';
    len += fmt_int(line + len, 0);
  }
  line[len++] = '\n';
  int fd = openat(c->dir_fd, "exit.tmp", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) _exit(3);
  if (write(fd, line, len) != (ssize_t)len) _exit(3);
  fsync(fd);
  close(fd);
  if (renameat(c->dir_fd, "exit.tmp", c->dir_fd, "exit") != 0) _exit(3);
  fsync(c->dir_fd);
  _exit(0);
}

/* ---- parent side ---- */

/* The PATH the job will see. */
static const char *env_path(char *const *envp) {
  for (int i = 0; envp && envp[i]; i++)
    if (strncmp(envp[i], "PATH=", 5) == 0) return envp[i] + 5;
  return "/usr/local/bin:/usr/bin:/bin";
}

static int build_candidates(const gp_launch_spec *s, char ***ret, int *ret_n) {
  const char *cmd = s->argv[0];
  char **out = gp_xcalloc(MAX_EXEC_CANDIDATES, sizeof *out);
  int n = 0;
  if (strchr(cmd, '/')) {
    out[n++] = gp_xstrdup(cmd);
  } else {
    const char *p = env_path(s->envp);
    while (*p && n < MAX_EXEC_CANDIDATES) {
      const char *colon = strchr(p, ':');
      size_t dl = colon ? (size_t)(colon - p) : strlen(p);
      size_t need = dl + 1 + strlen(cmd) + 1;
      char *full = gp_xmalloc(need + 1);
      if (dl == 0) snprintf(full, need + 1, "%s", cmd); /* empty entry: current directory */
      else snprintf(full, need + 1, "%.*s/%s", (int)dl, p, cmd);
      out[n++] = full;
      if (!colon) break;
      p = colon + 1;
    }
  }
  *ret = out;
  *ret_n = n;
  return 0;
}

static void free_candidates(char **c, int n) {
  for (int i = 0; i < n; i++) free(c[i]);
  free(c);
}

/* Where this process's argv strings live ([arg_start, arg_end) in /proc/self/stat). */
static void find_argv_area(char **ret_start, size_t *ret_len) {
  *ret_start = NULL;
  *ret_len = 0;
  char buf[2048];
  int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return;
  buf[n] = '\0';
  const char *p = strrchr(buf, ')');
  if (!p) return;
  p += 2; /* field 3 */
  unsigned long long start = 0, end = 0;
  for (int field = 3; *p && field <= 49; field++) {
    if (field == 48) start = strtoull(p, NULL, 10);
    if (field == 49) end = strtoull(p, NULL, 10);
    p = strchr(p, ' ');
    if (!p) break;
    p++;
  }
  if (start && end > start && end - start < (1u << 20)) {
    *ret_start = (char *)(uintptr_t)start;
    *ret_len = (size_t)(end - start);
  }
}

static const char *stage_text(int stage) {
  switch (stage) {
  case STAGE_CGROUP: return "cannot join the job's cgroup";
  case STAGE_STDIO: return "cannot set up standard input/output";
  case STAGE_WORKDIR: return "cannot change to the working directory";
  case STAGE_USER: return "cannot switch to the job's user";
  case STAGE_OUTPUT: return "cannot open the job's output file";
  default: return "cannot run the command";
  }
}

int gp_launch(const gp_launch_spec *spec, gp_launch_result *ret, gp_err *err) {
  if (!spec || !spec->argv || !spec->argv[0] || !spec->argv[0][0] || !spec->dir)
    return gp_err_set(err, GP_EINVAL, NULL, 0, "command", "the job has no command");
  int rc = GP_EIO;
  int out_fd = -1, err_fd = -1, dir_fd = -1, null_fd = -1, p[2] = {-1, -1};
  char **cands = NULL;
  int n_cands = 0;
  const mode_t mode = 0640;
  /* O_NOFOLLOW: a log path is never a link to somewhere else. */
  out_fd = open(spec->stdout_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, mode);
  err_fd = open(spec->stderr_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, mode);
  if (out_fd < 0 || err_fd < 0) {
    gp_err_set(err, GP_EIO, spec->stdout_path, 0, NULL, "cannot open the job's log files: %s",
               strerror(errno));
    goto out;
  }
  if (spec->switch_user && (fchown(out_fd, spec->uid, spec->gid) != 0 ||
                            fchown(err_fd, spec->uid, spec->gid) != 0)) {
    gp_err_set(err, GP_EIO, spec->stdout_path, 0, NULL, "cannot hand the log files to uid %d: %s",
               (int)spec->uid, strerror(errno));
    goto out;
  }
  dir_fd = open(spec->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (dir_fd < 0 || null_fd < 0) {
    gp_err_set(err, GP_EIO, spec->dir, 0, NULL, "cannot open the job directory: %s",
               strerror(errno));
    goto out;
  }
  /* A requeued job may run again here: its previous outcome must not be mistaken for this one. */
  unlinkat(dir_fd, "exit", 0);
  if (pipe2(p, O_CLOEXEC) != 0) {
    gp_err_set(err, GP_EIO, NULL, 0, NULL, "pipe: %s", strerror(errno));
    goto out;
  }
  build_candidates(spec, &cands, &n_cands);
  child_ctx c;
  memset(&c, 0, sizeof c);
  c.spec = spec;
  c.candidates = cands;
  c.n_candidates = n_cands;
  c.pipe_w = p[1];
  c.out_fd = out_fd;
  c.err_fd = err_fd;
  c.dir_fd = dir_fd;
  c.null_fd = null_fd;
  find_argv_area(&c.arg_start, &c.arg_len);
  const char *base = strrchr(spec->dir, '/');
  snprintf(c.title, sizeof c.title, "gpool-shim job %s", base ? base + 1 : spec->dir);
  pid_t shim = fork();
  if (shim < 0) {
    gp_err_set(err, GP_EIO, NULL, 0, NULL, "fork: %s", strerror(errno));
    goto out;
  }
  if (shim == 0) run_shim(&c);
  close(p[1]);
  p[1] = -1;

  pid_t job = 0;
  int fail_errno = 0, fail_stage = 0;
  for (;;) {
    struct pollfd pfd = {p[0], POLLIN, 0};
    int pr = poll(&pfd, 1, 30000);
    if (pr < 0 && errno == EINTR) continue;
    if (pr <= 0) break; /* a child stuck before exec for 30 s: treat what we have */
    launch_rec r;
    ssize_t n = read(p[0], &r, sizeof r);
    if (n < 0 && errno == EINTR) continue;
    if (n != (ssize_t)sizeof r) break; /* EOF: the job exec'd (or everyone exited) */
    if (r.kind == REC_PID) job = (pid_t)r.value;
    else if (r.kind == REC_ERR) {
      fail_errno = r.value;
      fail_stage = r.stage;
    }
  }
  gp_launch_result res = {0};
  res.shim_pid = shim;
  res.pid = job;
  gp_proc_start_ticks(shim, &res.shim_start_ticks);
  if (job > 0) gp_proc_start_ticks(job, &res.start_ticks);
  if (ret) *ret = res;
  if (fail_stage || job <= 0) {
    const char *what = fail_stage == STAGE_WORKDIR ? spec->workdir
                       : fail_stage == STAGE_EXEC  ? spec->argv[0]
                       : fail_stage == STAGE_OUTPUT ? (spec->user_stdout ? spec->user_stdout : spec->user_stderr)
                                                   : "";
    gp_err_set(err, GP_EIO, NULL, 0, fail_stage == STAGE_WORKDIR ? "workdir"
                                     : fail_stage == STAGE_OUTPUT ? "output" : "command",
               "%s%s%s%s: %s", stage_text(fail_stage), *what ? " '" : "", what, *what ? "'" : "",
               strerror(fail_errno ? fail_errno : ECHILD));
    rc = GP_EIO;
    goto out;
  }
  rc = 0;
out:
  if (cands) free_candidates(cands, n_cands);
  if (p[0] >= 0) close(p[0]);
  if (p[1] >= 0) close(p[1]);
  if (out_fd >= 0) close(out_fd);
  if (err_fd >= 0) close(err_fd);
  if (dir_fd >= 0) close(dir_fd);
  if (null_fd >= 0) close(null_fd);
  return rc;
}

int gp_launch_read_exit(const char *dir, int *ret_exit_code, int *ret_signal) {
  char path[4096];
  snprintf(path, sizeof path, "%s/exit", dir);
  FILE *f = fopen(path, "re");
  if (!f) return GP_ENOENT;
  int code = 0, sig = 0;
  int n = fscanf(f, "%d %d", &code, &sig);
  fclose(f);
  if (n != 2 || code < -1 || code > 255 || sig < 0 || sig >= 128) return GP_EPARSE;
  if (ret_exit_code) *ret_exit_code = code;
  if (ret_signal) *ret_signal = sig;
  return 0;
}

/* Reads /proc/<pid>/stat and returns a pointer to field 3 (the state) inside buf. */
static const char *read_stat(pid_t pid, char *buf, size_t size) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NULL;
  ssize_t n = read(fd, buf, size - 1);
  close(fd);
  if (n <= 0) return NULL;
  buf[n] = '\0';
  char *close_paren = strrchr(buf, ')'); /* the command name may hold spaces and ')' */
  if (!close_paren || close_paren[1] != ' ') return NULL;
  return close_paren + 2;
}

/* Field `k` (3-based numbering, as proc(5) counts) of a stat line starting at field 3. */
static const char *stat_field(const char *f3, int k) {
  const char *p = f3;
  for (int i = 3; i < k && p; i++) {
    p = strchr(p, ' ');
    if (p) p++;
  }
  return p;
}

int gp_proc_start_ticks(pid_t pid, uint64_t *ret_ticks) {
  char buf[1024];
  const char *f3 = pid > 0 ? read_stat(pid, buf, sizeof buf) : NULL;
  const char *f22 = f3 ? stat_field(f3, 22) : NULL;
  if (!f22) return GP_ENOENT;
  char *end = NULL;
  unsigned long long v = strtoull(f22, &end, 10);
  if (end == f22) return GP_ENOENT;
  if (ret_ticks) *ret_ticks = v;
  return 0;
}

bool gp_proc_alive(pid_t pid, uint64_t start_ticks) {
  char buf[1024];
  const char *f3 = pid > 0 ? read_stat(pid, buf, sizeof buf) : NULL;
  if (!f3 || *f3 == 'Z' || *f3 == 'X') return false;
  const char *f22 = stat_field(f3, 22);
  return f22 && strtoull(f22, NULL, 10) == start_ticks;
}

int gp_proc_pgrp_ppid(pid_t pid, pid_t *ret_pgrp, pid_t *ret_ppid) {
  char buf[1024];
  const char *f3 = pid > 0 ? read_stat(pid, buf, sizeof buf) : NULL;
  const char *f4 = f3 ? stat_field(f3, 4) : NULL;
  const char *f5 = f3 ? stat_field(f3, 5) : NULL;
  if (!f4 || !f5) return GP_ENOENT;
  if (ret_ppid) *ret_ppid = (pid_t)strtol(f4, NULL, 10);
  if (ret_pgrp) *ret_pgrp = (pid_t)strtol(f5, NULL, 10);
  return 0;
}
