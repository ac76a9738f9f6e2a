/* SPDX-License-Identifier: Apache-2.0 */
/* The HTTP side of the client (client.h): one libcurl easy handle reused across calls so
 * the connection stays alive, capped answer bodies, API error objects turned into gp_err
 * details a person can read, and the way to the leader among several servers.
 *
 * Among several servers a frozen one (SIGSTOP, a paused VM) still accepts connections (the
 * kernel does) and reads requests, but never answers. So before the first call to a server
 * of a list the client asks it GET /livez (no token) and waits at most PROBE_MS for any
 * answer: a server that gives none is passed over like an unreachable one, nothing of the
 * call having been sent to it. A call that was sent and got no answer is never sent to
 * another server when it may write (a submission would be made twice); a read (GET) is. */
#include "client/client.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "tls/dial.h"
#include "util/buf.h"
#include "util/mem.h"
#include "util/urls.h"

struct gp_client {
  CURL *curl;
  char *server;      /* as given: one URL or a comma-separated list */
  gp_urls servers;   /* the list; one entry when `server` does not parse as one */
  int cur;           /* the entry calls go to (the last that answered) */
  char leader[GP_URL_MAX]; /* a leader a follower redirected to, "" when none */
  int leader_i;      /* `leader`'s index in `servers` (a redirect goes only to those) */
  bool answered[GP_URLS_MAX]; /* servers[i] answered this client (so it is not frozen) */
  char *auth_header; /* "Authorization: Bearer ..." or NULL */
  char *ca;          /* CA file for https:// servers, or NULL */
  long timeout_ms;
  gp_buf answer;
  char curl_error[CURL_ERROR_SIZE];
};

/* How long a server of a list may take to connect and to answer GET /livez. */
#define PROBE_MS 3000L
/* How long any call may take to connect (the TCP and TLS handshakes). */
#define CONNECT_MS 3000L

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_global(void) { curl_global_init(CURL_GLOBAL_DEFAULT); }

gp_client *gp_client_new(const char *server, const char *token) {
  pthread_once(&curl_once, curl_global);
  CURL *curl = curl_easy_init();
  if (!curl) return NULL;
  gp_client *c = gp_xcalloc(1, sizeof *c);
  c->curl = curl;
  gp_err ignored = {0};
  if (gp_urls_parse(server, "server", &c->servers, &ignored)) {
    /* gp_client_resolve refuses a bad list with its reason; a caller that passed one
     * anyway gets the connection error naming it. */
    size_t n = strlen(server);
    while (n > 0 && server[n - 1] == '/') n--; /* "http://h:1/" and "http://h:1" alike */
    c->servers.n = 1;
    snprintf(c->servers.url[0], GP_URL_MAX, "%.*s", (int)n, server);
  }
  c->server = gp_xstrdup(server);
  if (token && *token) {
    size_t len = strlen(token) + 32;
    c->auth_header = gp_xmalloc(len);
    snprintf(c->auth_header, len, "Authorization: Bearer %s", token);
  }
  c->timeout_ms = 30000;
  gp_buf_init(&c->answer, GP_CLIENT_MAX_BODY);
  return c;
}

void gp_client_free(gp_client *c) {
  if (!c) return;
  curl_easy_cleanup(c->curl);
  free(c->server);
  free(c->auth_header);
  free(c->ca);
  gp_buf_done(&c->answer);
  free(c);
}

/* The server calls go to now. */
static const char *target(const gp_client *c) { return c->leader[0] ? c->leader : c->servers.url[c->cur]; }

const char *gp_client_server(const gp_client *c) { return target(c); }

void gp_client_set_timeout_ms(gp_client *c, long timeout_ms) { c->timeout_ms = timeout_ms; }

void gp_client_set_ca(gp_client *c, const char *ca_file) {
  free(c->ca);
  c->ca = ca_file && *ca_file ? gp_xstrdup(ca_file) : NULL;
}

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *user) {
  gp_buf *b = user;
  size_t n = size * nmemb;
  gp_buf_append(b, ptr, n);
  return gp_buf_truncated(b) ? 0 : n; /* 0 makes curl stop: the answer is too large */
}

static int code_from_api(const char *code) {
  if (!code) return GP_EIO;
  if (!strcmp(code, "invalid_argument")) return GP_EINVAL;
  if (!strcmp(code, "unauthenticated") || !strcmp(code, "permission_denied")) return GP_EPERM;
  if (!strcmp(code, "not_found")) return GP_ENOENT;
  if (!strcmp(code, "conflict") || !strcmp(code, "failed_precondition")) return GP_ESTATE;
  if (!strcmp(code, "too_large")) return GP_ELIMIT;
  return GP_EIO;
}

