/* SPDX-License-Identifier: Apache-2.0 */
/* The HTTP front door under hostile or failing peers, over real sockets on the loopback
 * (its other addresses, 127.0.0.2 and up, stand for other hosts): a flood of unfinished
 * requests from one address leaves room for everyone else, a request that never finishes
 * is cut at its deadline, idle or busy connections from one address do not lock its agent
 * out, a stopped agent's log reads hold no HTTP thread, the job list
 * comes in bounded pages, and a malformed target or query is refused naming what is wrong
 * rather than cut short or dropped. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>

#include "test.h"
#include "srv_util.h"

/* A TCP connection from `from` (a loopback address) to the test server; -1 if refused. */
static int dial(const tsrv *t, const char *from, int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  struct sockaddr_in a = {.sin_family = AF_INET};
  inet_pton(AF_INET, from, &a.sin_addr);
  REQUIRE(bind(fd, (struct sockaddr *)&a, sizeof a) == 0);
  struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons((uint16_t)(port ? port : gp_server_port(t->srv)))};
  inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
  if (connect(fd, (struct sockaddr *)&to, sizeof to) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

static void send_text(int fd, const char *s) {
  if (send(fd, s, strlen(s), MSG_NOSIGNAL) < 0) { /* a closed peer is what some tests expect */
  }
}

/* Whether the peer has closed `fd` (end of stream or reset) within `ms`. */
static bool closed_within(int fd, int ms) {
  int64_t until = tsrv_now_ms() + ms;
  for (;;) {
    int64_t left = until - tsrv_now_ms();
    if (left <= 0) return false;
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, (int)left) <= 0) continue;
    char buf[512];
    ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) return true;
  }
}

/* GET `path` from source address `from`; returns the status (0: no answer within 3 s). */
static long get_from(const tsrv *t, const char *from, const char *path, const char *token) {
  CURL *h = curl_easy_init();
  char url[512], auth[256]; /* never cut short: a test sends what it says */
  REQUIRE(snprintf(url, sizeof url, "%s%s", t->base, path) < (int)sizeof url);
  struct curl_slist *hdrs = NULL;
  if (token) {
    REQUIRE(snprintf(auth, sizeof auth, "Authorization: Bearer %s", token) < (int)sizeof auth);
    hdrs = curl_slist_append(hdrs, auth);
  }
  gp_buf out;
  gp_buf_init(&out, 0);
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_INTERFACE, from);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 3000L);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, tsrv_write);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &out);
  long code = 0;
  if (curl_easy_perform(h) == CURLE_OK) curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
  curl_slist_free_all(hdrs);
  curl_easy_cleanup(h);
  gp_buf_done(&out);
  return code;
}

static void a_flood_from_one_address_leaves_room_for_every_other(void) {
  tsrv t = {0};
  tsrv_start_with(&t, "max_connections: 64\nmax_connections_per_address: 16\n", NULL);
  enum { FLOOD = 300 };
  int fds[FLOOD];
  for (int i = 0; i < FLOOD; i++) {
    fds[i] = dial(&t, "127.0.0.1", 0);
    if (fds[i] >= 0) send_text(fds[i], "GET /v1/jobs HTTP/1.1\r\nHost: x\r\n");
  }
  /* Another host is served, the public route and the API alike. */
  int64_t t0 = tsrv_now_ms();
  CHECK_EQ_INT(200, get_from(&t, "127.0.0.2", "/healthz", NULL));
  CHECK_EQ_INT(200, get_from(&t, "127.0.0.3", "/v1/queues", ADMIN));
  printf("  two requests from other addresses during the flood: %lld ms\n", (long long)(tsrv_now_ms() - t0));
  /* The flood's address holds at most its cap; the rest are closed at once (within a few
   * seconds on a loaded machine: the server closes them as it accepts them). */
  int open = FLOOD;
  for (int64_t until = tsrv_now_ms() + 5000; open > 16 && tsrv_now_ms() < until;) {
    usleep(100 * 1000);
    open = 0;
    for (int i = 0; i < FLOOD; i++) {
      if (fds[i] < 0) continue;
      if (closed_within(fds[i], 1)) {
        close(fds[i]);
        fds[i] = -1;
      } else {
        open++;
      }
    }
  }
  printf("  flood connections still open: %d of %d\n", open, FLOOD);
  CHECK(open <= 16);
  for (int i = 0; i < FLOOD; i++)
    if (fds[i] >= 0) close(fds[i]);
  tsrv_stop(&t);
}

