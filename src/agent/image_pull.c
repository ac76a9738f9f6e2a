/* SPDX-License-Identifier: Apache-2.0 */
/* pull_image orders (docs/containers.md#pre-pulling): an admin's pre-pull of an image on
 * this node, ahead of the jobs that will run in it. The engine's pull runs as a child of
 * the agent, never waited for in the loop: each heartbeat looks at it (waitpid WNOHANG),
 * kills it past the node's pull_timeout, and answers the order with a pull_done event
 * (ok, or the final reason as for a job's pull: "unauthorized: REF"...). A pool-wide
 * credential the server sent is an auth file of its own (0600, the agent's data
 * directory), removed when the pull ends. At most GP__AGENT_MAX_PULLS run at once. Its
 * progress is measured as a job's pull's is (pull_progress.c: the engine's TMPDIR is the
 * pull's own directory, the total the manifest's) and each heartbeat that saw it move
 * sends a pull_progress event, which `gpool images` shows while the pull runs. */
#include "agent/agent_int.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "protocol/container.h"
#include "protocol/event.h"
#include "protocol/registry.h"
#include "util/mem.h"

#define GP__AGENT_MAX_PULLS 4

typedef struct pull {
  pid_t pid;
  char order[GP_AGENT_ID_MAX];
  char image[GP_PROTO_IMAGE_FULL_MAX];
  char err_path[800], auth_path[800];
  char dir[800];  /* its progress's directory (pull_progress.c); "": not measured */
  char **inspect; /* the manifest's read, which prog borrows; NULL: none */
  gp_agent_pull_progress prog;
  int64_t sent_done, sent_total; /* the last pull_progress event's; -1: none yet */
  int64_t sent_ms;                /* when it was measured last */
  int64_t t0_ms, deadline_ms;
} pull;

struct gp__agent_pulls {
  pull v[GP__AGENT_MAX_PULLS];
  int n;
};

static void answer(gp_agent *a, const char *order, bool ok, const char *message) {
  gp_proto_event *ev = gp_xcalloc(1, sizeof *ev);
  ev->kind = GP_PROTO_EV_PULL_DONE;
  snprintf(ev->order, sizeof ev->order, "%s", order);
  ev->ok = ok;
  ev->has_message = true;
  snprintf(ev->message, sizeof ev->message, "%s", message);
  gp__agent_log("order %s: %s", order, message);
  gp__agent_event(a, gp_proto_event_encode(ev));
  free(ev);
}

/* The measure's end: the manifest's read stopped, its files and directory removed. */
static void progress_end(pull *u) {
  if (!u->dir[0]) return;
  gp_agent_pull_progress_end(&u->prog);
  char path[900];
  snprintf(path, sizeof path, "%s/container.progress", u->dir);
  unlink(path);
  rmdir(u->dir);
  u->dir[0] = '\0';
  gp_agent_container_argv_free(u->inspect);
  u->inspect = NULL;
}

/* Sends the pull's progress when it moved since the last event; at most once a second,
 * however often the long poll returns early (the measure walks the pull's files). */
static void progress_tick(gp_agent *a, pull *u) {
  int64_t now = gp__agent_now_ms();
  if (!u->dir[0] || now - u->sent_ms < 1000) return;
  u->sent_ms = now;
  gp_agent_pull_progress_tick(&u->prog);
  if (u->prog.done == u->sent_done && u->prog.total == u->sent_total) return;
  u->sent_done = u->prog.done;
  u->sent_total = u->prog.total;
  gp_proto_event *ev = gp_xcalloc(1, sizeof *ev);
  ev->kind = GP_PROTO_EV_PULL_PROGRESS;
  snprintf(ev->order, sizeof ev->order, "%s", u->order);
  ev->done_bytes = u->prog.done;
  ev->total_bytes = u->prog.total;
  gp__agent_event(a, gp_proto_event_encode(ev));
  free(ev);
}