/* Fills *err from an API error answer; falls back to the status line when the body is
 * not the documented error object (a proxy, a crash page). */
static int api_error(long status, json_t *doc, const char *body, gp_err *err) {
  json_t *e = doc ? json_object_get(doc, "error") : NULL;
  const char *code = json_string_value(json_object_get(e, "code"));
  const char *msg = json_string_value(json_object_get(e, "message"));
  const char *field = json_string_value(json_object_get(e, "field"));
  int rc = code ? code_from_api(code)
                : status == 400 ? GP_EINVAL
                : status == 401 || status == 403 ? GP_EPERM
                : status == 404 ? GP_ENOENT
                : status == 409 ? GP_ESTATE
                : status == 413 ? GP_ELIMIT
                                : GP_EIO;
  if (msg) return gp_err_set(err, rc, NULL, 0, field && *field ? field : NULL, "%s", msg);
  return gp_err_set(err, rc, NULL, 0, NULL, "the server answered HTTP %ld%s%.200s", status,
                    body && *body ? ": " : "", body ? body : "");
}

/* Whether the handle's last transfer sent any of its request (then it may have been read,
 * and a write must not be sent to another server). A reused connection has no connect
 * time, so the bytes sent are what tells. */
static bool request_sent(CURL *h) {
  long n = 0;
  return curl_easy_getinfo(h, CURLINFO_REQUEST_SIZE, &n) != CURLE_OK || n > 0;
}

/* Whether a call to `server` could change anything: only GET is a read. */
static bool is_read(const char *method) { return strcmp(method, "GET") == 0; }

/* The index of base in the configured list (scheme and host compared without case), or -1. */
/* Asks `server` GET /livez, without the token, within PROBE_MS. True on any HTTP answer. */
static bool probe(gp_client *c, const char *server) {
  size_t len = strlen(server) + 8;
  char *url = gp_xmalloc(len);
  snprintf(url, len, "%s/livez", server);
  CURL *h = c->curl;
  curl_easy_reset(h);
  gp_buf_reset(&c->answer);
  c->answer.truncated = false;
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &c->answer);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, PROBE_MS);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, PROBE_MS);
  curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
  int tls_rc = gp_tls_dial_setup(h, &(gp_tls_dial){.ca = c->ca});
  CURLcode cc = tls_rc ? CURLE_UNKNOWN_OPTION : curl_easy_perform(h);
  free(url);
  long status = 0;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
  /* A TLS failure is the call's to report (it names the CA to give): not a frozen server. */
  return (cc == CURLE_OK && status > 0) || gp_tls_dial_failed(cc);
}

/* What one attempt at one server came to, beyond its answer. */
typedef enum attempt_end {
  ATTEMPT_DONE,        /* an answer to return, or an error that another server cannot mend */
  ATTEMPT_UNREACHED,   /* the request never reached the server (or a read got no answer):
                          try the next one */
  ATTEMPT_REDIRECTED,  /* a follower named the leader: c->leader is set */
  ATTEMPT_NO_LEADER,   /* a follower while there is none (503 with Retry-After) */
} attempt_end;