static void a_request_that_never_finishes_is_cut_at_its_deadline(void) {
  tsrv t = {0};
  tsrv_start_with(&t, "http_request_timeout_s: 1\nhttp_idle_timeout_s: 60\n", NULL);
  int fd = dial(&t, "127.0.0.1", 0);
  REQUIRE(fd >= 0);
  send_text(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\n");
  /* One header line every 200 ms: never idle, never done. */
  int64_t t0 = tsrv_now_ms();
  bool cut = false;
  for (int i = 0; i < 20 && !cut; i++) {
    send_text(fd, "X-Slow: 1\r\n");
    cut = closed_within(fd, 200);
  }
  int64_t took = tsrv_now_ms() - t0;
  printf("  a trickled request was cut after %lld ms\n", (long long)took);
  CHECK(cut);
  CHECK(took >= 900);
  close(fd);
  /* A keep-alive client that asks in time is served, request after request. */
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/healthz", NULL, NULL));
  tsrv_stop(&t);
}

/* Sends `request` on a new connection and reads the answer until `until_text` or the end
 * (3 s at most) into buf. */
static void exchange(const tsrv *t, const char *request, const char *until_text, char *buf, size_t cap) {
  int fd = dial(t, "127.0.0.1", 0);
  REQUIRE(fd >= 0);
  send_text(fd, request);
  size_t got = 0;
  buf[0] = '\0';
  int64_t until = tsrv_now_ms() + 3000;
  while (tsrv_now_ms() < until && !strstr(buf, until_text)) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, 100) <= 0) continue;
    ssize_t n = recv(fd, buf + got, cap - 1 - got, 0);
    if (n <= 0) break;
    got += (size_t)n;
    buf[got] = '\0';
  }
  close(fd);
}

static void a_body_too_large_or_broken_framing_is_refused_at_once(void) {
  tsrv t = {0};
  tsrv_start(&t);
  char buf[2048];
  /* A client that waits for "100 Continue" is refused before it sends its body. */
  exchange(&t, "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " ALICE "\r\n"
               "Content-Type: application/json\r\nContent-Length: 5000000\r\nExpect: 100-continue\r\n\r\n",
           "}}", buf, sizeof buf);
  CHECK_CONTAINS(buf, "HTTP/1.1 413");
  CHECK_CONTAINS(buf, "\"too_large\"");
  /* So is a body past what the server reads to throw away (GP_SRV_DRAIN_MAX). */
  exchange(&t, "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " ALICE "\r\n"
               "Content-Type: application/json\r\nContent-Length: 5000000000\r\n\r\n{", "}}", buf, sizeof buf);
  CHECK_CONTAINS(buf, "HTTP/1.1 413");
  /* A client that sends the body whole reads its 413 after the body (Python's urllib: see
   * tests/e2e/http_limits_test.sh). */
  /* Broken framing is answered by libmicrohttpd itself (docs/api.md): a 400 at once. */
  exchange(&t, "GET /healthz HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n", "</html>", buf, sizeof buf);
  CHECK_CONTAINS(buf, "HTTP/1.1 400");
  exchange(&t, "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: 12x\r\n\r\n", "</html>", buf, sizeof buf);
  CHECK_CONTAINS(buf, "HTTP/1.1 400");
  tsrv_stop(&t);
}

