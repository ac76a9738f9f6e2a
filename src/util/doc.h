/* SPDX-License-Identifier: Apache-2.0 */
/* A YAML (and therefore JSON) document loaded into a small tree that remembers the line of
 * every node, so config, snapshot and trace readers can say "file:line: key: problem".
 * Inputs are untrusted: size, depth and node count are bounded; anchors/aliases are
 * refused. The tree and all its strings belong to the gp_doc (gp_doc_free). */
#ifndef GP_UTIL_DOC_H
#define GP_UTIL_DOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

#define GP_DOC_MAX_BYTES ((size_t)64 << 20)
#define GP_DOC_MAX_DEPTH 64
#define GP_DOC_MAX_NODES 20000000

typedef enum gp_doc_kind { GP_DOC_SCALAR, GP_DOC_SEQ, GP_DOC_MAP } gp_doc_kind;

typedef struct gp_doc_node {
  gp_doc_kind kind;
  int line;                    /* 1-based */
  const char *scalar;          /* GP_DOC_SCALAR: the text */
  bool quoted;                 /* scalar was quoted ("null" stays a string) */
  int n;                       /* SEQ: items; MAP: pairs */
  struct gp_doc_node **items;  /* SEQ items or MAP values */
  const char **keys;           /* MAP keys */
} gp_doc_node;

typedef struct gp_doc {
  const char *name;            /* file name for messages */
  gp_doc_node *root;           /* NULL for an empty document */
  struct gp_arena *arena;
} gp_doc;

int gp_doc_load_file(const char *path, gp_doc **ret, gp_err *err);
int gp_doc_load_string(const char *name, const char *text, size_t len, gp_doc **ret,
                       gp_err *err);
void gp_doc_free(gp_doc *doc); /* accepts NULL */

/* The value of `key` in a map, or NULL (also when `map` is NULL or not a map). */
const gp_doc_node *gp_doc_get(const gp_doc_node *map, const char *key);

/* True for a scalar that reads as null (~, null, empty, unquoted). */
bool gp_doc_is_null(const gp_doc_node *n);

/* Typed readers. On a wrong type they fill *err with the doc's file, the node's line and
 * `field` (a path such as "jobs[2].gpus") and return GP_EINVAL; *ret is untouched then. */
int gp_doc_int(const gp_doc *d, const gp_doc_node *n, const char *field, int64_t *ret, gp_err *err);
/* An integer within lo..hi (both within int), else GP_EINVAL "must be between lo and hi". */
int gp_doc_int_range(const gp_doc *d, const gp_doc_node *n, const char *field, int64_t lo,
                     int64_t hi, int *ret, gp_err *err);
int gp_doc_double(const gp_doc *d, const gp_doc_node *n, const char *field, double *ret, gp_err *err);
int gp_doc_bool(const gp_doc *d, const gp_doc_node *n, const char *field, bool *ret, gp_err *err);
int gp_doc_str(const gp_doc *d, const gp_doc_node *n, const char *field, const char **ret, gp_err *err);
/* Memory ("64G", "512Mi", "1024" = MiB) and durations ("90", "30s", "4h", "1-00:00:00",
 * "2:30:00") in a document. */
int gp_doc_mem_mib(const gp_doc *d, const gp_doc_node *n, const char *field, int64_t *ret, gp_err *err);
int gp_doc_duration_s(const gp_doc *d, const gp_doc_node *n, const char *field, int64_t *ret, gp_err *err);

/* "path.key" into buf (cut to fit), for the field named in an error; returns buf. Lets the
 * pure modules (core, ledger) name fields without formatting strings themselves. */
const char *gp_doc_path(char *buf, size_t size, const char *path, const char *key);

/* A string that must be one of `count` names: *ret is its index. The error lists them all
 * ("field: must be day, week or month, not \"year\""). */
int gp_doc_enum(const gp_doc *d, const gp_doc_node *n, const char *field,
                const char *const *names, int count, int *ret, gp_err *err);

/* Fails on the first key of `map` not in the NULL-terminated `allowed` list, naming it
 * ("path.key: unknown key"). */
int gp_doc_check_keys(const gp_doc *d, const gp_doc_node *map, const char *path,
                      const char *const *allowed, gp_err *err);
/* Fails unless n is of `kind` ("path: expected a list"). */
int gp_doc_expect(const gp_doc *d, const gp_doc_node *n, const char *path, gp_doc_kind kind,
                  gp_err *err);

#endif
