/* SPDX-License-Identifier: Apache-2.0 */
/* GET /v1/events (src/server/streams/events.c, events_feed.c) on real sockets: every stream hears
 * every job's summary (what any user reads in GET /v1/jobs, never a command, env or the
 * agent's detail of an end), nodes and queues; a stalled reader is cut at its buffer's
 * bound and the server's memory stays within it; a client that goes away frees its stream;
 * the server's shutdown ends every stream; the number of streams is bounded, and so is
 * one user's share of them. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include "test.h"
#include "srv_util.h"

typedef struct client {
  int fd;
  gp_buf got;   /* everything read so far (HTTP/1.0: the events as they are, no chunks) */
  bool eof;
} client;

/* Opens a stream: `token` in the query (as a browser's EventSource sends it) or, with
 * `header`, in Authorization. rcvbuf > 0: the socket's receive buffer (a slow reader). */
static void client_open(client *cl, const tsrv *t, const char *token, bool header, int rcvbuf) {
  memset(cl, 0, sizeof *cl);
  gp_buf_init(&cl->got, 0);
  cl->fd = socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(cl->fd >= 0);
  if (rcvbuf > 0) setsockopt(cl->fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)gp_server_port(t->srv))};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(connect(cl->fd, (struct sockaddr *)&a, sizeof a) == 0);
  char req[512];
  if (header)
    snprintf(req, sizeof req, "GET /v1/events HTTP/1.0\r\nAuthorization: Bearer %s\r\n\r\n", token);
  else
    snprintf(req, sizeof req, "GET /v1/events?token=%s HTTP/1.0\r\n\r\n", token);
  REQUIRE(write(cl->fd, req, strlen(req)) == (ssize_t)strlen(req));
}

/* Reads what has arrived, waiting up to wait_ms for the first byte. */
static void client_read(client *cl, int wait_ms) {
  struct pollfd p = {.fd = cl->fd, .events = POLLIN};
  while (!cl->eof && poll(&p, 1, wait_ms) > 0) {
    char buf[8192];
    ssize_t n = read(cl->fd, buf, sizeof buf);
    if (n <= 0) {
      cl->eof = true;
      break;
    }
    gp_buf_append(&cl->got, buf, (size_t)n);
    wait_ms = 0;
  }
}

/* Reads until `text` arrived (true) or ~5 s passed. */
static bool client_wait_for(client *cl, const char *text) {
  for (int i = 0; i < 100; i++) {
    if (cl->got.data && strstr(cl->got.data, text)) return true;
    if (cl->eof) return false;
    client_read(cl, 50);
  }
  return cl->got.data && strstr(cl->got.data, text);
}

static void client_close(client *cl) {
  if (cl->fd >= 0) close(cl->fd);
  cl->fd = -1;
  gp_buf_done(&cl->got);
}

/* A figure of GET /metrics, or -1. */
static long long metric(const tsrv *t, const char *name) {
  CURL *h = curl_easy_init();
  char url[256];
  snprintf(url, sizeof url, "%s/metrics", t->base);
  gp_buf out;
  gp_buf_init(&out, 0);
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, tsrv_write);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &out);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  long long v = -1;
  if (curl_easy_perform(h) == CURLE_OK && out.data) {
    char key[128];
    snprintf(key, sizeof key, "\n%s ", name);
    const char *p = strstr(out.data, key);
    if (p) v = atoll(p + strlen(key));
  }
  curl_easy_cleanup(h);
  gp_buf_done(&out);
  return v;
}

static bool wait_metric(const tsrv *t, const char *name, long long want) {
  for (int i = 0; i < 100; i++) {
    if (metric(t, name) == want) return true;
    usleep(50000);
  }
  return false;
}

