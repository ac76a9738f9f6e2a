/* SPDX-License-Identifier: Apache-2.0 */
/* The client side without a gpool server: where the server address and token come from
 * (flags, then environment, then client.json), a broken client.json named in the error,
 * an unreachable server reported as such, API error objects decoded from a real HTTP
 * answer (a one-shot server on 127.0.0.1), and how jobs read in `gpool show` and `why`. */
#include "test.h"

#include <arpa/inet.h>
#include <jansson.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>

#include "cli/job_format.h"
#include "client/client.h"
#include "util/buf.h"

static char dir[256];

static int64_t tsrv_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void fresh_config_dir(void) {
  snprintf(dir, sizeof dir, "/tmp/gpool-client-test.XXXXXX");
  REQUIRE(mkdtemp(dir));
  setenv("GPOOL_CONFIG_DIR", dir, 1);
  unsetenv("GPOOL_SERVER");
  unsetenv("GPOOL_TOKEN");
}

static void remove_config_dir(void) {
  char path[512];
  snprintf(path, sizeof path, "%s/client.json", dir);
  unlink(path);
  rmdir(dir);
}

static void write_config(const char *text) {
  char path[512];
  snprintf(path, sizeof path, "%s/client.json", dir);
  FILE *f = fopen(path, "w");
  REQUIRE(f);
  fputs(text, f);
  fclose(f);
  REQUIRE(chmod(path, 0600) == 0); /* as gpool up writes it */
}

/* client.json holds a token: others may neither read it nor write it. */
static void a_client_json_open_to_others_is_refused(void) {
  fresh_config_dir();
  write_config("{\"server\": \"http://127.0.0.1:7000\", \"token\": \"file-token\"}");
  char path[512];
  snprintf(path, sizeof path, "%s/client.json", dir);
  char *server = NULL, *token = NULL;
  gp_err err = {0};
  static const int modes[] = {0644, 0640, 0606, 0620};
  for (int i = 0; i < 4; i++) {
    REQUIRE(chmod(path, (mode_t)modes[i]) == 0);
    memset(&err, 0, sizeof err);
    CHECK_EQ_INT(GP_EPERM, gp_client_resolve(NULL, NULL, &server, &token, &err));
    CHECK_EQ_STR(path, err.file);
    CHECK_CONTAINS(err.message, "chmod 600");
  }
  CHECK_CONTAINS(err.message, "mode 0620 lets other users write it");
  REQUIRE(chmod(path, 0644) == 0);
  CHECK_EQ_INT(GP_EPERM, gp_client_resolve(NULL, NULL, &server, &token, &err));
  CHECK_CONTAINS(err.message, "mode 0644 lets other users read it");
  /* Flags and the environment need no file. */
  setenv("GPOOL_SERVER", "http://127.0.0.1:7001", 1);
  setenv("GPOOL_TOKEN", "env-token", 1);
  CHECK_EQ_INT(0, gp_client_resolve(NULL, NULL, &server, &token, &err));
  free(server);
  free(token);
  REQUIRE(chmod(path, 0600) == 0);
  unsetenv("GPOOL_SERVER");
  unsetenv("GPOOL_TOKEN");
  CHECK_EQ_INT(0, gp_client_resolve(NULL, NULL, &server, &token, &err));
  CHECK_EQ_STR("file-token", token);
  free(server);
  free(token);
  remove_config_dir();
}

static void flags_then_environment_then_file(void) {
  fresh_config_dir();
  gp_err err = {0};
  char path[512];
  snprintf(path, sizeof path, "%s/client.json", dir);
  CHECK_EQ_INT(0, gp_client_config_write(path, "http://127.0.0.1:7000", "file-token", &err));
  char *server = NULL, *token = NULL;

  CHECK_EQ_INT(0, gp_client_resolve(NULL, NULL, &server, &token, &err));
  CHECK_EQ_STR("http://127.0.0.1:7000", server);
  CHECK_EQ_STR("file-token", token);
  free(server);
  free(token);

  setenv("GPOOL_TOKEN", "env-token", 1);
  CHECK_EQ_INT(0, gp_client_resolve(NULL, NULL, &server, &token, &err));
  CHECK_EQ_STR("http://127.0.0.1:7000", server); /* each value resolves on its own */
  CHECK_EQ_STR("env-token", token);
  free(server);
  free(token);

  setenv("GPOOL_SERVER", "http://127.0.0.1:7001", 1);
  CHECK_EQ_INT(0, gp_client_resolve("http://127.0.0.1:7002", "flag-token", &server, &token, &err));
  CHECK_EQ_STR("http://127.0.0.1:7002", server);
  CHECK_EQ_STR("flag-token", token);
  free(server);
  free(token);

  struct stat st;
  REQUIRE(stat(path, &st) == 0);
  CHECK_EQ_INT(0600, st.st_mode & 0777); /* it holds a token */
  remove_config_dir();
}