/* ---- a stopped agent ---- */

typedef struct log_read {
  const tsrv *t;
  char path[64];
  long status;
  json_t *body;
} log_read;

static void *read_log(void *p) {
  log_read *l = p;
  l->status = tsrv_call(l->t, "GET", l->path, ALICE, NULL, &l->body);
  return NULL;
}

static void a_stopped_agent_holds_no_http_thread(void) {
  tsrv t = {0};
  /* One HTTP thread: any request that held it would hold every other. */
  tsrv_start_with(&t, "http_threads: 1\n", NULL);
  /* A listening socket nobody accepts from: connections succeed, nothing ever answers, as
   * with an agent stopped by SIGSTOP. */
  int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = {.sin_family = AF_INET};
  inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  REQUIRE(bind(lfd, (struct sockaddr *)&a, sizeof a) == 0 && listen(lfd, 64) == 0);
  socklen_t al = sizeof a;
  getsockname(lfd, (struct sockaddr *)&a, &al);
  char body[1024];
  snprintf(body, sizeof body,
           "{\"node\": {\"name\": \"n1\", \"model\": \"H100-80GB\", \"gpus\": 1, \"cpus\": 8, \"mem_mib\": 65536,"
           " \"gpu_list\": [{\"index\": 0, \"uuid\": \"GPU-n1-0\", \"mem_mib\": 81920, \"mode\": \"exclusive\"}]},"
           " \"agent_url\": \"http://127.0.0.1:%d\", \"jobs\": []}", ntohs(a.sin_port));
  CHECK_EQ_INT(201, tsrv_agent_call(&t, "/v1/agent/register", body, NULL));
  char *id = tsrv_submit(&t, ALICE, "{\"command\": [\"train\"], \"gpus\": 1}");
  REQUIRE(id);
  CHECK(tsrv_wait_state(&t, id, "running"));
  json_t *hb = tsrv_heartbeat(&t, "n1", 0, 0, NULL); /* the node is alive; its agent then stops */
  CHECK(hb != NULL);
  json_decref(hb);
  enum { READS = 8 };
  log_read reads[READS];
  pthread_t th[READS];
  for (int i = 0; i < READS; i++) {
    reads[i] = (log_read){.t = &t};
    snprintf(reads[i].path, sizeof reads[i].path, "/v1/jobs/%s/log", id);
    pthread_create(&th[i], NULL, read_log, &reads[i]);
  }
  usleep(300 * 1000); /* the reads are at the agent */
  int64_t t0 = tsrv_now_ms();
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/queues", ADMIN, NULL));
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/healthz", NULL, NULL));
  int64_t took = tsrv_now_ms() - t0;
  printf("  GET /v1/queues and /healthz with %d log reads stuck at the agent: %lld ms\n", READS,
         (long long)took);
  CHECK(took < 1000);
  for (int i = 0; i < READS; i++) {
    pthread_join(th[i], NULL);
    CHECK_EQ_INT(503, reads[i].status);
    CHECK_CONTAINS(json_string_value(json_object_get(json_object_get(reads[i].body, "error"), "message")),
                   "did not answer");
    json_decref(reads[i].body);
  }
  close(lfd);
  free(id);
  tsrv_stop(&t);
}

/* ---- the job list ---- */