static int call_once(gp_client *c, const char *method, const char *path, json_t *body,
                     json_t **ret_json, long *ret_status, attempt_end *end, gp_err *err) {
  *end = ATTEMPT_DONE;
  const char *server = target(c);
  /* One server alone has no other to move on to: its timeout says it all. */
  bool *answered = &c->answered[c->leader[0] ? c->leader_i : c->cur];
  if (c->servers.n > 1 && !*answered) {
    if (!probe(c, server)) {
      *end = ATTEMPT_UNREACHED;
      return gp_err_set(err, GP_EIO, NULL, 0, NULL,
                        "the gpool server at %s did not answer within %ld ms (stopped or overloaded?)",
                        server, PROBE_MS);
    }
    *answered = true;
  }
  size_t url_len = strlen(server) + strlen(path) + 1;
  char *url = gp_xmalloc(url_len);
  snprintf(url, url_len, "%s%s", server, path);
  char *payload = body ? json_dumps(body, JSON_COMPACT) : NULL;
  struct curl_slist *headers = NULL;
  /* Without this header curl waits up to a second for "100 Continue" on larger bodies. */
  headers = curl_slist_append(headers, "Expect:");
  headers = curl_slist_append(headers, "Accept: application/json");
  if (payload) headers = curl_slist_append(headers, "Content-Type: application/json");
  if (c->auth_header) headers = curl_slist_append(headers, c->auth_header);

  CURL *h = c->curl;
  curl_easy_reset(h);
  gp_buf_reset(&c->answer);
  c->answer.truncated = false;
  c->curl_error[0] = '\0';
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &c->answer);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, c->curl_error);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, CONNECT_MS);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, c->timeout_ms);
  curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
  /* Fails only when this libcurl lacks an option; a call that could not verify stops here. */
  int tls_rc = gp_tls_dial_setup(h, &(gp_tls_dial){.ca = c->ca});
  if (payload) {
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, payload);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(payload));
  } else if (!strcmp(method, "POST") || !strcmp(method, "PUT")) {
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, "");
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)0);
  }
  CURLcode cc = tls_rc ? CURLE_UNKNOWN_OPTION : curl_easy_perform(h);
  curl_slist_free_all(headers);
  free(payload);
  free(url);
  long status = 0;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
  if (ret_status) *ret_status = status;
  bool sent = request_sent(h);
  if (cc == CURLE_COULDNT_CONNECT || cc == CURLE_COULDNT_RESOLVE_HOST ||
      (cc == CURLE_OPERATION_TIMEDOUT && status == 0 && !sent))
    *end = ATTEMPT_UNREACHED; /* nothing was sent: safe to send it elsewhere */
  if (status == 0 && cc != CURLE_OK && sent && is_read(method) && !gp_tls_dial_failed(cc) &&
      !gp_buf_truncated(&c->answer)) {
    *end = ATTEMPT_UNREACHED; /* a read changes nothing: another server may answer it */
    *answered = false;        /* and this one is asked whether it lives before the next call */
  }
  if (cc == CURLE_OK && (status == 307 || status == 308)) {
    char *location = NULL;
    char base[GP_URL_MAX];
    curl_easy_getinfo(h, CURLINFO_REDIRECT_URL, &location);
    if (gp_urls_redirect_base(server, location, base, sizeof base) != 0) {
      c->leader[0] = '\0';
      return gp_err_set(err, GP_EIO, NULL, 0, NULL, "the server at %s redirected to '%.200s', which is "
                        "not an http(s) URL it may send a token to", server, location ? location : "");
    }
    /* The token goes only to the servers it was given for: a redirect elsewhere (a wrong
     * `advertise`, a server that is not the pool's) is refused, not followed. */
    int i = gp_urls_find(&c->servers, base);
    if (i < 0) {
      c->leader[0] = '\0';
      return gp_err_set(err, GP_EIO, NULL, 0, NULL, "the server at %s redirected to %s, which is not one "
                        "of the configured servers (%s): the token is sent only to those; if it is "
                        "one of the pool's servers, add it to --server or GPOOL_SERVER", server, base,
                        c->server);
    }
    c->leader_i = i;
    snprintf(c->leader, sizeof c->leader, "%s", c->servers.url[i]);
    *end = ATTEMPT_REDIRECTED;
    return 0;
  }
  if (cc == CURLE_OK && status == 503) {
    curl_off_t retry = -1;
    if (curl_easy_getinfo(h, CURLINFO_RETRY_AFTER, &retry) == CURLE_OK && retry > 0)
      *end = ATTEMPT_NO_LEADER;
  }

  if (cc != CURLE_OK) {
    if (gp_buf_truncated(&c->answer))
      return gp_err_set(err, GP_ELIMIT, NULL, 0, NULL,
                        "the server's answer is larger than %zu MiB", GP_CLIENT_MAX_BODY >> 20);
    if (cc == CURLE_COULDNT_CONNECT || cc == CURLE_COULDNT_RESOLVE_HOST)
      return gp_err_set(err, GP_EIO, NULL, 0, NULL,
                        "cannot reach the gpool server at %s (%s); is it running? "
                        "(start a local pool with 'gpool up')",
                        server, c->curl_error[0] ? c->curl_error : curl_easy_strerror(cc));
    if (gp_tls_dial_failed(cc))
      return gp_err_set(err, GP_EIO, NULL, 0, NULL,
                        "cannot verify the server at %s over TLS (%s); give the CA that signed "
                        "its certificate with --ca, GPOOL_CA or client.json's \"ca\"%s",
                        server, c->curl_error[0] ? c->curl_error : curl_easy_strerror(cc),
                        c->ca ? "" : " (none is set: the system's CA store was used)");
    if (cc == CURLE_OPERATION_TIMEDOUT && sent && !is_read(method))
      return gp_err_set(err, GP_ETIMEOUT, NULL, 0, NULL, "the server at %s did not answer in time (%s); "
                        "the request may have been carried out: check before sending it again",
                        server, c->curl_error[0] ? c->curl_error : curl_easy_strerror(cc));
    if (cc == CURLE_OPERATION_TIMEDOUT)
      return gp_err_set(err, GP_ETIMEOUT, NULL, 0, NULL, "the server at %s did not answer in time (%s)",
                        server, c->curl_error[0] ? c->curl_error : curl_easy_strerror(cc));
    return gp_err_set(err, GP_EIO, NULL, 0, NULL, "request to %s failed: %s", server,
                      c->curl_error[0] ? c->curl_error : curl_easy_strerror(cc));
  }

  /* A caller that does not want the answer (the submit benchmark) skips decoding it. */
  if (status >= 200 && status < 300 && !ret_json) return 0;
  json_error_t jerr;
  json_t *doc = c->answer.len ? json_loadb(c->answer.data, c->answer.len, 0, &jerr) : NULL;
  if (status < 200 || status >= 300) {
    int rc = api_error(status, doc, c->answer.data, err);
    json_decref(doc);
    return rc;
  }
  if (!doc || !json_is_object(doc)) {
    json_decref(doc);
    return gp_err_set(err, GP_EPARSE, NULL, 0, NULL,
                      "the server at %s answered HTTP %ld with something that is not a JSON object",
                      server, status);
  }
  if (ret_json)
    *ret_json = doc;
  else
    json_decref(doc);
  return 0;
}

