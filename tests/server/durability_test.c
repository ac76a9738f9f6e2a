/* SPDX-License-Identifier: Apache-2.0 */
/* An acknowledged submission is durable: clients submit over keep-alive connections while
 * the real `gpool server` process is killed with SIGKILL in the middle of the burst; after
 * a restart on the same data dir every job that was answered 201 is there. Also: config
 * errors stop the binary with file:line: key. */
#include <curl/curl.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>

#include "test.h"
#include "util/buf.h"

#define TOKEN "durable-token-1"
#define CLIENTS 4
#define MAX_IDS 200000

static char dir[256], cfg_path[300], base[128];

static void write_config(void) {
  snprintf(dir, sizeof dir, "/tmp/gp_durable_XXXXXX");
  REQUIRE(mkdtemp(dir));
  snprintf(cfg_path, sizeof cfg_path, "%s/server.yaml", dir);
  FILE *f = fopen(cfg_path, "w");
  REQUIRE(f);
  fprintf(f, "listen: 127.0.0.1:0\ndata_dir: %s\ntokens:\n  - {token: %s, user: alice, role: admin}\n"
             "queues:\n  - {name: default, users: [\"*\"]}\n", dir, TOKEN);
  fclose(f);
}

static pid_t spawn_server(void) {
  char url_path[300];
  snprintf(url_path, sizeof url_path, "%s/server.url", dir);
  unlink(url_path);
  const char *bin = getenv("GPOOL_BIN");
  REQUIRE(bin);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    int devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, 1);
    execl(bin, "gpool", "server", "--config", cfg_path, (char *)NULL);
    _exit(127);
  }
  for (int i = 0; i < 1000; i++) { /* up to 10 s */
    FILE *f = fopen(url_path, "r");
    if (f) {
      bool ok = fgets(base, sizeof base, f) != NULL;
      fclose(f);
      if (ok) {
        base[strcspn(base, "\n")] = '\0';
        return pid;
      }
    }
    usleep(10000);
  }
  kill(pid, SIGKILL);
  REQUIRE(!"the server did not start");
  return -1;
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long long *acked;
static int n_acked;
static volatile int stop_clients;

static size_t sink(char *p, size_t size, size_t n, void *ud) {
  gp_buf_append((gp_buf *)ud, p, size * n);
  return size * n;
}

static void *client(void *arg) {
  (void)arg;
  CURL *h = curl_easy_init();
  char url[200];
  snprintf(url, sizeof url, "%s/v1/jobs", base);
  struct curl_slist *hdrs = curl_slist_append(NULL, "Authorization: Bearer " TOKEN);
  hdrs = curl_slist_append(hdrs, "Content-Type: application/json");
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
  curl_easy_setopt(h, CURLOPT_POSTFIELDS, "{\"command\": [\"sleep\", \"1\"], \"gpus\": 1}");
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 5000L);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink);
  while (!stop_clients) {
    gp_buf out;
    gp_buf_init(&out, 0);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &out);
    long code = 0;
    if (curl_easy_perform(h) == CURLE_OK) curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    if (code == 201 && out.data) {
      json_t *o = json_loads(out.data, 0, NULL);
      const char *id = json_string_value(json_object_get(json_object_get(o, "job"), "id"));
      pthread_mutex_lock(&lock);
      if (id && n_acked < MAX_IDS) acked[n_acked++] = atoll(id);
      pthread_mutex_unlock(&lock);
      json_decref(o);
    } else if (code == 0) {
      gp_buf_done(&out);
      break; /* the server is gone */
    }
    gp_buf_done(&out);
  }
  curl_slist_free_all(hdrs);
  curl_easy_cleanup(h);
  return NULL;
}

/* Every job id the restarted server knows, as a bitmap over ids. */
static unsigned char *known_ids(int *max_seen) {
  unsigned char *seen = calloc(MAX_IDS + 1, 1);
  CURL *h = curl_easy_init();
  struct curl_slist *hdrs = curl_slist_append(NULL, "Authorization: Bearer " TOKEN);
  char next[32] = "";
  for (int page = 0; page < 100; page++) {
    char url[300];
    snprintf(url, sizeof url, "%s/v1/jobs?limit=10000%s%s", base, next[0] ? "&next=" : "", next);
    gp_buf out;
    gp_buf_init(&out, 0);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &out);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 20000L);
    REQUIRE(curl_easy_perform(h) == CURLE_OK);
    json_t *o = json_loads(out.data, 0, NULL);
    gp_buf_done(&out);
    REQUIRE(o);
    json_t *jobs = json_object_get(o, "jobs");
    for (size_t i = 0; i < json_array_size(jobs); i++) {
      long long id = atoll(json_string_value(json_object_get(json_array_get(jobs, i), "id")));
      if (id > 0 && id <= MAX_IDS) seen[id] = 1;
      if (id > *max_seen) *max_seen = (int)id;
    }
    const char *nx = json_string_value(json_object_get(o, "next"));
    snprintf(next, sizeof next, "%s", nx ? nx : "");
    json_decref(o);
    if (!nx) break;
  }
  curl_slist_free_all(hdrs);
  curl_easy_cleanup(h);
  return seen;
}

static void every_acknowledged_job_survives_kill_9(void) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
  write_config();
  acked = calloc(MAX_IDS, sizeof *acked);
  pid_t pid = spawn_server();
  pthread_t th[CLIENTS];
  for (int i = 0; i < CLIENTS; i++) pthread_create(&th[i], NULL, client, NULL);
  /* Let the burst get going, then kill the server in the middle of it. */
  for (int i = 0; i < 300 && n_acked < 200; i++) usleep(10000);
  usleep(100000);
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
  stop_clients = 1;
  for (int i = 0; i < CLIENTS; i++) pthread_join(th[i], NULL);
  fprintf(stderr, "  %d submissions were acknowledged before SIGKILL\n", n_acked);
  CHECK(n_acked > 50);
  pid = spawn_server();
  int max_seen = 0;
  unsigned char *seen = known_ids(&max_seen);
  int missing = 0;
  for (int i = 0; i < n_acked; i++)
    if (acked[i] <= 0 || acked[i] > MAX_IDS || !seen[acked[i]]) missing++;
  CHECK_EQ_INT(0, missing);
  CHECK(max_seen >= n_acked);
  free(seen);
  free(acked);
  kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  curl_global_cleanup();
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  CHECK_EQ_INT(0, system(cmd));
}

static void a_bad_config_names_file_line_and_key(void) {
  write_config();
  FILE *f = fopen(cfg_path, "a");
  fprintf(f, "node_timeout_s: soon\n");
  fclose(f);
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "%s server --config %s 2>&1", getenv("GPOOL_BIN"), cfg_path);
  FILE *p = popen(cmd, "r");
  REQUIRE(p);
  char out[2048] = "";
  size_t n = fread(out, 1, sizeof out - 1, p);
  out[n] = '\0';
  int status = pclose(p);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 2);
  CHECK_CONTAINS(out, "server.yaml:7");
  CHECK_CONTAINS(out, "node_timeout_s");
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  CHECK_EQ_INT(0, system(cmd));
}

GP_TESTS(every_acknowledged_job_survives_kill_9, a_bad_config_names_file_line_and_key)
