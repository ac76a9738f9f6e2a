/* SPDX-License-Identifier: Apache-2.0 */
/* Internals shared by the agent's files (docs/internals/agent.md): at the bottom
 * agent_ctx.c (clock, log, events, JSON files), agent_table.c (the job table's queries) and
 * agent_hooks.c (a job task's life events, to the features that registered); above them
 * the features, the life cycle (agent_start.c, agent_jobs.c), and at the top agent.c (the
 * loop and protocol). Not a public interface. */
#ifndef GP_AGENT_AGENT_INT_H
#define GP_AGENT_AGENT_INT_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/urls.h"
#include "agent/agent.h"
#include "agent/cgroup.h"
#include "agent/config.h"
#include "agent/gpu.h"
#include "agent/health.h"
#include "agent/telemetry.h"
#include "protocol/event.h"
#include "protocol/order.h"
#include "protocol/service.h"
#include "util/buf.h"

#define GP_AGENT_ID_MAX 64
#define GP_AGENT_MAX_ORDERS_KEPT 8192

/* A job's task on this node: "<job id>" for task 0 (as before jobs had several tasks on a
 * node), "<job id>@<task>" for the others ('@' is in no job id). It names the task's
 * directory under <data>/jobs, its cgroup and its telemetry entry. */
#define GP_AGENT_KEY_MAX (GP_AGENT_ID_MAX + 8)

typedef struct gp__agent_job {
  char id[GP_AGENT_ID_MAX];
  int task;                  /* the task index of the job this process runs */
  int tasks;                 /* the job's task count */
  char key[GP_AGENT_KEY_MAX];
  char order_id[GP_AGENT_ID_MAX];
  char user[64];
  char queue[160];
  char dir[700];
  pid_t pid;                 /* job process = its process group */
  pid_t shim_pid;
  uint64_t start_ticks, shim_ticks;
  bool is_child;             /* the shim is our child (not an adopted job) */
  int64_t started_at;        /* epoch seconds */
  int n_gpus;
  int gpus[GP_GPU_MAX_DEVICES];
  char mig_uuid[96];
  char enforcement[16];      /* exclusive | mps | watchdog | none | mig */
  int64_t limit_mib;         /* watchdog: per-GPU memory share */
  int sim_util;
  int64_t sim_mem_mib;
  int ckpt_signal;
  int grace_s;
  bool cgroup;               /* has a cgroup under the gpool root */
  /* stop handshake */
  bool stopping;
  int64_t kill_at_ms;        /* epoch ms of the SIGKILL, when stopping */
  bool killed_hard;
  int stop_signal;
  char stop_reason[32];
  bool limit_exceeded;
  /* --signal=[B:]SIG@T (agent_batch.c) */
  int64_t warn_at_ms;        /* epoch ms to send warn_signal; 0: none */
  int warn_signal;
  bool warn_batch;           /* to the main process only, else to the process group */
  bool warned;
  char checkpoint_key[40];   /* secret in GPOOL_CHECKPOINT_URL (hex) */
  char fault_reason[32];     /* "gpu_fault" when the health engine stopped it, else "" */
  /* end */
  bool ended;
  bool exit_known;
  int exit_code;             /* -1 with a signal */
  int signal;
  char reason[32];           /* exited | killed | oom | limit_exceeded | lost | start_failed */
  char message[512];
  int64_t ended_at;
  bool gone_once;            /* adopted: saw the process gone once without an exit file */
  bool container;            /* runs in an image (agent_container.c) */
  uint64_t image;            /* its image's gp_proto_image_hash, 0: bare (or adopted) */
  int pull_noted;            /* its pull's events sent: 1 pulling, 2 pulled too */
  int64_t pull_done_sent;    /* the bytes its last progress event said */
  int64_t pull_total_sent;
  int64_t pull_progress_ms;  /* when it was sent, 0: none yet */
  bool register_ended;       /* ended when the register call in flight was made: that call
                                reports its end, so its answer settles it */
  /* A service replica (probe.c): its probes, the port it was given ($PORT), and what the
   * probes found, as the heartbeat reports it. */
  bool svc;
  gp_proto_service service;
  int port;
  bool ready;
  char probe_msg[160];
  bool metric_ok;            /* the replica's figure for autoscaling was read */
  double metric;
} gp__agent_job;

