/* SPDX-License-Identifier: Apache-2.0 */
/* WebSocket (RFC 6455), the one transport of interactive sessions (exec, attach, run,
 * port-forward): the CLI speaks it to the server, the server to the agent.
 *
 * An endpoint (gp_tls_ws) wraps a connected socket, plain or through a GnuTLS session
 * (ws_dial.c), with two bounded buffers: bytes read and not yet parsed (at most four
 * frames' worth: 4 x (GP_TLS_WS_FRAME_MAX plus a header)), and frames encoded and not yet written (a cap
 * the owner chooses). Nothing grows past them: a peer that sends faster than the owner
 * consumes is simply not read (the owner stops polling it), and gp_tls_ws_send refuses a
 * frame that does not fit, so the owner stops reading whatever feeds it. That is the flow
 * control of every session: a slow terminal never grows a server's memory.
 *
 * Every frame is untrusted: reserved bits, unknown opcodes, a client's unmasked frame (or a
 * server's masked one), control frames over 125 bytes or fragmented, a continuation
 * without a start, a 64-bit length with its top bit set, a frame or a reassembled message
 * over GP_TLS_WS_MSG_MAX: each ends the endpoint with the close code RFC 6455 names
 * (1002 protocol error, 1009 too big), never a crash nor an allocation past the bounds.
 * Pings are answered with pongs; a close is echoed. */
#ifndef GP_TLS_WS_H
#define GP_TLS_WS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tls/dial.h"
#include "util/error.h"

#define GP_TLS_WS_MSG_MAX (64 * 1024)  /* a message's payload, fragments together */
#define GP_TLS_WS_FRAME_MAX GP_TLS_WS_MSG_MAX
#define GP_TLS_WS_HDR_MAX 14           /* 2 + 8 (length) + 4 (mask) */
#define GP_TLS_WS_KEY_LEN 24           /* base64 of 16 bytes */
#define GP_TLS_WS_ACCEPT_LEN 28        /* base64 of a SHA-1 */

enum {
  GP_TLS_WS_CONT = 0x0,
  GP_TLS_WS_TEXT = 0x1,
  GP_TLS_WS_BINARY = 0x2,
  GP_TLS_WS_CLOSE = 0x8,
  GP_TLS_WS_PING = 0x9,
  GP_TLS_WS_PONG = 0xA,
};

/* Close codes used (RFC 6455 §7.4.1). */
enum {
  GP_TLS_WS_NORMAL = 1000,
  GP_TLS_WS_GOING_AWAY = 1001,   /* a server stopping or restarting */
  GP_TLS_WS_PROTOCOL = 1002,
  GP_TLS_WS_BAD_DATA = 1007,
  GP_TLS_WS_POLICY = 1008,       /* idle timeout, a limit */
  GP_TLS_WS_TOO_BIG = 1009,
  GP_TLS_WS_INTERNAL = 1011,     /* the far side (an agent) failed */
};

typedef struct gp_tls_ws gp_tls_ws;

/* A message parsed: its opcode (TEXT, BINARY or CLOSE) and payload, valid until the next
 * call on the endpoint. For CLOSE, code and reason (NUL-ended) are filled. */
typedef struct gp_tls_ws_msg {
  int opcode;
  const uint8_t *data;
  size_t len;
  int code;
  char reason[124];
} gp_tls_ws_msg;

/* Takes `fd` (connected; made non-blocking here; closed by gp_tls_ws_free) and `tls`
 * (a gnutls_session_t after its handshake, or NULL: plain; deinitialised by free).
 * `client`: this side masks what it sends and refuses masked frames; a server the
 * opposite. `out_cap`: bytes of encoded frames it may hold unsent (at least one frame). */
gp_tls_ws *gp_tls_ws_new(int fd, void *tls, bool client, size_t out_cap);
void gp_tls_ws_free(gp_tls_ws *w); /* accepts NULL */
/* The socket is someone else's to close (libmicrohttpd's, after an upgrade): free leaves it
 * open. */
void gp_tls_ws_keep_fd(gp_tls_ws *w);
/* Hands the endpoint the TLS credentials its session uses (freed after the session). */
void gp_tls_ws_own_cred(gp_tls_ws *w, void *cred);

