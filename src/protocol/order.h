/* SPDX-License-Identifier: Apache-2.0 */
/* Orders: what the server asks of an agent (docs/internals/protocol.md). Each kind is a C
 * struct; the server builds one and encodes it, the agent decodes it and runs it, so both
 * sides read the same definition. Decoding checks every field the agent uses for its type
 * and bounds (limits.h) and names the first bad one in err->field; fields it does not know
 * are ignored, so a newer server may add some without breaking an older agent. */
#ifndef GP_PROTOCOL_ORDER_H
#define GP_PROTOCOL_ORDER_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "protocol/fault.h"
#include "protocol/limits.h"
#include "util/error.h"

typedef enum gp_proto_order_kind {
  GP_PROTO_START = 1, /* "start": run one task of a job */
  GP_PROTO_STOP,      /* "stop": signal a job, then kill it after a grace period */
  GP_PROTO_MIG,       /* "mig": lay out a GPU's MIG instances */
  GP_PROTO_DRAIN_GPU, /* "drain_gpu": start nothing more on a GPU */
  GP_PROTO_RESUME_GPU,/* "resume_gpu": put a drained GPU back in service */
  GP_PROTO_INJECT,    /* "inject": simulated faults (simulated backends only) */
  GP_PROTO_STEP,      /* "step": run one task of a job step (srun) in a task's allocation */
  GP_PROTO_STEP_STOP, /* "step_stop": signal a job step's tasks on the node */
  GP_PROTO_PULL_IMAGE,/* "pull_image": pull a container image ahead of the jobs in it */
} gp_proto_order_kind;

/* This task's share of the job's placement. */
typedef struct gp_proto_placement {
  char node[GP_PROTO_NODE_MAX];     /* "" when the order names none */
  int n_gpus;
  int gpu_ids[GP_PROTO_MAX_GPUS];   /* distinct indexes on the node */
  char gpu_uuids[GP_PROTO_MAX_GPUS][GP_PROTO_UUID_MAX]; /* "" when the server knows none */
  int64_t gpu_milli;                /* 1..1000 of each GPU; 0: not given */
  int64_t gpu_mem_mib;              /* per GPU; 0: not given */
  char mig_uuid[GP_PROTO_UUID_MAX]; /* "" when the task has no MIG instance */
} gp_proto_placement;

/* One task of a job. Strings are owned (gp_proto_order_done frees them); NULL when absent. */
typedef struct gp_proto_start {
  char id[GP_PROTO_ID_MAX];         /* a valid job id (gp_proto_job_id_valid) */
  char *name, *queue, *user;        /* at most GP_PROTO_STR_MAX bytes each */
  char *workdir;                    /* absolute; NULL: the user's home */
  int n_argv;                       /* 1..GP_PROTO_MAX_ARGS */
  char **argv;                      /* argv[0] not empty */
  int n_env;                        /* 0..GP_PROTO_MAX_ENV, in the job's order */
  char **env_keys, **env_values;    /* names [A-Za-z_][A-Za-z0-9_]* */
  int64_t gpu_milli;                /* the job's GPU fraction: 1..1000, 0 for whole GPUs */
  int64_t gpu_mem_mib;              /* the job's per-GPU memory, 0 when not asked for */
  int64_t cpu_milli;                /* 0: no CPU limit */
  int64_t mem_mib;                  /* 0: no memory limit */
  char signal[GP_PROTO_SIGNAL_MAX]; /* checkpoint signal name; "": the agent's default */
  int grace_s;                      /* 0..GP_PROTO_MAX_GRACE_S; -1: the agent's default */
  int tasks;                        /* 1..GP_PROTO_MAX_TASKS */
  int task_index;                   /* 0..tasks - 1 */
  int n_hosts;                      /* the gang's nodes by task index, 0..GP_PROTO_MAX_TASKS */
  char **hosts;
  int n_addrs;                      /* the address of each task's node as other nodes reach
                                       it (the host its agent advertises), by task index;
                                       0..GP_PROTO_MAX_TASKS; 0 when the server sent none */
  char **addrs;
  int master_port;                  /* the job's rendezvous port (MASTER_PORT), the same for
                                       every task; 0 when the server chose none */
  bool has_placement;
  gp_proto_placement placement;
  /* Slurm's batch options (docs/user-guide.md): absent in an older server's orders. */
  char *output, *error;             /* -o/--error file patterns (outpath.h); NULL: none */
  bool output_append;               /* --open-mode=append; else the files are truncated */
  int64_t time_limit;               /* seconds; 0: none (the server enforces the limit) */
  char warn_signal[GP_PROTO_SIGNAL_MAX]; /* Slurm's --signal=[B:]SIG@T: SIG, "": none... */
  int warn_before_s;                /* ...sent this long before the limit (0: none)... */
  bool warn_batch;                  /* ...to the job's main process only (B:) */
  int restarts;                     /* how many times the job was requeued before */
  /* Slurm's batch semantics (docs/slurm.md): a batch job runs its command once, as task 0
   * (the batch step); its other tasks hold their share of the allocation and run nothing
   * of their own. Absent (false) in an older server's orders: every task runs it. */
  bool batch;
  int n_node_gpus;                  /* the batch task: every GPU index the job holds on its
                                       node (its own and its holders'), which the batch step
                                       sees, as in Slurm; 0: its own placement's */
  int node_gpus[GP_PROTO_MAX_GPUS];
  struct gp_proto_container *container; /* its image (protocol/container.h); NULL: bare */
  char job_key[GP_PROTO_JOB_KEY_MAX]; /* the run's step credential (GPOOL_JOB_KEY), "": none */
  char *registry_auth;              /* the owner's credential for the image's registry
                                       (protocol/registry.h), NULL: none */
  bool registry_auth_pool;          /* it is the pool-wide one an admin set, not the
                                       owner's own ("registry_auth_scope": "pool"; else
                                       "user", which an absent scope reads as) */
  struct gp_proto_service *service; /* a service replica: its port and probes
                                       (protocol/service.h); NULL: a plain job */
} gp_proto_start;