static void no_file_means_default_server_and_no_token(void) {
  fresh_config_dir();
  char *server = NULL, *token = NULL;
  gp_err err = {0};
  CHECK_EQ_INT(0, gp_client_resolve(NULL, NULL, &server, &token, &err));
  CHECK_EQ_STR(GP_CLIENT_DEFAULT_SERVER, server);
  CHECK(token == NULL);
  free(server);
  remove_config_dir();
}

static void a_broken_client_json_is_named(void) {
  fresh_config_dir();
  write_config("{\"server\": \"http://x\", \"token\": 42}");
  char *server = NULL, *token = NULL;
  gp_err err = {0};
  CHECK_EQ_INT(GP_EINVAL, gp_client_resolve(NULL, NULL, &server, &token, &err));
  CHECK_CONTAINS(err.file, "client.json");
  CHECK_EQ_STR("token", err.field);
  write_config("{\"server\": ");
  CHECK_EQ_INT(GP_EPARSE, gp_client_resolve(NULL, NULL, &server, &token, &err));
  write_config("{\"server\": \"ftp://x\"}");
  CHECK_EQ_INT(GP_EINVAL, gp_client_resolve(NULL, NULL, &server, &token, &err));
  CHECK_CONTAINS(err.message, "http://");
  remove_config_dir();
}

/* The CA for https:// servers: --ca, then GPOOL_CA, then client.json's absolute "ca". */
static void ca_from_flag_then_environment_then_file(void) {
  fresh_config_dir();
  unsetenv("GPOOL_CA");
  gp_err err = {0};
  char *ca = (char *)"untouched";
  CHECK_EQ_INT(0, gp_client_resolve_ca(NULL, &ca, &err));
  CHECK(ca == NULL); /* none anywhere: the system's CA store */
  write_config("{\"ca\": \"/etc/gpool/ca.pem\"}");
  CHECK_EQ_INT(0, gp_client_resolve_ca(NULL, &ca, &err));
  CHECK_EQ_STR("/etc/gpool/ca.pem", ca);
  free(ca);
  setenv("GPOOL_CA", "/env/ca.pem", 1);
  CHECK_EQ_INT(0, gp_client_resolve_ca(NULL, &ca, &err));
  CHECK_EQ_STR("/env/ca.pem", ca);
  free(ca);
  CHECK_EQ_INT(0, gp_client_resolve_ca("/flag/ca.pem", &ca, &err));
  CHECK_EQ_STR("/flag/ca.pem", ca);
  free(ca);
  unsetenv("GPOOL_CA");
  write_config("{\"ca\": \"ca.pem\"}");
  CHECK_EQ_INT(GP_EINVAL, gp_client_resolve_ca(NULL, &ca, &err));
  CHECK_EQ_STR("ca", err.field);
  CHECK_CONTAINS(err.message, "absolute");
  write_config("{\"ca\": 7}");
  CHECK_EQ_INT(GP_EINVAL, gp_client_resolve_ca(NULL, &ca, &err));
  CHECK_EQ_STR("ca", err.field);
  remove_config_dir();
}

static void an_unreachable_server_says_so(void) {
  gp_client *c = gp_client_new("http://127.0.0.1:1", "t");
  REQUIRE(c);
  gp_err err = {0};
  CHECK_EQ_INT(GP_EIO, gp_client_call(c, "GET", "/v1/jobs", NULL, NULL, NULL, &err));
  CHECK_CONTAINS(err.message, "cannot reach the gpool server at http://127.0.0.1:1");
  CHECK_CONTAINS(err.message, "gpool up");
  gp_client_free(c);
}

/* Serves one canned HTTP answer on a free loopback port to `count` connections, one
 * after the other; returns the port. The child exits after them. A client's GET /livez
 * (asked of each server of a list first) is answered 200 and not counted. */