/* Bytes that arrived with the handshake, past its headers: parsed as frames first. */
void gp_tls_ws_preload(gp_tls_ws *w, const void *data, size_t len);

int gp_tls_ws_fd(const gp_tls_ws *w);

/* Reads what the socket has, as far as the input buffer has room. Returns bytes read (> 0),
 * 0 at the end of the stream, -1 when nothing is there yet, -2 on an error. */
long gp_tls_ws_read(gp_tls_ws *w);

/* Whether the owner should poll for input: the input buffer has room (no full frame
 * waits to be parsed). And whether it should poll for output: frames wait to be written. */
bool gp_tls_ws_wants_read(const gp_tls_ws *w);
bool gp_tls_ws_wants_write(const gp_tls_ws *w);
/* TLS may hold decrypted bytes the socket no longer signals: read them without polling. */
bool gp_tls_ws_buffered(const gp_tls_ws *w);

/* The next whole message from what was read: 1 with *m filled, 0 when more bytes are
 * needed, -1 when the peer broke the protocol (a close with the code is queued, and
 * gp_tls_ws_error says why). Pings are answered (when the output has room; else parsing
 * waits) and pongs dropped, inside this call. */
int gp_tls_ws_next(gp_tls_ws *w, gp_tls_ws_msg *m);
const char *gp_tls_ws_error(const gp_tls_ws *w);

/* Queues one frame (FIN set). False when it does not fit in the output buffer now (nothing
 * queued: retry after gp_tls_ws_flush made room), when len is over GP_TLS_WS_FRAME_MAX or
 * a control frame over 125 bytes, or once a close was queued. */
bool gp_tls_ws_send(gp_tls_ws *w, int opcode, const void *data, size_t len);
/* Room for a frame of `len` payload bytes now. */
bool gp_tls_ws_room(const gp_tls_ws *w, size_t len);
/* Queues a close (once; later calls do nothing). Its reason is cut to 123 bytes. */
void gp_tls_ws_close(gp_tls_ws *w, int code, const char *reason);
bool gp_tls_ws_close_sent(const gp_tls_ws *w);

/* Writes what waits, as far as the socket takes it. 0 when all is written, 1 when some
 * waits, -1 on an error (the peer is gone). */
int gp_tls_ws_flush(gp_tls_ws *w);

/* Writes what waits, waiting up to `timeout_ms` in all: 0 when all is written. */
int gp_tls_ws_flush_wait(gp_tls_ws *w, int timeout_ms);

/* Sec-WebSocket-Accept for a client's Sec-WebSocket-Key (SHA-1 through GnuTLS, base64).
 * Returns 0, or -1 when the key is not the base64 of 16 bytes. */
int gp_tls_ws_accept_key(const char *key, char out[GP_TLS_WS_ACCEPT_LEN + 1]);
/* A fresh random Sec-WebSocket-Key. */
int gp_tls_ws_new_key(char out[GP_TLS_WS_KEY_LEN + 1]);

/* The answer to a dial that was not an upgrade: its HTTP status and body (cut to fit). */
typedef struct gp_tls_ws_refusal {
  int status;
  char body[2048];
} gp_tls_ws_refusal;

/* Opens a WebSocket to `base` (http[s]://host[:port][/prefix]) + `path` (with its query),
 * with "Authorization: Bearer <bearer>" when bearer is set, over TLS for https:// (peer
 * verified by `tls`'s CA, else the system's; the host name checked; tls's client
 * certificate presented). Waits at most timeout_ms for the connection and the answer.
 * Returns 0 with *ret; GP_EPERM with *refused filled when the server answered another status
 * than 101 (403, 404, ...); GP_EIO (err says why) when it could not be reached or the
 * handshake failed; GP_EINVAL for a bad URL. */
int gp_tls_ws_dial(const char *base, const char *path, const char *bearer, const gp_tls_dial *tls,
                   int timeout_ms, gp_tls_ws **ret, gp_tls_ws_refusal *refused, gp_err *err);

#endif
