/* SPDX-License-Identifier: Apache-2.0 */
/* String -> int map with linear probing (see strmap.h). FNV-1a hashing; the table is kept
 * at most half full so probes stay short. */
#include "core/strmap.h"

#include <stdlib.h>
#include <string.h>

#include "util/mem.h"

uint32_t gp__core_strhash(const char *s) {
  uint32_t h = 2166136261u;
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) h = (h ^ *p) * 16777619u;
  return h;
}

static void alloc_table(gp__core_strmap *m, size_t cap) {
  m->mask = cap - 1;
  m->keys = gp_xcalloc(cap, sizeof *m->keys);
  m->vals = gp_xcalloc(cap, sizeof *m->vals);
  m->hashes = gp_xcalloc(cap, sizeof *m->hashes);
}

void gp__core_strmap_init(gp__core_strmap *m, size_t expected) {
  size_t cap = 16;
  while (cap < expected * 2) cap *= 2;
  m->n = 0;
  alloc_table(m, cap);
}

void gp__core_strmap_done(gp__core_strmap *m) {
  free(m->keys);
  free(m->vals);
  free(m->hashes);
  memset(m, 0, sizeof *m);
}

static void grow(gp__core_strmap *m) {
  gp__core_strmap old = *m;
  alloc_table(m, (old.mask + 1) * 2);
  for (size_t i = 0; i <= old.mask; i++) {
    if (!old.keys[i]) continue;
    size_t j = old.hashes[i] & m->mask;
    while (m->keys[j]) j = (j + 1) & m->mask;
    m->keys[j] = old.keys[i];
    m->vals[j] = old.vals[i];
    m->hashes[j] = old.hashes[i];
  }
  free(old.keys);
  free(old.vals);
  free(old.hashes);
}

int gp__core_strmap_get(const gp__core_strmap *m, const char *key) {
  uint32_t h = gp__core_strhash(key);
  for (size_t j = h & m->mask; m->keys[j]; j = (j + 1) & m->mask)
    if (m->hashes[j] == h && strcmp(m->keys[j], key) == 0) return m->vals[j];
  return -1;
}

int gp__core_strmap_put(gp__core_strmap *m, const char *key, int val) {
  uint32_t h = gp__core_strhash(key);
  size_t j = h & m->mask;
  for (; m->keys[j]; j = (j + 1) & m->mask)
    if (m->hashes[j] == h && strcmp(m->keys[j], key) == 0) return m->vals[j];
  m->keys[j] = key;
  m->vals[j] = val;
  m->hashes[j] = h;
  if (++m->n * 2 > m->mask + 1) grow(m);
  return -1;
}
