/* SPDX-License-Identifier: Apache-2.0 */
/* Events: what an agent reports to the server in its heartbeat (docs/internals/protocol.md).
 * One struct holds every kind; each kind uses the fields its comment names. The agent
 * encodes, the server decodes.
 *
 * Decoding is strict only where the server cannot act without a field: an event is an
 * object with a kind, a job event names its job, a GPU event its GPU. Every other field is
 * read within its bounds, and a value outside them reads as absent: an agent keeps an event
 * until the server acknowledges it, so refusing one for a stray field would have the agent
 * send it again at every heartbeat. */
#ifndef GP_PROTOCOL_EVENT_H
#define GP_PROTOCOL_EVENT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "protocol/limits.h"
#include "util/error.h"

#define GP_PROTO_MAX_FAULT_JOBS 16     /* jobs named by one gpu_fault event */
#define GP_PROTO_ENFORCEMENT_MAX 32    /* bytes in an enforcement name, with its NUL */
#define GP_PROTO_ACTION_MAX 128        /* bytes in a gpu_fault action list, with its NUL */
#define GP_PROTO_MAX_USAGE_KEYS 32     /* figures in an exited event's usage */

typedef enum gp_proto_event_kind {
  GP_PROTO_EV_STARTED = 1, /* "started": a task runs */
  GP_PROTO_EV_EXITED,      /* "exited": a task ended, or never started */
  GP_PROTO_EV_CHECKPOINT,  /* "checkpoint": a job reported a checkpoint */
  GP_PROTO_EV_GPU_FAULT,   /* "gpu_fault": the health engine acted on a GPU fault */
  GP_PROTO_EV_MIG_DONE,    /* "mig_done": the answer to a mig order */
  GP_PROTO_EV_INJECT_DONE, /* "inject_done": the answer to an inject order */
  GP_PROTO_EV_INTERRUPTION, /* "interruption": the cloud will reclaim the node (spot notice) */
  GP_PROTO_EV_IMAGE,       /* "image": a container task's pull began ("reason": pulling),
                              went on (progress: done_bytes of total_bytes) or ended
                              (pulled); "message" says which image and how long */
  GP_PROTO_EV_STEP_EXITED, /* "step_exited": a job step's task ended, or never started */
  GP_PROTO_EV_PULL_DONE,   /* "pull_done": the answer to a pull_image order (order, ok,
                              message) */
  GP_PROTO_EV_PULL_PROGRESS, /* "pull_progress": a pull_image order's pull went on (order,
                                done_bytes of total_bytes) */
} gp_proto_event_kind;

#define GP_PROTO_PULL_BYTES_MAX (INT64_C(1) << 50) /* an image's bytes: 1 PiB at most */
#define GP_PROTO_SOURCE_MAX 16          /* bytes in an interruption's source, with its NUL */

typedef struct gp_proto_mig_instance {
  char uuid[GP_PROTO_UUID_MAX];       /* "" when not known */
  char profile[GP_PROTO_PROFILE_MAX];
  int start_slot;                     /* 0..7 */
  int gpu_instance_id;                /* the driver's; 0 when not given */
  int64_t mem_mib;                    /* the instance's memory; 0 when not given */
} gp_proto_mig_instance;

typedef struct gp_proto_event {
  gp_proto_event_kind kind;
  char job[GP_PROTO_ID_MAX];          /* started, exited, checkpoint */
  int task;                           /* started, exited, checkpoint: the job's task index,
                                         0..GP_PROTO_MAX_TASKS - 1; -1 when not given (an
                                         agent from before tasks were reported: the job's
                                         tasks on the node are meant) */
  char order[GP_PROTO_ID_MAX];        /* started, exited: the run's start order; mig_done,
                                         inject_done: the order answered; "" when none */
  int64_t at;                         /* epoch seconds; 0 when not given */
  /* started */
  int64_t pid;                        /* 0 when not given */
  char enforcement[GP_PROTO_ENFORCEMENT_MAX]; /* exclusive, mps, watchdog, none, mig; "" */
  int64_t gpu_mem_limit_mib;          /* watchdog: the per-GPU share; 0 when none */
  /* exited */
  bool has_exit_code;                 /* false: the process never ran or died by a signal */
  int exit_code;
  int signal;                         /* 0 when none */
  bool has_reason;                    /* false: not given (the exit was a plain one) */
  char reason[GP_PROTO_REASON_MAX];   /* exited, killed, oom, limit_exceeded, lost,
                                         start_failed, gpu_fault */
  json_t *usage;                      /* borrowed: an object of figures, NULL when none */
  /* exited, mig_done, inject_done */
  bool has_message;                   /* false: not given; "" is a message, if an empty one */
  char message[GP_PROTO_TEXT_MAX];
  /* step_exited (also job, task: the step task's rank, at, exit_code, signal, reason,
     message) */
  int step;                           /* 0..GP_PROTO_MAX_STEPS - 1; -1 when not given */
  int64_t out_bytes, err_bytes;       /* the sizes of its stdout and stderr; 0 when not given */
  /* image "progress", pull_progress: bytes pulled so far, and the image's (0: not known); -1 when not
     given or past GP_PROTO_PULL_BYTES_MAX */
  int64_t done_bytes, total_bytes;
  /* gpu_fault, mig_done */
  int gpu;                            /* 0..GP_PROTO_MAX_GPUS - 1 */
  /* gpu_fault */
  int64_t xid;
  char action[GP_PROTO_ACTION_MAX];   /* comma list: ignore, fail_job, drain_gpu, drain_node,
                                         fail_gpu */
  char fault[GP_PROTO_TEXT_MAX];      /* what happened ("reason" on the wire) */
  int n_jobs;
  char jobs[GP_PROTO_MAX_FAULT_JOBS][GP_PROTO_ID_MAX];
  /* mig_done, inject_done */
  bool ok;
  /* interruption (also `at`, and `message`: what the metadata service said) */
  int64_t deadline;                   /* epoch seconds the node goes; 0 when not given */
  int64_t at_ms;                      /* epoch ms the notice was seen; 0 when not given */
  char source[GP_PROTO_SOURCE_MAX];   /* aws, gcp, azure; "" when not given */
  /* mig_done */
  bool has_mig;                       /* false: the event carries no valid layout */
  int n_mig;
  gp_proto_mig_instance mig[GP_PROTO_MAX_MIG];
} gp_proto_event;

/* A pull's progress as people read it: "3.1 of 9.8 GB", "12.0 of 41.1 MB" (the unit of the
 * larger figure), "12.0 MB so far" when the total is not known (0). */
void gp_proto_pull_bytes_text(int64_t done, int64_t total, char *buf, size_t size);

/* The kind's name on the wire, or NULL for a value out of the enum. */
const char *gp_proto_event_kind_name(gp_proto_event_kind kind);

/* Encodes an event with the kind's fields in a fixed order. A new reference. */
json_t *gp_proto_event_encode(const gp_proto_event *ev);

/* Decodes an event into *ret (usage borrowed from doc). GP_EINVAL when the event is not an
 * object with a kind ("an event is an object with a kind"), a job event has no job id or a
 * GPU event no GPU index (the message says which); GP_ENOENT for a kind this build does not
 * know (a newer agent's: the server skips it). */
int gp_proto_event_decode(const json_t *doc, gp_proto_event *ret, gp_err *err);

#endif
