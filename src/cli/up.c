/* SPDX-License-Identifier: Apache-2.0 */
/* `gpool up`: a whole pool on one machine in one command. It keeps everything in one data
 * directory (default $XDG_DATA_HOME/gpool, else ~/.local/share/gpool):
 *   tokens.yaml   an admin token (for the invoking user) and an agent token, made once
 *   server.yaml   the server config: the `default` queue open to everyone, every user's
 *                 default queue = default, the listen port
 *   server/       the server's SQLite store;   agent/   the agent's job logs
 *   store.url     with --postgres: the PostgreSQL URL the server keeps its state in
 *   server.log, agent.log, up.log (detached)
 *   up.pid, server.pid, agent.pid   "PID START" each: the process and its start time
 * then starts `gpool server` and one `gpool agent` (simulated GPUs unless real ones are
 * present) as children (exec of /proc/self/exe), writes client.json with the server URL
 * and the admin token, and prints what to try next. On PostgreSQL, the agent and
 * client.json get every server of the store, and again whenever another joins
 * (up_servers.h): the agent is restarted with the longer list, its jobs running on.
 * SIGINT/SIGTERM are forwarded (agent first, then server); a child that crashes is
 * restarted. The children die with `gpool up` (PR_SET_PDEATHSIG), so a `kill -9` of it leaves nothing behind. `--detach` leaves
 * the pool running in the background; `gpool up --stop` stops it, and the children
 * directly when their `gpool up` is gone. A pid file is trusted only while its process has
 * the same start time and a command line of this pool (a pid the system gave to another
 * process is never signalled). Running `gpool up` again reuses the tokens and the store,
 * so jobs, nodes and client.json survive a restart of the pool. */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli_common.h"
#include "cli/commands.h"
#include "cli/up_servers.h"
#include "cli/up_util.h"
#include "client/client.h"
#include "util/mem.h"

enum { U_DATA = 1, U_PORT, U_SIM, U_DETACH, U_STOP, U_NAME, U_SHARING, U_POSTGRES, U_HELP };
static const gp_opt up_opts[] = {
  {0, "data", true, U_DATA},     {0, "port", true, U_PORT},   {0, "sim", true, U_SIM},
  {'d', "detach", false, U_DETACH}, {0, "stop", false, U_STOP}, {0, "name", true, U_NAME},
  {0, "sharing", true, U_SHARING}, {0, "postgres", true, U_POSTGRES}, {'h', "help", false, U_HELP},
  {0, NULL, false, 0},
};

static const char up_usage[] =
  "Usage: gpool up [--data DIR] [--port P] [--sim SPEC] [--name NODE] [--sharing MODE]\n"
  "                [--postgres URL] [--detach]\n"
  "       gpool up --stop [--data DIR]\n"
  "  Starts a server and a local agent (this machine's NVIDIA GPUs, or simulated\n"
  "  8xH100-80GB where there are none) and writes client.json so gpool commands find the pool.\n"
  "  --data DIR   where the pool keeps its state (default ~/.local/share/gpool)\n"
  "  --port P     the server's port on 127.0.0.1 (default 8642; 0 picks a free one)\n"
  "  --sim SPEC   simulated GPUs even where real ones exist, e.g. 8xH100-80GB\n"
  "  --name NODE  the node's name (default: the host name)\n"
  "  --sharing MODE  how the node's GPUs are shared: exclusive (default), shared (fractions,\n"
  "               MPS-enforced where an MPS daemon runs), timeslice:N, mig:LAYOUT\n"
  "  --postgres URL  keep the server's state in PostgreSQL (postgresql://...) instead of SQLite,\n"
  "               under the leader lease, so more servers can join it (docs/ha.md); remembered\n"
  "               in the data directory for the next start\n"
  "  --detach     return once the pool is up and leave it running (stop: gpool up --stop)\n";

typedef struct up_ctx {
  char data[3000];
  char self[4096];
  int port;
  const char *sim;
  const char *name;
  const char *sharing;
  char url[256];
  /* The server's agent_listen (SQLite pools: on PostgreSQL more servers join, and agents
   * follow leaders by their API URLs): the agent's own address, kept across restarts. */
  int agent_port;
  char agent_url[256];
  char gpus_desc[128];   /* "8 x H100-80GB", from the registered node */
  char node[256];
  char admin_token[80], agent_token[80];
  const char *postgres;  /* --postgres URL */
  char store_url[1024];  /* the PostgreSQL URL in use (--postgres, or store.url); "" for SQLite */
  pid_t server, agent;
  gp_urls servers;       /* every server known: this pool's first (PostgreSQL: up_servers.h) */
  char server_list[GP_URLS_MAX * GP_URL_MAX]; /* the same, "URL,URL", for the agent and client.json */
  char client_path[4096];
  const char *data_arg;  /* --data as the user gave it, for the messages that repeat it */
  bool detach, stop;
} up_ctx;