/* One task of a job step (step_order.c): what srun asked, placed on one task of the job's
 * allocation on this node, whose cgroup and environment it runs in. Strings owned. */
typedef struct gp_proto_step {
  char job[GP_PROTO_ID_MAX];
  int step;                         /* 0..GP_PROTO_MAX_STEPS - 1 */
  int task, tasks;                  /* this step task's rank, of 1..GP_PROTO_MAX_TASKS */
  int alloc_task;                   /* the job task it runs in, 0..GP_PROTO_MAX_TASKS - 1 */
  int n_hosts;                      /* the step's node names by rank (n_hosts == tasks) */
  char **hosts;
  int n_addrs;                      /* their addresses as other nodes reach them, by rank */
  char **addrs;
  int master_port;                  /* the step's rendezvous port, 1..65535 */
  int n_argv;                       /* 1..GP_PROTO_MAX_ARGS */
  char **argv;
  int n_env;                        /* srun's caller environment, 0..GP_PROTO_MAX_STEP_ENV */
  char **env_keys, **env_values;
  bool own_gpus;                    /* `gpus` are its job task's own (a MIG task keeps its
                                       instance); else all of the job's on the node */
  int n_gpus;                       /* the GPUs it sees (indexes) */
  int gpus[GP_PROTO_MAX_GPUS];
} gp_proto_step;

typedef struct gp_proto_step_stop {
  char job[GP_PROTO_ID_MAX];
  int step;
  char signal[GP_PROTO_SIGNAL_MAX]; /* "": TERM, then KILL after the job's grace period */
  char reason[GP_PROTO_REASON_MAX]; /* cancelled, bad_exit, job_ended */
} gp_proto_step_stop;

typedef struct gp_proto_stop {
  char job[GP_PROTO_ID_MAX];
  char signal[GP_PROTO_SIGNAL_MAX]; /* "": the job's checkpoint signal */
  int grace_s;                      /* 0..GP_PROTO_MAX_GRACE_S; -1: the job's own */
  char reason[GP_PROTO_REASON_MAX]; /* preempted, cancelled, timeout, lost...; "" when none */
} gp_proto_stop;

typedef struct gp_proto_mig {
  int gpu;                          /* 0..GP_PROTO_MAX_GPUS - 1 */
  int n;                            /* 1..GP_PROTO_MAX_MIG instances */
  char profiles[GP_PROTO_MAX_MIG][GP_PROTO_PROFILE_MAX];
  int start_slots[GP_PROTO_MAX_MIG]; /* -1: the agent places it */
} gp_proto_mig;

/* drain_gpu and resume_gpu. */
typedef struct gp_proto_gpu_admin {
  int gpu;                          /* 0..GP_PROTO_MAX_GPUS - 1 */
  bool has_reason;                  /* false: encoded as null */
  char reason[GP_PROTO_TEXT_MAX];
} gp_proto_gpu_admin;