static int canned_server(const char *answer, int count, pid_t *ret_pid) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  REQUIRE(bind(fd, (struct sockaddr *)&a, sizeof a) == 0);
  REQUIRE(listen(fd, 1) == 0);
  socklen_t len = sizeof a;
  getsockname(fd, (struct sockaddr *)&a, &len);
  pid_t pid = fork();
  if (pid == 0) {
    alarm(10);
    for (int i = 0; i < count; i++) {
      int c = accept(fd, NULL, NULL);
      char buf[8192];
      ssize_t n = read(c, buf, sizeof buf); /* the request (small, one read is enough here) */
      bool probe = n > 11 && strncmp(buf, "GET /livez ", 11) == 0;
      const char *alive = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}";
      ssize_t w = write(c, probe ? alive : answer, strlen(probe ? alive : answer));
      (void)w;
      close(c);
      if (probe) i--;
    }
    _exit(0);
  }
  close(fd);
  *ret_pid = pid;
  return ntohs(a.sin_port);
}

static int one_shot_server(const char *answer, pid_t *ret_pid) { return canned_server(answer, 1, ret_pid); }

/* A list of servers: an unreachable one is skipped, a follower's redirect is followed to the
 * leader, and later calls go straight to it. Each server of a list is first asked GET
 * /livez (one connection of its own here). */
static void a_list_finds_the_leader(void) {
  const char *ok = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 12\r\n"
                   "Connection: close\r\n\r\n{\"jobs\": []}";
  pid_t leader_pid, follower_pid;
  int leader = canned_server(ok, 2, &leader_pid);
  char redirect[256];
  snprintf(redirect, sizeof redirect, "HTTP/1.1 307 Temporary Redirect\r\nLocation: http://127.0.0.1:%d/v1/jobs\r\n"
           "Content-Length: 0\r\nConnection: close\r\n\r\n", leader);
  int follower = canned_server(redirect, 1, &follower_pid);
  char list[128];
  snprintf(list, sizeof list, "http://127.0.0.1:1,http://127.0.0.1:%d,http://127.0.0.1:%d", follower, leader);
  gp_client *c = gp_client_new(list, "t");
  gp_err err = {0};
  json_t *got = NULL;
  CHECK_EQ_INT(0, gp_client_call(c, "GET", "/v1/jobs", NULL, &got, NULL, &err));
  CHECK(json_is_array(json_object_get(got, "jobs")));
  json_decref(got);
  char want[64];
  snprintf(want, sizeof want, "http://127.0.0.1:%d", leader);
  CHECK_EQ_STR(want, gp_client_server(c));
  CHECK_EQ_INT(0, gp_client_call(c, "GET", "/v1/jobs", NULL, NULL, NULL, &err)); /* the leader's second answer */
  gp_client_free(c);
  waitpid(leader_pid, NULL, 0);
  waitpid(follower_pid, NULL, 0);
}

/* A listening socket nobody accepts from: connections succeed (the kernel's backlog) and
 * requests are taken, but nothing ever answers, as with a SIGSTOPped server. */
static int frozen_server(int *ret_fd) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  REQUIRE(bind(fd, (struct sockaddr *)&a, sizeof a) == 0);
  REQUIRE(listen(fd, 16) == 0);
  socklen_t len = sizeof a;
  getsockname(fd, (struct sockaddr *)&a, &len);
  *ret_fd = fd;
  return ntohs(a.sin_port);
}

/* A frozen first server costs a read and a write a few seconds, not the call's timeout:
 * the client asks each server whether it lives before sending it anything, and moves on. */
static void a_frozen_first_server_is_passed_over(void) {
  int ffd;
  int frozen = frozen_server(&ffd);
  const char *ok = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}";
  pid_t pid;
  int next = canned_server(ok, 2, &pid); /* a read, a write */
  char list[128];
  snprintf(list, sizeof list, "http://127.0.0.1:%d,http://127.0.0.1:%d", frozen, next);
  gp_client *c = gp_client_new(list, "t");
  gp_client_set_timeout_ms(c, 15000);
  gp_err err = {0};
  int64_t t0 = tsrv_ms();
  CHECK_EQ_INT(0, gp_client_call(c, "GET", "/v1/jobs", NULL, NULL, NULL, &err));
  CHECK(tsrv_ms() - t0 < 6000);
  json_t *job = json_pack("{s:[s]}", "command", "true");
  CHECK_EQ_INT(0, gp_client_call(c, "POST", "/v1/jobs", job, NULL, NULL, &err));
  json_decref(job);
  CHECK(tsrv_ms() - t0 < 6000);
  gp_client_free(c);
  waitpid(pid, NULL, 0);
  close(ffd);
}

