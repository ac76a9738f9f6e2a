/* SPDX-License-Identifier: Apache-2.0 */
/* Bounds of the agent protocol: every field a decoder reads is held to one of these, so a
 * malformed or hostile document costs a bounded amount of memory and time on either side.
 * The agent's own tables are sized by the same figures (GP_GPU_MAX_DEVICES equals
 * GP_PROTO_MAX_GPUS; agent_orders.c asserts it). */
#ifndef GP_PROTOCOL_LIMITS_H
#define GP_PROTOCOL_LIMITS_H

#define GP_PROTO_ID_MAX 64             /* bytes in an order or job id, with its NUL */
#define GP_PROTO_MAX_GPUS 32           /* GPUs of one node; a GPU index is below it */
#define GP_PROTO_MAX_MIG 7             /* MIG instances of one GPU */
#define GP_PROTO_MAX_TASKS 1024        /* tasks of one gang: hosts, task_index */
#define GP_PROTO_STR_MAX 4096          /* bytes in a name, user, queue, workdir */
#define GP_PROTO_NODE_MAX 256          /* bytes in a node name, with its NUL */
#define GP_PROTO_UUID_MAX 129          /* bytes in a GPU or MIG UUID, with its NUL */
#define GP_PROTO_PROFILE_MAX 33        /* bytes in a MIG profile name ("3g.40gb"), with NUL */
#define GP_PROTO_SIGNAL_MAX 16         /* bytes in a signal name ("USR1"), with its NUL */
#define GP_PROTO_REASON_MAX 32         /* bytes in a stop or exit reason, with its NUL */
#define GP_PROTO_TEXT_MAX 513          /* bytes in a free-text reason or message, with NUL */
#define GP_PROTO_MAX_ARGS 4096         /* command words */
#define GP_PROTO_MAX_ARGS_BYTES (256 * 1024)
#define GP_PROTO_MAX_ENV 4096          /* environment variables */
#define GP_PROTO_MAX_ENV_BYTES (1024 * 1024)
#define GP_PROTO_MAX_GRACE_S 86400     /* a longer grace period is cut to a day */

/* A node's credential: the secret an agent makes for its node, in lowercase hex digits
 * (32: 128 random bits). */
#define GP_PROTO_CREDENTIAL_MIN 32
#define GP_PROTO_CREDENTIAL_MAX 128

/* Heartbeat answers. The agent reads up to GP_PROTO_ANSWER_MAX bytes; the server packs
 * orders up to GP_PROTO_ORDERS_BUDGET and sends the rest at the next poll, which follows at
 * once. The budget also bounds the time an agent spends on one answer between two
 * heartbeats (it writes each start order's command and environment to disk): a few large
 * start orders, or hundreds of usual ones (1-2 KB). One order always goes alone if it must:
 * the bounds above keep the largest start order (a 256 KiB command and 1 MiB environment,
 * every byte escaped as \u00XX: 7.5 MiB, plus 1024 hosts and four strings of 4 KiB) under
 * the agent's limit. */
#define GP_PROTO_ANSWER_MAX ((size_t)16 << 20)
#define GP_PROTO_JOB_KEY_MAX 80        /* bytes in a job's step credential, with its NUL */
#define GP_PROTO_MAX_STEPS 100000      /* step ids of one job: 0..GP_PROTO_MAX_STEPS - 1 */
#define GP_PROTO_MAX_STEP_ENV 1024     /* variables srun passes to a step */
#define GP_PROTO_MAX_STEP_ENV_BYTES (128 * 1024)
#define GP_PROTO_ORDERS_BUDGET ((size_t)1 << 20)

#endif