/* A job task's life events, for the features that keep something per task (agent_hooks.c).
 * Each feature has one table (NULL: not interested) and registers it at agent start; the
 * life cycle fires them (agent_start.c: started; agent_jobs.c: the rest), so it names no
 * feature and no feature calls into it. */
typedef struct gp__agent_job_hooks {
  const char *name;          /* the feature's, for a reader and the one error */
  /* A task started here (not one re-adopted after a restart). */
  void (*started)(gp_agent *a, gp__agent_job *j);
  /* Its process ended with this status (known false: none): a feature may replace it (a
   * `gpool run` session's own exit code). */
  void (*exit_status)(gp_agent *a, const gp__agent_job *j, bool *known, int *code, int *sig);
  /* It ended (ended and its status set) and its reason is not settled yet: a feature may
   * set fault_reason and message (a container's failed pull) and send events that must
   * come before its "exited" one. */
  void (*ending)(gp_agent *a, gp__agent_job *j);
  /* Its end is settled and its process group killed, before its GPUs and cgroup go. */
  void (*ended)(gp_agent *a, const gp__agent_job *j);
  /* A stop began: its signal is sent, its SIGKILL is at kill_at_ms. */
  void (*stopping)(gp_agent *a, const gp__agent_job *j);
  /* Whether a stopping task must not end yet (its step tasks still run): any true holds it. */
  bool (*holds)(const gp_agent *a, const gp__agent_job *j);
  /* Its usage for its "exited" event (owned), NULL: none; the first non-NULL is taken. */
  json_t *(*usage)(gp_agent *a, const gp__agent_job *j);
  /* The server has its end: what the feature kept of it goes. */
  void (*removed)(gp_agent *a, const gp__agent_job *j);
  /* Each loop round, while it runs. */
  void (*tick)(gp_agent *a, gp__agent_job *j, int64_t now_ms);
} gp__agent_job_hooks;

#define GP__AGENT_HOOKS_MAX 16

/* Whom a job runs as (agent_user.c). */
typedef struct gp__agent_creds {
  bool switch_user;
  uid_t uid;
  gid_t gid;
  int n_groups;
  gid_t groups[64];          /* GP_LAUNCH_MAX_GROUPS */
  char home[512];
  char name[64];
  char shell[256];
} gp__agent_creds;

/* One task of a job step on this node (agent_steps.c). */
typedef struct gp__agent_step_task {
  char job[GP_AGENT_ID_MAX];
  int step, task, alloc_task;
  char dir[700];             /* <data>/steps/<job>.<step>.<task> */
  pid_t pid, shim_pid;
  uint64_t start_ticks, shim_ticks;
  bool ended;
  bool stopping, killed_hard;
  int64_t kill_at_ms;
  char stop_reason[32];
} gp__agent_step_task;

/* The spot watcher's counts (spot.c), read by /metrics. */
typedef struct gp__agent_spot_counts {
  uint64_t polls, errors, notices;
} gp__agent_spot_counts;

struct gp_agent {
  gp_agent_config cfg;
  gp_gpu_backend *gpu;
  int n_gpus;
  gp_gpu_info gpus[GP_GPU_MAX_DEVICES];
  gp_agent_share gpu_mode[GP_GPU_MAX_DEVICES];
  int gpu_replicas[GP_GPU_MAX_DEVICES];
  bool gpu_drained[GP_GPU_MAX_DEVICES];
  char gpu_drain_reason[GP_GPU_MAX_DEVICES][160];
  int64_t cpus, mem_mib;
  gp_cgroup cgroup;
  gp_agent_container_caps container; /* what this node allows containers (container.h) */
  json_t *images;            /* the images it holds (images.c), NULL: not read yet */
  struct gp__agent_pulls *pulls; /* pre-pulls under way (image_pull.c), NULL: none yet */
  int64_t images_next_ms;    /* when to read them again */
  bool images_send;          /* read since the last heartbeat: it carries them */
  json_t *models;            /* its models_dir's model names (models.c), NULL: not read yet */
  int64_t models_next_ms;    /* when to read them again */
  bool models_send;          /* read since the last heartbeat: it carries them */
  struct gp__agent_image_use *image_use; /* when jobs last used each image (image_lru.c) */
  struct gp__agent_private_regs *private_regs; /* registries a user's own credential pulled
                                                  from (image_access.c), NULL: not read yet */
  bool is_root;
  char url[160];
  char jobs_dir[600];
  char sim_bin[620];         /* sim backend: <data>/sim-bin (nvidia-smi), first in jobs' PATH */
  char slurm_bin[620];       /* <data>/bin (scontrol, slurm_env.c), first in jobs' PATH; "": none */
  char bash_env[640];        /* <data>/bash_env.sh, jobs' BASH_ENV (slurm_env.h); "": none */