static int write_auth(const char *path, const char *image, const char *auth) {
  char reg[GP_PROTO_REGISTRY_MAX + 1];
  if (!gp_proto_image_registry(image, reg, sizeof reg) || gp_proto_registry_check(reg)) return -1;
  unlink(path);
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return -1;
  FILE *f = fdopen(fd, "we");
  if (!f) {
    close(fd);
    return -1;
  }
  fprintf(f, "{\"auths\":{\"%s\":{\"auth\":\"%s\"}}}\n", reg, auth); /* both checked */
  return fclose(f) == 0 ? 0 : -1;
}

void gp__agent_pull_run(gp_agent *a, const char *order, const gp_proto_pull *p) {
  if (!a->container.available) {
    char msg[1200];
    snprintf(msg, sizeof msg, "image pull failed: %s (this node cannot run containers: %s)", p->image,
             a->container.message);
    answer(a, order, false, msg);
    return;
  }
  if (!a->pulls) a->pulls = gp_xcalloc(1, sizeof *a->pulls);
  struct gp__agent_pulls *ps = a->pulls;
  if (ps->n >= GP__AGENT_MAX_PULLS) {
    char msg[400];
    snprintf(msg, sizeof msg, "image pull failed: %s (%d pulls already run on this node)", p->image,
             GP__AGENT_MAX_PULLS);
    answer(a, order, false, msg);
    return;
  }
  pull *u = &ps->v[ps->n];
  memset(u, 0, sizeof *u);
  snprintf(u->order, sizeof u->order, "%s", order);
  /* By its full name, as a job's image is pulled and run (agent_container.c): the same
   * image whatever the node's short-name settings. */
  char full[GP_PROTO_IMAGE_FULL_MAX];
  if (!gp_proto_image_full(p->image, full, sizeof full)) snprintf(full, sizeof full, "%s", p->image);
  snprintf(u->image, sizeof u->image, "%s", full);
  snprintf(u->err_path, sizeof u->err_path, "%s/pull-%s.err", a->cfg.data_dir, order);
  char **argv = gp_agent_container_pull_argv(&a->cfg.container, &a->container, full);
  if (p->auth[0]) {
    snprintf(u->auth_path, sizeof u->auth_path, "%s/pull-%s.auth", a->cfg.data_dir, order);
    if (write_auth(u->auth_path, p->image, p->auth) != 0) {
      unlink(u->auth_path);
      gp_agent_container_argv_free(argv);
      answer(a, order, false, "image pull failed: cannot write the credential's file");
      return;
    }
    size_t c = 0;
    while (argv[c]) c++;
    argv = gp_xrealloc(argv, (c + 3) * sizeof *argv);
    argv[c + 1] = argv[c - 1];
    argv[c - 1] = gp_xstrdup("--authfile");
    argv[c] = gp_xstrdup(u->auth_path);
    argv[c + 2] = NULL;
  }
  /* The progress's directory: the engine's TMPDIR (pull.tmp) inside, the manifest beside. */
  snprintf(u->dir, sizeof u->dir, "%s/pull-%s.d", a->cfg.data_dir, order);
  u->sent_done = u->sent_total = -1;
  if (mkdir(u->dir, 0700) != 0 && errno != EEXIST) u->dir[0] = '\0';
  if (u->dir[0]) {
    u->inspect = gp_agent_container_inspect_argv(&a->cfg.container, &a->container, u->auth_path);
    gp_agent_pull_progress_start(&u->prog, u->dir, u->inspect, full);
  }
  /* The child's environment, made here: the agent has threads, so the child only execs. */
  extern char **environ;
  size_t ne = 0;
  while (environ[ne]) ne++;
  char **envp = gp_xcalloc(ne + 2, sizeof *envp), *tmpdir = NULL;
  size_t k = 0;
  if (u->dir[0] && u->prog.tmp[0]) {
    size_t len = strlen(u->prog.tmp) + 8;
    tmpdir = gp_xmalloc(len);
    snprintf(tmpdir, len, "TMPDIR=%s", u->prog.tmp); /* the blobs measured */
    envp[k++] = tmpdir;
  }
  for (size_t i = 0; i < ne; i++)
    if (!tmpdir || strncmp(environ[i], "TMPDIR=", 7)) envp[k++] = environ[i];
  int errfd = open(u->err_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  pid_t pid = errfd >= 0 ? fork() : -1;
  if (pid == 0) {
    int null = open("/dev/null", O_RDWR);
    dup2(null, 0);
    dup2(null, 1);
    dup2(errfd, 2);
    setpgid(0, 0);
    execve(argv[0], argv, envp);
    _exit(127);
  }
  if (errfd >= 0) close(errfd);
  free(tmpdir);
  free(envp);
  gp_agent_container_argv_free(argv);
  if (pid < 0) {
    progress_end(u);
    if (u->auth_path[0]) unlink(u->auth_path);
    answer(a, order, false, "image pull failed: cannot start the engine");
    return;
  }
  u->pid = pid;
  u->t0_ms = gp__agent_now_ms();
  u->deadline_ms = u->t0_ms + (int64_t)a->cfg.container.pull_timeout_s * 1000;
  ps->n++;
  gp__agent_log("order %s: pulling image %s", order, full);
}

static void finish(gp_agent *a, pull *u, int st, bool timed_out) {
  progress_end(u);
  if (u->auth_path[0]) unlink(u->auth_path);
  char out[8192] = "";
  FILE *f = fopen(u->err_path, "re");
  if (f) {
    size_t n = fread(out, 1, sizeof out - 1, f);
    out[n] = '\0';
    fclose(f);
  }
  unlink(u->err_path);
  char msg[800];
  bool ok = !timed_out && WIFEXITED(st) && WEXITSTATUS(st) == 0;
  if (timed_out)
    snprintf(msg, sizeof msg, "image pull timed out: %s (after %d s)", u->image,
             a->cfg.container.pull_timeout_s);
  else if (!ok)
    snprintf(msg, sizeof msg, "%s: %s", gp_agent_container_pull_reason(out), u->image);
  else
    snprintf(msg, sizeof msg, "pulled image %s in %.1f s", u->image,
             (double)(gp__agent_now_ms() - u->t0_ms) / 1000.0);
  answer(a, u->order, ok, msg);
  if (ok) {
    gp__agent_image_used(a, gp_proto_image_hash(u->image)); /* the store's LRU (image_lru.c) */
    a->images_next_ms = 0; /* the next heartbeat reports it (and the cap applies) */
  }
}

void gp__agent_pulls_tick(gp_agent *a) {
  struct gp__agent_pulls *ps = a->pulls;
  for (int i = 0; ps && i < ps->n;) {
    pull *u = &ps->v[i];
    int st = 0;
    bool timed_out = false;
    pid_t r = waitpid(u->pid, &st, WNOHANG);
    if (r == 0 && gp__agent_now_ms() >= u->deadline_ms) {
      kill(-u->pid, SIGKILL);
      kill(u->pid, SIGKILL);
      while (waitpid(u->pid, &st, 0) < 0 && errno == EINTR) {}
      timed_out = true;
      r = u->pid;
    }
    if (r == 0) {
      progress_tick(a, u);
      i++;
      continue;
    }
    finish(a, u, r < 0 ? (1 << 8) : st, timed_out);
    ps->v[i] = ps->v[--ps->n];
  }
}

void gp__agent_pulls_free(gp_agent *a) {
  struct gp__agent_pulls *ps = a->pulls;
  for (int i = 0; ps && i < ps->n; i++) {
    kill(-ps->v[i].pid, SIGKILL);
    waitpid(ps->v[i].pid, NULL, 0);
    progress_end(&ps->v[i]);
    if (ps->v[i].auth_path[0]) unlink(ps->v[i].auth_path);
    unlink(ps->v[i].err_path);
  }
  free(ps);
  a->pulls = NULL;
}
