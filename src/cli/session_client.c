/* SPDX-License-Identifier: Apache-2.0 */
/* The CLI's end of a session (session_client.h). */
#include "cli/session_client.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "protocol/session.h"
#include "util/mem.h"

static volatile sig_atomic_t got_winch, got_sig;
static struct termios saved_tio;
static int raw_fd = -1;

static void on_winch(int s) { (void)s, got_winch = 1; }
static void on_sig(int s) { got_sig = s; }

static void restore_terminal(void) {
  if (raw_fd >= 0) tcsetattr(raw_fd, TCSAFLUSH, &saved_tio);
  raw_fd = -1;
}

int gp_cli_session_open(gp_cli *cli, const char *job, int task, gp_tls_ws **ret) {
  char *server = NULL, *token = NULL, *ca = NULL;
  gp_err err = {0};
  int rc = gp_client_resolve(cli->server, cli->token, &server, &token, &err);
  if (!rc) rc = gp_client_resolve_ca(cli->ca, &ca, &err);
  if (rc) {
    free(server);
    free(token);
    return gp_cli_fail(cli, rc, &err);
  }
  if (!token) {
    free(server);
    free(ca);
    fprintf(stderr, "gpool %s: no token: pass --token, set GPOOL_TOKEN, or start a local pool with 'gpool up'\n", cli->cmd);
    return 2;
  }
  char path[128];
  if (task >= 0) snprintf(path, sizeof path, "/v1/jobs/%s/session?task=%d", job, task);
  else snprintf(path, sizeof path, "/v1/jobs/%s/session", job);
  gp_tls_dial d = {.ca = ca};
  gp_tls_ws_refusal ref = {0};
  rc = gp_tls_ws_dial(server, path, token, &d, 10000, ret, &ref, &err);
  int code = 0;
  if (rc == GP_EPERM) {
    json_t *doc = json_loads(ref.body, 0, NULL);
    const char *m = json_string_value(json_object_get(json_object_get(doc, "error"), "message"));
    fprintf(stderr, "gpool %s: %s (HTTP %d)\n", cli->cmd, m ? m : "the server refused the session", ref.status);
    json_decref(doc);
    code = 1;
  } else if (rc) {
    fprintf(stderr, "gpool %s: cannot open a session with %s: %s\n", cli->cmd, server, err.message);
    code = 3;
  }
  free(server);
  free(token);
  free(ca);
  return code;
}

static bool send_json(gp_tls_ws *w, int ch, json_t *o) {
  char *t = json_dumps(o, JSON_COMPACT);
  json_decref(o);
  size_t n = strlen(t);
  uint8_t *m = gp_xmalloc(n + 1);
  m[0] = (uint8_t)ch;
  memcpy(m + 1, t, n);
  bool ok = gp_tls_ws_flush_wait(w, 2000) >= 0 && gp_tls_ws_send(w, GP_TLS_WS_BINARY, m, n + 1);
  free(m);
  free(t);
  return ok;
}

static bool write_all(int fd, const uint8_t *p, size_t n) {
  while (n) {
    ssize_t k = write(fd, p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0 && errno == EAGAIN) {
      struct pollfd pf = {.fd = fd, .events = POLLOUT};
      poll(&pf, 1, 1000);
      continue;
    }
    if (k <= 0) return false;
    p += k, n -= (size_t)k;
  }
  return true;
}

static const char *sig_name(int s) {
  return s == SIGINT ? "INT" : s == SIGTERM ? "TERM" : s == SIGHUP ? "HUP" : s == SIGQUIT ? "QUIT" : NULL;
}

/* Raw mode on the terminal fd and SIGWINCH followed (restored at the end). */
static void enter_tty(int fd, struct sigaction *old_winch) {
  struct sigaction sa = {0};
  sa.sa_handler = on_winch;
  sigaction(SIGWINCH, &sa, old_winch);
  if (tcgetattr(fd, &saved_tio) == 0) {
    struct termios raw = saved_tio;
    cfmakeraw(&raw);
    raw_fd = fd;
    tcsetattr(fd, TCSAFLUSH, &raw);
    atexit(restore_terminal);
  }
}

static const int fwd[4] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