static void path_in(const up_ctx *u, const char *file, char *out, size_t cap) {
  snprintf(out, cap, "%s/%s", u->data, file);
}

/* Reads the two tokens back from tokens.yaml (the file this program wrote). */
static int load_tokens(up_ctx *u, const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  char line[512];
  while (fgets(line, sizeof line, f)) {
    char tok[80], role[16];
    if (sscanf(line, " - {token: \"%64[0-9a-f]\", user: %*[^,], role: %15[a-z]}", tok, role) == 2) {
      if (!strcmp(role, "admin")) snprintf(u->admin_token, sizeof u->admin_token, "%s", tok);
      if (!strcmp(role, "agent")) snprintf(u->agent_token, sizeof u->agent_token, "%s", tok);
    }
  }
  fclose(f);
  return u->admin_token[0] && u->agent_token[0] ? 0 : -1;
}

/* server.yaml, rewritten at every start (and after --port 0 picked a port, so that a
 * restarted server keeps the address the agent and client.json know). */
static int write_server_config(const up_ctx *u) {
  char path[3200], text[8192], store[1200] = "";
  /* On PostgreSQL under the lease, so that more servers can join this one as followers. */
  if (u->store_url[0])
    snprintf(store, sizeof store, "store: \"%s\"\nha: {}\n", u->store_url);
  else
    snprintf(store, sizeof store, "agent_listen: 127.0.0.1:%d\n", u->agent_port);
  snprintf(text, sizeof text,
           "# Written by 'gpool up' at every start; edit tokens.yaml for tokens.\n"
           "listen: 127.0.0.1:%d\n"
           "data_dir: %s/server\n"
           "%s"
           "token_file: %s/tokens.yaml\n"
           "queues:\n"
           "  - {name: default, users: [\"*\"]}\n"
           "default_queue: default\n",
           u->port, u->data, store, u->data);
  path_in(u, "server.yaml", path, sizeof path);
  if (gp_cli_up_write_file(path, text, 0600)) {
    fprintf(stderr, "gpool up: cannot write %s: %s\n", path, strerror(errno));
    return 1;
  }
  return 0;
}

/* The PostgreSQL URL: --postgres (kept in store.url, mode 0600: it may hold a password),
 * else the one a previous start kept; none means SQLite. It goes into server.yaml in
 * double quotes, so it may hold no quote, backslash or control character. */
static int choose_store(up_ctx *u) {
  char path[3200];
  path_in(u, "store.url", path, sizeof path);
  if (u->postgres) {
    const char *p = u->postgres;
    if (strncmp(p, "postgresql://", 13) && strncmp(p, "postgres://", 11)) {
      fprintf(stderr, "gpool up: --postgres takes a postgresql:// URL\n");
      return 1;
    }
    for (; *p; p++)
      if (*p == '"' || *p == '\\' || (unsigned char)*p < 0x20 || *p == 0x7f) {
        fprintf(stderr, "gpool up: --postgres: the URL holds a quote, backslash or control character\n");
        return 1;
      }
    if (strlen(u->postgres) >= sizeof u->store_url) {
      fprintf(stderr, "gpool up: --postgres: the URL is longer than %zu bytes\n", sizeof u->store_url - 1);
      return 1;
    }
    snprintf(u->store_url, sizeof u->store_url, "%s", u->postgres);
    char text[1100];
    snprintf(text, sizeof text, "%s\n", u->store_url);
    if (gp_cli_up_write_file(path, text, 0600)) {
      fprintf(stderr, "gpool up: cannot write %s: %s\n", path, strerror(errno));
      return 1;
    }
    return 0;
  }
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  if (fgets(u->store_url, sizeof u->store_url, f)) u->store_url[strcspn(u->store_url, "\n")] = '\0';
  fclose(f);
  return 0;
}