static void every_stream_hears_every_jobs_summary(void) {
  tsrv t = {0};
  tsrv_start(&t);
  client alice, bob, wall, admin;
  client_open(&alice, &t, ALICE, false, 0);
  client_open(&bob, &t, BOB, true, 0);
  client_open(&wall, &t, VIEWER, false, 0);
  client_open(&admin, &t, ADMIN, true, 0);
  client *all[] = {&alice, &bob, &wall, &admin};
  for (int i = 0; i < 4; i++) {
    REQUIRE(client_wait_for(all[i], ": open"));
    CHECK_CONTAINS(all[i]->got.data, "Content-Type: text/event-stream");
  }
  CHECK_EQ_INT(201, tsrv_register(&t, "n1", 2, NULL));
  char *a = tsrv_submit(&t, ALICE, "{\"queue\": \"org/a\", \"name\": \"alice-job\","
                                   " \"command\": [\"/home/alice/secret-project/run\"],"
                                   " \"env\": {\"API_KEY\": \"s3cr3t\"}, \"gpus\": 1}");
  char *b = tsrv_submit(&t, BOB, "{\"queue\": \"org/b\", \"name\": \"bob-job\", \"command\": [\"x\"], \"gpus\": 1}");
  REQUIRE(a && b);
  REQUIRE(tsrv_wait_state(&t, a, "running"));
  /* Alice's job cannot start: the agent's reason names its program. */
  json_t *hb = tsrv_heartbeat(&t, "n1", 0, 0, NULL);
  REQUIRE(hb);
  long long gen = (long long)json_integer_value(json_object_get(hb, "gen"));
  json_decref(hb);
  char ev[512];
  snprintf(ev, sizeof ev,
           "[{\"kind\": \"exited\", \"job\": \"%s\", \"exit_code\": 127, \"reason\": \"start_failed\","
           " \"message\": \"cannot run /home/alice/secret-project/run: No such file or directory\"}]",
           a);
  json_decref(tsrv_heartbeat(&t, "n1", gen, 0, ev));
  char want[128];
  snprintf(want, sizeof want, "\"id\":\"%s\",\"state\":\"failed\"", a);
  for (int i = 0; i < 4; i++) {
    CHECK(client_wait_for(all[i], want));
    CHECK(client_wait_for(all[i], "\"name\":\"bob-job\""));
    CHECK(client_wait_for(all[i], "\"name\":\"alice-job\""));
  }
  CHECK(client_wait_for(&alice, "event: job\ndata: {\"id\":\"1\",\"state\":\"pending\",\"user\":\"alice\""));
  /* Nodes and queues: everyone. */
  CHECK_EQ_INT(201, tsrv_req(&t, "PUT", "/v1/queues/team", ADMIN, "{\"deserved\": 1}"));
  for (int i = 0; i < 4; i++) {
    CHECK(client_wait_for(all[i], "event: node\ndata: {\"name\":\"n1\",\"state\":\"up\",\"reason\":null}"));
    CHECK(client_wait_for(all[i], "event: queue\ndata: {\"name\":\"team\"}"));
    CHECK_CONTAINS(all[i]->got.data, "\nid: ");
    /* A summary holds nothing its hearers may not read: no command, env or end detail. */
    CHECK(!strstr(all[i]->got.data, "secret-project"));
    CHECK(!strstr(all[i]->got.data, "s3cr3t"));
  }
  for (int i = 0; i < 4; i++) client_close(all[i]);
  free(a);
  free(b);
  tsrv_stop(&t);
}

static void a_stream_needs_a_token_and_a_place(void) {
  tsrv t = {0};
  tsrv_start_with(&t, "events_max_streams: 2\n", NULL);
  CHECK_EQ_INT(401, tsrv_req(&t, "GET", "/v1/events", NULL, NULL));
  CHECK_EQ_INT(401, tsrv_req(&t, "GET", "/v1/events?token=wrong-token-123", NULL, NULL));
  CHECK_EQ_INT(403, tsrv_req(&t, "GET", "/v1/events", AGENT, NULL));
  CHECK_EQ_INT(405, tsrv_req(&t, "POST", "/v1/events", ALICE, "{}"));
  client one, two;
  client_open(&one, &t, ALICE, false, 0);
  client_open(&two, &t, BOB, false, 0);
  REQUIRE(client_wait_for(&one, ": open") && client_wait_for(&two, ": open"));
  CHECK_EQ_INT(503, tsrv_req(&t, "GET", "/v1/events", ADMIN, NULL));
  CHECK_CONTAINS(json_string_value(json_object_get(json_object_get(t.last, "error"), "message")),
                 "events_max_streams");
  client_close(&one);
  client_close(&two);
  tsrv_stop(&t);
}

/* One user cannot take every stream: past events_max_streams_per_user the user gets 429
 * naming the setting, and others still get theirs. */
static void one_user_cannot_hold_every_stream(void) {
  tsrv t = {0};
  tsrv_start_with(&t, "events_max_streams: 4\nevents_max_streams_per_user: 2\nevents_ping_s: 1\n", NULL);
  client mine[2], other;
  for (int i = 0; i < 2; i++) {
    client_open(&mine[i], &t, ALICE, i == 0, 0);
    REQUIRE(client_wait_for(&mine[i], ": open"));
  }
  CHECK_EQ_INT(429, tsrv_req(&t, "GET", "/v1/events", ALICE, NULL));
  CHECK_EQ_STR("too_many_streams", err_code(t.last));
  const char *msg = json_string_value(json_object_get(json_object_get(t.last, "error"), "message"));
  CHECK_CONTAINS(msg, "user alice already has 2 event streams open");
  CHECK_CONTAINS(msg, "events_max_streams_per_user: 2");
  client_open(&other, &t, BOB, false, 0);
  CHECK(client_wait_for(&other, ": open"));
  CHECK_CONTAINS(other.got.data, "200 OK");
  /* A stream closed is a place back (the next ping finds it closed). */
  client_close(&mine[0]);
  REQUIRE(wait_metric(&t, "gpool_event_streams", 2));
  client_open(&mine[0], &t, ALICE, false, 0);
  CHECK(client_wait_for(&mine[0], ": open"));
  client_close(&mine[0]);
  client_close(&mine[1]);
  client_close(&other);
  tsrv_stop(&t);
}

