/* SPDX-License-Identifier: Apache-2.0 */
/* One provider process: started with posix_spawn in a process group of its own (so a
 * timeout stops the script and everything it started), stdin a socket (written with
 * MSG_NOSIGNAL: a provider that closes stdin early cannot raise SIGPIPE in gpool, and
 * no process-wide signal setting is needed), stdout and stderr pipes read with bounds.
 *
 * Time: one loop polls the pipes with a short tick and checks the child with waitid()
 * (WNOWAIT, so the pid stays ours until we reap it): SIGCHLD is never used, so this works
 * on any thread beside any other child handling. When the child has exited, the group is
 * sent SIGKILL before the child is reaped (the group id cannot be reused while the zombie
 * holds it), so a background process left holding stdout neither keeps the call waiting
 * nor outlives it. At the deadline the group gets SIGTERM, and SIGKILL after a grace of a
 * tenth of the call's time (100 ms .. 2 s) taken out of that time, so the call ends by
 * the deadline. (A process that sets SIGCHLD to SIG_IGN has its children reaped by the
 * kernel and cannot wait for them: gpool never does.) */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "provider/prov_int.h"
#include "util/spawn.h"

#define TICK_MS 20

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void close_fd(int *fd) {
  if (*fd >= 0) close(*fd);
  *fd = -1;
}

/* The child has exited (not yet reaped)? */
static bool has_exited(pid_t pid) {
  siginfo_t si;
  memset(&si, 0, sizeof si);
  if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) != 0) return errno == ECHILD;
  return si.si_pid == pid;
}

static void reap(pid_t pid, gp__prov_child *c) {
  int st = 0;
  pid_t r;
  do r = waitpid(pid, &st, 0);
  while (r < 0 && errno == EINTR);
  if (r != pid) return;
  c->exited = true;
  if (WIFEXITED(st)) {
    c->exit_status = WEXITSTATUS(st);
  } else if (WIFSIGNALED(st)) {
    c->signal = WTERMSIG(st);
    c->exit_status = 128 + c->signal;
  }
}

/* Reads what is there, at most DRAIN_MAX bytes per call (a writer as fast as the reader
 * must not keep the caller from its deadline); returns false at EOF or error. Bytes past
 * `keep` are dropped. */
#define DRAIN_MAX (1024 * 1024)
static bool drain(int fd, gp_buf *b, size_t keep, bool *over) {
  char chunk[16384];
  for (size_t total = 0; total < DRAIN_MAX;) {
    ssize_t n = read(fd, chunk, sizeof chunk);
    if (n > 0) {
      total += (size_t)n;
      size_t room = b->len < keep ? keep - b->len : 0;
      if ((size_t)n > room && over) *over = true;
      gp_buf_append(b, chunk, (size_t)n < room ? (size_t)n : room);
      if (over && *over) return false;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
  }
  return true;
}

static int start(const char *path, const char *verb, char *const *envp, int in_fd, int out_fd,
                 int err_fd, pid_t *ret, gp__prov_child *c) {
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t at;
  posix_spawn_file_actions_init(&fa);
  posix_spawnattr_init(&at);
  posix_spawn_file_actions_adddup2(&fa, in_fd, 0);
  posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
  posix_spawn_file_actions_adddup2(&fa, err_fd, 2);
  gp_spawn_isolate(&fa, &at);
  char *argv[] = {(char *)path, (char *)verb, NULL};
  int r = posix_spawn(ret, path, &fa, &at, argv, envp);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&at);
  if (r) {
    char why[128];
    snprintf(c->spawn_error, sizeof c->spawn_error, "cannot start %s: %s", path,
             strerror_r(r, why, sizeof why));
    return GP_EIO;
  }
  return 0;
}

/* SIGTERM to the group, then SIGKILL once the leader is gone or at kill_at. */
static void stop_group(pid_t pid, int64_t kill_at) {
  kill(-pid, SIGTERM);
  while (!has_exited(pid) && now_ms() < kill_at) {
    struct timespec ts = {0, 10 * 1000000};
    nanosleep(&ts, NULL);
  }
  kill(-pid, SIGKILL);
}