static int prepare(up_ctx *u) {
  if (gp_cli_up_mkdir_p(u->data)) {
    fprintf(stderr, "gpool up: cannot create %s: %s\n", u->data, strerror(errno));
    return 1;
  }
  char path[3200], text[8192];
  path_in(u, "tokens.yaml", path, sizeof path);
  if (load_tokens(u, path)) {
    if (gp_cli_up_random_token(u->admin_token, sizeof u->admin_token) || gp_cli_up_random_token(u->agent_token, sizeof u->agent_token)) {
      fprintf(stderr, "gpool up: cannot read /dev/urandom for tokens\n");
      return 1;
    }
    snprintf(text, sizeof text,
             "# Tokens of the pool started by 'gpool up'. Keep this file private.\n"
             "tokens:\n"
             "  - {token: \"%s\", user: \"%s\", role: admin}\n"
             "  - {token: \"%s\", user: agent, role: agent}\n",
             u->admin_token, gp_cli_up_user_name(), u->agent_token);
    if (gp_cli_up_write_file(path, text, 0600)) {
      fprintf(stderr, "gpool up: cannot write %s: %s\n", path, strerror(errno));
      return 1;
    }
  }
  if (choose_store(u) || write_server_config(u)) return 1;
  path_in(u, "server", path, sizeof path);
  gp_cli_up_mkdir_p(path);
  path_in(u, "agent", path, sizeof path);
  gp_cli_up_mkdir_p(path);
  return 0;
}

/* Records a process of the pool in FILE of the data directory. */
static void write_pid_file(const up_ctx *u, const char *file, pid_t pid);

/* The process FILE names when it still is the one recorded there (same start time) and
 * runs `gpool ROLE` with `arg` (see runs_as); else 0. */
static pid_t read_pid_file(const up_ctx *u, const char *file, const char *role, const char *arg) {
  char path[3200];
  path_in(u, file, path, sizeof path);
  FILE *f = fopen(path, "re");
  if (!f) return 0;
  int pid = 0;
  unsigned long long start = 0;
  int got = fscanf(f, "%d %llu", &pid, &start);
  fclose(f);
  if (got < 1 || pid <= 1 || pid == getpid()) return 0;
  unsigned long long now = gp_cli_up_proc_start(pid);
  if (!now || (got == 2 && now != start) || !gp_cli_up_runs_as(pid, role, arg)) return 0;
  return pid;
}

/* The pool's server and agent as their pid files name them (0 when not running). */
static pid_t find_server(const up_ctx *u) {
  char cfg[3200];
  path_in(u, "server.yaml", cfg, sizeof cfg);
  return read_pid_file(u, "server.pid", "server", cfg);
}

static pid_t find_agent(const up_ctx *u) {
  char dir[3200];
  path_in(u, "agent", dir, sizeof dir);
  return read_pid_file(u, "agent.pid", "agent", dir);
}

static void remove_pid_file(const up_ctx *u, const char *file) {
  char path[3200];
  path_in(u, file, path, sizeof path);
  unlink(path);
}

/* Starts `gpool <args>` with stdout and stderr appended to log; its own process group, so
 * a Ctrl-C reaches only `gpool up`, which stops the children in order. */
static pid_t spawn(const up_ctx *u, char *const *args, const char *log, const char *agent_token) {
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid != 0) return pid;
  /* A child outlives nothing of its `gpool up`: SIGTERM (a clean stop) when it dies. The
   * setting survives exec; a parent that died before it was made is no longer getppid(). */
  if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() != parent) _exit(1);
  setpgid(0, 0);
  /* The agent's token travels in its environment (readable by its owner only), not in its
   * argv (readable by everyone through ps). The agent keeps it out of jobs' environments. */
  if (agent_token) setenv("GPOOL_AGENT_TOKEN", agent_token, 1);
  unsetenv("GPOOL_TOKEN");
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
  if (fd >= 0) {
    dup2(fd, 1);
    dup2(fd, 2);
    close(fd);
  }
  int nul = open("/dev/null", O_RDONLY);
  if (nul >= 0) {
    dup2(nul, 0);
    close(nul);
  }
  execv(u->self, args);
  fprintf(stderr, "gpool up: cannot run %s: %s\n", u->self, strerror(errno));
  _exit(127);
}

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static bool alive(pid_t pid) {
  if (pid <= 0) return false;
  int status;
  return waitpid(pid, &status, WNOHANG) == 0;
}