  /* jobs (agent_table.c) and the features' hooks on their life (agent_hooks.c) */
  gp__agent_job **jobs;
  size_t n_jobs, cap_jobs;
  const gp__agent_job_hooks *hooks[GP__AGENT_HOOKS_MAX];
  int n_hooks;

  /* job steps' tasks (agent_steps.c) */
  char steps_dir[620];
  gp__agent_step_task **steps;
  size_t n_steps, cap_steps;

  /* executed orders (at most once) */
  char (*orders)[GP_AGENT_ID_MAX];
  size_t n_orders, next_order;
  FILE *orders_log;
  size_t orders_log_lines;

  /* identity (agent_identity.c) */
  char credential[GP_PROTO_CREDENTIAL_MAX + 1]; /* the node's credential; "" when none */
  char store_id[40];         /* the store last served; "" when not known */
  char answer_error[256];    /* why the last answer could not be read, for the server; "" */

  /* the servers (docs/ha.md): calls go to the leader a follower named, else servers[cur] */
  gp_urls servers;
  int cur;
  char leader[GP_URL_MAX];
  int64_t epoch;             /* the highest leader epoch seen; orders of a lower one are refused */

  /* protocol */
  json_t *events;            /* pending EVENTs */
  json_t *inflight;          /* EVENTs carried by the heartbeat in flight */
  int64_t gen;
  bool registered;
  int heartbeat_s;
  bool watchdog_warned[GP_GPU_MAX_DEVICES];

  /* endpoint */
  struct MHD_Daemon *httpd;
  struct gp_tls_listener *tls;  /* the endpoint's HTTPS files (plain HTTP without tls.cert) */
  struct gp_tls_conns *conns;   /* the endpoint's connection limits (tls/conns.h) */
  pthread_mutex_t stats_lock;   /* guards the stats and checkpoints below */
  json_t *checkpoints;          /* "checkpoint" events from the endpoint, for the loop */
  int stats_running;
  bool stats_registered;

  /* telemetry and health (obs's modules) */
  gp_telemetry *tel;
  gp_health *health;
  gp_telemetry_view *view;   /* latest round, for heartbeats (heap: it is large) */
  bool have_view;
  bool jobs_dirty;           /* the job table changed since telemetry last saw it */
  int64_t last_sample_ms;
  char conditions[256];      /* active node conditions, "" when none */

  /* spot watcher (spot.c): its thread appends under stats_lock, the loop takes them */
  struct gp__agent_spot *spot;  /* NULL when no `spot:` is configured */
  json_t *spot_events;          /* "interruption" events for the loop */
  gp__agent_spot_counts spot_counts;

  struct gp__agent_net *net;
  struct gp__agent_sessions *sessions; /* interactive sessions (session.h) */
  /* service replicas' probes (probe.c): a thread of their own; a readiness change sends a
   * heartbeat at once */
  struct gp__agent_probes *probes;
  bool probes_dirty;
};

/* probe.c */
int gp__agent_probes_start(gp_agent *a, gp_err *err);
void gp__agent_probes_stop(gp_agent *a);
/* The loop: new replicas get probes, ended ones lose them; readiness is copied into the
 * jobs; a failed startup or liveness probe stops the replica. */
void gp__agent_probes_tick(gp_agent *a);
/* A free TCP port for a replica ($PORT), or 0. */
int gp__agent_free_port(void);

/* ---- agent_ctx.c: the bottom every agent file uses ---- */
int64_t gp__agent_now_ms(void);
void gp__agent_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void gp__agent_event(gp_agent *a, json_t *ev); /* takes ownership */
int gp__agent_write_json(const char *path, json_t *doc); /* atomic: tmp + rename */