/* A server that answered its probe, then froze with the call sent: a read moves on to the
 * next server; a write is not sent again anywhere and says it may have been carried out. */
static void a_call_sent_to_a_server_that_froze_is_resent_only_when_a_read(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  REQUIRE(bind(fd, (struct sockaddr *)&a, sizeof a) == 0);
  REQUIRE(listen(fd, 16) == 0);
  socklen_t len = sizeof a;
  getsockname(fd, (struct sockaddr *)&a, &len);
  pid_t mute = fork();
  if (mute == 0) { /* answers each probe (GET /livez), swallows everything else */
    alarm(20);
    for (;;) {
      int c = accept(fd, NULL, NULL);
      char buf[8192];
      ssize_t n = read(c, buf, sizeof buf - 1);
      if (n > 0 && strncmp(buf, "GET /livez ", 11) == 0) {
        const char *ok = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}";
        ssize_t w = write(c, ok, strlen(ok));
        (void)w;
        close(c);
      }
    }
  }
  close(fd);
  const char *ok = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}";
  pid_t next_pid;
  int next = canned_server(ok, 1, &next_pid); /* the read */
  char list[128];
  snprintf(list, sizeof list, "http://127.0.0.1:%d,http://127.0.0.1:%d", ntohs(a.sin_port), next);
  gp_client *c = gp_client_new(list, "t");
  gp_client_set_timeout_ms(c, 1500);
  gp_err err = {0};
  json_t *job = json_pack("{s:[s]}", "command", "true");
  CHECK_EQ_INT(GP_ETIMEOUT, gp_client_call(c, "POST", "/v1/jobs", job, NULL, NULL, &err));
  CHECK_CONTAINS(err.message, "may have been carried out");
  json_decref(job);
  CHECK_EQ_INT(0, waitpid(next_pid, NULL, WNOHANG)); /* the write went nowhere else */
  CHECK_EQ_INT(0, gp_client_call(c, "GET", "/v1/jobs", NULL, NULL, NULL, &err));
  waitpid(next_pid, NULL, 0);
  kill(mute, SIGKILL);
  waitpid(mute, NULL, 0);
  gp_client_free(c);
}

/* A redirect to a host outside the configured list is not followed: the token stays with
 * the servers it was given for. */
static void a_redirect_outside_the_list_is_refused(void) {
  pid_t evil_pid, follower_pid;
  int evil = canned_server("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}", 1, &evil_pid);
  char redirect[256];
  snprintf(redirect, sizeof redirect, "HTTP/1.1 307 Temporary Redirect\r\nLocation: http://127.0.0.1:%d/v1/jobs\r\n"
           "Content-Length: 0\r\nConnection: close\r\n\r\n", evil);
  int follower = canned_server(redirect, 1, &follower_pid);
  char url[64];
  snprintf(url, sizeof url, "http://127.0.0.1:%d", follower);
  gp_client *c = gp_client_new(url, "t");
  gp_err err = {0};
  json_t *job = json_pack("{s:[s]}", "command", "true");
  CHECK_EQ_INT(GP_EIO, gp_client_call(c, "POST", "/v1/jobs", job, NULL, NULL, &err));
  json_decref(job);
  CHECK_CONTAINS(err.message, "not one of the configured servers");
  waitpid(follower_pid, NULL, 0);
  CHECK_EQ_INT(0, waitpid(evil_pid, NULL, WNOHANG)); /* never called */
  kill(evil_pid, SIGKILL);
  waitpid(evil_pid, NULL, 0);
  gp_client_free(c);
}

/* Followers without a leader (503 + Retry-After): the client waits for one, bounded by its
 * timeout, then says that no server leads. */
static void no_leader_is_waited_for_then_said(void) {
  const char *busy = "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Type: application/json\r\n"
                     "Content-Length: 2\r\nConnection: close\r\n\r\n{}";
  pid_t p1, p2;
  int a = canned_server(busy, 3, &p1), b = canned_server(busy, 3, &p2);
  char list[128];
  snprintf(list, sizeof list, "http://127.0.0.1:%d,http://127.0.0.1:%d", a, b);
  gp_client *c = gp_client_new(list, "t");
  gp_client_set_timeout_ms(c, 1200);
  gp_err err = {0};
  CHECK_EQ_INT(GP_EIO, gp_client_call(c, "GET", "/v1/jobs", NULL, NULL, NULL, &err));
  CHECK_CONTAINS(err.message, "no gpool server leads the pool");
  gp_client_free(c);
  kill(p1, SIGKILL);
  kill(p2, SIGKILL);
  waitpid(p1, NULL, 0);
  waitpid(p2, NULL, 0);
}