static int start_server(up_ctx *u) {
  char cfg[3200], log[3200], urlfile[3200], agentfile[3200];
  path_in(u, "server.yaml", cfg, sizeof cfg);
  path_in(u, "server.log", log, sizeof log);
  path_in(u, "server/server.url", urlfile, sizeof urlfile);
  path_in(u, "server/agent.url", agentfile, sizeof agentfile);
  unlink(urlfile);
  unlink(agentfile);
  char *args[] = {(char *)"gpool", (char *)"server", (char *)"--config", cfg, NULL};
  u->server = spawn(u, args, log, NULL);
  if (u->server < 0) return 1;
  write_pid_file(u, "server.pid", u->server);
  for (int i = 0; i < 300; i++) { /* up to 30 s on a loaded machine */
    int port = gp_cli_up_read_url(urlfile, u->url, sizeof u->url);
    if (port > 0) {
      /* agent.url is written before server.url; its port is kept for the server's restarts. */
      int agent_port = u->store_url[0] ? 0 : gp_cli_up_read_url(agentfile, u->agent_url, sizeof u->agent_url);
      if (!u->store_url[0] && agent_port <= 0) {
        fprintf(stderr, "gpool up: the server wrote no agent address (%s)\n", agentfile);
        return 1;
      }
      bool rewrite = agent_port != u->agent_port || u->port == 0;
      u->agent_port = agent_port;
      u->port = port;
      if (rewrite) write_server_config(u);
      return 0;
    }
    if (!alive(u->server)) {
      u->server = 0;
      fprintf(stderr, "gpool up: the server exited during start-up\n");
      gp_cli_up_print_log_tail(log);
      return 1;
    }
    sleep_ms(100);
  }
  fprintf(stderr, "gpool up: the server did not start listening within 30 s\n");
  gp_cli_up_print_log_tail(log);
  return 1;
}

/* Starts the agent; with wait_up, waits until its node is listed as up and describes it
 * ("8 x H100-80GB") into u->gpus_desc. */
static int start_agent(up_ctx *u, char *node_name, size_t cap, bool wait_up) {
  char log[3200], dir[3200];
  path_in(u, "agent.log", log, sizeof log);
  path_in(u, "agent", dir, sizeof dir);
  char host[256] = "local";
  if (u->name) snprintf(host, sizeof host, "%s", u->name);
  else if (gethostname(host, sizeof host) || !host[0]) snprintf(host, sizeof host, "local");
  host[sizeof host - 1] = '\0';
  snprintf(node_name, cap, "%s", host);
  char *args[20];
  int n = 0;
  args[n++] = (char *)"gpool";
  args[n++] = (char *)"agent";
  args[n++] = (char *)"--server";
  if (u->agent_url[0]) { /* its own listener; jobs' gpool commands get the API's */
    args[n++] = u->agent_url;
    args[n++] = (char *)"--job-server";
  }
  args[n++] = u->server_list;
  args[n++] = (char *)"--name";
  args[n++] = host;
  args[n++] = (char *)"--data";
  args[n++] = dir;
  args[n++] = (char *)"--personal";
  /* --sim forces simulated GPUs; otherwise the agent uses NVML and falls back to
   * simulated H100s where no NVIDIA driver or GPU is found. */
  args[n++] = (char *)(u->sim ? "--sim" : "--sim-fallback");
  args[n++] = (char *)(u->sim ? u->sim : "8xH100-80GB");
  if (u->sharing) {
    args[n++] = (char *)"--sharing";
    args[n++] = (char *)u->sharing;
  }
  args[n] = NULL;
  u->agent = spawn(u, args, log, u->agent_token);
  if (u->agent < 0) return 1;
  write_pid_file(u, "agent.pid", u->agent);
  if (!wait_up) return 0;
  gp_client *c = gp_client_new(u->url, u->admin_token);
  if (!c) return 1;
  gp_client_set_timeout_ms(c, 2000);
  int rc = 1;
  for (int i = 0; i < 300 && rc; i++) {
    json_t *answer = NULL;
    gp_err err = {0};
    if (gp_client_call(c, "GET", "/v1/nodes", NULL, &answer, NULL, &err) == 0) {
      size_t k;
      json_t *node;
      json_array_foreach(json_object_get(answer, "nodes"), k, node) {
        const char *name = json_string_value(json_object_get(node, "name"));
        const char *state = json_string_value(json_object_get(node, "state"));
        if (name && !strcmp(name, host) && state && strcmp(state, "down")) {
          rc = 0;
          const char *model = json_string_value(json_object_get(node, "model"));
          const char *backend = json_string_value(json_object_get(node, "gpu_backend"));
          snprintf(u->gpus_desc, sizeof u->gpus_desc, "%lld x %s%s",
                   (long long)json_integer_value(json_object_get(node, "gpus")), model ? model : "GPU",
                   backend && !strcmp(backend, "sim") ? " simulated" : "");
        }
      }
      json_decref(answer);
    }
    if (rc && !alive(u->agent)) {
      u->agent = 0;
      fprintf(stderr, "gpool up: the agent exited during start-up\n");
      gp_cli_up_print_log_tail(log);
      break;
    }
    if (rc) sleep_ms(100);
  }
  gp_client_free(c);
  if (rc && u->agent) {
    fprintf(stderr, "gpool up: the agent did not register within 30 s\n");
    gp_cli_up_print_log_tail(log);
  }
  return rc;
}

