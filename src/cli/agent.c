/* SPDX-License-Identifier: Apache-2.0 */
/* `gpool agent`: the node agent's command line. Flags override the config file; the agent
 * itself lives in src/agent/agent.h. */
#include <curl/curl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/config.h"
#include "agent/gpu_nvml.h"
#include "agent/gpu_sim.h"
#include "cli/commands.h"
#include "util/units.h"

static volatile sig_atomic_t stop_requested = 0;

static void on_signal(int sig) {
  (void)sig;
  stop_requested = 1;
}

static void usage(FILE *out) {
  fprintf(out,
          "Usage: gpool agent --server URL --token TOKEN [options]\n\n"
          "Runs the node agent: registers this node's GPUs with the server, runs the jobs it\n"
          "is given, and serves their logs and metrics.\n\n"
          "Options:\n"
          "  --server URL          the gpool server (e.g. http://127.0.0.1:8642)\n"
          "  --job-server URL      the URL jobs get as GPOOL_SERVER (default: --server; give\n"
          "                        the API's when --server is the server's agent_listen)\n"
          "  --token TOKEN         an agent token (or GPOOL_AGENT_TOKEN)\n"
          "  --name NODE           node name (default: the host name)\n"
          "  --sim SPEC            simulated GPUs, e.g. 8xH100-80GB or 4xA100-40GB,2xL40S\n"
          "                        (default: real GPUs through NVML)\n"
          "  --sim-fallback SPEC   real GPUs when NVML finds some, else simulated ones\n"
          "  --inject FAULTS       simulated faults, e.g. 'xid:79@gpu3,after=5s' (repeatable)\n"
          "  --data DIR            state and job logs (default /var/lib/gpool/agent)\n"
          "  --listen HOST:PORT    the agent's own endpoint (default 127.0.0.1:0: a free port)\n"
          "  --labels k=v,...      node labels (e.g. topology.block=b1)\n"
          "  --capacity TYPE       on-demand (default), spot, reserved, on-prem\n"
          "  --config FILE         agent.yaml (flags override it)\n"
          "  --heartbeat-s N       long-poll length in seconds (1-30, default 5)\n"
          "  --sharing MODE        sharing mode of every GPU: exclusive, shared, timeslice:N,\n"
          "                        mig:<profiles>\n"
          "  --gpu-mode RANGE=MODE sharing mode of some GPUs, e.g. 0-3=shared (repeatable)\n"
          "  --cpus N, --mem SIZE  override the detected CPUs and memory\n"
          "  --grace DUR           default grace period of the stop handshake (default 30s)\n"
          "  --cgroup-root DIR     cgroup v2 sub-tree for job limits (default /sys/fs/cgroup/gpool)\n"
          "  --mps-pipe-dir DIR    where an MPS control daemon's pipes live\n"
          "  --models-dir DIR      a model cache: its subdirectories are the models it holds\n"
          "  --personal            run every job as this agent's user (a personal pool)\n"
          "  --allow-root-jobs     allow jobs of user root when the agent runs as root\n");
}

static int set_str(char *dst, size_t size, const char *flag, const char *v) {
  if (strlen(v) >= size) {
    fprintf(stderr, "gpool agent: %s: value too long\n", flag);
    return -1;
  }
  snprintf(dst, size, "%s", v);
  return 0;
}

/* Returned by a phase when the command goes on to the next one. */
#define GO_ON (-1)

#define MAX_INJECTS 16

/* The command's reading of its flags: the agent's configuration, and what only the command
 * itself uses (the fallback spec and the faults to inject). */
typedef struct agent_cli {
  gp_agent_config cfg;
  gp_err err;
  const char *injects[MAX_INJECTS];
  int n_injects;
  const char *sim_fallback;
} agent_cli;

/* Answers --help, and loads --config; GO_ON, or the exit code when it ends the command. */
static int read_config_file(agent_cli *a, int argc, char **argv) {
  /* The config file first, so that flags override it wherever they appear. */
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      usage(stdout);
      return 0;
    }
    if (strcmp(argv[i], "--config") == 0 && i + 1 < argc) {
      if (gp_agent_config_load(argv[i + 1], &a->cfg, &a->err) != 0) {
        char buf[1024];
        gp_err_format(&a->err, buf, sizeof buf);
        fprintf(stderr, "gpool agent: %s\n", buf);
        return 2;
      }
    }
  }
  return GO_ON;
}

/* Takes the token from GPOOL_AGENT_TOKEN when the config file gave none. */
static void read_env_token(agent_cli *a) {
  const char *env_token = getenv("GPOOL_AGENT_TOKEN");
  if (env_token && !a->cfg.token[0])
    set_str(a->cfg.token, sizeof a->cfg.token, "token", env_token);
}

