/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers shared by the snapshot readers (internal to src/snapshot: gp__ names): field
 * paths for messages, key checks with caller-allowed extras, bounded names and lists. */
#ifndef GP_SNAPSHOT_READ_UTIL_H
#define GP_SNAPSHOT_READ_UTIL_H

#include <stddef.h>

#include "util/doc.h"
#include "util/error.h"
#include "util/mem.h"

/* gp_doc_check_keys over `allowed` plus `extra` (both NULL-terminated; extra may be NULL). */
int gp__check_keys(const gp_doc *d, const gp_doc_node *map, const char *path,
                   const char *const *allowed, const char *const *extra, gp_err *err);

/* Formats "path[index].key"; index < 0 leaves out "[index]", key NULL leaves out ".key". */
void gp__field(char *buf, size_t size, const char *path, int index, const char *key);

/* A non-empty name of at most GP_READ_MAX_NAME bytes without control characters, copied
 * into the arena. */
int gp__read_name(const gp_doc *d, const gp_doc_node *n, const char *field, gp_arena *arena,
                  const char **ret, gp_err *err);

/* Fails unless seq is a list of at most `max` items. */
int gp__list(const gp_doc *d, const gp_doc_node *seq, const char *path, int max, gp_err *err);

#endif