/* Tries the servers in turn: an unreachable one, or a follower while no server leads,
 * sends the call to the next; a follower's redirect sends it to the leader. Only a call
 * that never reached a server, or that a follower refused unread, goes elsewhere, so a
 * submission is never made twice. Waits for a leader up to the call's timeout (at most
 * 20 s, past the lease a failover takes), rounds of the list half a second apart. */
int gp_client_call(gp_client *c, const char *method, const char *path, json_t *body,
                   json_t **ret_json, long *ret_status, gp_err *err) {
  long wait_ms = c->timeout_ms > 0 && c->timeout_ms < 20000 ? c->timeout_ms : 20000;
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int redirects = 0, tried = 0;
  bool saw_no_leader = false;
  for (;;) {
    attempt_end end;
    int rc = call_once(c, method, path, body, ret_json, ret_status, &end, err);
    if (end == ATTEMPT_DONE) return rc;
    if (end == ATTEMPT_REDIRECTED) {
      if (++redirects <= GP_URLS_MAX) continue;
      return gp_err_set(err, GP_EIO, NULL, 0, NULL, "the servers redirected %d times without a leader answering",
                        redirects - 1);
    }
    /* This server cannot help: the next one. A leader we were sent to that is gone means a
     * failover is under way: back to the follower that named it, which will name the next
     * one, at the pace of the rounds below. */
    bool leader_gone = c->leader[0] != '\0';
    saw_no_leader |= end == ATTEMPT_NO_LEADER || leader_gone;
    if (leader_gone) redirects = 0;
    else c->cur = (c->cur + 1) % c->servers.n;
    c->leader[0] = '\0';
    if (++tried % c->servers.n != 0) continue;
    clock_gettime(CLOCK_MONOTONIC, &t);
    long spent = (long)((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000);
    /* A whole round unreachable with no follower alive: the pool is down, say so now. */
    if (!saw_no_leader || spent + 500 > wait_ms) {
      if (end == ATTEMPT_NO_LEADER)
        return gp_err_set(err, GP_EIO, NULL, 0, NULL, "no gpool server leads the pool (%s): a failover "
                          "is under way or the servers cannot reach their database", c->server);
      return rc;
    }
    nanosleep(&(struct timespec){0, 500 * 1000 * 1000}, NULL);
  }
}

int gp_client_escape(const char *s, int keep_slash, char *out, size_t cap) {
  static const char hex[] = "0123456789ABCDEF";
  size_t o = 0;
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    int plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                *p == '-' || *p == '_' || *p == '.' || *p == '~' || (keep_slash && *p == '/');
    if (o + (plain ? 1 : 3) >= cap) {
      if (cap) out[0] = '\0';
      return GP_ELIMIT;
    }
    if (plain) {
      out[o++] = (char)*p;
    } else {
      out[o++] = '%';
      out[o++] = hex[*p >> 4];
      out[o++] = hex[*p & 15];
    }
  }
  if (!cap) return GP_ELIMIT;
  out[o] = '\0';
  return 0;
}
