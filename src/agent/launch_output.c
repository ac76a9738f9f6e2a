/* SPDX-License-Identifier: Apache-2.0 */
/* The copier of a job's output into the user's files (launch_output.h). */
#include "agent/launch_output.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void write_all(int fd, const char *p, ssize_t n) {
  while (fd >= 0 && n > 0) {
    ssize_t w = write(fd, p, (size_t)n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return; /* a full disk in the user's file must not stop the agent's log */
    p += w;
    n -= w;
  }
}

static int open_user(const char *path, bool append) {
  int flags = O_WRONLY | O_CREAT | O_CLOEXEC | O_APPEND | (append ? 0 : O_TRUNC);
  int fd;
  do {
    fd = open(path, flags, 0644);
  } while (fd < 0 && errno == EINTR);
  return fd;
}

/* The copier's life: become the user, open the files, report, copy until both pipes end. */
static void copier(const gp_launch_spec *s, int log_out, int log_err, int out_r, int err_r,
                   int sync_w) {
  setpgid(0, 0);
  int e = 0;
  if (s->switch_user && (setgroups((size_t)s->n_groups, s->groups) != 0 || setgid(s->gid) != 0 ||
                         setuid(s->uid) != 0 || (s->uid != 0 && setuid(0) == 0)))
    e = errno ? errno : EPERM;
  if (!e && s->workdir && chdir(s->workdir) != 0) e = errno;
  int uo = -1, ue = -1;
  if (!e && s->user_stdout && (uo = open_user(s->user_stdout, s->user_append)) < 0) e = errno;
  if (!e && s->user_stderr) {
    if (s->user_stdout && strcmp(s->user_stdout, s->user_stderr) == 0) ue = uo;
    else if ((ue = open_user(s->user_stderr, s->user_append)) < 0) e = errno;
  } else if (!e) {
    ue = uo; /* no --error: stderr goes with stdout, as in Slurm */
  }
  while (write(sync_w, &e, sizeof e) < 0 && errno == EINTR) {}
  close(sync_w);
  if (e) _exit(1);
  struct pollfd p[2] = {{out_r, POLLIN, 0}, {err_r, POLLIN, 0}};
  int open_n = 2;
  char buf[65536];
  while (open_n > 0) {
    if (poll(p, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; i++) {
      if (p[i].fd < 0 || !(p[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t n = read(p[i].fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        close(p[i].fd);
        p[i].fd = -1;
        open_n--;
        continue;
      }
      write_all(i == 0 ? log_out : log_err, buf, n);
      write_all(i == 0 ? uo : ue, buf, n);
    }
  }
  _exit(0);
}

pid_t gp__agent_launch_output_start(const gp_launch_spec *s, int log_out, int log_err, int shim_fd,
                              int *ret_out, int *ret_err, int *ret_errno) {
  if (!s->user_stdout && !s->user_stderr) return 0;
  int po[2], pe[2], ps[2];
  if (pipe2(po, O_CLOEXEC) != 0) {
    *ret_errno = errno;
    goto fail0;
  }
  if (pipe2(pe, O_CLOEXEC) != 0) {
    *ret_errno = errno;
    goto fail1;
  }
  if (pipe2(ps, O_CLOEXEC) != 0) {
    *ret_errno = errno;
    goto fail2;
  }
  pid_t pid = fork();
  if (pid < 0) {
    *ret_errno = errno;
    goto fail3;
  }
  if (pid == 0) {
    close(shim_fd);
    close(po[1]);
    close(pe[1]);
    close(ps[0]);
    copier(s, log_out, log_err, po[0], pe[0], ps[1]);
  }
  close(po[0]);
  close(pe[0]);
  close(ps[1]);
  int e = EIO;
  ssize_t n;
  do {
    n = read(ps[0], &e, sizeof e);
  } while (n < 0 && errno == EINTR);
  close(ps[0]);
  if (n != (ssize_t)sizeof e || e != 0) {
    close(po[1]);
    close(pe[1]);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {}
    *ret_errno = n == (ssize_t)sizeof e ? e : EIO;
    return -1;
  }
  *ret_out = po[1];
  *ret_err = pe[1];
  return pid;
fail3:
  close(ps[0]);
  close(ps[1]);
fail2:
  close(pe[0]);
  close(pe[1]);
fail1:
  close(po[0]);
  close(po[1]);
fail0:
  return -1;
}

void gp__agent_launch_output_wait(pid_t copier, int max_ms) {
  struct timespec ten = {0, 10 * 1000 * 1000};
  for (int waited = 0; waited <= max_ms; waited += 10) {
    pid_t r = waitpid(copier, NULL, WNOHANG);
    if (r == copier || (r < 0 && errno != EINTR)) return;
    nanosleep(&ten, NULL);
  }
}