static void stop_child(pid_t *pid, const char *what, int grace_s) {
  if (*pid <= 0) return;
  kill(*pid, SIGTERM);
  for (int i = 0; i < grace_s * 10; i++) {
    int status;
    if (waitpid(*pid, &status, WNOHANG) == *pid) {
      *pid = 0;
      return;
    }
    sleep_ms(100);
  }
  fprintf(stderr, "gpool up: the %s did not stop within %d s; killing it\n", what, grace_s);
  kill(*pid, SIGKILL);
  waitpid(*pid, NULL, 0);
  *pid = 0;
}

static void stop_all(up_ctx *u) {
  stop_child(&u->agent, "agent", 15);
  remove_pid_file(u, "agent.pid");
  stop_child(&u->server, "server", 15);
  remove_pid_file(u, "server.pid");
}

static void greet(const up_ctx *u, const char *node, const char *client_path, FILE *out) {
  fprintf(out, "gpool is up: server %s, node %s with %s GPUs.\n", u->url, node, u->gpus_desc);
  fprintf(out, "State in %s; the CLI finds the pool through %s.\n\n", u->data, client_path);
  fprintf(out,
          "Try:\n"
          "  gpool submit -g 1 -- nvidia-smi     run a command on one GPU (prints the job id)\n"
          "  gpool jobs                          what is pending and running\n"
          "  gpool logs 1                        the job's output (-f to follow)\n"
          "  gpool show 1                        its timeline, placement and usage\n"
          "  gpool nodes -v                      GPUs, their mode and who holds them\n"
          "  gpool queues                        the queue tree with quotas and usage\n");
  fprintf(out, "Web console: %s/ (log in with the \"token\" of %s)\n\n", u->url, client_path);
}

static void write_pid_file(const up_ctx *u, const char *file, pid_t pid) {
  char path[3200], text[64];
  path_in(u, file, path, sizeof path);
  snprintf(text, sizeof text, "%d %llu\n", (int)pid, gp_cli_up_proc_start(pid));
  if (gp_cli_up_write_file(path, text, 0600))
    fprintf(stderr, "gpool up: cannot write %s: %s\n", path, strerror(errno));
}

static pid_t read_pid(const up_ctx *u) { return read_pid_file(u, "up.pid", "up", NULL); }

/* Waits up to grace_s for a process that is not our child to end (its start time gone),
 * then up to a second more for init to reap it, so that callers no longer see its pid. */
static bool wait_gone(pid_t pid, unsigned long long start, int grace_s) {
  for (int i = 0; i < grace_s * 10 && gp_cli_up_proc_start(pid) == start; i++) sleep_ms(100);
  if (gp_cli_up_proc_start(pid) == start) return false;
  for (int i = 0; i < 10 && kill(pid, 0) == 0; i++) sleep_ms(100);
  return true;
}

/* Stops a server or agent whose `gpool up` is gone: SIGTERM (and SIGCONT, should it be
 * stopped), SIGKILL after grace_s. */
static void stop_orphan(pid_t pid, const char *what, int grace_s) {
  unsigned long long start = pid ? gp_cli_up_proc_start(pid) : 0;
  if (!start) return;
  fprintf(stderr, "gpool up --stop: stopping the %s (process %d), whose 'gpool up' is gone\n", what,
          (int)pid);
  kill(pid, SIGTERM);
  kill(pid, SIGCONT);
  if (wait_gone(pid, start, grace_s)) return;
  fprintf(stderr, "gpool up --stop: the %s did not stop within %d s; killing it\n", what, grace_s);
  kill(pid, SIGKILL);
  wait_gone(pid, start, 5);
}