/* ---- agent.c ---- */
/* The base URL calls go to now: the leader a follower named, else the list's current one. */
const char *gp__agent_server(const gp_agent *a);

/* ---- agent_identity.c ---- */
void gp__agent_identity_load(gp_agent *a);  /* the credential (made when missing), the store id */
/* The server serves store `id`: when it is another store than the one last served, the
 * old store's jobs are killed and retired and its order ids forgotten; the id is kept. */
void gp__agent_store_seen(gp_agent *a, const char *id);

/* ---- agent_orders.c ---- */
void gp__agent_orders_load(gp_agent *a);
void gp__agent_orders_forget(gp_agent *a); /* another store: its order ids mean nothing now */
void gp__agent_order_execute(gp_agent *a, json_t *order); /* at most once per order id */

/* ---- agent_start.c ---- */
void gp__agent_job_start(gp_agent *a, const char *order_id, const gp_proto_start *o);

/* ---- agent_user.c ---- */
/* The job's user (the agent's own in a personal pool); -1 with a sentence when refused. */
int gp__agent_resolve_user(gp_agent *a, const char *user, gp__agent_creds *c, char *msg, size_t size);

/* ---- agent_steps.c: srun's steps ---- */
int gp__agent_steps_init(gp_agent *a, gp_err *err); /* <data>/steps; leftovers of a past life killed */
void gp__agent_steps_free(gp_agent *a);
struct gp__agent_job;
/* Keeps a job task's environment (0600, in its directory) for the steps that run in it. */
void gp__agent_steps_save_env(const struct gp__agent_job *j, char *const *items, size_t n);
void gp__agent_step_run(gp_agent *a, const char *order_id, const gp_proto_step *o);
/* A step order taken before a restart comes again: its task, gone, is reported lost. */
void gp__agent_step_seen_again(gp_agent *a, const char *order_id, const gp_proto_step *o);
void gp__agent_step_stop(gp_agent *a, const gp_proto_step_stop *o);
void gp__agent_steps_tick(gp_agent *a);
/* Writes <data>/bash_env.sh (slurm_env.h), every job's BASH_ENV, after the PATH dirs exist. */
void gp__agent_bash_env_init(gp_agent *a);
json_t *gp__agent_steps_report(const gp_agent *a); /* register's "steps": [{job, step, task}] */
/* The server has a step task's end (its step_exited event): its record goes (its output
 * stays until the job's last task here is removed). */
void gp__agent_step_acked(gp_agent *a, const json_t *event);

/* ---- agent_hooks.c: a job task's life events, to the features that registered ---- */
void gp__agent_hooks_add(gp_agent *a, const gp__agent_job_hooks *h); /* at agent start */
void gp__agent_hooks_started(gp_agent *a, gp__agent_job *j);
void gp__agent_hooks_exit_status(gp_agent *a, const gp__agent_job *j, bool *known, int *code, int *sig);
void gp__agent_hooks_ending(gp_agent *a, gp__agent_job *j);
void gp__agent_hooks_ended(gp_agent *a, const gp__agent_job *j);
void gp__agent_hooks_stopping(gp_agent *a, const gp__agent_job *j);
bool gp__agent_hooks_holds(const gp_agent *a, const gp__agent_job *j);
json_t *gp__agent_hooks_usage(gp_agent *a, const gp__agent_job *j);
void gp__agent_hooks_removed(gp_agent *a, const gp__agent_job *j);
void gp__agent_hooks_tick(gp_agent *a, gp__agent_job *j, int64_t now_ms);
/* The features' tables (agent_steps.c, agent_container.c, agent_session.c, agent_batch.c,
 * agent_monitor.c, image_lru.c), registered by agent.c. */
extern const gp__agent_job_hooks gp__agent_steps_hooks, gp__agent_container_hooks,
    gp__agent_session_hooks, gp__agent_batch_hooks, gp__agent_monitor_hooks,
    gp__agent_image_lru_hooks;

