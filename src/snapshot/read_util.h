/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers shared by the snapshot readers (internal to src/snapshot: gp__snap_ names): field
 * paths for messages, key checks with caller-allowed extras, bounded names and lists. */
#ifndef GP_SNAPSHOT_READ_UTIL_H
#define GP_SNAPSHOT_READ_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/model.h"

#include "util/doc.h"
#include "util/error.h"
#include "util/mem.h"

/* gp_doc_check_keys over `allowed` plus `extra` (both NULL-terminated; extra may be NULL). */
int gp__snap_check_keys(const gp_doc *d, const gp_doc_node *map, const char *path,
                   const char *const *allowed, const char *const *extra, gp_err *err);

/* Formats "path[index].key"; index < 0 leaves out "[index]", key NULL leaves out ".key". */
void gp__snap_field(char *buf, size_t size, const char *path, int index, const char *key);

/* A non-empty name of at most GP_READ_MAX_NAME bytes without control characters, copied
 * into the arena. */
int gp__snap_read_name(const gp_doc *d, const gp_doc_node *n, const char *field, gp_arena *arena,
                  const char **ret, gp_err *err);

/* Fails unless seq is a list of at most `max` items. */
int gp__snap_list(const gp_doc *d, const gp_doc_node *seq, const char *path, int max, gp_err *err);

/* Host memory of map m: `mem_gib` (a number of GiB) or `mem` ("512G"), not both.
 * *ret_found says whether either was there (*ret untouched otherwise). */
int gp__snap_read_host_mem(const gp_doc *d, const gp_doc_node *m, const char *path, int index,
                      int64_t *ret, bool *ret_found, gp_err *err);

/* A label map {key: value} (at most GP_READ_MAX_LABELS), copied into the arena. */
int gp__snap_read_labels(const gp_doc *d, const gp_doc_node *n, const char *field, gp_arena *arena,
                    gp_label **ret, int *ret_n, gp_err *err);

/* A sorted index of names for duplicate checks and lookups in O(log n) (snapshots may
 * hold a million jobs). Entries point at the caller's strings. */
typedef struct gp__snap_name_entry {
  const char *name;
  int index;
} gp__snap_name_entry;

typedef struct gp__snap_names {
  int n;
  gp__snap_name_entry *e;
} gp__snap_names;

/* Builds the index over names[0..n) (allocated in arena). If two are equal, returns
 * GP_EEXIST with *ret_dup set to the larger index of the first such pair (the later
 * definition, whose line a message should give); the index is still usable. */
int gp__snap_names_build(gp__snap_names *ix, const char *const *names, int n, gp_arena *arena,
                    int *ret_dup);
/* The index of `name`, or -1. */
int gp__snap_names_find(const gp__snap_names *ix, const char *name);

#endif