static void the_job_list_comes_in_pages_bounded_in_bytes(void) {
  tsrv t = {0};
  tsrv_start_with(&t, "max_job_bytes: 262144\n", NULL); /* jobs as large as an order carries */
  enum { JOBS = 25, ARG = 60 * 1000 }; /* three words of 60 KB: 180 KB a job */
  char *arg = malloc(ARG + 1);
  memset(arg, 'x', ARG);
  arg[ARG] = '\0';
  size_t blen = 3 * ARG + 200;
  char *body = malloc(blen);
  snprintf(body, blen, "{\"command\": [\"%s\", \"%s\", \"%s\"], \"gpus\": 1, \"hold\": true}", arg, arg,
           arg);
  for (int i = 0; i < JOBS; i++) {
    char *id = tsrv_submit(&t, ALICE, body);
    REQUIRE(id);
    free(id);
  }
  free(body);
  free(arg);
  int seen = 0, pages = 0;
  long long last = 0;
  char path[128] = "/v1/jobs?limit=1000";
  for (;;) {
    CURL *h = curl_easy_init();
    char url[300], auth[128];
    snprintf(url, sizeof url, "%s%s", t.base, path);
    snprintf(auth, sizeof auth, "Authorization: Bearer %s", ADMIN);
    struct curl_slist *hdrs = curl_slist_append(NULL, auth);
    gp_buf out;
    gp_buf_init(&out, 0);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, tsrv_write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &out);
    CHECK_EQ_INT(CURLE_OK, curl_easy_perform(h));
    curl_slist_free_all(hdrs);
    curl_easy_cleanup(h);
    /* A page stops at 4 MiB (plus the job that crossed it). */
    CHECK(out.len < ((size_t)4 << 20) + 300 * 1000);
    json_t *page = json_loadb(out.data, out.len, 0, NULL);
    gp_buf_done(&out);
    REQUIRE(page);
    pages++;
    json_t *jobs = json_object_get(page, "jobs");
    for (size_t i = 0; i < json_array_size(jobs); i++) {
      long long id = atoll(json_string_value(json_object_get(json_array_get(jobs, i), "id")));
      CHECK(id > last);
      last = id;
      seen++;
    }
    const char *next = json_string_value(json_object_get(page, "next"));
    if (next) snprintf(path, sizeof path, "/v1/jobs?limit=1000&next=%s", next);
    json_decref(page);
    if (!next || pages > JOBS) break;
  }
  printf("  %d jobs of 180 KB in %d pages\n", seen, pages);
  CHECK_EQ_INT(JOBS, seen);
  CHECK(pages >= 2);
  tsrv_stop(&t);
}

/* ---- the request target ---- */

static void an_encoded_nul_in_the_path_is_refused_naming_the_path(void) {
  tsrv t = {0};
  tsrv_start(&t);
  CHECK_EQ_INT(400, tsrv_req(&t, "GET", "/v1/jobs%00/cancel", ADMIN, NULL));
  CHECK_EQ_STR("path", err_field(t.last));
  CHECK_CONTAINS(json_string_value(json_object_get(json_object_get(t.last, "error"), "message")), "%00");
  CHECK_EQ_INT(400, tsrv_req(&t, "GET", "/healthz%00", NULL, NULL));
  CHECK_EQ_INT(400, tsrv_req(&t, "GET", "/v1/jobs?state=pending%00", ADMIN, NULL));
  CHECK_EQ_STR("state", err_field(t.last));
  /* An escaped percent sign is not a NUL. */
  CHECK_EQ_INT(404, tsrv_req(&t, "GET", "/v1/jobs/%2500", ADMIN, NULL));
  tsrv_stop(&t);
}