/* A follower still names a leader that is gone (its lease has not run out yet): the client
 * keeps asking, paced, until the follower itself leads. */
static void a_gone_leader_is_waited_out(void) {
  char redirect[256];
  snprintf(redirect, sizeof redirect, "HTTP/1.1 307 Temporary Redirect\r\nLocation: http://127.0.0.1:1/v1/jobs\r\n"
           "Content-Length: 0\r\nConnection: close\r\n\r\n");
  /* A server that redirects to the dead leader three times, then answers as the leader. */
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  REQUIRE(bind(fd, (struct sockaddr *)&a, sizeof a) == 0);
  REQUIRE(listen(fd, 4) == 0);
  socklen_t len = sizeof a;
  getsockname(fd, (struct sockaddr *)&a, &len);
  pid_t pid = fork();
  if (pid == 0) {
    alarm(10);
    const char *ok = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}";
    for (int i = 0; i < 5; i++) { /* its probe, three redirects, the answer */
      int c = accept(fd, NULL, NULL);
      char buf[8192];
      ssize_t n = read(c, buf, sizeof buf);
      (void)n;
      const char *answer = i < 4 ? redirect : ok;
      ssize_t w = write(c, answer, strlen(answer));
      (void)w;
      close(c);
    }
    _exit(0);
  }
  close(fd);
  char url[64], list[128];
  snprintf(url, sizeof url, "http://127.0.0.1:%d", ntohs(a.sin_port));
  snprintf(list, sizeof list, "%s,http://127.0.0.1:1", url); /* the dead leader is one of the pool's */
  gp_client *c = gp_client_new(list, "t");
  gp_err err = {0};
  CHECK_EQ_INT(0, gp_client_call(c, "GET", "/v1/jobs", NULL, NULL, NULL, &err));
  CHECK_EQ_STR(url, gp_client_server(c));
  gp_client_free(c);
  waitpid(pid, NULL, 0);
}

/* A request that reached a server and got no answer may have been acted on: it is not sent
 * to the next server (a submission would be made twice). */
static void a_request_that_arrived_is_not_sent_twice(void) {
  pid_t mute_pid, next_pid;
  int mute = canned_server("", 1, &mute_pid); /* reads the request, closes without a word */
  int next = canned_server("HTTP/1.1 201 Created\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}", 1, &next_pid);
  char list[128];
  snprintf(list, sizeof list, "http://127.0.0.1:%d,http://127.0.0.1:%d", mute, next);
  gp_client *c = gp_client_new(list, "t");
  gp_err err = {0};
  json_t *job = json_pack("{s:[s]}", "command", "true");
  CHECK_EQ_INT(GP_EIO, gp_client_call(c, "POST", "/v1/jobs", job, NULL, NULL, &err));
  json_decref(job);
  waitpid(mute_pid, NULL, 0);
  CHECK_EQ_INT(0, waitpid(next_pid, NULL, WNOHANG)); /* still waiting: never called */
  kill(next_pid, SIGKILL);
  waitpid(next_pid, NULL, 0);
  gp_client_free(c);
}

static void api_errors_become_sentences(void) {
  const char *body = "{\"error\": {\"code\": \"permission_denied\", \"message\": \"queue 'private' does not admit bob\", \"field\": \"queue\"}}";
  char answer[1024];
  snprintf(answer, sizeof answer, "HTTP/1.1 403 Forbidden\r\nContent-Type: application/json\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n%s",
           strlen(body), body);
  pid_t pid;
  int port = one_shot_server(answer, &pid);
  char url[64];
  snprintf(url, sizeof url, "http://127.0.0.1:%d", port);
  gp_client *c = gp_client_new(url, "bob-token");
  gp_err err = {0};
  long status = 0;
  json_t *body_json = json_pack("{s:s}", "queue", "private");
  CHECK_EQ_INT(GP_EPERM, gp_client_call(c, "POST", "/v1/jobs", body_json, NULL, &status, &err));
  CHECK_EQ_INT(403, status);
  CHECK_EQ_STR("queue 'private' does not admit bob", err.message);
  CHECK_EQ_STR("queue", err.field);
  json_decref(body_json);
  gp_client_free(c);
  waitpid(pid, NULL, 0);

  /* Not JSON where JSON was promised. */
  port = one_shot_server("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello", &pid);
  snprintf(url, sizeof url, "http://127.0.0.1:%d", port);
  c = gp_client_new(url, "t");
  json_t *got = NULL;
  CHECK_EQ_INT(GP_EPARSE, gp_client_call(c, "GET", "/v1/jobs", NULL, &got, NULL, &err));
  CHECK(got == NULL);
  gp_client_free(c);
  waitpid(pid, NULL, 0);
}

