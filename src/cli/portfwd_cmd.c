/* SPDX-License-Identifier: Apache-2.0 */
/* `gpool port-forward JOB [--task N] [--address ADDR] [LOCAL:]REMOTE` (docs/interactive.md):
 * listens on ADDR:LOCAL (127.0.0.1 and REMOTE by default; LOCAL 0: any free port) and
 * carries each connection made there to port REMOTE inside the job task, through the
 * server and the job's agent, as one session each (so each counts against
 * sessions_per_user). The agent connects only to a port a process of the job listens on.
 * For Jupyter, TensorBoard, a debugger, VS Code's remote server. Runs until interrupted. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cli/cli_common.h"
#include "cli/commands.h"
#include "cli/job_format.h"
#include "cli/session_client.h"
#include "util/thread.h"
#include "util/units.h"

enum { F_TASK = 1, F_ADDRESS };
static const gp_opt pf_opts[] = {
    {0, "task", true, F_TASK}, {0, "address", true, F_ADDRESS}, GP_CLI_COMMON_OPTS,
};

static const char pf_usage[] =
    "Usage: gpool port-forward JOB [--task N] [--address ADDR] [LOCAL:]REMOTE\n"
    "  Forwards ADDR:LOCAL on this machine to port REMOTE inside the running job, through\n"
    "  the server and the job's agent (LOCAL defaults to REMOTE; 0 picks a free port;\n"
    "  ADDR defaults to 127.0.0.1). Only a port that a process of the job listens on is\n"
    "  reached. Only the job's owner and admins may forward. Runs until interrupted.\n"
    "  Example: gpool port-forward 12 8888   then open http://127.0.0.1:8888\n";

typedef struct pf_args {
  const char *job;
  const char *spec;
  const char *address;
  int64_t task;
} pf_args;

static int pf_opt(void *arg, int id, const char *v) {
  pf_args *a = arg;
  if (id == F_ADDRESS) a->address = v;
  else if (id == F_TASK && (gp_parse_int64(v, &a->task) || a->task < 0 || a->task > 100000))
    return gp_cli_usage_error("port-forward", "--task: expected a task index (0, 1, ...), got '%s'", v);
  return 0;
}

static int pf_word(void *arg, const char *v) {
  pf_args *a = arg;
  if (!a->job) {
    if (!gp_cli_valid_job_id(v)) return gp_cli_usage_error("port-forward", "'%s' is not a job id", v);
    a->job = v;
  } else if (!a->spec) a->spec = v;
  else return gp_cli_usage_error("port-forward", "one port at a time: [LOCAL:]REMOTE");
  return 0;
}

static bool port_of(const char *s, size_t n, bool zero_ok, int *out) {
  char buf[8];
  int64_t v = 0;
  if (!n || n >= sizeof buf) return false;
  memcpy(buf, s, n);
  buf[n] = '\0';
  if (gp_parse_int64(buf, &v) || v < (zero_ok ? 0 : 1) || v > 65535) return false;
  *out = (int)v;
  return true;
}

typedef struct conn_job {
  gp_cli cli;
  const char *job;
  int task, remote, fd;
} conn_job;

static void *carry(void *arg) {
  conn_job *c = arg;
  gp_tls_ws *w = NULL;
  if (gp_cli_session_open(&c->cli, c->job, c->task, &w) == 0) {
    json_t *start = json_pack("{s:s,s:i}", "kind", "forward", "port", c->remote);
    gp_cli_session_io io = {.in_fd = c->fd, .out_fd = c->fd, .err_fd = 2, .quiet = false};
    gp_cli_session_run(&c->cli, c->job, w, start, &io);
    json_decref(start);
  }
  close(c->fd);
  free(c);
  return NULL;
}

int gp_cmd_port_forward(int argc, char **argv) {
  gp_cli cli = {.cmd = "port-forward"};
  pf_args a = {.task = -1, .address = "127.0.0.1"};
  int rc = gp_cli_parse(&cli, argc, argv, pf_opts, pf_opt, pf_word, &a, pf_usage);
  if (rc) return rc < 0 ? 0 : rc;
  if (!a.job || !a.spec) return gp_cli_usage_error("port-forward", "gpool port-forward JOB [LOCAL:]REMOTE");
  int local = 0, remote = 0;
  const char *colon = strchr(a.spec, ':');
  bool ok = colon ? port_of(a.spec, (size_t)(colon - a.spec), true, &local) && port_of(colon + 1, strlen(colon + 1), false, &remote)
                  : port_of(a.spec, strlen(a.spec), false, &remote);
  if (!ok) return gp_cli_usage_error("port-forward", "'%s' is not [LOCAL:]REMOTE (ports 1-65535; LOCAL 0: any)", a.spec);
  if (!colon) local = remote;
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)local)};
  if (inet_pton(AF_INET, a.address, &sa.sin_addr) != 1)
    return gp_cli_usage_error("port-forward", "--address: '%s' is not an IPv4 address", a.address);
  /* Check the job and the right to forward before listening: a refusal is said at once. */
  gp_tls_ws *probe = NULL;
  if ((rc = gp_cli_session_open(&cli, a.job, (int)a.task, &probe))) return rc;
  gp_tls_ws_close(probe, GP_TLS_WS_NORMAL, NULL);
  gp_tls_ws_flush_wait(probe, 500);
  gp_tls_ws_free(probe);
  int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (l < 0 || bind(l, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(l, 64) != 0) {
    fprintf(stderr, "gpool port-forward: cannot listen on %s:%d: %s\n", a.address, local, strerror(errno));
    if (l >= 0) close(l);
    return 1;
  }
  socklen_t sl = sizeof sa;
  getsockname(l, (struct sockaddr *)&sa, &sl);
  signal(SIGPIPE, SIG_IGN); /* a local client that leaves is a closed connection, not our end */
  printf("Forwarding from %s:%d -> job %s port %d\n", a.address, ntohs(sa.sin_port), a.job, remote);
  fflush(stdout);
  for (;;) {
    int fd = accept4(l, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE) continue;
      fprintf(stderr, "gpool port-forward: accept: %s\n", strerror(errno));
      break;
    }
    conn_job *c = calloc(1, sizeof *c);
    c->cli = cli;
    c->job = a.job;
    c->task = (int)a.task;
    c->remote = remote;
    c->fd = fd;
    if (gp_thread_start_detached(carry, c) != 0) {
      close(fd);
      free(c);
    }
  }
  close(l);
  return 1;
}