/* Stops the pool: its `gpool up`, which stops its children in order; then whatever of the
 * pool still runs without it (its `gpool up` was killed), agent first. */
static int stop_detached(const up_ctx *u) {
  pid_t pid = read_pid(u);
  if (!pid && !find_agent(u) && !find_server(u)) {
    fprintf(stderr, "gpool up --stop: no pool is running from %s\n", u->data);
    return 1;
  }
  if (pid) {
    unsigned long long start = gp_cli_up_proc_start(pid);
    kill(pid, SIGTERM);
    if (!wait_gone(pid, start, 40)) {
      fprintf(stderr, "gpool up --stop: process %d did not stop within 40 s\n", (int)pid);
      return 1;
    }
  }
  stop_orphan(find_agent(u), "agent", 15);
  stop_orphan(find_server(u), "server", 15);
  if (find_agent(u) || find_server(u)) {
    fprintf(stderr, "gpool up --stop: the pool in %s did not stop\n", u->data);
    return 1;
  }
  remove_pid_file(u, "agent.pid");
  remove_pid_file(u, "server.pid");
  remove_pid_file(u, "up.pid");
  printf("gpool: the pool in %s has stopped.\n", u->data);
  return 0;
}

static void follow_new_servers(up_ctx *u);

/* Waits for a signal or a child's death; returns the exit status for `gpool up`. A child
 * that dies is started again after a short pause: the store is durable and the agent
 * re-adopts its running jobs, so a restart loses nothing. Five deaths within a minute
 * mean something is wrong that a restart will not fix: the pool stops. */
static int supervise(up_ctx *u, const sigset_t *set) {
  time_t deaths[5] = {0};
  int n_deaths = 0;
  for (unsigned ticks = 1;; ticks++) {
    struct timespec tick = {1, 0};
    int sig = sigtimedwait(set, NULL, &tick);
    if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP) {
      fprintf(stderr, "gpool up: stopping (agent, then server)\n");
      stop_all(u);
      return 0;
    }
    if (ticks % 2 == 0) follow_new_servers(u); /* every 2 s: did a server join? */
    int status;
    pid_t dead;
    while ((dead = waitpid(-1, &status, WNOHANG)) > 0) {
      bool server = dead == u->server;
      if (!server && dead != u->agent) continue;
      const char *what = server ? "server" : "agent";
      if (server) u->server = 0;
      else u->agent = 0;
      fprintf(stderr, "gpool up: the %s exited (%s %d; see %s/%s.log)\n", what,
              WIFSIGNALED(status) ? "signal" : "status", WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status),
              u->data, what);
      time_t now = time(NULL);
      memmove(deaths, deaths + 1, sizeof deaths - sizeof deaths[0]);
      deaths[4] = now;
      if (++n_deaths >= 5 && now - deaths[0] < 60) {
        fprintf(stderr, "gpool up: five restarts within a minute; stopping the pool\n");
        stop_all(u);
        return 1;
      }
      sleep_ms(1000);
      int rc = server ? start_server(u) : start_agent(u, u->node, sizeof u->node, false);
      if (rc) {
        fprintf(stderr, "gpool up: cannot restart the %s; stopping the pool\n", what);
        stop_all(u);
        return 1;
      }
      fprintf(stderr, "gpool up: restarted the %s\n", what);
    }
  }
}

/* The options into u; returns 0, -1 after printing the usage, or a usage error's code. */
static int read_options(up_ctx *u, int argc, char **argv) {
  gp_opt_iter it;
  gp_opt_init(&it, argc, argv, 1);
  gp_err err = {0};
  for (;;) {
    const char *v = NULL;
    int id = gp_opt_next(&it, up_opts, &v, &err);
    if (id == GP_OPT_END) break;
    if (id == GP_OPT_POSITIONAL) return gp_cli_usage_error("up", "unexpected '%s'", v);
    if (id < 0) return gp_cli_usage_error("up", "%s", err.message);
    switch (id) {
    case U_DATA: u->data_arg = v; break;
    case U_PORT:
      if (!gp_cli_valid_id(v) || atoi(v) > 65535) return gp_cli_usage_error("up", "--port takes 0..65535, not '%s'", v);
      u->port = atoi(v);
      break;
    case U_SIM: u->sim = v; break;
    case U_NAME: u->name = v; break;
    case U_SHARING: u->sharing = v; break;
    case U_POSTGRES: u->postgres = v; break;
    case U_DETACH: u->detach = true; break;
    case U_STOP: u->stop = true; break;
    case U_HELP: fputs(up_usage, stdout); return -1;
    }
  }
  return 0;
}