static void too_many_or_too_long_query_parameters_are_refused(void) {
  tsrv t = {0};
  tsrv_start(&t);
  char *id = tsrv_submit(&t, ALICE, "{\"command\": [\"x\"], \"gpus\": 1, \"hold\": true}");
  REQUIRE(id);
  free(id);
  gp_buf q;
  gp_buf_init(&q, 0);
  gp_buf_puts(&q, "/v1/jobs?");
  for (int i = 0; i < 1000; i++) gp_buf_printf(&q, "%sp%d=%d", i ? "&" : "", i, i);
  int64_t t0 = tsrv_now_ms();
  CHECK_EQ_INT(400, tsrv_req(&t, "GET", q.data, ADMIN, NULL));
  CHECK(tsrv_now_ms() - t0 < 2000);
  CHECK_EQ_STR("query", err_field(t.last));
  gp_buf_reset(&q);
  gp_buf_puts(&q, "/v1/jobs?state=");
  for (int i = 0; i < 5000; i++) gp_buf_puts(&q, "x");
  /* A filter that cannot be applied is an error, never an unfiltered list. */
  CHECK_EQ_INT(400, tsrv_req(&t, "GET", q.data, ADMIN, NULL));
  CHECK_EQ_STR("state", err_field(t.last));
  gp_buf_reset(&q);
  gp_buf_puts(&q, "/v1/jobs?");
  for (int i = 0; i < 100; i++) gp_buf_puts(&q, "k");
  gp_buf_puts(&q, "=1");
  CHECK_EQ_INT(400, tsrv_req(&t, "GET", q.data, ADMIN, NULL));
  CHECK_EQ_STR("query", err_field(t.last));
  gp_buf_done(&q);
  /* What shows only once decoded is refused too: a name given twice, bytes not UTF-8. */
  CHECK_EQ_INT(400, tsrv_req(&t, "GET", "/v1/jobs?state=held&state=running", ADMIN, NULL));
  CHECK_EQ_STR("state", err_field(t.last));
  CHECK_EQ_INT(400, tsrv_req(&t, "GET", "/v1/jobs?user=%FF", ADMIN, NULL));
  CHECK_EQ_STR("user", err_field(t.last));
  /* Within the limits, filters apply. */
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/jobs?state=held&user=alice&limit=5", ADMIN, NULL));
  CHECK_EQ_INT(1, json_array_size(json_object_get(t.last, "jobs")));
  tsrv_stop(&t);
}


/* Opens n connections from `from` that send nothing (idle), into fds; returns how many. */
static int open_idle(const tsrv *t, const char *from, int *fds, int n) {
  int ok = 0;
  for (int i = 0; i < n; i++) {
    fds[i] = dial(t, from, 0);
    ok += fds[i] >= 0;
  }
  return ok;
}

/* How many of fds the server still holds open (closed ones are closed here and set -1). */
static int still_open(int *fds, int n) {
  int open = 0;
  for (int i = 0; i < n; i++) {
    if (fds[i] < 0) continue;
    if (closed_within(fds[i], 1)) {
      close(fds[i]);
      fds[i] = -1;
    } else {
      open++;
    }
  }
  return open;
}

static void idle_connections_from_one_address_do_not_lock_out_its_agent(void) {
  tsrv t = {0};
  tsrv_start_with(&t, "max_connections_per_address: 16\n", NULL);
  /* A job on the node holds idle connections from the node's address, and opens new
   * ones as the server closes them; its agent (the same address) must still register and
   * heartbeat, and other clients of the address be served. */
  enum { FLOOD = 40 };
  int fds[FLOOD];
  open_idle(&t, "127.0.0.1", fds, FLOOD);
  usleep(200 * 1000);
  for (int round = 0; round < 3; round++) {
    int64_t t0 = tsrv_now_ms();
    long reg = tsrv_register(&t, "n1", 1, NULL);
    CHECK(reg == 201 || reg == 200); /* registered, or registered again */
    json_t *hb = tsrv_heartbeat(&t, "n1", 0, 0, NULL);
    CHECK(hb != NULL);
    json_decref(hb);
    CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/queues", ADMIN, NULL));
    printf("  round %d: register, heartbeat and a read from the flooded address in %lld ms\n", round,
           (long long)(tsrv_now_ms() - t0));
    /* The flood reopens what was closed. */
    for (int i = 0; i < FLOOD; i++)
      if (fds[i] >= 0 && closed_within(fds[i], 1)) {
        close(fds[i]);
        fds[i] = dial(&t, "127.0.0.1", 0);
      } else if (fds[i] < 0) {
        fds[i] = dial(&t, "127.0.0.1", 0);
      }
    usleep(100 * 1000);
  }
  /* The address holds at most its share all along. */
  usleep(300 * 1000);
  int open = still_open(fds, FLOOD);
  printf("  flood connections still open: %d of %d\n", open, FLOOD);
  CHECK(open <= 16);
  for (int i = 0; i < FLOOD; i++)
    if (fds[i] >= 0) close(fds[i]);
  tsrv_stop(&t);
}

