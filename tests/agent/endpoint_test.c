/* SPDX-License-Identifier: Apache-2.0 */
/* The real `gpool agent`'s own endpoint under a flood: idle connections from one address
 * (127.0.0.2, another host on the loopback) take at most that address's share, and the
 * server's log reads and health checks from another address are still answered; from the
 * server's own address (a one-machine pool) too. */
#include <arpa/inet.h>
#include <curl/curl.h>
#include <poll.h>
#include <sys/socket.h>

#include "agent_harness.h"

static size_t sink(char *d, size_t s, size_t n, void *ctx) {
  (void)d;
  (void)ctx;
  return s * n;
}

static long get(const char *url, const char *token) {
  CURL *c = curl_easy_init();
  struct curl_slist *h = NULL;
  char auth[256];
  if (token) {
    REQUIRE(snprintf(auth, sizeof auth, "Authorization: Bearer %s", token) < (int)sizeof auth);
    h = curl_slist_append(h, auth);
  }
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 3000L);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  long status = 0;
  if (curl_easy_perform(c) == CURLE_OK) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  curl_slist_free_all(h);
  curl_easy_cleanup(c);
  return status;
}

static bool peer_closed(int fd) {
  struct pollfd p = {.fd = fd, .events = POLLIN};
  if (poll(&p, 1, 1) <= 0) return false;
  char b[64];
  ssize_t n = recv(fd, b, sizeof b, MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

/* A TCP connection from `from` to the agent's port; -1 if refused. */
static int dial_from(const char *from, int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = {.sin_family = AF_INET}, to = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  inet_pton(AF_INET, from, &a.sin_addr);
  inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
  if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || connect(fd, (struct sockaddr *)&to, sizeof to) != 0) {
    if (fd >= 0) close(fd);
    return -1;
  }
  return fd;
}

static void idle_connections_from_one_address_do_not_shut_log_reads_out(void) {
  fake_server *s = fs_start();
  agent_proc ap;
  tmpdir(ap.data, sizeof ap.data);
  agent_spawn(&ap, s, "1xH100-80GB", NULL);
  json_t *reg = fs_wait_register(s, 1, 10000);
  REQUIRE(reg);
  const char *url = json_string_value(json_object_get(reg, "agent_url"));
  REQUIRE(url && strncmp(url, "http://127.0.0.1:", 17) == 0);
  int port = atoi(url + 17);
  enum { FLOOD = 100 };
  int fds[FLOOD];
  for (int i = 0; i < FLOOD; i++) {
    fds[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in from = {.sin_family = AF_INET}, to = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.2", &from.sin_addr);
    inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
    REQUIRE(bind(fds[i], (struct sockaddr *)&from, sizeof from) == 0);
    if (connect(fds[i], (struct sockaddr *)&to, sizeof to) != 0) {
      close(fds[i]);
      fds[i] = -1;
    }
  }
  usleep(200 * 1000);
  char target[256];
  REQUIRE(snprintf(target, sizeof target, "%s/healthz", url) < (int)sizeof target);
  CHECK_EQ_INT(200, get(target, NULL));
  REQUIRE(snprintf(target, sizeof target, "%s/logs/42", url) < (int)sizeof target);
  CHECK_EQ_INT(404, get(target, FS_TOKEN)); /* answered: the job is simply not here */
  CHECK_EQ_INT(401, get(target, "agent-secreT"));
  int open = 0;
  for (int i = 0; i < FLOOD; i++)
    if (fds[i] >= 0 && !peer_closed(fds[i])) open++;
  printf("  idle connections from one address still open: %d of %d\n", open, FLOOD);
  CHECK(open <= 32);
  for (int i = 0; i < FLOOD; i++)
    if (fds[i] >= 0) close(fds[i]);
  json_decref(reg);
  agent_stop(&ap);
  fs_stop(s);
  rm_rf(ap.data);
}

/* A one-machine pool (`gpool up`): the server reads logs from the agent's own address,
 * where a job can open connections too. Its idle connections must not shut the server's
 * log reads out, however many it opens and reopens (docs/agent.md). */
static void idle_connections_from_the_servers_address_do_not_shut_its_log_reads_out(void) {
  fake_server *s = fs_start();
  agent_proc ap;
  tmpdir(ap.data, sizeof ap.data);
  agent_spawn(&ap, s, "1xH100-80GB", NULL);
  json_t *reg = fs_wait_register(s, 1, 10000);
  REQUIRE(reg);
  const char *url = json_string_value(json_object_get(reg, "agent_url"));
  REQUIRE(url && strncmp(url, "http://127.0.0.1:", 17) == 0);
  int port = atoi(url + 17);
  enum { FLOOD = 100 };
  int fds[FLOOD];
  for (int i = 0; i < FLOOD; i++) fds[i] = dial_from("127.0.0.1", port);
  usleep(200 * 1000);
  char logs[256], health[256];
  REQUIRE(snprintf(logs, sizeof logs, "%s/logs/42", url) < (int)sizeof logs);
  REQUIRE(snprintf(health, sizeof health, "%s/healthz", url) < (int)sizeof health);
  for (int round = 0; round < 3; round++) {
    CHECK_EQ_INT(404, get(logs, FS_TOKEN)); /* answered: the job is simply not here */
    CHECK_EQ_INT(200, get(health, NULL));   /* and other clients of the address too */
    for (int i = 0; i < FLOOD; i++) /* the flood reopens what was closed */
      if (fds[i] < 0 || peer_closed(fds[i])) {
        if (fds[i] >= 0) close(fds[i]);
        fds[i] = dial_from("127.0.0.1", port);
      }
    usleep(100 * 1000);
  }
  int open = 0;
  for (int i = 0; i < FLOOD; i++)
    if (fds[i] >= 0 && !peer_closed(fds[i])) open++;
  printf("  idle connections from the server's address still open: %d of %d\n", open, FLOOD);
  CHECK(open <= 32);
  for (int i = 0; i < FLOOD; i++)
    if (fds[i] >= 0) close(fds[i]);
  json_decref(reg);
  agent_stop(&ap);
  fs_stop(s);
  rm_rf(ap.data);
}

GP_TESTS(idle_connections_from_one_address_do_not_shut_log_reads_out,
         idle_connections_from_the_servers_address_do_not_shut_its_log_reads_out)
