/* SPDX-License-Identifier: Apache-2.0 */
/* The far ends of sessions (session.h): a process started in a job task (exec), and a
 * connection to a port the job listens on (forward). Everything the child needs is made
 * before fork (the agent is multi-threaded); between fork and exec it only makes calls. */
#include "agent/session.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <termios.h>
#include <unistd.h>

#include "agent/agent_int.h"
#include "agent/envv.h"
#include "agent/launcher.h"
#include "util/mem.h"

#define MAX_CANDIDATES 64

typedef struct child_plan {
  char **candidates;
  int n_candidates;
  char *const *argv;
  char *const *envp;
  const char *workdir, *home;
  const char *slave;          /* PTY slave path, or NULL (pipes) */
  int in_r, out_w, err_w;     /* pipe ends the child keeps */
  int procs_fd;               /* the job's cgroup.procs, or -1 */
  gp__agent_creds c;
} child_plan;

static void run_child(const child_plan *p) {
  setsid();
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  for (int s = 1; s < NSIG; s++) signal(s, SIG_DFL);
  if (p->slave) {
    int fd = open(p->slave, O_RDWR);
    if (fd < 0) _exit(126);
    ioctl(fd, TIOCSCTTY, 0);
    dup2(fd, 0);
    dup2(fd, 1);
    dup2(fd, 2);
    if (fd > 2) close(fd);
  } else {
    dup2(p->in_r, 0);
    dup2(p->out_w, 1);
    dup2(p->err_w, 2);
  }
  if (p->procs_fd >= 0) { /* the job's cgroup: its limits and its GPU accounting */
    if (write(p->procs_fd, "0\n", 2) != 2) {
      static const char m[] = "gpool: cannot join the job's cgroup\n";
      (void)!write(2, m, sizeof m - 1);
      _exit(126);
    }
  }
  if (p->c.switch_user &&
      (setgroups((size_t)p->c.n_groups, p->c.groups) != 0 || setgid(p->c.gid) != 0 || setuid(p->c.uid) != 0 ||
       (p->c.uid != 0 && setuid(0) == 0))) {
    static const char m[] = "gpool: cannot switch to the job's user\n";
    (void)!write(2, m, sizeof m - 1);
    _exit(126);
  }
  if (!p->workdir || chdir(p->workdir) != 0) {
    if (!p->home || chdir(p->home) != 0) (void)!chdir("/");
  }
  /* No descriptor of the agent (its sockets, other sessions) reaches the command. */
  for (int fd = 3; fd < 1024; fd++) close(fd);
  int saved = ENOENT;
  for (int i = 0; i < p->n_candidates; i++) {
    execve(p->candidates[i], p->argv, p->envp);
    if (errno == EACCES) saved = EACCES;
  }
  char m[256];
  int n = snprintf(m, sizeof m, "gpool: %s: %s\n", p->argv[0], strerror(saved));
  (void)!write(2, m, (size_t)n);
  _exit(127);
}

static void candidates(child_plan *p, const char *cmd, const char *path) {
  p->candidates = gp_xcalloc(MAX_CANDIDATES, sizeof *p->candidates);
  if (strchr(cmd, '/')) {
    p->candidates[p->n_candidates++] = gp_xstrdup(cmd);
    return;
  }
  if (!path) path = "/usr/local/bin:/usr/bin:/bin";
  while (*path && p->n_candidates < MAX_CANDIDATES) {
    const char *colon = strchr(path, ':');
    size_t dl = colon ? (size_t)(colon - path) : strlen(path);
    size_t need = dl + strlen(cmd) + 3;
    char *full = gp_xmalloc(need);
    if (dl) snprintf(full, need, "%.*s/%s", (int)dl, path, cmd);
    else snprintf(full, need, "%s", cmd);
    p->candidates[p->n_candidates++] = full;
    if (!colon) break;
    path = colon + 1;
  }
}

