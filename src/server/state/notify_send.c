/* SPDX-License-Identifier: Apache-2.0 */
/* One delivery of a notification, on the sender's thread (notify.c): a webhook POST with
 * libcurl, or a mail handed to sendmail.
 *
 * Webhooks: http and https only, no redirects (a redirect could lead anywhere), the whole
 * exchange within the deadline. In `public` mode every address curl is about to connect to
 * (after DNS, so a name that resolves to an internal address is caught too, and so is a
 * rebinding between a check and the connect) must be a public one: loopback, private,
 * link-local, shared, multicast and unspecified ranges are refused.
 *
 * Mail: sendmail is started with posix_spawn (no shell) as `sendmail -oi -t`, in a process
 * group of its own, with stdin a socket (written with MSG_NOSIGNAL: a sendmail that exits
 * early cannot raise SIGPIPE) and stdout and stderr on /dev/null; it must exit 0 by the
 * deadline or its group is killed. The recipient is read from the To: header (-t): the
 * address was checked to hold no separator, space or line break; the subject is cut to
 * printable ASCII, so no value can start a header of its own. */
#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "server/state/notify.h"
#include "util/spawn.h"
#include "util/clock.h"

/* ---- webhooks ---- */

static bool internal_v4(uint32_t a) {
  return (a >> 24) == 0 || (a >> 24) == 10 || (a >> 24) == 127 || (a >> 16) == 0xA9FE ||
         (a >> 20) == 0xAC1 || (a >> 16) == 0xC0A8 || (a >> 22) == (100 << 2 | 1) ||
         (a >> 28) == 0xE || (a >> 28) == 0xF || (a >> 8) == 0xC00000 || (a >> 17) == (198 << 7 | 9);
}

/* Is `sa` an address a user's webhook must not reach in `public` mode? */
static bool internal_addr(const struct sockaddr *sa) {
  if (sa->sa_family == AF_INET)
    return internal_v4(ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr));
  if (sa->sa_family != AF_INET6) return true;
  const uint8_t *b = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;
  static const uint8_t zero[10] = {0};
  if (memcmp(b, zero, 10) == 0 && b[10] == 0xff && b[11] == 0xff) /* v4-mapped */
    return internal_v4((uint32_t)b[12] << 24 | (uint32_t)b[13] << 16 | (uint32_t)b[14] << 8 | b[15]);
  bool all_zero = true;
  for (int i = 0; i < 15; i++) all_zero = all_zero && b[i] == 0;
  if (all_zero) return true;                          /* :: and ::1 */
  if ((b[0] & 0xfe) == 0xfc) return true;             /* fc00::/7 unique local */
  if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80) return true; /* fe80::/10 link-local */
  if (b[0] == 0xff) return true;                      /* multicast */
  if (b[0] == 0x20 && b[1] == 0x02) return true;      /* 6to4 may wrap anything */
  if (b[0] == 0x00 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b) return true; /* NAT64 */
  return false;
}

static curl_socket_t open_public(void *ctx, curlsocktype purpose, struct curl_sockaddr *a) {
  (void)ctx;
  (void)purpose;
  if (internal_addr(&a->addr)) return CURL_SOCKET_BAD;
  return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

static size_t discard(char *p, size_t size, size_t n, void *ctx) {
  (void)p;
  (void)ctx;
  return size * n;
}

int gp__srv_notify_post(const char *url, const char *json, gp_notify_hooks hooks, int timeout_s,
                        gp_err *err) {
  CURL *c = curl_easy_init();
  if (!c) return gp_err_set(err, GP_EIO, NULL, 0, NULL, "out of memory");
  struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
  h = curl_slist_append(h, "User-Agent: gpool-notify");
  char why[CURL_ERROR_SIZE] = "";
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)timeout_s * 1000L);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)timeout_s * 1000L);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, json);
  curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(json));
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, why);
  curl_easy_setopt(c, CURLOPT_PROXY, ""); /* the environment's proxy is not the user's */
  if (hooks != GP_NOTIFY_HOOKS_ANY) curl_easy_setopt(c, CURLOPT_OPENSOCKETFUNCTION, open_public);
  CURLcode rc = curl_easy_perform(c);
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_cleanup(c);
  curl_slist_free_all(h);
  if (rc != CURLE_OK)
    return gp_err_set(err, GP_EIO, NULL, 0, NULL, "%s",
                      rc == CURLE_COULDNT_CONNECT && hooks != GP_NOTIFY_HOOKS_ANY
                          ? "cannot connect (webhooks may reach only public addresses)"
                          : why[0] ? why : curl_easy_strerror(rc));
  if (status < 200 || status > 299)
    return gp_err_set(err, GP_EIO, NULL, 0, NULL, "the endpoint answered HTTP %ld", status);
  return 0;
}

