/* SPDX-License-Identifier: Apache-2.0 */
/* The web console's files as a browser and a prober meet them, over a real socket: `/`
 * serves index.html without a token and with the console's security headers, `/ui`
 * redirects to it, a file comes back as the bytes in web/ (or their gzip copy when asked),
 * a revalidation with its ETag is a 304 without a body, an unknown file is 404 and a path
 * that climbs out of web/ (plain or percent-encoded) is refused. */
#include "test.h"
/* This file needs the server and the requests of srv_util.h, not its job and agent helpers. */
#pragma GCC diagnostic ignored "-Wunused-function"
#include "srv_util.h"
#include "server/front/web.h"

typedef struct answer {
  long status;
  gp_buf body;
  gp_buf headers;
} answer;

static size_t on_bytes(char *p, size_t size, size_t n, void *ud) {
  gp_buf_append((gp_buf *)ud, p, size * n);
  return size * n;
}

/* GETs `path` as written (no dot-segment clean-up), with extra request headers. */
static answer get(const tsrv *t, const char *method, const char *path, const char *h1, const char *h2) {
  answer a = {0};
  gp_buf_init(&a.body, 0);
  gp_buf_init(&a.headers, 0);
  CURL *c = curl_easy_init();
  char url[512];
  snprintf(url, sizeof url, "%s%s", t->base, path);
  struct curl_slist *hdrs = NULL;
  if (h1) hdrs = curl_slist_append(hdrs, h1);
  if (h2) hdrs = curl_slist_append(hdrs, h2);
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
  if (strcmp(method, "HEAD") == 0) curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
  curl_easy_setopt(c, CURLOPT_PATH_AS_IS, 1L);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 20000L);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_bytes);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &a.body);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_bytes);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &a.headers);
  if (curl_easy_perform(c) == CURLE_OK) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &a.status);
  curl_slist_free_all(hdrs);
  curl_easy_cleanup(c);
  gp_buf_append(&a.headers, "", 1); /* a C string from here on */
  return a;
}

static void answer_done(answer *a) {
  gp_buf_done(&a->body);
  gp_buf_done(&a->headers);
}

/* The value of header `name` (case-insensitive), copied into out; "" when absent. */
static const char *header(const answer *a, const char *name, char *out, size_t cap) {
  out[0] = '\0';
  size_t n = strlen(name);
  for (const char *line = a->headers.data; line && *line;) {
    const char *end = strstr(line, "\r\n");
    if (!end) break;
    if (strncasecmp(line, name, n) == 0 && line[n] == ':') {
      const char *v = line + n + 1;
      while (*v == ' ') v++;
      snprintf(out, cap, "%.*s", (int)(end - v), v);
      return out;
    }
    line = end + 2;
  }
  return out;
}

static bool same_as_file(const answer *a, const char *name) {
  const gp__srv_web_file *f = gp__srv_web_find(name);
  return f && a->body.len == f->len && memcmp(a->body.data, f->data, f->len) == 0;
}

static void index_is_served_without_a_token_with_the_security_headers(void) {
  tsrv t = {0};
  tsrv_start(&t);
  answer a = get(&t, "GET", "/", NULL, NULL);
  char v[512];
  CHECK_EQ_INT(200, a.status);
  CHECK(same_as_file(&a, "index.html"));
  CHECK_EQ_STR("text/html; charset=utf-8", header(&a, "Content-Type", v, sizeof v));
  CHECK(strstr(header(&a, "Content-Security-Policy", v, sizeof v), "default-src 'self'") != NULL);
  CHECK(strstr(v, "frame-ancestors 'none'") != NULL);
  CHECK(strstr(v, "unsafe-inline") == NULL);
  CHECK_EQ_STR("nosniff", header(&a, "X-Content-Type-Options", v, sizeof v));
  CHECK_EQ_STR("no-cache", header(&a, "Cache-Control", v, sizeof v));
  answer_done(&a);
  /* The page loads its module and style from /web/, typed so a browser runs them. */
  a = get(&t, "GET", "/web/app.js", NULL, NULL);
  CHECK_EQ_INT(200, a.status);
  CHECK(same_as_file(&a, "app.js"));
  CHECK_EQ_STR("text/javascript; charset=utf-8", header(&a, "Content-Type", v, sizeof v));
  answer_done(&a);
  a = get(&t, "GET", "/ui", NULL, NULL);
  CHECK_EQ_INT(308, a.status);
  CHECK_EQ_STR("/", header(&a, "Location", v, sizeof v));
  answer_done(&a);
  /* The API behind it still asks for a token. */
  CHECK_EQ_INT(401, tsrv_req(&t, "GET", "/v1/jobs", NULL, NULL));
  tsrv_stop(&t);
}