static void a_stalled_reader_is_cut_at_its_buffer(void) {
  tsrv t = {0};
  tsrv_start_with(&t, "events_buffer_kib: 16\nmax_pending_per_user: 100000\n", NULL);
  client slow;
  client_open(&slow, &t, ALICE, false, 4096);
  REQUIRE(client_wait_for(&slow, ": open"));
  char name[201];
  memset(name, 'n', 200);
  name[200] = '\0';
  char body[512];
  snprintf(body, sizeof body, "{\"queue\": \"org/a\", \"name\": \"%s\", \"command\": [\"x\"], \"gpus\": 1}", name);
  /* The reader reads nothing while events pile up: the kernel's buffers fill, then the
   * stream's own; at its bound the stream ends, and the server never holds more. */
  long long overflows = 0;
  for (int i = 0; i < 3000 && overflows < 1; i++) {
    json_t *o = NULL;
    REQUIRE(tsrv_call(&t, "POST", "/v1/jobs", ALICE, body, &o) == 201);
    json_decref(o);
    if (i % 50 == 49) {
      overflows = metric(&t, "gpool_event_stream_overflows_total");
      CHECK(metric(&t, "gpool_event_stream_max_bytes") <= 16 * 1024);
    }
  }
  CHECK_EQ_INT(1, overflows);
  CHECK(metric(&t, "gpool_event_stream_max_bytes") <= 16 * 1024);
  CHECK(metric(&t, "gpool_event_stream_max_bytes") > 8 * 1024);
  /* The reader, once it reads again, gets what was sent and then the end. */
  for (int i = 0; i < 200 && !slow.eof; i++) client_read(&slow, 50);
  CHECK(slow.eof);
  CHECK(wait_metric(&t, "gpool_event_streams", 0));
  CHECK_EQ_INT(0, metric(&t, "gpool_event_stream_buffered_bytes"));
  client_close(&slow);
  tsrv_stop(&t);
}

static void a_client_that_goes_away_frees_its_stream(void) {
  tsrv t = {0};
  tsrv_start_with(&t, "events_ping_s: 1\n", NULL);
  client c;
  client_open(&c, &t, ALICE, false, 0);
  REQUIRE(client_wait_for(&c, ": open"));
  CHECK(client_wait_for(&c, ": ping\n\n")); /* a keep-alive comment each events_ping_s */
  CHECK_EQ_INT(1, metric(&t, "gpool_event_streams"));
  client_close(&c);
  /* The next ping finds the connection closed. */
  CHECK(wait_metric(&t, "gpool_event_streams", 0));
  tsrv_stop(&t);
}

/* A change made while no stream was open is not noted; a later change back to what was
 * last sent must still be sent to the streams opened since (they read the node drained). */
static void a_change_while_nobody_listened_does_not_hide_the_next(void) {
  tsrv t = {0};
  tsrv_start_with(&t, "events_ping_s: 1\n", NULL);
  client first;
  client_open(&first, &t, ADMIN, true, 0);
  REQUIRE(client_wait_for(&first, ": open"));
  CHECK_EQ_INT(201, tsrv_register(&t, "n1", 2, NULL));
  const char *up = "event: node\ndata: {\"name\":\"n1\",\"state\":\"up\",\"reason\":null}";
  REQUIRE(client_wait_for(&first, up));
  client_close(&first);
  REQUIRE(wait_metric(&t, "gpool_event_streams", 0));
  CHECK_EQ_INT(200, tsrv_req(&t, "POST", "/v1/nodes/n1/drain", ADMIN, "{\"reason\": \"fan\"}"));
  /* The agent registers again, also unheard: n1 has no heartbeats, and waiting for the
   * first stream to go may take longer than its node_timeout_s (2 s) on a busy machine. */
  CHECK_EQ_INT(200, tsrv_register(&t, "n1", 2, NULL)); /* a node it knows */
  client second;
  client_open(&second, &t, ADMIN, true, 0);
  REQUIRE(client_wait_for(&second, ": open"));
  CHECK_EQ_INT(200, tsrv_req(&t, "POST", "/v1/nodes/n1/resume", ADMIN, "{}"));
  CHECK(client_wait_for(&second, up));
  client_close(&second);
  tsrv_stop(&t);
}

static void the_servers_shutdown_ends_every_stream(void) {
  tsrv t = {0};
  tsrv_start(&t);
  client c;
  client_open(&c, &t, ALICE, false, 0);
  REQUIRE(client_wait_for(&c, ": open"));
  int64_t t0 = tsrv_now_ms();
  tsrv_stop(&t); /* returns only once libmicrohttpd stopped, with no stream suspended */
  CHECK(tsrv_now_ms() - t0 < 5000);
  client_read(&c, 2000);
  CHECK(c.eof);
  client_close(&c);
}

GP_TESTS(every_stream_hears_every_jobs_summary, a_stream_needs_a_token_and_a_place,
         one_user_cannot_hold_every_stream,
         a_stalled_reader_is_cut_at_its_buffer, a_client_that_goes_away_frees_its_stream,
         a_change_while_nobody_listened_does_not_hide_the_next,
         the_servers_shutdown_ends_every_stream)