/* The data directory: --data (made absolute), else $XDG_DATA_HOME/gpool, else
 * ~/.local/share/gpool, else ./.gpool. */
static int choose_data_dir(up_ctx *u) {
  const char *data = u->data_arg;
  if (data) {
    if (data[0] == '/') snprintf(u->data, sizeof u->data, "%s", data);
    else {
      char cwd[2048];
      if (!getcwd(cwd, sizeof cwd)) return gp_cli_usage_error("up", "cannot read the current directory");
      snprintf(u->data, sizeof u->data, "%s/%s", cwd, data);
    }
  } else if (getenv("XDG_DATA_HOME") && *getenv("XDG_DATA_HOME")) {
    snprintf(u->data, sizeof u->data, "%s/gpool", getenv("XDG_DATA_HOME"));
  } else if (getenv("HOME") && *getenv("HOME")) {
    snprintf(u->data, sizeof u->data, "%s/.local/share/gpool", getenv("HOME"));
  } else {
    snprintf(u->data, sizeof u->data, "%s", ".gpool");
  }
  return 0;
}

/* " --data DIR" when the user gave one, so the suggested command finds the same pool. */
static const char *data_flag(const up_ctx *u) { return u->data_arg ? " --data " : ""; }
static const char *data_value(const up_ctx *u) { return u->data_arg ? u->data_arg : ""; }

/* Refuses a second pool on the same data directory and finds this executable (the
 * children are exec'd from it). Returns 0 or 1. */
static int check_can_start(up_ctx *u) {
  pid_t running = read_pid(u);
  if (running) {
    fprintf(stderr, "gpool up: a pool is already running from %s (process %d); stop it with 'gpool up --stop%s%s'\n",
            u->data, (int)running, data_flag(u), data_value(u));
    return 1;
  }
  pid_t left = find_server(u) ? find_server(u) : find_agent(u);
  if (left) {
    fprintf(stderr, "gpool up: a server or agent of the pool in %s still runs without its 'gpool up' "
                    "(process %d); stop it with 'gpool up --stop%s%s'\n",
            u->data, (int)left, data_flag(u), data_value(u));
    return 1;
  }
  ssize_t n = readlink("/proc/self/exe", u->self, sizeof u->self - 1);
  if (n <= 0) {
    fprintf(stderr, "gpool up: cannot find my own executable: %s\n", strerror(errno));
    return 1;
  }
  u->self[n] = '\0';
  return 0;
}

/* Points stream fd_to (1 or 2) at the end of up.log. */
static void log_to_file(const up_ctx *u, int fd_to) {
  char log[3200];
  path_in(u, "up.log", log, sizeof log);
  int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
  if (fd >= 0) {
    dup2(fd, fd_to);
    close(fd);
  }
}

/* With --detach, forks: the parent waits on a pipe for "ok" and the greeting (or an
 * error) from the child, which goes on as the supervisor in its own session. Returns -1
 * in the process that goes on (ready[1] set in the child), else the parent's exit code. */
static int detach(up_ctx *u, int ready[2]) {
  if (!u->detach) return -1;
  if (pipe2(ready, O_CLOEXEC)) return 1;
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) return 1;
  if (pid > 0) {
    close(ready[1]);
    char buf[8192];
    size_t got = 0;
    ssize_t r;
    while (got < sizeof buf - 1 && (r = read(ready[0], buf + got, sizeof buf - 1 - got)) > 0) got += (size_t)r;
    buf[got] = '\0';
    close(ready[0]);
    if (strncmp(buf, "ok\n", 3)) {
      fprintf(stderr, "%s", buf);
      waitpid(pid, NULL, 0);
      return 1;
    }
    fputs(buf + 3, stdout);
    return 0;
  }
  close(ready[0]);
  setsid();
  char log[3200];
  path_in(u, "up.log", log, sizeof log);
  int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
  if (fd >= 0) {
    dup2(ready[1], 2); /* start-up errors go to the waiting parent */
    dup2(fd, 1);
    close(fd);
  }
  return -1;
}