static void forward_signals(struct sigaction old_sig[4]) {
  struct sigaction sa = {0};
  sa.sa_handler = on_sig;
  for (int i = 0; i < 4; i++) sigaction(fwd[i], &sa, &old_sig[i]);
}

int gp_cli_session_run(gp_cli *cli, const char *job, gp_tls_ws *w, json_t *start, const gp_cli_session_io *io) {
  struct sigaction old_winch, old_sig[4];
  bool tty_on = false, sig_on = false;
  if (io->tty) {
    struct winsize ws;
    if (ioctl(io->in_fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col && ws.ws_row) {
      json_object_set_new(start, "cols", json_integer(ws.ws_col));
      json_object_set_new(start, "rows", json_integer(ws.ws_row));
    }
    const char *term = getenv("TERM");
    if (term && *term && strlen(term) < GP_PROTO_SES_TERM_MAX) json_object_set_new(start, "term", json_string(term));
    enter_tty(io->in_fd, &old_winch);
    tty_on = true;
  }
  if (io->signals) {
    forward_signals(old_sig);
    sig_on = true;
  }
  char *t = json_dumps(start, JSON_COMPACT);
  bool ok = gp_tls_ws_send(w, GP_TLS_WS_TEXT, t, strlen(t));
  free(t);
  if (io->in_fd < 0 && !io->input_on_attach) {
    uint8_t eof = GP_PROTO_SES_STDIN;
    ok = ok && gp_tls_ws_send(w, GP_TLS_WS_BINARY, &eof, 1);
  }
  int exit_code = -1, close_code = 0;
  char error[700] = "", close_reason[128] = "";
  /* attached: the agent handed this attach a `gpool run` session that outlived its server
   * (the terminal is then sent as run sends it). */
  bool in_open = io->in_fd >= 0 && !io->input_on_attach, lost = !ok, attached = false;
  uint8_t buf[32769];
  while (!lost && !close_code) {
    if (got_winch && tty_on) {
      got_winch = 0;
      struct winsize ws;
      if (ioctl(io->in_fd, TIOCGWINSZ, &ws) == 0)
        send_json(w, GP_PROTO_SES_RESIZE, json_pack("{s:i,s:i}", "cols", ws.ws_col, "rows", ws.ws_row));
    }
    if (got_sig) {
      const char *name = sig_name(got_sig);
      got_sig = 0;
      if (name) send_json(w, GP_PROTO_SES_SIGNAL, json_pack("{s:s}", "signal", name));
    }
    gp_tls_ws_msg m;
    int rc;
    while ((rc = gp_tls_ws_next(w, &m)) == 1) {
      if (m.opcode == GP_TLS_WS_CLOSE) {
        close_code = m.code;
        snprintf(close_reason, sizeof close_reason, "%s", m.reason);
        break;
      }
      if (m.opcode != GP_TLS_WS_BINARY || m.len < 1) continue;
      if (m.data[0] == GP_PROTO_SES_STDOUT || m.data[0] == GP_PROTO_SES_STDERR) {
        int fd = m.data[0] == GP_PROTO_SES_STDOUT ? io->out_fd : io->err_fd;
        /* A blocked output stops this loop, so the session stops reading: the server
         * buffers a bounded amount, then stops reading the agent. */
        if (!write_all(fd, m.data + 1, m.len - 1) && io->out_fd == io->in_fd) lost = true;
      } else if (m.data[0] == GP_PROTO_SES_STATUS) {
        json_t *o = json_loadb((const char *)m.data + 1, m.len - 1, 0, NULL);
        json_t *x = json_object_get(o, "exit");
        const char *e = json_string_value(json_object_get(o, "error"));
        if (json_is_integer(x)) exit_code = (int)json_integer_value(x);
        if (io->input_on_attach && !attached && json_object_get(o, "attached")) {
          attached = true;
          in_open = io->in_fd >= 0;
          if (in_open && json_is_true(json_object_get(o, "tty")) && isatty(io->in_fd) && !tty_on) {
            enter_tty(io->in_fd, &old_winch);
            tty_on = true;
            got_winch = 1; /* its size, now */
          } else if (in_open && !sig_on) {
            forward_signals(old_sig);
            sig_on = true;
          }
        }
        if (e) snprintf(error, sizeof error, "%s", e);
        json_decref(o);
      }
    }
    if (rc < 0) {
      snprintf(error, sizeof error, "the server broke the session's protocol: %s", gp_tls_ws_error(w));
      break;
    }
    if (close_code || lost) break;
    struct pollfd pf[2] = {{.fd = gp_tls_ws_fd(w), .events = POLLIN}, {.fd = in_open ? io->in_fd : -1}};
    if (gp_tls_ws_wants_write(w)) pf[0].events |= POLLOUT;
    if (in_open && gp_tls_ws_room(w, sizeof buf)) pf[1].events = POLLIN;
    int pr = poll(pf, 2, gp_tls_ws_buffered(w) ? 0 : 500);
    if (pr < 0 && errno != EINTR) break;
    if (pr < 0) continue;
    if ((pf[0].revents & (POLLIN | POLLHUP | POLLERR)) || gp_tls_ws_buffered(w)) {
      long k = gp_tls_ws_read(w);
      if (k == 0 || k == -2) {
        while (gp_tls_ws_next(w, &m) == 1 && m.opcode != GP_TLS_WS_CLOSE) {
          if (m.opcode == GP_TLS_WS_BINARY && m.len > 1 && m.data[0] == GP_PROTO_SES_STDOUT)
            write_all(io->out_fd, m.data + 1, m.len - 1);
        }
        lost = true;
      }
    }
    if (in_open && (pf[1].revents & (POLLIN | POLLHUP | POLLERR))) {
      ssize_t n = read(io->in_fd, buf + 1, sizeof buf - 1);
      if (n > 0) {
        buf[0] = GP_PROTO_SES_STDIN;
        gp_tls_ws_send(w, GP_TLS_WS_BINARY, buf, (size_t)n + 1);
      } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
        in_open = false;
        buf[0] = GP_PROTO_SES_STDIN;
        gp_tls_ws_send(w, GP_TLS_WS_BINARY, buf, 1); /* the end of input */
      }
    }
    if (gp_tls_ws_flush(w) < 0) lost = true;
  }
  if (!lost) {
    gp_tls_ws_close(w, GP_TLS_WS_NORMAL, NULL);
    gp_tls_ws_flush_wait(w, 1000);
  }
  gp_tls_ws_free(w);
  restore_terminal();
  if (tty_on) sigaction(SIGWINCH, &old_winch, NULL);
  if (sig_on)
    for (int i = 0; i < 4; i++) sigaction(fwd[i], &old_sig[i], NULL);
  if (exit_code >= 0 && !error[0]) return exit_code;
  if (io->quiet) return 1;
  /* A `gpool run` command (or one reattached) outlives a server that stops, fails over
   * (1001) or dies: the agent keeps it for gpool attach. The agent stopping too (its own
   * 1001) hangs it up. A lost connection is either the server gone (the job runs on) or
   * this link alone broken (the server then tells the agent the client left, and the
   * command gets a hang-up): this end cannot tell which, so it says both. */
  bool run = io->ends_job || attached;
  bool agent_stopped = close_code == GP_TLS_WS_GOING_AWAY && strstr(close_reason, "agent is stopping");
  if (run && close_code == GP_TLS_WS_GOING_AWAY && !agent_stopped)
    fprintf(stderr, "gpool %s: the server is stopping; the job %s keeps running; reattach with: gpool attach %s\n",
            cli->cmd, job, job);
  else if (run && agent_stopped)
    fprintf(stderr,
            "gpool %s: %s; the session ended and job %s ends with it (its command got a hang-up: exit code 129)\n",
            cli->cmd, close_reason, job);
  else if (run && !close_code)
    fprintf(stderr,
            "gpool %s: the connection to the server was lost; if the server went down, job %s keeps running "
            "(reattach with: gpool attach %s); if only this connection broke, it ended with it (exit code 129)\n",
            cli->cmd, job, job);
  else if (error[0]) fprintf(stderr, "gpool %s: %s\n", cli->cmd, error);
  else if (close_code == GP_TLS_WS_GOING_AWAY)
    fprintf(stderr, "gpool %s: %s; the session ended and job %s keeps running\n", cli->cmd,
            close_reason[0] ? close_reason : "the server is stopping", job);
  else
    fprintf(stderr, "gpool %s: the connection to the server was lost; the session ended and job %s keeps running\n",
            cli->cmd, job);
  return 1;
}