/* ---- agent_table.c: the job table's queries and records ---- */
void gp__agent_job_add(gp_agent *a, gp__agent_job *j);
void gp__agent_job_path(const gp__agent_job *j, const char *name, char *buf, size_t size);
void gp__agent_job_note(const gp__agent_job *j, const char *text); /* a "gpool: ..." line in its stderr */
gp__agent_job *gp__agent_job_find(gp_agent *a, const char *id); /* any task of the job */
gp__agent_job *gp__agent_job_find_task(gp_agent *a, const char *id, int task); /* task < 0: any */
gp__agent_job *gp__agent_job_find_key(gp_agent *a, const char *key);
void gp__agent_job_key(const char *id, int task, char *buf, size_t size);
json_t *gp__agent_job_report(const gp__agent_job *j); /* register "jobs" entry */
void gp__agent_job_persist(const gp__agent_job *j);
bool gp__agent_job_id_valid(const char *id);

/* ---- containers and images (agent_container.c, image_*.c, images.c) ---- */
/* A container task (agent_container.c): replaces spec's command with the pull-then-run one
 * (*ret_argv owned: free with gp_agent_container_argv_free); GP_EINVAL with a sentence. */
struct gp_launch_spec;
/* image_pull.c: pull_image orders, run as children the heartbeat looks at. */
void gp__agent_pull_run(gp_agent *a, const char *order, const gp_proto_pull *p);
void gp__agent_pulls_tick(gp_agent *a);
void gp__agent_pulls_free(gp_agent *a);

int gp__agent_container_prepare(gp_agent *a, const gp_proto_start *o, const gp__agent_job *j,
                                const char *workdir, uid_t uid, gid_t gid, int n_groups,
                                const gid_t *groups, const char *home, const int *gpus,
                                int n_gpus, char *const *envp, struct gp_launch_spec *spec,
                                char ***ret_argv, gp_err *err);
/* The engine's name of the container of the task with this key ("gpool-<agent>-<key>"). */
void gp__agent_container_name(const gp_agent *a, const char *key, char *buf, size_t size);
/* image_access.c: whether an image's registry is one a user's own credential pulled from on
 * this node (then each job in it has its pull checked for its own user, the image present
 * or not), and marking one so (kept in <data_dir>/private-registries). */
bool gp__agent_registry_private(gp_agent *a, const char *image);
void gp__agent_registry_mark_private(gp_agent *a, const char *image);
void gp__agent_private_free(gp_agent *a);
/* Reads the engine's images when due, applying the store's cap (image_lru.c). */
void gp__agent_images_refresh(gp_agent *a);
/* Reads the models_dir when due (models.c). */
void gp__agent_models_refresh(gp_agent *a);
/* Runs argv, its stdout (at most GP_AGENT_IMAGES_OUTPUT_MAX bytes, 10 s; owned) or NULL
 * when it failed (images.c). */
char *gp__agent_images_capture(char **argv, size_t *ret_len);
/* image_lru.c: the cap on the node's image store (container.image_store_max). An image a
 * job starts in, or a pre-pull fetched, was used now. */
void gp__agent_image_used(gp_agent *a, uint64_t image);
/* After a read of the engine's images (its JSON, `text`): removes least recently used
 * images no container and no running job uses while their total passes the cap. True when
 * it removed one (the list read is stale). */
bool gp__agent_images_trim(gp_agent *a, const char *text, size_t len);
/* ---- agent_jobs.c: a task's stop, end, removal and re-adoption ---- */
/* An "exited" event that names no task (the server reads it as every task of the job on
 * this node). `order`: the order it answers (the run's start order, or the stop order of a
 * job not found here), whose run the server applies it to; NULL: none. */
json_t *gp__agent_exited_event(const char *job, int64_t at, bool exit_known, int code, int sig,
                               const char *reason, const char *message, const char *order);
/* The same for one task (task < 0: none named). */
json_t *gp__agent_task_exited_event(const char *job, int task, int64_t at, bool exit_known,
                                    int code, int sig, const char *reason, const char *message,
                                    const char *order);
/* A start that cannot be honoured: an "exited" event of the task with reason start_failed
 * and why. */
void gp__agent_job_start_failed(gp_agent *a, const char *order_id, const char *job_id, int task,
                          int exit_code, const char *message);
void gp__agent_job_stop(gp_agent *a, const char *order_id, const gp_proto_stop *o);
/* Stops a job on the agent's own decision (GPU fault): signal, grace, reason for the event. */
void gp__agent_job_stop_local(gp_agent *a, gp__agent_job *j, int grace_s, const char *reason,
                        const char *message);