/* Opens an event stream from 127.0.0.1 as `token` and keeps it (busy: held by the server). */
static int open_stream(const tsrv *t, const char *token) {
  int fd = dial(t, "127.0.0.1", 0);
  REQUIRE(fd >= 0);
  char req[256];
  REQUIRE(snprintf(req, sizeof req, "GET /v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n",
                   token) < (int)sizeof req);
  send_text(fd, req);
  return fd;
}

static void busy_connections_from_one_address_still_let_its_agent_in(void) {
  tsrv t = {0};
  tsrv_start_with(&t, "max_connections_per_address: 4\n", NULL);
  /* Every connection the address may hold is busy (event streams the server holds open):
   * nothing can be closed to make room. */
  const char *tokens[] = {ADMIN, ALICE, BOB, VIEWER};
  int fds[4];
  for (int i = 0; i < 4; i++) fds[i] = open_stream(&t, tokens[i]);
  usleep(300 * 1000);
  /* The agent is still let in, on probation; anything else of the address is told to retry. */
  CHECK_EQ_INT(201, tsrv_register(&t, "n1", 1, NULL));
  json_t *hb = tsrv_heartbeat(&t, "n1", 0, 0, NULL);
  CHECK(hb != NULL);
  json_decref(hb);
  CHECK_EQ_INT(503, tsrv_req(&t, "GET", "/v1/queues", ADMIN, NULL));
  CHECK_EQ_STR("unavailable", err_code(t.last));
  /* Another address is served as usual. */
  CHECK_EQ_INT(200, get_from(&t, "127.0.0.2", "/v1/queues", ADMIN));
  for (int i = 0; i < 4; i++) close(fds[i]);
  tsrv_stop(&t);
}

static void idle_connections_past_the_servers_limit_make_room(void) {
  tsrv t = {0};
  tsrv_start_with(&t, "max_connections: 16\n", NULL);
  /* Idle connections from many addresses, more than the server takes in all. */
  enum { PER = 10, ADDRS = 4 };
  int fds[PER * ADDRS];
  const char *from[ADDRS] = {"127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"};
  for (int a = 0; a < ADDRS; a++) open_idle(&t, from[a], fds + a * PER, PER);
  usleep(200 * 1000);
  /* A newcomer is served: the oldest idle connection made room for it. */
  CHECK_EQ_INT(200, get_from(&t, "127.0.0.6", "/v1/queues", ADMIN));
  CHECK_EQ_INT(201, tsrv_register(&t, "n1", 1, NULL));
  int open = still_open(fds, PER * ADDRS);
  printf("  idle connections still open: %d of %d (max_connections: 16)\n", open, PER * ADDRS);
  CHECK(open <= 16);
  for (int i = 0; i < PER * ADDRS; i++)
    if (fds[i] >= 0) close(fds[i]);
  tsrv_stop(&t);
}

GP_TESTS(a_flood_from_one_address_leaves_room_for_every_other,
         a_request_that_never_finishes_is_cut_at_its_deadline,
         a_body_too_large_or_broken_framing_is_refused_at_once, a_stopped_agent_holds_no_http_thread,
         the_job_list_comes_in_pages_bounded_in_bytes, an_encoded_nul_in_the_path_is_refused_naming_the_path,
         too_many_or_too_long_query_parameters_are_refused,
         idle_connections_from_one_address_do_not_lock_out_its_agent,
         busy_connections_from_one_address_still_let_its_agent_in,
         idle_connections_past_the_servers_limit_make_room)