static void escaping_keeps_paths_safe(void) {
  char out[64];
  CHECK_EQ_INT(0, gp_client_escape("org/team a", 1, out, sizeof out));
  CHECK_EQ_STR("org/team%20a", out);
  CHECK_EQ_INT(0, gp_client_escape("../x?y", 0, out, sizeof out));
  CHECK_EQ_STR("..%2Fx%3Fy", out);
  CHECK_EQ_INT(GP_ELIMIT, gp_client_escape("abcdef", 0, out, 4));
}

static json_t *job(const char *text) {
  json_error_t e;
  json_t *j = json_loads(text, 0, &e);
  REQUIRE(j);
  return j;
}

static void why_speaks_in_sentences(void) {
  gp_buf out;
  gp_buf_init(&out, 4096);
  json_t *j = job("{\"id\": \"12\", \"state\": \"pending\", \"submitted_at\": 1000, \"pending_reason\": \"QueueLimit\"}");
  gp_job_fmt_why(j, 1125, &out);
  CHECK_EQ_STR("Job 12 has been pending for 2m05s: its queue (or a parent queue) is at its GPU limit.\n", out.data);
  json_decref(j);

  gp_buf_reset(&out);
  j = job("{\"id\": \"13\", \"state\": \"pending\", \"submitted_at\": 1000, \"pending_reason\": \"Resources\","
          " \"pending_message\": \"Needs 16 GPUs on one node; the largest node has 8.\"}");
  gp_job_fmt_why(j, 1010, &out);
  CHECK_EQ_STR("Job 13 has been pending for 10s: Needs 16 GPUs on one node; the largest node has 8.\n", out.data);
  json_decref(j);

  gp_buf_reset(&out);
  j = job("{\"id\": \"16\", \"state\": \"pending\", \"submitted_at\": 1000, \"pending_reason\": \"Reservation\","
          " \"pending_message\": \"GPUs are reserved for it from t=2800.\", \"reservation_at\": 2800}");
  gp_job_fmt_why(j, 1000, &out);
  CHECK_CONTAINS(out.data, "Job 16 has been pending for 0s: GPUs are reserved for it; it should start by ");
  CHECK_CONTAINS(out.data, " (in 30m00s).\n");
  CHECK(strstr(out.data, "t=2800") == NULL); /* no raw clock values for people */
  json_decref(j);

  gp_buf_reset(&out);
  j = job("{\"id\": \"14\", \"state\": \"running\", \"started_at\": 1000, \"placements\": [{\"node\": \"n1\"}, {\"node\": \"n2\"}]}");
  gp_job_fmt_why(j, 4600, &out);
  CHECK_EQ_STR("Job 14 is not pending: it has been running on n1,n2 for 1h00m.\n", out.data);
  json_decref(j);

  gp_buf_reset(&out);
  j = job("{\"id\": \"15\", \"state\": \"failed\", \"exit_code\": 3, \"end_reason\": \"exited\", \"ended_at\": 1000}");
  gp_job_fmt_why(j, 1030, &out);
  CHECK_EQ_STR("Job 15 is not pending: it ended as failed with exit code 3 (exited), 30s ago.\n", out.data);
  json_decref(j);
  gp_buf_done(&out);
}

/* A budget's hold and demotion are stated with the server's reason; an owner's hold, and a
 * budget hold an admin released, are not blamed on the budget. */