int gp__prov_spawn(const char *path, const char *verb, char *const *envp, const char *input,
                   int64_t deadline_ms, gp__prov_child *c) {
  memset(c, 0, sizeof *c);
  gp_buf_init(&c->out, GP_PROVIDER_MAX_STDOUT + 1);
  gp_buf_init(&c->err, GP_PROVIDER_MAX_STDERR + 1);
  int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in) || pipe2(out, O_CLOEXEC) ||
      pipe2(err, O_CLOEXEC)) {
    char why[128];
    snprintf(c->spawn_error, sizeof c->spawn_error, "cannot make pipes: %s",
             strerror_r(errno, why, sizeof why));
    for (int i = 0; i < 2; i++) close_fd(&in[i]), close_fd(&out[i]), close_fd(&err[i]);
    return GP_EIO;
  }
  pid_t pid;
  int r = start(path, verb, envp, in[1], out[1], err[1], &pid, c);
  close_fd(&in[1]);
  close_fd(&out[1]);
  close_fd(&err[1]);
  if (r) {
    close_fd(&in[0]);
    close_fd(&out[0]);
    close_fd(&err[0]);
    return r;
  }
  fcntl(in[0], F_SETFL, O_NONBLOCK);
  fcntl(out[0], F_SETFL, O_NONBLOCK);
  fcntl(err[0], F_SETFL, O_NONBLOCK);
  int64_t begin = now_ms();
  int64_t grace = (deadline_ms - begin) / 10;
  grace = grace < 100 ? 100 : grace > 2000 ? 2000 : grace;
  int64_t term_at = deadline_ms - grace;
  size_t in_len = strlen(input), in_off = 0;
  if (in_len == 0) close_fd(&in[0]);
  for (;;) {
    if (out[0] < 0 && err[0] < 0 && in[0] < 0) {
      /* Nothing left to read: wait for the exit alone. */
      if (has_exited(pid)) break;
    } else if (has_exited(pid)) {
      /* Take what the pipes hold now, then stop; a grandchild may hold them forever. */
      if (out[0] >= 0) drain(out[0], &c->out, GP_PROVIDER_MAX_STDOUT, &c->out_too_long);
      if (err[0] >= 0) drain(err[0], &c->err, GP_PROVIDER_MAX_STDERR, NULL);
      break;
    }
    int64_t now = now_ms();
    if (now >= term_at) {
      c->timed_out = true;
      stop_group(pid, deadline_ms);
      break;
    }
    struct pollfd p[3] = {{in[0], POLLOUT, 0}, {out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
    int wait = (int)(term_at - now < TICK_MS ? term_at - now : TICK_MS);
    if (poll(p, 3, wait) < 0 && errno != EINTR) break;
    if (in[0] >= 0 && p[0].revents) {
      ssize_t n = send(in[0], input + in_off, in_len - in_off, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) in_off += (size_t)n;
      if ((n < 0 && errno != EAGAIN && errno != EINTR) || in_off == in_len) close_fd(&in[0]);
    }
    if (out[0] >= 0 && p[1].revents &&
        !drain(out[0], &c->out, GP_PROVIDER_MAX_STDOUT, &c->out_too_long)) {
      close_fd(&out[0]);
      if (c->out_too_long) break;
    }
    if (err[0] >= 0 && p[2].revents && !drain(err[0], &c->err, GP_PROVIDER_MAX_STDERR, NULL))
      close_fd(&err[0]);
  }
  kill(-pid, SIGKILL);
  reap(pid, c);
  close_fd(&in[0]);
  close_fd(&out[0]);
  close_fd(&err[0]);
  return 0;
}

void gp__prov_child_done(gp__prov_child *c) {
  gp_buf_done(&c->out);
  gp_buf_done(&c->err);
}