/* Writes client.json with every server known and the admin token; 0, or 1 after saying why. */
static int write_client_json(const up_ctx *u) {
  gp_err err = {0};
  if (gp_client_config_write(u->client_path, u->server_list, u->admin_token, &err)) {
    char line[1200];
    gp_err_format(&err, line, sizeof line);
    fprintf(stderr, "gpool up: %s\n", line);
    return 1;
  }
  return 0;
}

/* On PostgreSQL: asks this pool's server which servers share its store and adds the new
 * ones to u->servers (this pool's stays first). True when the list grew. */
static bool learn_servers(up_ctx *u) {
  if (!u->store_url[0]) return false;
  gp_urls list = u->servers;
  if (!gp_cli_up_servers_learn(u->url, u->admin_token, 1000, &list)) return false;
  char joined[sizeof u->server_list];
  if (!gp_cli_up_servers_join(&list, joined, sizeof joined)) return false;
  u->servers = list;
  snprintf(u->server_list, sizeof u->server_list, "%s", joined);
  return true;
}

/* Another server joined the store: client.json and the agent get the longer list (the
 * agent through a restart: its jobs keep running and are re-adopted). */
static void follow_new_servers(up_ctx *u) {
  if (!learn_servers(u)) return;
  fprintf(stderr, "gpool up: the pool's servers are now %s; restarting the agent with them\n",
          u->server_list);
  write_client_json(u);
  if (u->agent <= 0) return; /* supervise() restarts it, with the new list */
  stop_child(&u->agent, "agent", 15);
  if (start_agent(u, u->node, sizeof u->node, false))
    fprintf(stderr, "gpool up: cannot restart the agent; supervise() tries again\n");
}

/* Starts the server and the agent, then writes client.json; 0, or 1 after saying why. */
static int start_pool(up_ctx *u) {
  if (start_server(u)) return 1;
  u->servers.n = 1;
  snprintf(u->servers.url[0], GP_URL_MAX, "%s", u->url);
  snprintf(u->server_list, sizeof u->server_list, "%s", u->url);
  learn_servers(u); /* servers that already share the store */
  if (start_agent(u, u->node, sizeof u->node, true)) return 1;
  if (gp_client_config_path(u->client_path, sizeof u->client_path)) {
    fprintf(stderr, "gpool up: no place for client.json (set HOME or GPOOL_CONFIG_DIR)\n");
    return 1;
  }
  return write_client_json(u);
}

/* The greeting: to the terminal, or (detached) through the pipe to the waiting parent,
 * after which this process's errors go to up.log. */
static void announce(up_ctx *u, const char *client_path, int ready[2]) {
  if (!u->detach) {
    greet(u, u->node, client_path, stdout);
    printf("Press Ctrl-C to stop the pool (running jobs keep their state for the next 'gpool up').\n");
    fflush(stdout);
    return;
  }
  FILE *msg = fdopen(ready[1], "w");
  fputs("ok\n", msg);
  greet(u, u->node, client_path, msg);
  fprintf(msg, "The pool runs in the background (log: %s/up.log); stop it with 'gpool up --stop%s%s'.\n",
          u->data, data_flag(u), data_value(u));
  fclose(msg);
  ready[1] = -1;
  log_to_file(u, 2);
}

int gp_cmd_up(int argc, char **argv) {
  up_ctx u;
  memset(&u, 0, sizeof u);
  u.port = 8642;
  int code = read_options(&u, argc, argv);
  if (code) return code < 0 ? 0 : code;
  if ((code = choose_data_dir(&u))) return code;
  if (u.stop) return stop_detached(&u);
  if (check_can_start(&u) || prepare(&u)) return 1;
  int ready[2] = {-1, -1};
  if ((code = detach(&u, ready)) >= 0) return code;

  /* Signals wait for supervise(), which forwards them to the children. */
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  sigprocmask(SIG_BLOCK, &set, NULL);
  write_pid_file(&u, "up.pid", getpid());
  if (start_pool(&u)) {
    stop_all(&u);
    code = 1;
  } else {
    announce(&u, u.client_path, ready);
    code = supervise(&u, &set);
  }
  char path[3200];
  path_in(&u, "up.pid", path, sizeof path);
  unlink(path);
  if (ready[1] >= 0) close(ready[1]);
  return code;
}