static void an_etag_revalidates_to_a_304_without_a_body(void) {
  tsrv t = {0};
  tsrv_start(&t);
  answer a = get(&t, "GET", "/web/style.css", NULL, NULL);
  char etag[128], v[256], inm[300];
  header(&a, "ETag", etag, sizeof etag);
  CHECK(etag[0] == '"' && strlen(etag) > 20);
  answer_done(&a);
  snprintf(inm, sizeof inm, "If-None-Match: %s", etag);
  a = get(&t, "GET", "/web/style.css", inm, NULL);
  CHECK_EQ_INT(304, a.status);
  CHECK_EQ_INT(0, (long long)a.body.len);
  CHECK_EQ_STR(etag, header(&a, "ETag", v, sizeof v));
  answer_done(&a);
  /* In a list, weak-compared (W/), as browsers and proxies send it. */
  snprintf(inm, sizeof inm, "If-None-Match: \"nope\", W/%s", etag);
  a = get(&t, "GET", "/web/style.css", inm, NULL);
  CHECK_EQ_INT(304, a.status);
  answer_done(&a);
  /* Another file's ETag, or a changed file's, gets the bytes. */
  a = get(&t, "GET", "/web/style.css", "If-None-Match: \"0123456789abcdef\"", NULL);
  CHECK_EQ_INT(200, a.status);
  CHECK(same_as_file(&a, "style.css"));
  answer_done(&a);
  a = get(&t, "GET", "/", inm, NULL);
  CHECK_EQ_INT(200, a.status);
  answer_done(&a);
  tsrv_stop(&t);
}

static void gzip_is_sent_only_to_a_client_that_accepts_it(void) {
  tsrv t = {0};
  tsrv_start(&t);
  const gp__srv_web_file *f = gp__srv_web_find("app.js");
  REQUIRE(f != NULL);
  char v[256], plain_etag[128];
  answer a = get(&t, "GET", "/web/app.js", "Accept-Encoding: gzip, deflate, br", NULL);
  CHECK_EQ_INT(200, a.status);
  CHECK_EQ_STR("gzip", header(&a, "Content-Encoding", v, sizeof v));
  CHECK_EQ_STR("Accept-Encoding", header(&a, "Vary", v, sizeof v));
  CHECK(a.body.len < f->len);
  /* The body is the embedded gzip copy, and gzip itself inflates it to the file's bytes. */
  CHECK(a.body.len == f->gz_len && memcmp(a.body.data, f->gz, f->gz_len) == 0);
  char dir[] = "/tmp/gp_web_gz_XXXXXX", cmd[256], path[64];
  REQUIRE(mkdtemp(dir) != NULL);
  snprintf(path, sizeof path, "%s/app.js.gz", dir);
  FILE *w = fopen(path, "wb");
  REQUIRE(w != NULL);
  fwrite(a.body.data, 1, a.body.len, w);
  fclose(w);
  snprintf(cmd, sizeof cmd, "gzip -dc '%s'", path);
  FILE *r = popen(cmd, "r");
  REQUIRE(r != NULL);
  gp_buf plain;
  gp_buf_init(&plain, 0);
  char chunk[4096];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, r)) > 0) gp_buf_append(&plain, chunk, n);
  CHECK_EQ_INT(0, pclose(r));
  CHECK(plain.len == f->len && memcmp(plain.data, f->data, f->len) == 0);
  gp_buf_done(&plain);
  tsrv_rm_dir(dir);
  char gz_etag[128];
  header(&a, "ETag", gz_etag, sizeof gz_etag);
  answer_done(&a);
  /* Refused by q=0, or not named: the plain bytes, under another ETag. */
  a = get(&t, "GET", "/web/app.js", "Accept-Encoding: br, gzip;q=0", NULL);
  CHECK_EQ_STR("", header(&a, "Content-Encoding", v, sizeof v));
  CHECK(same_as_file(&a, "app.js"));
  header(&a, "ETag", plain_etag, sizeof plain_etag);
  CHECK(strcmp(plain_etag, gz_etag) != 0);
  answer_done(&a);
  a = get(&t, "GET", "/web/app.js", "Accept-Encoding: gzip;q=0.5", NULL);
  CHECK_EQ_STR("gzip", header(&a, "Content-Encoding", v, sizeof v));
  answer_done(&a);
  /* The build keeps the console within its budget. */
  CHECK(gp__srv_web_gz_total <= 150 * 1024);
  tsrv_stop(&t);
}

static void unknown_files_and_climbing_paths_are_refused(void) {
  tsrv t = {0};
  tsrv_start(&t);
  answer a = get(&t, "GET", "/web/no-such.js", NULL, NULL);
  CHECK_EQ_INT(404, a.status);
  answer_done(&a);
  static const char *const climbs[] = {
      "/web/../x", "/web/%2e%2e/x", "/web/%2E%2E/server.yaml", "/web/..%2fx", "/web/./app.js",
      "/web//app.js", "/web/%5c..%5cx", "/web/", "/web/a/../../x",
  };
  for (size_t i = 0; i < sizeof climbs / sizeof climbs[0]; i++) {
    a = get(&t, "GET", climbs[i], NULL, NULL);
    if (a.status != 400) fprintf(stderr, "  %s answered %ld\n", climbs[i], a.status);
    CHECK_EQ_INT(400, a.status);
    CHECK(strstr(a.body.data ? a.body.data : "", "\"field\":\"path\"") != NULL);
    answer_done(&a);
  }
  /* The console is read-only: other methods are 405 naming what is allowed. */
  a = get(&t, "POST", "/web/app.js", NULL, NULL);
  CHECK_EQ_INT(405, a.status);
  char v[64];
  CHECK_EQ_STR("GET, HEAD", header(&a, "Allow", v, sizeof v));
  answer_done(&a);
  a = get(&t, "HEAD", "/", NULL, NULL);
  CHECK_EQ_INT(200, a.status);
  answer_done(&a);
  tsrv_stop(&t);
}

GP_TESTS(index_is_served_without_a_token_with_the_security_headers,
         an_etag_revalidates_to_a_304_without_a_body,
         gzip_is_sent_only_to_a_client_that_accepts_it,
         unknown_files_and_climbing_paths_are_refused)