/* The config field a string flag sets, with its size; NULL for any other flag. */
static char *string_field(gp_agent_config *cfg, const char *f, size_t *size) {
  if (strcmp(f, "--server") == 0) return *size = sizeof cfg->server, cfg->server;
  if (strcmp(f, "--job-server") == 0) return *size = sizeof cfg->job_server, cfg->job_server;
  if (strcmp(f, "--token") == 0) return *size = sizeof cfg->token, cfg->token;
  if (strcmp(f, "--name") == 0) return *size = sizeof cfg->name, cfg->name;
  if (strcmp(f, "--sim") == 0) return *size = sizeof cfg->sim, cfg->sim;
  if (strcmp(f, "--data") == 0) return *size = sizeof cfg->data_dir, cfg->data_dir;
  if (strcmp(f, "--listen") == 0) return *size = sizeof cfg->listen, cfg->listen;
  if (strcmp(f, "--capacity") == 0) return *size = sizeof cfg->capacity, cfg->capacity;
  if (strcmp(f, "--cgroup-root") == 0) return *size = sizeof cfg->cgroup_root, cfg->cgroup_root;
  if (strcmp(f, "--mps-pipe-dir") == 0)
    return *size = sizeof cfg->mps_pipe_dir, cfg->mps_pipe_dir;
  if (strcmp(f, "--models-dir") == 0) return *size = sizeof cfg->models_dir, cfg->models_dir;
  return NULL;
}

/* --gpu-mode RANGE=MODE: the sharing mode of GPUs lo..hi. */
static int set_gpu_mode(gp_agent_config *cfg, const char *v, gp_err *err) {
  const char *eq = strchr(v, '=');
  char range[32];
  int lo = -1, hi = -1;
  gp_gpu_mode m;
  if (!eq || (size_t)(eq - v) >= sizeof range)
    return gp_err_set(err, GP_EINVAL, NULL, 0, "--gpu-mode", "expected RANGE=MODE, e.g. 0-3=shared");
  snprintf(range, sizeof range, "%.*s", (int)(eq - v), v);
  char *dash = strchr(range, '-');
  lo = atoi(range);
  hi = dash ? atoi(dash + 1) : lo;
  if (lo < 0 || hi < lo || hi >= GP_GPU_MAX_DEVICES || range[0] < '0' || range[0] > '9')
    return gp_err_set(err, GP_EINVAL, NULL, 0, "--gpu-mode", "bad GPU range '%s'", range);
  int rc = gp_gpu_mode_parse(eq + 1, &m, err);
  if (rc == 0)
    for (int g = lo; g <= hi; g++) cfg->gpus[g] = m;
  return rc;
}

/* Applies one flag and its value; false for a flag the agent does not know. *rc is non-zero
 * on a bad value, with the reason in a->err (or already printed when a->err is empty). */
static bool apply_flag(agent_cli *a, const char *f, const char *v, int *rc) {
  gp_agent_config *cfg = &a->cfg;
  gp_err *err = &a->err;
  size_t size = 0;
  char *field = string_field(cfg, f, &size);
  *rc = 0;
  if (field) *rc = set_str(field, size, f, v);
  else if (strcmp(f, "--labels") == 0) *rc = gp_agent_config_add_labels(cfg, v, err);
  else if (strcmp(f, "--sim-fallback") == 0) a->sim_fallback = v;
  else if (strcmp(f, "--inject") == 0) {
    if (a->n_injects < MAX_INJECTS) a->injects[a->n_injects++] = v;
  } else if (strcmp(f, "--heartbeat-s") == 0) {
    int64_t n = 0;
    if (gp_parse_int64(v, &n) != 0 || n < 1 || n > 30)
      *rc = gp_err_set(err, GP_EINVAL, NULL, 0, "--heartbeat-s", "expected 1 to 30 seconds");
    else cfg->heartbeat_s = (int)n;
  } else if (strcmp(f, "--cpus") == 0) {
    if (gp_parse_int64(v, &cfg->cpus) != 0 || cfg->cpus < 1)
      *rc = gp_err_set(err, GP_EINVAL, NULL, 0, "--cpus", "expected a positive count");
  } else if (strcmp(f, "--mem") == 0) {
    if (gp_parse_mem_mib(v, &cfg->mem_mib) != 0 || cfg->mem_mib < 1)
      *rc = gp_err_set(err, GP_EINVAL, NULL, 0, "--mem", "expected a size such as 64G");
  } else if (strcmp(f, "--grace") == 0) {
    int64_t s = 0;
    if (gp_parse_duration_s(v, &s) != 0 || s > 86400)
      *rc = gp_err_set(err, GP_EINVAL, NULL, 0, "--grace", "expected a duration such as 30s");
    else cfg->grace_s = (int)s;
  } else if (strcmp(f, "--sharing") == 0) {
    *rc = gp_gpu_mode_parse(v, &cfg->default_mode, err);
    cfg->default_mode.set = false;
  } else if (strcmp(f, "--gpu-mode") == 0) {
    *rc = set_gpu_mode(cfg, v, err);
  } else {
    return false;
  }
  return true;
}

