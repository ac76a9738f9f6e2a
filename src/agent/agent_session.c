/* SPDX-License-Identifier: Apache-2.0 */
/* The agent's end of interactive sessions (session.h): GET /sessions/{job}?task=T
 * upgraded to a WebSocket, one thread per session relaying between it and the process or
 * socket the session's start asked for. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent_int.h"
#include "agent/launcher.h"
#include "agent/session.h"
#include "protocol/limits.h"
#include "tls/conns.h"
#include "tls/listen.h"
#include "tls/ws.h"
#include "tls/ws_upgrade.h"
#include "util/mem.h"
#include "util/secret.h"
#include "util/units.h"

#define START_WAIT_MS 10000 /* the server sends the start at once; a silent peer is dropped */
#define OUT_CHUNK (GP_TLS_WS_MSG_MAX - 1) /* a channel byte and a read: one whole frame */
#define DRAIN_AFTER_EXIT_MS 500 /* output a left-behind process still holds is not waited for */
#define RING_CAP (64 * 1024) /* output a detached run session keeps for its next attach */

struct gp__agent_ses_detached;

struct gp__agent_sessions {
  pthread_mutex_t lock;
  pthread_cond_t done;
  pthread_cond_t changed;                  /* a handoff to a detached session */
  struct gp__agent_ses_detached *detached; /* run sessions whose server went away */
  int active;
  bool stopping;
};

typedef struct ses {
  gp_agent *a;
  gp__agent_ses_job job;
} ses;

static int64_t mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static bool stopping(gp_agent *a) {
  pthread_mutex_lock(&a->sessions->lock);
  bool s = a->sessions->stopping;
  pthread_mutex_unlock(&a->sessions->lock);
  return s;
}

/* The last message: {"exit": N} or {"error": "..."}, then a close. */
static void finish(gp_tls_ws *w, int exit_code, const char *error, int close_code) {
  json_t *o = error ? json_pack("{s:s}", "error", error) : json_pack("{s:i}", "exit", exit_code);
  size_t n;
  uint8_t *m = gp_proto_session_status(o, &n);
  json_decref(o);
  gp_tls_ws_flush_wait(w, 2000); /* room for it */
  gp_tls_ws_send(w, GP_TLS_WS_BINARY, m, n);
  free(m);
  gp_tls_ws_close(w, close_code, error ? "session failed" : "exited");
  gp_tls_ws_flush_wait(w, 2000);
}

