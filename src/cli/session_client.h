/* SPDX-License-Identifier: Apache-2.0 */
/* The CLI's end of an interactive session (docs/interactive.md): a WebSocket to the
 * server's GET /v1/jobs/{id}/session (tls/ws.h), the start message, then a relay between
 * the session and local descriptors (the terminal for exec and run, a TCP connection for
 * port-forward). With a terminal it is put in raw mode (restored on every way out), its
 * size sent at the start and on every SIGWINCH; Ctrl-C and Ctrl-Z travel as bytes to the
 * job's terminal, whose line discipline turns them into signals there. Without one,
 * SIGINT, SIGTERM, SIGHUP and SIGQUIT received here are sent on to the process. The
 * session's end is reported plainly: the command's exit code is returned; a server that
 * stops or goes away ends the session with a sentence saying the job keeps running (a
 * `gpool run` one too: its agent keeps the command for `gpool attach`). */
#ifndef GP_CLI_SESSION_CLIENT_H
#define GP_CLI_SESSION_CLIENT_H

#include <jansson.h>
#include <stdbool.h>

#include "cli/cli_common.h"
#include "tls/ws.h"

/* Opens a session to task `task` (-1: the server's default, 0) of job `job` with the
 * server, token and CA cli's options (or the environment, client.json) name. Returns 0
 * with *ret; otherwise prints why (the server's message for a refusal) and returns the
 * exit code (1 refused, 3 unreachable, 2 usage). */
int gp_cli_session_open(gp_cli *cli, const char *job, int task, gp_tls_ws **ret);

typedef struct gp_cli_session_io {
  int in_fd;          /* read and sent as stdin; -1: none (an end of input is sent) */
  int out_fd, err_fd; /* stdout and stderr written here */
  bool tty;           /* in_fd is a terminal: raw mode, window size, SIGWINCH */
  bool signals;       /* forward SIGINT/SIGTERM/SIGHUP/SIGQUIT received here */
  bool quiet;         /* print nothing about the session's end (port-forward) */
  bool ends_job;      /* the session is the job's work (gpool run): the job ends with it */
  bool input_on_attach; /* attach: in_fd is sent only when the agent hands over a `gpool run`
                         * session that outlived its server (raw mode when it has a PTY) */
} gp_cli_session_io;

/* Sends `start` (its cols and rows set from the terminal when io->tty) and relays until the
 * session ends. Returns the command's exit code, or 1 (with a sentence on stderr) when the
 * session ended otherwise. Frees w. */
int gp_cli_session_run(gp_cli *cli, const char *job, gp_tls_ws *w, json_t *start, const gp_cli_session_io *io);

#endif