/* ---- mail ---- */

/* Appends s to b with every byte outside printable ASCII made '?', at most `max` bytes. */
static void put_clean(gp_buf *b, const char *s, size_t max) {
  for (size_t i = 0; s && s[i] && i < max; i++) {
    char ch = (unsigned char)s[i] >= 0x20 && (unsigned char)s[i] < 0x7f ? s[i] : '?';
    gp_buf_append(b, &ch, 1);
  }
}

static void kill_group(pid_t pid) {
  kill(-pid, SIGKILL);
  int st;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
}

int gp__srv_notify_mail(const char *sendmail, const char *from, const char *to,
                        const char *subject, const char *text, int timeout_s, gp_err *err) {
  gp_buf m;
  gp_buf_init(&m, 0);
  if (from) {
    gp_buf_puts(&m, "From: ");
    put_clean(&m, from, GP_NOTIFY_ADDR_MAX);
    gp_buf_puts(&m, "\n");
  }
  gp_buf_puts(&m, "To: ");
  put_clean(&m, to, GP_NOTIFY_ADDR_MAX);
  gp_buf_puts(&m, "\nSubject: ");
  put_clean(&m, subject, 300);
  gp_buf_puts(&m, "\nAuto-Submitted: auto-generated\nMIME-Version: 1.0\n"
                  "Content-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: 8bit\n\n");
  gp_buf_puts(&m, text);
  gp_buf_puts(&m, "\n");
  int sv[2] = {-1, -1};
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) {
    gp_buf_done(&m);
    return gp_err_set(err, GP_EIO, NULL, 0, NULL, "socketpair: %s", strerror(errno));
  }
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t at;
  posix_spawn_file_actions_init(&fa);
  posix_spawnattr_init(&at);
  posix_spawn_file_actions_adddup2(&fa, sv[1], 0);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  gp_spawn_isolate(&fa, &at);
  char *argv[] = {(char *)sendmail, (char *)"-oi", (char *)"-t", NULL};
  char *envp[] = {(char *)"PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL};
  pid_t pid;
  int r = posix_spawn(&pid, sendmail, &fa, &at, argv, envp);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&at);
  close(sv[1]);
  if (r) {
    close(sv[0]);
    gp_buf_done(&m);
    return gp_err_set(err, GP_EIO, NULL, 0, NULL, "cannot start %s: %s", sendmail, strerror(r));
  }
  int64_t deadline = gp_mono_ms() + (int64_t)timeout_s * 1000;
  size_t off = 0;
  while (off < m.len && gp_mono_ms() < deadline) {
    struct pollfd p = {sv[0], POLLOUT, 0};
    if (poll(&p, 1, 20) <= 0) continue;
    ssize_t n = send(sv[0], m.data + off, m.len - off, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) off += (size_t)n;
    else if (n < 0 && errno != EAGAIN && errno != EINTR) break;
  }
  close(sv[0]);
  bool written = off == m.len;
  gp_buf_done(&m);
  int st = 0;
  for (;;) {
    pid_t w = waitpid(pid, &st, WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) return gp_err_set(err, GP_EIO, NULL, 0, NULL, "waitpid: %s", strerror(errno));
    if (gp_mono_ms() >= deadline) {
      kill_group(pid);
      return gp_err_set(err, GP_EIO, NULL, 0, NULL, "%s did not finish within %d s", sendmail,
                        timeout_s);
    }
    struct timespec ts = {0, 10 * 1000000};
    nanosleep(&ts, NULL);
  }
  if (!written) return gp_err_set(err, GP_EIO, NULL, 0, NULL, "%s did not read the message", sendmail);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
    return gp_err_set(err, GP_EIO, NULL, 0, NULL, "%s exited with status %d", sendmail,
                      WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
  return 0;
}