typedef struct gp_proto_inject {
  char fault[GP_PROTO_FAULT_SPEC_MAX + 1]; /* the spec as the admin wrote it */
  int n_faults;                            /* decoding parses it: */
  gp_proto_fault faults[GP_PROTO_MAX_FAULTS];
} gp_proto_inject;

/* pull_image: an admin's pre-pull (docs/containers.md#pre-pulling). */
typedef struct gp_proto_pull {
  char image[256];                  /* a valid reference (protocol/container.h) */
  char auth[2048];                  /* the pool-wide credential of its registry (base64),
                                       added as the order is sent; "": none */
} gp_proto_pull;

typedef struct gp_proto_order {
  char id[GP_PROTO_ID_MAX];         /* "o17"; "" while the server has not numbered it */
  gp_proto_order_kind kind;
  union {
    gp_proto_start start;
    gp_proto_stop stop;
    gp_proto_mig mig;
    gp_proto_gpu_admin gpu;         /* drain_gpu, resume_gpu */
    gp_proto_inject inject;
    gp_proto_step step;
    gp_proto_step_stop step_stop;
    gp_proto_pull pull;
  } u;
} gp_proto_order;

/* The kind's name on the wire ("start"), or NULL for a value out of the enum. */
const char *gp_proto_order_kind_name(gp_proto_order_kind kind);

/* The kind of a name, or 0 for a kind this build does not know. */
gp_proto_order_kind gp_proto_order_kind_parse(const char *name);

/* True for an id of 1..GP_PROTO_ID_MAX-1 letters, digits, '-', '_', '.' not starting with '.'
 * (job ids name directories on the agent). */
bool gp_proto_job_id_valid(const char *id);

/* Reads what every order carries: its id (a string of 1..GP_PROTO_ID_MAX-1 bytes) and the
 * name of its kind, both borrowed from doc. GP_EINVAL naming "id" or "kind" otherwise;
 * ret_* are untouched on failure. An agent remembers the id before it decodes the rest, so
 * an order it cannot run is refused once, not at every re-send. */
int gp_proto_order_head(const json_t *doc, const char **ret_id, const char **ret_kind,
                        gp_err *err);

/* Would an agent run this command, environment and working directory? The start order's own
 * rules (1..GP_PROTO_MAX_ARGS words in GP_PROTO_MAX_ARGS_BYTES; variable names
 * [A-Za-z_][A-Za-z0-9_]* in GP_PROTO_MAX_ENV_BYTES; an absolute workdir), so that a server
 * refuses at submission what an agent would refuse at start. GP_EINVAL naming "command",
 * "env" or "workdir". */
int gp_proto_start_check_run(const json_t *command, const json_t *env, const char *workdir,
                             gp_err *err);

/* Encodes an order: {"kind", the kind's fields..., "id" when o->id is set}. Returns a new
 * reference (the caller owns it). */
json_t *gp_proto_order_encode(const gp_proto_order *o);

/* Decodes an order into *ret (which the caller then releases with gp_proto_order_done).
 * GP_EINVAL with err->field naming the bad field ("job.command", "gpu", "start_slots");
 * GP_ENOENT for a kind this build does not know. On failure *ret holds nothing to free. */
int gp_proto_order_decode(const json_t *doc, gp_proto_order *ret, gp_err *err);

/* Frees what a decoded (or hand-built) order owns; the struct itself is the caller's. */
void gp_proto_order_done(gp_proto_order *o);

/* The start order's parts, for the kind table (order.c) and the tests. */
json_t *gp_proto_start_encode(const gp_proto_start *s);
int gp_proto_start_decode(const json_t *job, gp_proto_start *ret, gp_err *err);
void gp_proto_start_done(gp_proto_start *s);

/* A placement as the server's JOB object shows it ({"node", "gpu_ids", "gpu_uuids",
 * "gpu_milli", "gpu_mem_mib", "mig_uuid"}): the server takes a task's placement from there. */
int gp_proto_placement_decode(const json_t *p, gp_proto_placement *ret, gp_err *err);

/* The value of the start's environment variable `key`, or NULL. Borrowed from s. */
const char *gp_proto_start_env(const gp_proto_start *s, const char *key);

/* step_order.c: the step and step_stop kinds' fields (GP_EINVAL naming the field). */
json_t *gp__proto_step_encode(const gp_proto_order *o);
int gp__proto_step_decode(const json_t *d, gp_proto_order *o, gp_err *err);
void gp__proto_step_done(gp_proto_order *o);
json_t *gp__proto_step_stop_encode(const gp_proto_order *o);
int gp__proto_step_stop_decode(const json_t *d, gp_proto_order *o, gp_err *err);

#endif