static void why_states_what_a_budget_did(void) {
  gp_buf out;
  gp_buf_init(&out, 4096);
  json_t *j = job("{\"id\": \"21\", \"state\": \"held\", \"timeline\": [{\"event\": \"submitted\"},"
                  " {\"event\": \"held\", \"by\": \"budget\", \"reason\": \"queue lab spent its monthly"
                  " budget of 500 GPU-hours (512.3 used); held until the period ends or an admin"
                  " releases it\"}]}");
  gp_job_fmt_why(j, 1000, &out);
  CHECK_EQ_STR("Job 21 is held: queue lab spent its monthly budget of 500 GPU-hours (512.3 used); "
               "held until the period ends or an admin releases it.\n", out.data);
  json_decref(j);

  gp_buf_reset(&out);
  j = job("{\"id\": \"22\", \"state\": \"held\", \"timeline\": [{\"event\": \"held\", \"by\": \"budget\","
          " \"reason\": \"spent\"}, {\"event\": \"released\", \"by\": \"root\"}, {\"event\": \"held\","
          " \"by\": \"alice\"}]}");
  gp_job_fmt_why(j, 1000, &out);
  CHECK_EQ_STR("Job 22 is held: it will not start until you run 'gpool release 22'.\n", out.data);
  json_decref(j);

  /* Its owner held it too: the budget's hold still stands, and only an admin lifts it. */
  gp_buf_reset(&out);
  j = job("{\"id\": \"24\", \"state\": \"held\", \"timeline\": [{\"event\": \"held\", \"by\": \"budget\","
          " \"reason\": \"queue lab spent its budget\"}, {\"event\": \"held\", \"by\": \"alice\"}]}");
  gp_job_fmt_why(j, 1000, &out);
  CHECK_EQ_STR("Job 24 is held: queue lab spent its budget.\n", out.data);
  json_decref(j);

  gp_buf_reset(&out);
  j = job("{\"id\": \"23\", \"state\": \"pending\", \"submitted_at\": 1000, \"pending_reason\": \"Priority\","
          " \"timeline\": [{\"event\": \"demoted\", \"by\": \"budget\", \"from\": \"training\","
          " \"to\": \"opportunistic\", \"reason\": \"queue lab spent its weekly budget\"}]}");
  gp_job_fmt_why(j, 1010, &out);
  CHECK_CONTAINS(out.data, "\nDemoted: queue lab spent its weekly budget.\n");
  json_decref(j);
  gp_buf_done(&out);
}

static void show_reads_a_whole_job(void) {
  json_t *j = job("{\"id\": \"7\", \"name\": \"train\", \"state\": \"running\", \"user\": \"alice\", \"queue\": \"org/a\","
                  " \"command\": [\"python\", \"train.py\", \"--note\", \"a b\"], \"workdir\": \"/w\", \"gpus\": 4, \"tasks\": 2,"
                  " \"gpu_types\": [\"H100-80GB\"], \"cpus\": 8, \"mem_mib\": 65536, \"time_limit\": 14400,"
                  " \"requeue\": true, \"grace_s\": 60, \"signal\": \"USR1\", \"restarts\": 1, \"after_ok\": [\"5\"],"
                  " \"placements\": [{\"node\": \"n1\", \"gpu_ids\": [0,1,2,3], \"gpu_uuids\": [\"GPU-a\"], \"gpu_milli\": 1000}],"
                  " \"enforcement\": \"exclusive\", \"started_at\": 100,"
                  " \"timeline\": [{\"event\": \"submitted\", \"at\": 50}, {\"event\": \"started\", \"at\": 100, \"node\": \"n1\"}],"
                  " \"usage\": {\"avg_sm_util_pct\": 45, \"peak_mem_mib\": 30720}}");
  gp_buf out;
  gp_buf_init(&out, 1 << 16);
  gp_job_fmt_show(j, 160, &out);
  CHECK_CONTAINS(out.data, "Job 7 (train): running\n");
  CHECK_CONTAINS(out.data, "command    python train.py --note 'a b'\n");
  CHECK_CONTAINS(out.data, "request    GPUs 2x4 (H100-80GB), 8 CPUs, 64G memory, time limit 4h00m\n");
  CHECK_CONTAINS(out.data, "requeue, signal USR1, grace 60s; restarts 1");
  CHECK_CONTAINS(out.data, "depends    afterok 5");
  CHECK_CONTAINS(out.data, "n1           GPUs 0,1,2,3  GPU-a");
  CHECK_CONTAINS(out.data, "started on n1");
  CHECK_CONTAINS(out.data, "running for 1m00s");
  CHECK_CONTAINS(out.data, "avg SM 45%, peak GPU memory 30G\n");
  gp_buf_done(&out);

  char g[64];
  json_t *f = job("{\"gpu_fraction\": 0.25}");
  gp_job_fmt_gpus(f, g, sizeof g);
  CHECK_EQ_STR("0.25", g);
  json_decref(f);
  f = job("{\"mig\": \"1g.10gb\"}");
  gp_job_fmt_gpus(f, g, sizeof g);
  CHECK_EQ_STR("mig:1g.10gb", g);
  json_decref(f);
  json_decref(j);
}

