/* SPDX-License-Identifier: Apache-2.0 */
/* Interactive sessions on this node (docs/interactive.md): the agent's end of `gpool exec`,
 * `gpool run` and `gpool port-forward`. The server opens GET /sessions/{job}?task=T on the
 * agent's endpoint as a WebSocket (tls/ws.h), with the agent's token (the same as its log
 * reads); the agent then runs what the session's start asks (protocol/session.h):
 *   exec     a process in the job task: its user, its cgroup, its environment (the one
 *            kept at its start, with its GPUs), its container through `podman exec` when
 *            it runs in an image; on a PTY with the window size when asked;
 *   attach   the task's stdout and stderr as they are written, until it ends (its code);
 *   forward  a TCP connection to 127.0.0.1:PORT, only when a process of the job itself
 *            listens there (so one job never reaches another's ports through its agent).
 * Each session is one thread relaying between the WebSocket and the process's descriptors
 * with bounded buffers: output is read only while the WebSocket has room for it, input
 * only while the process has taken the last message. A `gpool run` session (end_task)
 * whose server goes away with 1001 (stopping, failing over) keeps its command: its output
 * goes to a 64 KiB ring until an attach to its task takes the session over. */
#ifndef GP_AGENT_SESSION_H
#define GP_AGENT_SESSION_H

#include <microhttpd.h>
#include <stdbool.h>
#include <sys/types.h>

#include "agent/agent.h"
#include "protocol/session.h"

#define GP_AGENT_SES_MAX 64 /* sessions at once on one agent */

/* What a session needs of its job task, read from its directory (not the run loop's
 * table, which only the loop touches). */
typedef struct gp__agent_ses_job {
  char id[64];
  char dir[700];
  char key[96];
  char user[64];
  pid_t pid, shim_pid;
  bool cgroup;
  bool container;
} gp__agent_ses_job;

/* The far end of a session: a process (pid > 0) or a socket. */
typedef struct gp__agent_ses_proc {
  pid_t pid;    /* process group leader, 0 for a forward */
  int in_fd;    /* stdin goes here (PTY master, pipe or socket), -1 once closed */
  int out_fd;   /* stdout comes from here (the same fd for a PTY or a socket) */
  int err_fd;   /* stderr (pipes only), else -1 */
  bool tty;
} gp__agent_ses_proc;

/* Starts `s`'s command in job task j. 0, or -1 with a sentence in msg. */
int gp__agent_ses_exec(gp_agent *a, const gp__agent_ses_job *j, const gp_proto_session_start *s,
                       gp__agent_ses_proc *p, char *msg, size_t cap);
/* Connects to the job's listener on 127.0.0.1:port. 0, or -1 with a sentence in msg. */
int gp__agent_ses_forward(const gp__agent_ses_job *j, int port, gp__agent_ses_proc *p, char *msg, size_t cap);
/* Whether a process of job task j holds the listening TCP socket of `port` (tests use it). */
bool gp__agent_ses_port_owned(const gp__agent_ses_job *j, int port);

/* A task whose work was a session (end_task, `gpool run`): the session's exit code, kept in
 * <dir>/session.exit, replaces the holder's (ended by the agent when the session did). */
void gp__agent_ses_task_exit(const char *dir, bool *known, int *code, int *sig);

/* The HTTP side: answers GET /sessions/{id} (an upgrade, or a refusal). */
enum MHD_Result gp__agent_ses_serve(gp_agent *a, struct MHD_Connection *c, const char *id);
void gp__agent_ses_init(gp_agent *a);  /* before the endpoint starts */
void gp__agent_ses_free(gp_agent *a);  /* after it stopped; accepts none made */
/* Stops taking sessions, ends those open and waits for their threads (before the
 * endpoint's daemon stops). */
void gp__agent_ses_stop_all(gp_agent *a);

#endif