static void nonblock(int fd) {
  if (fd >= 0) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

/* Reads what fd has into messages on channel ch, while the WebSocket has room for a whole
 * one (at most four per call, so the other side gets its turn). False at its end. */
static bool pump_out(gp_tls_ws *w, int fd, int ch) {
  uint8_t buf[OUT_CHUNK + 1];
  for (int i = 0; i < 4 && gp_tls_ws_room(w, OUT_CHUNK + 1); i++) {
    ssize_t n = read(fd, buf + 1, OUT_CHUNK);
    if (n > 0) {
      buf[0] = (uint8_t)ch;
      gp_tls_ws_send(w, GP_TLS_WS_BINARY, buf, (size_t)n + 1);
      if (n < OUT_CHUNK) return true; /* drained for now */
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return true;
    return false; /* 0, or EIO: a PTY whose last holder closed it */
  }
  return true;
}

static void end_process(pid_t pid, bool exited) {
  if (pid <= 0 || exited) return;
  kill(-pid, SIGHUP);
  kill(-pid, SIGCONT);
  for (int i = 0; i < 40; i++) {
    if (waitpid(pid, NULL, WNOHANG) == pid) return;
    usleep(50000);
  }
  kill(-pid, SIGKILL);
  while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {}
}

static bool task_ended(const gp__agent_ses_job *j) {
  char path[800];
  snprintf(path, sizeof path, "%s/exit", j->dir);
  if (access(path, F_OK) == 0) return true;
  snprintf(path, sizeof path, "%s/end.json", j->dir);
  return access(path, F_OK) == 0;
}

/* A `gpool run` task: its session's code is the task's (agent_jobs.c reads it at the
 * task's end), and the holder the task ran meanwhile is ended now. */
static void end_task(const gp__agent_ses_job *j, int code) {
  char path[800], tmp[810];
  snprintf(path, sizeof path, "%s/session.exit", j->dir);
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "we");
  if (f) {
    fprintf(f, "%d\n", code);
    if (fclose(f) == 0) rename(tmp, path);
  }
  if (j->pid > 0) {
    kill(-j->pid, SIGTERM);
    kill(-j->pid, SIGCONT);
  }
}

void gp__agent_ses_task_exit(const char *dir, bool *known, int *code, int *sig) {
  char path[800];
  snprintf(path, sizeof path, "%s/session.exit", dir);
  FILE *f = fopen(path, "re");
  if (!f) return;
  int c = 0;
  if (fscanf(f, "%d", &c) == 1 && c >= 0 && c <= 255) {
    *known = true;
    *code = c;
    *sig = 0;
  }
  fclose(f);
}

static void on_exit_status(gp_agent *a, const gp__agent_job *j, bool *known, int *code, int *sig) {
  (void)a;
  gp__agent_ses_task_exit(j->dir, known, code, sig);
}

/* A `gpool run` task's end carries its session's exit code (agent_hooks.c). */
const gp__agent_job_hooks gp__agent_session_hooks = {.name = "session", .exit_status = on_exit_status};

/* What a relay keeps across the WebSockets it serves (a `gpool run` session outlives a
 * server restart: session.h). */
typedef struct rstate {
  bool out_open, err_open, exited;
  int exit_code;
  int64_t exited_at;
} rstate;

enum { R_DONE, R_GONE, R_DETACH }; /* finished; peer gone (the command ends); detach */

/* An attach's WebSocket offered to a detached run session: `done` once the relay is done
 * with it (refused: it never took it). Lives on the attaching thread's stack. */
typedef struct handoff {
  gp_tls_ws *w;
  bool done, refused;
} handoff;

/* A `gpool run` session whose server went away (1001): its command runs on, its output
 * kept in a ring, until an attach takes it (sessions' list, under their lock). */
struct gp__agent_ses_detached {
  char key[96];
  handoff *pending;
  struct gp__agent_ses_detached *next;
};

/* Relays between w and the process until it ends (and its output is read), the peer
 * leaves, the job task ends, or the agent stops. */
static int relay_ws(gp_agent *a, gp_tls_ws *w, gp__agent_ses_proc *p, const gp__agent_ses_job *job, bool ends_task, rstate *r) {
  uint8_t *in = gp_xmalloc(GP_TLS_WS_MSG_MAX);
  size_t in_len = 0, in_off = 0;
  bool peer_gone = false;
  int close_code = 0, how = R_GONE;
  int64_t next_check = mono_ms() + 500;
  for (;;) {
    if (stopping(a)) {
      gp_tls_ws_close(w, GP_TLS_WS_GOING_AWAY, "the agent is stopping");
      gp_tls_ws_flush_wait(w, 1000);
      peer_gone = true;
      break;
    }
    /* A session never outlives its job task: what it started would hold the task's GPUs. */
    if (mono_ms() >= next_check) {
      next_check = mono_ms() + 500;
      /* A `gpool run` task too: cancelled, preempted or reclaimed, its command goes with it
       * (its own end ends the task through end_task, after this loop). */
      if (task_ended(job)) {
        end_process(p->pid, r->exited);
        r->exited = true;
        char msg[200];
        snprintf(msg, sizeof msg, "job %s ended; the session ends with it", job->id);
        finish(w, 0, msg, GP_TLS_WS_NORMAL);
        how = R_DONE;
        break;
      }
    }
    int st;
    if (p->pid > 0 && !r->exited && waitpid(p->pid, &st, WNOHANG) == p->pid) {
      r->exited = true;
      r->exited_at = mono_ms();
      r->exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    }
    bool drained = (!r->out_open && !r->err_open) || (r->exited && mono_ms() - r->exited_at > DRAIN_AFTER_EXIT_MS);
    if ((p->pid > 0 && r->exited && drained) || (p->pid == 0 && !r->out_open)) {
      if (p->pid > 0) kill(-p->pid, SIGHUP); /* what it left on the terminal */
      if (ends_task) end_task(job, r->exit_code);
      finish(w, r->exit_code, NULL, GP_TLS_WS_NORMAL);
      how = R_DONE;
      break;
    }
    while (in_off == in_len && !peer_gone) {
      gp_tls_ws_msg m;
      int rc = gp_tls_ws_next(w, &m);
      if (rc == 0) break;
      if (rc < 0 || m.opcode == GP_TLS_WS_CLOSE) {
        if (rc == 1) close_code = m.code;
        peer_gone = true;
        break;
      }
      if (m.opcode != GP_TLS_WS_BINARY || m.len < 1) continue;
      int ch = m.data[0];
      if (ch == GP_PROTO_SES_STDIN && m.len == 1) { /* end of input */
        if (p->tty) {
          in[0] = 4; /* ^D: the terminal's end of input */
          in_len = 1, in_off = 0;
        } else if (p->pid == 0) shutdown(p->in_fd, SHUT_WR);
        else if (p->in_fd >= 0) {
          close(p->in_fd);
          p->in_fd = -1;
        }
      } else if (ch == GP_PROTO_SES_STDIN && p->in_fd >= 0) {
        memcpy(in, m.data + 1, m.len - 1);
        in_len = m.len - 1, in_off = 0;
      } else if (ch == GP_PROTO_SES_RESIZE && p->tty) {
        int cols, rows;
        if (gp_proto_session_size_parse(m.data + 1, m.len - 1, &cols, &rows)) {
          struct winsize ws = {.ws_col = (unsigned short)cols, .ws_row = (unsigned short)rows};
          ioctl(p->out_fd, TIOCSWINSZ, &ws); /* the kernel sends SIGWINCH to the foreground */
        }
      } else if (ch == GP_PROTO_SES_SIGNAL && p->pid > 0 && !r->exited) {
        int sig = gp_proto_session_signal_parse(m.data + 1, m.len - 1);
        if (sig) kill(-p->pid, sig);
      }
    }
    if (peer_gone) break;
    struct pollfd pf[4];
    int n = 0, iw = -1, io = -1, ie = -1;
    bool buffered = gp_tls_ws_buffered(w);
    short wev = (short)((gp_tls_ws_wants_read(w) && in_off == in_len ? POLLIN : 0) | (gp_tls_ws_wants_write(w) ? POLLOUT : 0));
    pf[n++] = (struct pollfd){.fd = gp_tls_ws_fd(w), .events = wev};
    if (in_off < in_len && p->in_fd >= 0) iw = n, pf[n++] = (struct pollfd){.fd = p->in_fd, .events = POLLOUT};
    bool room = gp_tls_ws_room(w, OUT_CHUNK + 1);
    if (r->out_open && room) io = n, pf[n++] = (struct pollfd){.fd = p->out_fd, .events = POLLIN};
    if (r->err_open && room) ie = n, pf[n++] = (struct pollfd){.fd = p->err_fd, .events = POLLIN};
    if (poll(pf, (nfds_t)n, buffered ? 0 : 100) < 0 && errno != EINTR) break;
    if ((pf[0].revents & (POLLIN | POLLHUP | POLLERR)) || buffered) {
      long k = gp_tls_ws_read(w);
      if (k == 0 || k == -2) peer_gone = true;
    }
    if (gp_tls_ws_flush(w) < 0) peer_gone = true;
    if (iw >= 0 && (pf[iw].revents & (POLLOUT | POLLERR | POLLHUP))) {
      ssize_t k = write(p->in_fd, in + in_off, in_len - in_off);
      if (k > 0) in_off += (size_t)k;
      else if (k < 0 && errno != EAGAIN && errno != EINTR) in_off = in_len; /* it stopped reading */
    }
    if (io >= 0 && (pf[io].revents & (POLLIN | POLLHUP | POLLERR))) r->out_open = pump_out(w, p->out_fd, GP_PROTO_SES_STDOUT);
    if (ie >= 0 && (pf[ie].revents & (POLLIN | POLLHUP | POLLERR))) r->err_open = pump_out(w, p->err_fd, GP_PROTO_SES_STDERR);
  }
  free(in);
  /* The server went away under a `gpool run` whose command still runs: stopping or failing
   * over (1001), or gone without a close at all (killed, or the link to it broken). The
   * command runs on, detached, for `gpool attach`. Not when the user's end closed: the
   * server then closes with a code of its own (1000, "the client left"). */
  bool server_gone = close_code == GP_TLS_WS_GOING_AWAY || close_code == 0;
  if (peer_gone && server_gone && ends_task && p->pid > 0 && !r->exited && !stopping(a))
    how = R_DETACH;
  return how;
}

/* Appends n bytes to the ring (cap RING_CAP), the oldest dropped. */
static void ring_put(uint8_t *ring, size_t *start, size_t *len, const uint8_t *d, size_t n) {
  if (n >= RING_CAP) {
    d += n - RING_CAP, n = RING_CAP;
    *start = 0, *len = 0;
  }
  size_t drop = *len + n > RING_CAP ? *len + n - RING_CAP : 0;
  *start = (*start + drop) % RING_CAP, *len -= drop;
  for (size_t i = 0; i < n; i++) ring[(*start + *len + i) % RING_CAP] = d[i];
  *len += n;
}

/* The attach that takes a detached session: a status saying so (the client then sends its
 * terminal), then the output kept meanwhile. */
static void send_kept(gp_tls_ws *w, bool tty, const uint8_t *ring, size_t start, size_t len) {
  char t[64];
  int n = snprintf(t, sizeof t, "%c{\"attached\":\"run\",\"tty\":%s}", GP_PROTO_SES_STATUS, tty ? "true" : "false");
  gp_tls_ws_send(w, GP_TLS_WS_BINARY, t, (size_t)n);
  uint8_t buf[OUT_CHUNK + 1];
  for (size_t off = 0; off < len;) {
    size_t k = len - off < OUT_CHUNK ? len - off : OUT_CHUNK;
    buf[0] = GP_PROTO_SES_STDOUT;
    for (size_t i = 0; i < k; i++) buf[1 + i] = ring[(start + off + i) % RING_CAP];
    if (gp_tls_ws_flush_wait(w, 2000) < 0) break;
    gp_tls_ws_send(w, GP_TLS_WS_BINARY, buf, k + 1);
    off += k;
  }
}

/* A detached run session: its output read into a bounded ring (so it never blocks), its
 * task and its exit watched as in relay_ws, until an attach takes it (R_DETACH with *ret),
 * it ends (R_DONE: its code is the task's), or the agent stops (R_GONE). */
static int detached(gp_agent *a, gp__agent_ses_proc *p, const gp__agent_ses_job *job, rstate *r, handoff **ret) {
  struct gp__agent_ses_detached d = {.pending = NULL};
  snprintf(d.key, sizeof d.key, "%s", job->key);
  pthread_mutex_lock(&a->sessions->lock);
  bool taken = false; /* one detached session per task */
  for (struct gp__agent_ses_detached *o = a->sessions->detached; o; o = o->next) taken |= !strcmp(o->key, d.key);
  if (!taken) d.next = a->sessions->detached, a->sessions->detached = &d;
  pthread_mutex_unlock(&a->sessions->lock);
  if (taken) return R_GONE;
  gp__agent_log("session: job %s lost its server; its command (pid %d) runs on, detached", job->id, (int)p->pid);
  uint8_t *ring = gp_xmalloc(RING_CAP), buf[OUT_CHUNK];
  size_t start = 0, len = 0;
  int how;
  handoff *h = NULL;
  int64_t next_check = 0;
  for (;;) {
    if (stopping(a)) {
      how = R_GONE;
      break;
    }
    if (mono_ms() >= next_check) {
      next_check = mono_ms() + 500;
      if (task_ended(job)) {
        end_process(p->pid, r->exited);
        r->exited = true;
        how = R_DONE;
        break;
      }
    }
    int st;
    if (!r->exited && waitpid(p->pid, &st, WNOHANG) == p->pid) {
      r->exited = true;
      r->exited_at = mono_ms();
      r->exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    }
    if (r->exited && ((!r->out_open && !r->err_open) || mono_ms() - r->exited_at > DRAIN_AFTER_EXIT_MS)) {
      kill(-p->pid, SIGHUP);
      end_task(job, r->exit_code);
      how = R_DONE;
      break;
    }
    pthread_mutex_lock(&a->sessions->lock);
    h = d.pending;
    pthread_mutex_unlock(&a->sessions->lock);
    if (h) {
      how = R_DETACH;
      break;
    }
    struct pollfd pf[2] = {{.fd = r->out_open ? p->out_fd : -1, .events = POLLIN},
                           {.fd = r->err_open ? p->err_fd : -1, .events = POLLIN}};
    if (poll(pf, 2, 100) < 0 && errno != EINTR) {
      how = R_GONE;
      break;
    }
    for (int i = 0; i < 2; i++) {
      if (!(pf[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t n = read(pf[i].fd, buf, sizeof buf);
      if (n > 0) ring_put(ring, &start, &len, buf, (size_t)n);
      else if (n == 0 || (errno != EAGAIN && errno != EINTR)) *(i ? &r->err_open : &r->out_open) = false;
    }
  }
  pthread_mutex_lock(&a->sessions->lock);
  for (struct gp__agent_ses_detached **o = &a->sessions->detached; *o; o = &(*o)->next)
    if (*o == &d) {
      *o = d.next;
      break;
    }
  if (d.pending && how != R_DETACH) { /* it ended meanwhile: the attach streams the task's end */
    d.pending->done = d.pending->refused = true;
    pthread_cond_broadcast(&a->sessions->changed);
  }
  pthread_mutex_unlock(&a->sessions->lock);
  if (how == R_DETACH) {
    gp__agent_log("session: job %s's detached command reattached", job->id);
    send_kept(h->w, p->tty, ring, start, len);
    *ret = h;
  }
  free(ring);
  return how;
}

static void handoff_done(gp_agent *a, handoff *h) {
  pthread_mutex_lock(&a->sessions->lock);
  h->done = true;
  pthread_cond_broadcast(&a->sessions->changed);
  pthread_mutex_unlock(&a->sessions->lock);
}

/* An attach to a task with a detached run session: hands it w and waits until its relay is
 * done with it. False when there is none (or it ended before it took w). */
static bool attach_detached(gp_agent *a, gp_tls_ws *w, const gp__agent_ses_job *job) {
  handoff h = {.w = w};
  pthread_mutex_lock(&a->sessions->lock);
  struct gp__agent_ses_detached *d = a->sessions->detached;
  while (d && (strcmp(d->key, job->key) || d->pending)) d = d->next;
  if (d) {
    d->pending = &h;
    while (!h.done) pthread_cond_wait(&a->sessions->changed, &a->sessions->lock);
  }
  pthread_mutex_unlock(&a->sessions->lock);
  return d && !h.refused;
}

/* Relays a session; a `gpool run` one across the servers it outlives (relay_ws, detached). */
static void relay(gp_agent *a, gp_tls_ws *w, gp__agent_ses_proc *p, const gp__agent_ses_job *job, bool ends_task) {
  rstate r = {.out_open = true, .err_open = p->err_fd >= 0};
  nonblock(p->in_fd);
  nonblock(p->out_fd);
  nonblock(p->err_fd);
  int how = relay_ws(a, w, p, job, ends_task, &r);
  while (how == R_DETACH) {
    handoff *h = NULL;
    how = detached(a, p, job, &r, &h);
    if (how != R_DETACH) break;
    how = relay_ws(a, h->w, p, job, ends_task, &r);
    handoff_done(a, h);
  }
  if (how == R_GONE) {
    end_process(p->pid, r.exited);
    /* The terminal of a `gpool run` hung up: the task ends as its command would on a
     * hang-up (Slurm's srun --pty the same). */
    if (ends_task) end_task(job, r.exited ? r.exit_code : 128 + SIGHUP);
  }
  if (p->in_fd >= 0 && p->in_fd != p->out_fd) close(p->in_fd);
  if (p->out_fd >= 0) close(p->out_fd);
  if (p->err_fd >= 0) close(p->err_fd);
}
/* attach: the task's stdout and stderr as they grow (from their size now), until the task
 * ends (then its exit code) or the peer leaves. Files are polled: a log is a plain file. */
static void attach(gp_agent *a, gp_tls_ws *w, const gp__agent_ses_job *job) {
  int fds[2] = {-1, -1};
  static const char *const names[2] = {"stdout", "stderr"};
  for (int i = 0; i < 2; i++) {
    char path[800];
    snprintf(path, sizeof path, "%s/%s", job->dir, names[i]);
    fds[i] = open(path, O_RDONLY | O_CLOEXEC);
    if (fds[i] >= 0) lseek(fds[i], 0, SEEK_END);
  }
  bool ended = false;
  for (;;) {
    if (stopping(a)) {
      gp_tls_ws_close(w, GP_TLS_WS_GOING_AWAY, "the agent is stopping");
      gp_tls_ws_flush_wait(w, 1000);
      break;
    }
    bool was_ended = ended;
    ended = task_ended(job);
    bool more = false;
    for (int i = 0; i < 2; i++) {
      while (fds[i] >= 0 && gp_tls_ws_room(w, OUT_CHUNK + 1)) {
        uint8_t buf[OUT_CHUNK + 1];
        ssize_t n = read(fds[i], buf + 1, OUT_CHUNK);
        if (n <= 0) break;
        buf[0] = (uint8_t)(i ? GP_PROTO_SES_STDERR : GP_PROTO_SES_STDOUT);
        gp_tls_ws_send(w, GP_TLS_WS_BINARY, buf, (size_t)n + 1);
        more = true;
      }
    }
    if (was_ended && !more) { /* read to the end after the end was seen */
      int code = 0, sig = 0;
      char msg[200] = "";
      if (gp_launch_read_exit(job->dir, &code, &sig) == 0) {
        bool k = true;
        gp__agent_ses_task_exit(job->dir, &k, &code, &sig);
        finish(w, sig ? 128 + sig : code, NULL, GP_TLS_WS_NORMAL);
      } else {
        snprintf(msg, sizeof msg, "task of job %s ended without an exit code", job->id);
        finish(w, 0, msg, GP_TLS_WS_NORMAL);
      }
      break;
    }
    gp_tls_ws_msg m;
    int rc;
    bool gone = false;
    while ((rc = gp_tls_ws_next(w, &m)) == 1)
      if (m.opcode == GP_TLS_WS_CLOSE) gone = true;
    if (rc < 0 || gone) break;
    struct pollfd pf = {.fd = gp_tls_ws_fd(w), .events = (short)(POLLIN | (gp_tls_ws_wants_write(w) ? POLLOUT : 0))};
    if (poll(&pf, 1, 100) > 0 && (pf.revents & (POLLIN | POLLHUP | POLLERR))) {
      long k = gp_tls_ws_read(w);
      if (k == 0 || k == -2) break;
    }
    if (gp_tls_ws_flush(w) < 0) break;
  }
  for (int i = 0; i < 2; i++)
    if (fds[i] >= 0) close(fds[i]);
}

/* Waits for the start message. 1 with it parsed; 0 when the peer left or broke it. */
static int read_start(gp_tls_ws *w, gp_proto_session_start *s, char *msg, size_t cap) {
  int64_t deadline = mono_ms() + START_WAIT_MS;
  while (mono_ms() < deadline) {
    gp_tls_ws_msg m;
    int rc = gp_tls_ws_next(w, &m);
    if (rc < 0 || (rc == 1 && m.opcode == GP_TLS_WS_CLOSE)) return 0;
    if (rc == 1) {
      gp_err e = {0};
      if (m.opcode != GP_TLS_WS_TEXT) {
        snprintf(msg, cap, "the session's first message must be its start (text)");
        return -1;
      }
      if (gp_proto_session_start_parse(m.data, m.len, s, &e)) {
        snprintf(msg, cap, "%s: %s", e.field, e.message);
        return -1;
      }
      return 1;
    }
    gp_tls_ws_flush(w);
    struct pollfd pf = {.fd = gp_tls_ws_fd(w), .events = POLLIN};
    if (!gp_tls_ws_buffered(w) && poll(&pf, 1, 100) <= 0) continue;
    long k = gp_tls_ws_read(w);
    if (k == 0 || k == -2) return 0;
  }
  snprintf(msg, cap, "no start message within %d s", START_WAIT_MS / 1000);
  return -1;
}

/* On the session's own thread (tls/ws_upgrade.h), with the upgraded endpoint. */
static void session_run(void *arg, gp_tls_ws *w) {
  ses *S = arg;
  gp_agent *a = S->a;
  gp_proto_session_start st;
  char msg[600] = "";
  int rc = read_start(w, &st, msg, sizeof msg);
  if (rc < 0) finish(w, 0, msg, GP_TLS_WS_POLICY);
  if (rc == 1) {
    gp__agent_ses_proc p = {.in_fd = -1, .out_fd = -1, .err_fd = -1};
    if (st.kind == GP_PROTO_SES_ATTACH) {
      if (!attach_detached(a, w, &S->job)) attach(a, w, &S->job);
      gp_proto_session_start_done(&st);
      return;
    }
    int r = st.kind == GP_PROTO_SES_EXEC ? gp__agent_ses_exec(a, &S->job, &st, &p, msg, sizeof msg)
                                         : gp__agent_ses_forward(&S->job, st.port, &p, msg, sizeof msg);
    if (r) finish(w, 0, msg, GP_TLS_WS_INTERNAL);
    else {
      if (st.kind == GP_PROTO_SES_EXEC)
        gp__agent_log("session: exec in job %s (pid %d, tty %s)", S->job.id, (int)p.pid, st.tty ? "yes" : "no");
      relay(a, w, &p, &S->job, st.end_task);
    }
    gp_proto_session_start_done(&st);
  }
}

/* Once the upgraded socket went back, or when the upgrade never happened. */
static void session_end(void *arg) {
  ses *S = arg;
  gp_agent *a = S->a;
  free(S);
  pthread_mutex_lock(&a->sessions->lock);
  a->sessions->active--;
  pthread_cond_broadcast(&a->sessions->done);
  pthread_mutex_unlock(&a->sessions->lock);
}

/* ---- the HTTP side ---- */

static enum MHD_Result refuse(struct MHD_Connection *c, unsigned status, const char *field, const char *message) {
  json_t *e = json_pack("{s:{s:s,s:s,s:s?}}", "error", "code",
                        status == 401 ? "unauthenticated" : status == 404 ? "not_found" : status == 409 ? "conflict"
                                                          : status == 503 ? "unavailable" : "invalid_argument",
                        "message", message, "field", field);
  char *t = json_dumps(e, JSON_COMPACT);
  json_decref(e);
  struct MHD_Response *r = MHD_create_response_from_buffer(strlen(t), t, MHD_RESPMEM_MUST_FREE);
  MHD_add_response_header(r, "Content-Type", "application/json");
  enum MHD_Result ok = MHD_queue_response(c, status, r);
  MHD_destroy_response(r);
  return ok;
}

/* The job task's record from its directory: false when it does not run here. */
static bool load_job(gp_agent *a, const char *id, int task, gp__agent_ses_job *j, char *msg, size_t cap) {
  memset(j, 0, sizeof *j);
  snprintf(j->id, sizeof j->id, "%s", id);
  gp__agent_job_key(id, task, j->key, sizeof j->key);
  snprintf(j->dir, sizeof j->dir, "%.600s/%s", a->jobs_dir, j->key);
  char path[800];
  snprintf(path, sizeof path, "%s/state.json", j->dir);
  json_t *s = json_load_file(path, 0, NULL);
  if (!json_is_object(s)) {
    json_decref(s);
    snprintf(msg, cap, "task %d of job %s does not run on this node", task, id);
    return false;
  }
  snprintf(j->user, sizeof j->user, "%s", json_string_value(json_object_get(s, "user")) ? json_string_value(json_object_get(s, "user")) : "");
  j->pid = (pid_t)json_integer_value(json_object_get(s, "pid"));
  j->shim_pid = (pid_t)json_integer_value(json_object_get(s, "shim_pid"));
  j->cgroup = json_is_true(json_object_get(s, "cgroup"));
  json_decref(s);
  snprintf(path, sizeof path, "%s/container.env", j->dir);
  j->container = access(path, F_OK) == 0;
  snprintf(path, sizeof path, "%s/exit", j->dir);
  bool ended = access(path, F_OK) == 0;
  snprintf(path, sizeof path, "%s/end.json", j->dir);
  ended |= access(path, F_OK) == 0;
  if (ended || j->pid <= 0) {
    snprintf(msg, cap, "task %d of job %s is not running", task, id);
    return false;
  }
  return true;
}

enum MHD_Result gp__agent_ses_serve(gp_agent *a, struct MHD_Connection *c, const char *id) {
  const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
  char want[600];
  snprintf(want, sizeof want, "Bearer %s", a->cfg.token);
  if (!auth || !gp_secret_equal(auth, want)) return refuse(c, 401, NULL, "a valid agent token is required");
  char why[400]; /* with tls.client_ca, only the server's certificate opens sessions */
  if (gp_tls_listener_check_client(a->tls, c, why, sizeof why)) return refuse(c, 401, NULL, why);
  gp_tls_conns_trust(c);
  if (!gp__agent_job_id_valid(id)) return refuse(c, 400, "job", "bad job id");
  const char *tv = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "task");
  int64_t task = 0;
  if (tv && (gp_parse_int64(tv, &task) != 0 || task < 0 || task >= GP_PROTO_MAX_TASKS))
    return refuse(c, 400, "task", "task must be a task index");
  char accept[GP_TLS_WS_ACCEPT_LEN + 1];
  const char *bad_why;
  const char *bad = gp_tls_ws_upgrade_check(c, accept, &bad_why);
  if (bad) return refuse(c, 400, bad, bad_why);
  ses *S = gp_xcalloc(1, sizeof *S);
  S->a = a;
  char msg[300];
  if (!load_job(a, id, (int)task, &S->job, msg, sizeof msg)) {
    free(S);
    return refuse(c, 404, "job", msg);
  }
  pthread_mutex_lock(&a->sessions->lock);
  bool full = a->sessions->stopping || a->sessions->active >= GP_AGENT_SES_MAX;
  if (!full) a->sessions->active++;
  pthread_mutex_unlock(&a->sessions->lock);
  if (full) {
    free(S);
    return refuse(c, 503, NULL, "this agent has as many sessions open as it takes (64)");
  }
  return gp_tls_ws_upgrade(c, accept, 256 * 1024, session_run, session_end, S);
}

void gp__agent_ses_init(gp_agent *a) {
  a->sessions = gp_xcalloc(1, sizeof *a->sessions);
  pthread_mutex_init(&a->sessions->lock, NULL);
  pthread_cond_init(&a->sessions->done, NULL);
  pthread_cond_init(&a->sessions->changed, NULL);
}

void gp__agent_ses_stop_all(gp_agent *a) {
  if (!a->sessions) return;
  pthread_mutex_lock(&a->sessions->lock);
  a->sessions->stopping = true;
  /* Each session sees the flag within 100 ms; an upgrade whose peer vanished before
   * libmicrohttpd handed it over never runs: not waited for past 10 s. */
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += 10;
  while (a->sessions->active > 0 && pthread_cond_timedwait(&a->sessions->done, &a->sessions->lock, &until) == 0) {}
  pthread_mutex_unlock(&a->sessions->lock);
}

void gp__agent_ses_free(gp_agent *a) {
  if (!a->sessions) return;
  pthread_mutex_destroy(&a->sessions->lock);
  pthread_cond_destroy(&a->sessions->done);
  pthread_cond_destroy(&a->sessions->changed);
  free(a->sessions);
  a->sessions = NULL;
}