/* A running job under its queue's idle threshold: `gpool why` and `gpool show` say since
 * when and what the queue's idle policy does (or did); a busy job gets no such line. */
static void show_and_why_say_a_job_is_idle(void) {
  gp_buf out;
  gp_buf_init(&out, 1 << 16);
  json_t *j = job("{\"id\": \"31\", \"state\": \"running\", \"started_at\": 400,"
                  " \"placements\": [{\"node\": \"n1\"}], \"idle\": {\"since\": 1000,"
                  " \"util_pct\": 0.5, \"threshold_pct\": 5, \"window_s\": 840, \"action\": \"requeue\","
                  " \"due_at\": 1840, \"acted\": false}}");
  gp_job_fmt_why(j, 1720, &out);
  CHECK_CONTAINS(out.data, "Job 31 is not pending: it has been running on n1 for 22m00s.\nIdle: under 5% SM since ");
  CHECK_CONTAINS(out.data, " (12m00s); policy: requeue at ");
  CHECK_CONTAINS(out.data, " (in 2m00s).\n");
  gp_buf_reset(&out);
  gp_job_fmt_show(j, 1720, &out);
  CHECK_CONTAINS(out.data, "\n  idle       under 5% SM since ");
  json_decref(j);

  gp_buf_reset(&out);
  j = job("{\"id\": \"32\", \"state\": \"running\", \"started_at\": 400, \"idle\": {\"since\": 1000,"
          " \"threshold_pct\": 2.5, \"action\": \"notify\", \"why\": \"the job is not requeueable\","
          " \"due_at\": 1600, \"acted\": true}}");
  gp_job_fmt_why(j, 1720, &out);
  CHECK_CONTAINS(out.data, "Idle: under 2.5% SM since ");
  CHECK_CONTAINS(out.data, "; policy: notified at ");
  CHECK_CONTAINS(out.data, " (the job is not requeueable).\n");
  json_decref(j);

  gp_buf_reset(&out);
  j = job("{\"id\": \"33\", \"state\": \"running\", \"started_at\": 400, \"idle\": {\"since\": 1000,"
          " \"threshold_pct\": 5, \"action\": null, \"due_at\": null, \"acted\": false}}");
  gp_job_fmt_why(j, 1720, &out);
  CHECK_CONTAINS(out.data, " (12m00s); its queue has no idle policy.\n");
  json_decref(j);

  gp_buf_reset(&out);
  j = job("{\"id\": \"34\", \"state\": \"running\", \"started_at\": 400, \"idle\": {\"since\": null,"
          " \"util_pct\": 80, \"threshold_pct\": 5, \"action\": \"requeue\", \"due_at\": null}}");
  gp_job_fmt_why(j, 1720, &out);
  CHECK(strstr(out.data, "Idle") == NULL);
  gp_buf_reset(&out);
  gp_job_fmt_show(j, 1720, &out);
  CHECK(strstr(out.data, "  idle ") == NULL);
  json_decref(j);
  gp_buf_done(&out);
}

GP_TESTS(a_list_finds_the_leader, a_frozen_first_server_is_passed_over,
         a_call_sent_to_a_server_that_froze_is_resent_only_when_a_read, a_redirect_outside_the_list_is_refused, no_leader_is_waited_for_then_said, a_gone_leader_is_waited_out, a_request_that_arrived_is_not_sent_twice,
         a_client_json_open_to_others_is_refused, flags_then_environment_then_file,
         no_file_means_default_server_and_no_token, a_broken_client_json_is_named,
         ca_from_flag_then_environment_then_file, an_unreachable_server_says_so,
         api_errors_become_sentences,
         escaping_keeps_paths_safe, why_speaks_in_sentences, why_states_what_a_budget_did,
         show_reads_a_whole_job, show_and_why_say_a_job_is_idle)
