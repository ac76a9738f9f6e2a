/* SPDX-License-Identifier: Apache-2.0 */
/* The session protocol (docs/interactive.md): what travels inside the WebSocket of an
 * interactive session, the same from the CLI through the server to the agent.
 *
 * The client's first message is a text frame, the start: {"kind": "exec", "command": [...],
 * "tty": bool, "cols": N, "rows": N, "term": "xterm", "end_task": bool}, {"kind": "forward",
 * "port": N}, or {"kind": "attach"} (the task's output from now on, until it ends).
 * Every later message is binary, its first byte a channel:
 *   0 stdin  (client -> agent; an empty payload: end of input)
 *   1 stdout (agent -> client)    2 stderr (agent -> client)
 *   3 status (agent -> client, JSON: {"exit": N} or {"error": "..."}; the last message)
 *   4 resize (client -> agent, JSON: {"cols": N, "rows": N})
 *   5 signal (client -> agent, JSON: {"signal": "INT"})
 * The server checks who may open the session (the job's owner and admins) and relays the
 * frames; the agent validates the start with gp_proto_session_start_parse. */
#ifndef GP_PROTOCOL_SESSION_H
#define GP_PROTOCOL_SESSION_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

enum {
  GP_PROTO_SES_STDIN = 0,
  GP_PROTO_SES_STDOUT = 1,
  GP_PROTO_SES_STDERR = 2,
  GP_PROTO_SES_STATUS = 3,
  GP_PROTO_SES_RESIZE = 4,
  GP_PROTO_SES_SIGNAL = 5,
};

typedef enum { GP_PROTO_SES_EXEC = 1, GP_PROTO_SES_FORWARD = 2, GP_PROTO_SES_ATTACH = 3 } gp_proto_session_kind;

#define GP_PROTO_SES_MAX_ARGS 256
#define GP_PROTO_SES_TERM_MAX 64

typedef struct gp_proto_session_start {
  gp_proto_session_kind kind;
  int n_argv;
  char **argv;        /* NULL-ended; exec */
  bool tty;
  int cols, rows;     /* 0: not given */
  char term[GP_PROTO_SES_TERM_MAX];
  int port;           /* forward: 1..65535 */
  bool end_task;      /* exec: the session is the task's work (gpool run): its exit code
                       * becomes the task's, and the task ends with it */
} gp_proto_session_start;

/* Parses and checks a start message (untrusted: every field bounded, named in err).
 * Returns 0, or GP_EINVAL. Free with gp_proto_session_start_done. */
int gp_proto_session_start_parse(const void *text, size_t len, gp_proto_session_start *s, gp_err *err);
void gp_proto_session_start_done(gp_proto_session_start *s);

/* A status message (channel GP_PROTO_SES_STATUS): the channel byte, then `status` as
 * compact JSON ({"exit": N} or {"error": "..."}). Returns the message (free it) and its
 * length in *len. */
uint8_t *gp_proto_session_status(const json_t *status, size_t *len);

/* A window size message's cols and rows (1..10000 each); false when it is not one. */
bool gp_proto_session_size_parse(const void *data, size_t len, int *cols, int *rows);

/* A signal message's signal number (only the ones a terminal user sends: INT, QUIT, TSTP,
 * CONT, TERM, HUP, KILL, USR1, USR2, WINCH); 0 when it is not one. */
int gp_proto_session_signal_parse(const void *data, size_t len);

#endif
