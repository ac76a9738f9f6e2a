/* SPDX-License-Identifier: Apache-2.0 */
/* `gpool server --config FILE [--listen HOST:PORT] [--data DIR]`: runs the control plane
 * until SIGINT or SIGTERM. Once it listens it prints its URL on stdout and writes it to
 * <data_dir>/server.url, so scripts (and `gpool up`) can find a port chosen with :0. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <curl/curl.h>

#include "cli/commands.h"
#include "server/state/config.h"
#include "server/server.h"
#include "util/mem.h"

static void usage(FILE *out) {
  fprintf(out,
          "Usage: gpool server --config FILE [--listen HOST:PORT] [--data DIR]\n\n"
          "Runs the gpool control plane: the HTTP API, the durable store (SQLite in DIR)\n"
          "and the scheduler. --listen and --data override the config file's keys.\n"
          "Port 0 picks a free port; the URL is printed and written to DIR/server.url\n"
          "(agent_listen's to DIR/agent.url).\n"
          "See docs/config.md for every key and examples/server.yaml for a start.\n");
}

/* Each connection is a descriptor: the soft open-file limit is raised toward the hard one
 * as far as the connection limits need, and a limit still below them is said out loud. */
static void check_open_files(const gp_server_config *cfg) {
  rlim_t want = (rlim_t)cfg->max_connections + 256;
  if (cfg->agent_listen_host) want += (rlim_t)cfg->agent_max_connections;
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= want) return;
  rlim_t old = rl.rlim_cur;
  rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= want ? want : rl.rlim_max;
  if (setrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur >= want) return;
  fprintf(stderr,
          "gpool server: warning: the open-file limit (%llu) is below what max_connections%s need "
          "(%llu); raise it (ulimit -n, LimitNOFILE)\n",
          (unsigned long long)(rl.rlim_cur > old ? rl.rlim_cur : old),
          cfg->agent_listen_host ? " and agent_max_connections" : "", (unsigned long long)want);
}

static int write_url(const char *dir, const char *name, const char *url) {
  char path[1200], tmp[1300];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "w");
  if (!f) return -1;
  fprintf(f, "%s\n", url);
  if (fclose(f) != 0) return -1;
  return rename(tmp, path);
}

int gp_cmd_server(int argc, char **argv) {
  const char *config = NULL, *listen = NULL, *data = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      usage(stdout);
      return 0;
    }
    const char **dst = strcmp(a, "--config") == 0 || strcmp(a, "-c") == 0 ? &config
                       : strcmp(a, "--listen") == 0                       ? &listen
                       : strcmp(a, "--data") == 0                         ? &data
                                                                          : NULL;
    if (!dst || i + 1 >= argc) {
      fprintf(stderr, "gpool server: %s '%s'\n", dst ? "missing value for" : "unknown option", a);
      usage(stderr);
      return 2;
    }
    *dst = argv[++i];
  }
  gp_err err = {0};
  gp_server_config *cfg = NULL;
  int r = config ? gp_server_config_load(config, &cfg, &err) : 0;
  if (r) {
    char msg[1200];
    gp_err_format(&err, msg, sizeof msg);
    fprintf(stderr, "gpool server: %s\n", msg);
    return 2;
  }
  if (!cfg) cfg = gp_server_config_new();
  if (listen) {
    char host[256];
    int port;
    if (gp_server_parse_listen(listen, host, sizeof host, &port)) {
      fprintf(stderr, "gpool server: --listen: expected HOST:PORT, not '%s'\n", listen);
      gp_server_config_free(cfg);
      return 2;
    }
    cfg->listen_host = gp_arena_strdup(cfg->arena, host);
    cfg->listen_port = port;
  }
  if (data) cfg->data_dir = gp_arena_strdup(cfg->arena, data);
  if (cfg->n_tokens == 0)
    fprintf(stderr, "gpool server: warning: no tokens are configured; every API call will be refused\n");
  const char *open_host = strncmp(cfg->listen_host, "127.", 4) != 0 ? cfg->listen_host
                          : cfg->agent_listen_host && strncmp(cfg->agent_listen_host, "127.", 4) != 0
                              ? cfg->agent_listen_host
                              : NULL;
  if (!gp_tls_files_serving(&cfg->tls) && open_host)
    fprintf(stderr, "gpool server: warning: plain HTTP on %s: tokens, commands and env cross the "
                    "network readable; set tls.cert and tls.key (docs/config.md)\n",
            open_host);
  /* Block the stop signals in every thread; this one waits for them. */
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, NULL);
  signal(SIGPIPE, SIG_IGN);
  curl_global_init(CURL_GLOBAL_DEFAULT);
  gp_server *srv = NULL;
  check_open_files(cfg);
  if ((r = gp_server_new(cfg, NULL, &srv, &err)) || (r = gp_server_start(srv, &err))) {
    char msg[1200];
    gp_err_format(&err, msg, sizeof msg);
    fprintf(stderr, "gpool server: %s\n", msg);
    gp_server_free(srv);
    gp_server_config_free(cfg);
    curl_global_cleanup();
    return 1;
  }
  char url[400];
  /* agent.url before server.url: whoever waits for server.url (gpool up) finds both. */
  if (cfg->agent_listen_host) { /* the agents' own address: their --server */
    snprintf(url, sizeof url, "%s://%s:%d", gp_tls_files_serving(&cfg->tls) ? "https" : "http",
             strcmp(cfg->agent_listen_host, "0.0.0.0") == 0 ? "127.0.0.1" : cfg->agent_listen_host,
             gp_server_agent_port(srv));
    if (write_url(cfg->data_dir, "agent.url", url) != 0)
      fprintf(stderr, "gpool server: warning: cannot write %s/agent.url: %s\n", cfg->data_dir, strerror(errno));
    printf("gpool server: agents on %s\n", url);
  }
  snprintf(url, sizeof url, "%s://%s:%d", gp_tls_files_serving(&cfg->tls) ? "https" : "http",
           strcmp(cfg->listen_host, "0.0.0.0") == 0 ? "127.0.0.1" : cfg->listen_host,
           gp_server_port(srv));
  if (write_url(cfg->data_dir, "server.url", url) != 0)
    fprintf(stderr, "gpool server: warning: cannot write %s/server.url: %s\n", cfg->data_dir, strerror(errno));
  printf("gpool server: listening on %s\n", url);
  fflush(stdout);
  int sig = 0;
  sigwait(&set, &sig);
  fprintf(stderr, "gpool server: stopping (signal %d)\n", sig);
  gp_server_free(srv);
  gp_server_config_free(cfg);
  curl_global_cleanup();
  return 0;
}
