/* SPDX-License-Identifier: Apache-2.0 */
/* Readers from a gp_doc (YAML or JSON with line numbers) into the core's policy structs:
 * the scheduling policy, priority classes, queues and reserved node pools. The server's
 * config, `gpool plan` snapshots and the simulator all use them, so one key means the same
 * thing everywhere and every error reads "file:line: key: problem".
 *
 * Ownership: every array and string the readers return is copied into the gp_arena the
 * caller passes, so the gp_doc may be freed right after reading; the structs live as long
 * as the arena. On failure the ret_* outputs are untouched (the arena may have grown; free
 * it as usual).
 *
 * `path` names the node in messages ("queues", "scheduler.queues"); item i of a list is
 * reported as "path[i].key". Lists are bounded (GP_READ_MAX_*). */
#ifndef GP_SNAPSHOT_POLICY_READ_H
#define GP_SNAPSHOT_POLICY_READ_H

#include "core/model.h"
#include "util/doc.h"
#include "util/error.h"
#include "util/mem.h"

#define GP_READ_MAX_PRIORITY_CLASSES 64
#define GP_READ_MAX_QUEUES 10000
#define GP_READ_MAX_POOLS 15 /* the core keeps a pool slot per pool and allows 15 */
#define GP_READ_MAX_NAME 256 /* bytes in a queue, class, pool, node or job name */
/* Durations (time limits, min_runtime) up to 2^40 s (~35,000 years): far beyond any real
 * limit, and `now + limit` can never overflow in the core. */
#define GP_READ_MAX_DURATION_S ((int64_t)1 << 40)

/* Reads a policy map into *ret. Keys (all optional; missing ones keep *ret's value, so
 * call gp_policy_init(ret) first for the defaults): placement binpack|spread, sharing
 * gpool|fgd|bestfit|gpupacking|dotproduct|random, order fairshare|fifo|priority|sjf,
 * backfill, reclaim, preemption, dynamic_mig (booleans), min_runtime and
 * default_time_limit (durations: 600, "10m", "4h"), default_priority (a class name; checked
 * against the classes by gp_policy_check), seed (integer >= 0).
 * `extra_keys` (NULL-terminated, may be NULL) lists further keys the caller reads itself
 * from the same map; any other key is an error. The policy's priority-class list is not
 * touched (read it with gp_priority_classes_read). */
int gp_policy_read(const gp_doc *d, const gp_doc_node *map, const char *path,
                   const char *const *extra_keys, gp_arena *arena, gp_policy *ret,
                   gp_err *err);

/* Reads a list of {name, priority, preemptible} maps: name (required, unique), priority
 * (integer, required), preemptible (boolean, default true; say false for classes that must
 * never be preempted, like inference). The list is merged with DESIGN.md's defaults: a
 * class named like a default replaces it, others are added after the defaults. So
 * *ret_classes holds the defaults plus the new classes (the whole set the policy uses). */
int gp_priority_classes_read(const gp_doc *d, const gp_doc_node *seq, const char *path,
                             gp_arena *arena, gp_priority_class **ret_classes, int *ret_n,
                             gp_err *err);

/* Reads a list of queue maps: name (required, "org/team/proj", as gp_queue_name_ok
 * allows), deserved (GPUs, >= 0, default 0), limit (GPUs >= 0, or null /
 * "none": no ceiling; default none), weight (> 0, default 1), default_priority (class
 * name), default_time_limit (duration), spot ({prefer: neutral|prefer|avoid|never,
 * share: (0, 1]}, or just the preference: gp_queue.spot and spot_share). Names are unique. Queue i comes from seq->items[i],
 * so a caller that allows `extra_keys` (NULL-terminated, may be NULL; e.g. "users") reads
 * them from seq->items[i] itself. A limit below deserved is an error. */
int gp_queues_read(const gp_doc *d, const gp_doc_node *seq, const char *path,
                   const char *const *extra_keys, gp_arena *arena, gp_queue **ret_queues,
                   int *ret_n, gp_err *err);

/* Reads a list of pool maps: name (required, unique), queue (required), selector (a map
 * with exactly one label, e.g. {pool: inference}), lend (boolean, default true: other
 * queues may borrow the nodes as preemptible jobs). When `queues` is not NULL, each pool's
 * queue must be one of them or a parent of one ("org" for "org/a"). `extra_keys` as above;
 * pool i comes from seq->items[i]. */
int gp_pools_read(const gp_doc *d, const gp_doc_node *seq, const char *path,
                  const char *const *extra_keys, const gp_queue *queues, int n_queues,
                  gp_arena *arena, gp_pool **ret_pools, int *ret_n, gp_err *err);

/* Cross-checks that need several sections: the policy's default_priority and every
 * queue's default_priority name a known class. `doc`/`queues_seq` (may be NULL) are used
 * only to give the line of a bad queue. */
int gp_policy_check(const gp_policy *p, const gp_queue *queues, int n_queues,
                    const gp_doc *d, const gp_doc_node *policy_map,
                    const gp_doc_node *queues_seq, gp_err *err);

#endif
