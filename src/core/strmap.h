/* SPDX-License-Identifier: Apache-2.0 */
/* A small open-addressing map from borrowed strings to non-negative ints (node names, queue
 * names, job ids -> view indexes). Lookups depend only on string contents, never on pointer
 * values, so results are deterministic. Internal to src/core. */
#ifndef GP_CORE_STRMAP_H
#define GP_CORE_STRMAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct gp__core_strmap {
  size_t mask;          /* capacity - 1; capacity is a power of two */
  size_t n;
  const char **keys;    /* borrowed; NULL = empty slot */
  int *vals;
  uint32_t *hashes;
} gp__core_strmap;

/* Sized for `expected` keys (it grows past that). */
void gp__core_strmap_init(gp__core_strmap *m, size_t expected);
void gp__core_strmap_done(gp__core_strmap *m);
uint32_t gp__core_strhash(const char *s);
/* Returns the value stored for key, or -1. */
int gp__core_strmap_get(const gp__core_strmap *m, const char *key);
/* Inserts key -> val. Returns -1 when inserted, or the existing value (nothing changes). */
int gp__core_strmap_put(gp__core_strmap *m, const char *key, int val);

#endif