/* Reads the flags in order over the config file; GO_ON, or the exit code on a bad flag. */
static int read_flags(agent_cli *a, int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    const char *f = argv[i];
    if (strcmp(f, "--personal") == 0) {
      a->cfg.personal = true;
      continue;
    }
    if (strcmp(f, "--allow-root-jobs") == 0) {
      a->cfg.allow_root_jobs = true;
      continue;
    }
    if (strncmp(f, "--", 2) != 0 || i + 1 >= argc) {
      fprintf(stderr, "gpool agent: unexpected argument '%s' (see gpool agent --help)\n", f);
      return 2;
    }
    const char *v = argv[++i];
    if (strcmp(f, "--config") == 0) continue;
    int rc = 0;
    if (!apply_flag(a, f, v, &rc)) {
      fprintf(stderr, "gpool agent: unknown option '%s' (see gpool agent --help)\n", f);
      return 2;
    }
    if (rc) {
      if (!a->err.message[0]) return 2;
      fprintf(stderr, "gpool agent: %s: %s\n", f, a->err.message);
      return 2;
    }
  }
  return GO_ON;
}

/* Checks that the server and the token are known; GO_ON or the exit code. */
static int check_required(const agent_cli *a) {
  if (!a->cfg.server[0] || !a->cfg.token[0]) {
    fprintf(stderr, "gpool agent: --server and --token are required\n");
    usage(stderr);
    return 2;
  }
  return GO_ON;
}

/* Opens the GPU backend, warns of readings the driver lacks and arms the injected faults;
 * GO_ON or the exit code. */
static int choose_backend(agent_cli *a, gp_gpu_backend **ret) {
  gp_gpu_backend *backend = NULL;
  /* --sim: simulated GPUs; --sim-fallback: real GPUs through NVML when the driver finds
   * some, else the simulated ones; neither: NVML only. */
  const char *spec = a->cfg.sim[0] ? a->cfg.sim : a->sim_fallback;
  if (gp_gpu_open_backend(spec, a->cfg.sim[0] != '\0', a->cfg.name[0] ? a->cfg.name : NULL,
                          &backend, &a->err) != 0) {
    fprintf(stderr, "gpool agent: %s%s\n", a->err.message,
            spec ? "" : " (pass --sim SPEC, e.g. --sim 8xH100-80GB, for simulated GPUs)");
    return 2;
  }
  char missing[512] = "";
  backend->ops->missing_readings(backend, missing, sizeof missing);
  if (missing[0])
    fprintf(stderr, "gpool agent: this NVIDIA driver lacks %s; those readings are left out\n",
            missing);
  for (int i = 0; i < a->n_injects; i++)
    if (gp_gpu_sim_inject_spec(backend, a->injects[i], &a->err) != 0) {
      fprintf(stderr, "gpool agent: --inject: %s\n", a->err.message);
      backend->ops->close(backend);
      return 2;
    }
  *ret = backend;
  return GO_ON;
}

/* Sets up the process: curl, and SIGINT/SIGTERM asking the agent to stop. */
static void prepare_process(void) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
  signal(SIGPIPE, SIG_IGN);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
}

/* Creates the agent on the backend and says where it serves; GO_ON or the exit code. */
static int start_agent(agent_cli *a, gp_gpu_backend *backend, gp_agent **agent) {
  /* This binary, which answers as `scontrol` in jobs (scontrol.c). */
  ssize_t n = readlink("/proc/self/exe", a->cfg.self_exe, sizeof a->cfg.self_exe - 1);
  a->cfg.self_exe[n > 0 ? n : 0] = '\0';
  if (strstr(a->cfg.self_exe, " (deleted)")) a->cfg.self_exe[0] = '\0'; /* replaced since */
  if (gp_agent_new(&a->cfg, backend, agent, &a->err) != 0) {
    char buf[1024];
    gp_err_format(&a->err, buf, sizeof buf);
    fprintf(stderr, "gpool agent: %s\n", buf);
    curl_global_cleanup();
    return 1;
  }
  fprintf(stderr, "gpool agent: node %s serving on %s, server %s\n",
          a->cfg.name[0] ? a->cfg.name : "(host)", gp_agent_url(*agent), a->cfg.server);
  return GO_ON;
}

/* Frees the agent and curl once the agent has stopped. */
static void shut_down(gp_agent *agent) {
  gp_agent_free(agent);
  curl_global_cleanup();
}

int gp_cmd_agent(int argc, char **argv) {
  agent_cli a = {0};
  gp_agent_config_init(&a.cfg);
  gp_gpu_backend *backend = NULL;
  int rc = read_config_file(&a, argc, argv);
  if (rc == GO_ON) {
    read_env_token(&a);
    rc = read_flags(&a, argc, argv);
  }
  if (rc == GO_ON) rc = check_required(&a);
  if (rc == GO_ON) rc = choose_backend(&a, &backend);
  if (rc != GO_ON) return rc;
  prepare_process();
  gp_agent *agent = NULL;
  if ((rc = start_agent(&a, backend, &agent)) != GO_ON) return rc;
  rc = gp_agent_run(agent, &stop_requested);
  shut_down(agent);
  return rc == 0 ? 0 : 1;
}