void gp__agent_jobs_tick(gp_agent *a);
void gp__agent_jobs_adopt(gp_agent *a);   /* at start-up */
void gp__agent_job_remove(gp_agent *a, gp__agent_job *j); /* after the server acknowledged its end */
void gp__agent_stats_update(gp_agent *a);

/* ---- agent_batch.c ---- */
/* This task's -o/--error file names ("" for none; -1 when a name does not
 * expand within size bytes), and the signal before the time limit. */
int gp__agent_output_names(const gp_agent *a, const gp_proto_start *o, const char *user,
                           char *out, char *err, size_t size);
void gp__agent_warn_arm(gp__agent_job *j, const gp_proto_start *o, int64_t now_ms);
/* For a backend without a driver (has_driver false): writes <data>/sim-bin/nvidia-smi and
 * sets sim_bin (sim_bin.c). */
int gp__agent_sim_bin_write(gp_agent *a);

/* ---- agent_share.c ---- */
/* Decides how a placement is isolated; fills enforcement, the per-GPU limit and extra env
 * (MPS variables). Returns 0, or an error with a sentence (fail closed). */
typedef struct gp__agent_share_plan {
  char enforcement[16];
  int64_t limit_mib;
  char mps_pipe_dir[512];
  char mps_mem_limit[256];   /* CUDA_MPS_PINNED_DEVICE_MEM_LIMIT, "" when not MPS */
  int mps_thread_pct;
} gp__agent_share_plan;
int gp__agent_share_decide(gp_agent *a, const int *gpus, int n_gpus, int64_t gpu_milli,
                     int64_t gpu_mem_mib, const char *mig_uuid, gp__agent_share_plan *ret, gp_err *err);
bool gp__agent_mps_running(const gp_agent *a, char *pipe_dir, size_t size);
/* Stops watchdog-enforced jobs above their share, from a telemetry round's attribution. */
void gp__agent_watchdog_check(gp_agent *a, const gp_telemetry_view *v);
int gp__agent_mig_apply(gp_agent *a, int gpu, const char *const *profiles, const int *slots, int n,
                  gp_err *err);
int gp__agent_mig_apply_config(gp_agent *a);
json_t *gp__agent_mig_json(const gp_gpu_info *g);

/* ---- agent_monitor.c ---- */
int gp__agent_monitor_new(gp_agent *a, gp_err *err);
void gp__agent_monitor_free(gp_agent *a);
void gp__agent_monitor_tick(gp_agent *a);     /* one telemetry round per second, health actions */
json_t *gp__agent_job_usage_json(gp_agent *a, const char *job_id); /* NULL when unknown */
/* "healthy" or "drained" and why, combining drain orders and the health engine. */
const char *gp__agent_gpu_health(gp_agent *a, int gpu, char *reason, size_t size);

/* ---- spot.c ---- */
enum { GP__AGENT_SPOT_NONE = 0, GP__AGENT_SPOT_NOTICE = 1, GP__AGENT_SPOT_ERROR = -1 };
typedef struct gp__agent_spot_notice {
  int64_t deadline;          /* epoch seconds the instance goes */
  char detail[160];          /* what the service said, for the log and the event */
} gp__agent_spot_notice;
/* Reads one metadata answer (HTTP status and body) of `provider`: a NOTICE only from a
 * well-formed positive answer; NONE from a well-formed negative one; ERROR (with `why`)
 * for anything else. Pure: the tests feed it every format. */
int gp__agent_spot_parse(gp_agent_spot_provider provider, long status, const char *body,
                         size_t len, int64_t now_s, gp__agent_spot_notice *ret, char *why,
                         size_t why_size);
int gp__agent_spot_start(gp_agent *a, gp_err *err); /* no-op without `spot:` */
void gp__agent_spot_stop(gp_agent *a);
void gp__agent_spot_take(gp_agent *a);               /* the loop: notices become events */
void gp__agent_spot_metrics(gp_agent *a, gp_buf *out);

/* ---- agent_http.c ---- */
int gp__agent_http_start(gp_agent *a, gp_err *err);
void gp__agent_http_stop(gp_agent *a);

#endif