int gp__agent_ses_exec(gp_agent *a, const gp__agent_ses_job *j, const gp_proto_session_start *s,
                       gp__agent_ses_proc *proc, char *msg, size_t cap) {
  child_plan p = {.in_r = -1, .out_w = -1, .err_w = -1, .procs_fd = -1};
  if (gp__agent_resolve_user(a, j->user, &p.c, msg, cap) != 0) return -1;
  gp__agent_envv env = {0};
  char path[800];
  snprintf(path, sizeof path, "%s/env", j->dir);
  if (gp__agent_env_load_file(path, &env) != 0) {
    snprintf(msg, cap, "the job task's environment was not kept (started by an older agent)");
    return -1;
  }
  if (s->tty) gp__agent_env_set(&env, "TERM", s->term[0] ? s->term : "xterm");
  gp__agent_env_set(&env, "GPOOL_SESSION", "1");
  /* A container job: the command runs inside its container through the engine's exec, as
   * the container's process runs: the engine as the agent (outside the job's cgroup, in the
   * agent's environment, as `podman run` was), the command as the job's user (--user) in
   * the container's cgroup and environment. */
  char **argv = s->argv;
  char **ct_argv = NULL;
  char ct_name[160], ct_user[64], ct_term[GP_PROTO_SES_TERM_MAX + 8];
  extern char **environ;
  if (j->container) {
    if (!a->container.available) {
      gp__agent_env_free(&env);
      snprintf(msg, cap, "the job runs in a container and node %s has no container engine", a->cfg.name);
      return -1;
    }
    int n = 0;
    ct_argv = gp_xcalloc((size_t)(s->n_argv + GP_CT_MAX_OPTIONS + 12), sizeof *ct_argv);
    ct_argv[n++] = a->container.engine;
    for (int i = 0; i < a->cfg.container.n_options; i++) ct_argv[n++] = a->cfg.container.options[i];
    ct_argv[n++] = "exec";
    ct_argv[n++] = "-i";
    if (s->tty) {
      ct_argv[n++] = "-t";
      snprintf(ct_term, sizeof ct_term, "TERM=%s", s->term[0] ? s->term : "xterm");
      ct_argv[n++] = "-e";
      ct_argv[n++] = ct_term;
    }
    snprintf(ct_user, sizeof ct_user, "%u:%u", (unsigned)(p.c.switch_user ? p.c.uid : geteuid()),
             (unsigned)(p.c.switch_user ? p.c.gid : getegid()));
    ct_argv[n++] = "--user";
    ct_argv[n++] = ct_user;
    gp__agent_container_name(a, j->key, ct_name, sizeof ct_name); /* as agent_container.c started it */
    ct_argv[n++] = ct_name;
    for (int i = 0; i < s->n_argv; i++) ct_argv[n++] = s->argv[i];
    argv = ct_argv;
    p.c.switch_user = false;
  }
  candidates(&p, argv[0], j->container ? getenv("PATH") : gp__agent_env_get(&env, "PATH"));
  p.argv = argv;
  p.envp = j->container ? environ : env.items;
  p.workdir = j->container ? j->dir : gp__agent_env_get(&env, "PWD");
  p.home = p.c.home[0] ? p.c.home : NULL;
  char procs[800];
  if (j->cgroup && !j->container) {
    snprintf(procs, sizeof procs, "%s/job-%s/cgroup.procs", a->cgroup.root, j->key);
    p.procs_fd = open(procs, O_WRONLY | O_CLOEXEC);
  }
  int master = -1, in_p[2] = {-1, -1}, out_p[2] = {-1, -1}, err_p[2] = {-1, -1};
  char slave[128];
  int rc = 0;
  if (s->tty) {
    master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (master < 0 || grantpt(master) != 0 || unlockpt(master) != 0 || ptsname_r(master, slave, sizeof slave) != 0) {
      snprintf(msg, cap, "cannot open a terminal: %s", strerror(errno));
      rc = -1;
    } else {
      struct winsize ws = {.ws_col = (unsigned short)(s->cols ? s->cols : 80), .ws_row = (unsigned short)(s->rows ? s->rows : 24)};
      ioctl(master, TIOCSWINSZ, &ws);
      p.slave = slave;
      /* The user's terminal: the slave belongs to the job's user, as login would make it. */
      if (p.c.switch_user && chown(slave, p.c.uid, (gid_t)-1) != 0) {}
    }
  } else if (pipe2(in_p, O_CLOEXEC) || pipe2(out_p, O_CLOEXEC) || pipe2(err_p, O_CLOEXEC)) {
    snprintf(msg, cap, "cannot make pipes: %s", strerror(errno));
    rc = -1;
  } else {
    p.in_r = in_p[0];
    p.out_w = out_p[1];
    p.err_w = err_p[1];
  }
  pid_t pid = -1;
  if (!rc) {
    pid = fork();
    if (pid == 0) run_child(&p);
    if (pid < 0) {
      snprintf(msg, cap, "cannot fork: %s", strerror(errno));
      rc = -1;
    }
  }
  /* No setpgid here: the child's setsid makes it its group's leader, and would fail if
   * the parent had made it one first (then no controlling terminal, no job control). */
  for (int i = 0; i < p.n_candidates; i++) free(p.candidates[i]);
  free(p.candidates);
  free(ct_argv);
  gp__agent_env_free(&env);
  if (p.procs_fd >= 0) close(p.procs_fd);
  if (in_p[0] >= 0) close(in_p[0]);
  if (out_p[1] >= 0) close(out_p[1]);
  if (err_p[1] >= 0) close(err_p[1]);
  if (rc) {
    if (master >= 0) close(master);
    if (in_p[1] >= 0) close(in_p[1]);
    if (out_p[0] >= 0) close(out_p[0]);
    if (err_p[0] >= 0) close(err_p[0]);
    return -1;
  }
  proc->pid = pid;
  proc->tty = s->tty;
  proc->in_fd = s->tty ? master : in_p[1];
  proc->out_fd = s->tty ? master : out_p[0];
  proc->err_fd = s->tty ? -1 : err_p[0];
  return 0;
}

/* ---- forward ---- */

/* Inodes of the sockets listening on TCP `port` (IPv4 and IPv6), up to cap. */
static int listening_inodes(int port, unsigned long *out, int cap) {
  int n = 0;
  static const char *const files[] = {"/proc/net/tcp", "/proc/net/tcp6"};
  for (int f = 0; f < 2; f++) {
    FILE *fp = fopen(files[f], "re");
    if (!fp) continue;
    char line[512];
    if (!fgets(line, sizeof line, fp)) {
      fclose(fp);
      continue;
    }
    while (n < cap && fgets(line, sizeof line, fp)) {
      char local[128], remote[128];
      unsigned st = 0;
      unsigned long inode = 0;
      if (sscanf(line, " %*d: %127s %127s %x %*s %*s %*s %*d %*d %lu", local, remote, &st, &inode) != 4) continue;
      const char *colon = strrchr(local, ':');
      if (st != 0x0A || !colon || strtol(colon + 1, NULL, 16) != port || !inode) continue;
      out[n++] = inode;
    }
    fclose(fp);
  }
  return n;
}

static bool pid_holds(pid_t pid, const unsigned long *inodes, int n) {
  char dir[64];
  snprintf(dir, sizeof dir, "/proc/%d/fd", (int)pid);
  DIR *d = opendir(dir);
  if (!d) return false;
  bool found = false;
  struct dirent *e;
  while (!found && (e = readdir(d))) {
    char link[400], target[64];
    snprintf(link, sizeof link, "%s/%s", dir, e->d_name);
    ssize_t k = readlink(link, target, sizeof target - 1);
    if (k <= 0) continue;
    target[k] = '\0';
    unsigned long ino = 0;
    if (sscanf(target, "socket:[%lu]", &ino) != 1) continue;
    for (int i = 0; i < n; i++) found |= ino == inodes[i];
  }
  closedir(d);
  return found;
}

/* Whether pid belongs to the job: in its cgroup, or below its shim (its process tree), or
 * in its process group. */
static bool pid_of_job(pid_t pid, const gp__agent_ses_job *j, const char *cgroup_line) {
  char path[64], buf[512];
  if (cgroup_line) {
    snprintf(path, sizeof path, "/proc/%d/cgroup", (int)pid);
    FILE *fp = fopen(path, "re");
    bool in = false;
    while (fp && !in && fgets(buf, sizeof buf, fp)) in = strstr(buf, cgroup_line) != NULL;
    if (fp) fclose(fp);
    if (in) return true;
  }
  for (int depth = 0; depth < 64 && pid > 1; depth++) {
    if (pid == j->pid || pid == j->shim_pid) return true;
    pid_t pgrp = 0, ppid = 0;
    if (gp_proc_pgrp_ppid(pid, &pgrp, &ppid) != 0) return false;
    if (j->pid > 0 && pgrp == j->pid) return true;
    pid = ppid;
  }
  return false;
}

bool gp__agent_ses_port_owned(const gp__agent_ses_job *j, int port) {
  unsigned long inodes[16];
  int n = listening_inodes(port, inodes, 16);
  if (!n) return false;
  char cg[160];
  snprintf(cg, sizeof cg, "/job-%s/", j->key);
  char cg_end[160];
  snprintf(cg_end, sizeof cg_end, "/job-%s\n", j->key);
  DIR *d = opendir("/proc");
  if (!d) return false;
  bool owned = false;
  struct dirent *e;
  while (!owned && (e = readdir(d))) {
    char *end;
    long pid = strtol(e->d_name, &end, 10);
    if (*end || pid <= 1) continue;
    if (!pid_holds((pid_t)pid, inodes, n)) continue;
    owned = pid_of_job((pid_t)pid, j, j->cgroup ? cg : NULL) || (j->cgroup && pid_of_job((pid_t)pid, j, cg_end));
  }
  closedir(d);
  return owned;
}

int gp__agent_ses_forward(const gp__agent_ses_job *j, int port, gp__agent_ses_proc *p, char *msg, size_t cap) {
  if (!gp__agent_ses_port_owned(j, port)) {
    snprintf(msg, cap, "no process of job %s listens on port %d", j->id, port);
    return -1;
  }
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
    snprintf(msg, cap, "cannot connect to port %d of job %s: %s", port, j->id, strerror(errno));
    if (fd >= 0) close(fd);
    return -1;
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  p->pid = 0;
  p->tty = false;
  p->in_fd = p->out_fd = fd;
  p->err_fd = -1;
  return 0;
}
