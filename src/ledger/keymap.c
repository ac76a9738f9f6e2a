/* SPDX-License-Identifier: Apache-2.0 */
/* The report's group map (see keymap.h): open addressing, at most half full, over a 40-byte
 * key hashed as five 64-bit words. */
#include "ledger/keymap.h"

#include <stdlib.h>
#include <string.h>

#include "util/mem.h"

_Static_assert(sizeof(gp__ledger_key) == 40, "a key is five words with no padding");

void gp__ledger_key_init(gp__ledger_key *k) {
  memset(k, 0, sizeof *k);
  k->job = -1;
  k->period = k->queue = k->user = k->model = k->node = k->service = -1;
  k->capacity = -1;
}

static uint64_t mix(uint64_t h) {
  h ^= h >> 33;
  h *= UINT64_C(0xff51afd7ed558ccd);
  h ^= h >> 33;
  return h;
}

static uint64_t hash_key(const gp__ledger_key *k) {
  uint64_t w[5];
  memcpy(w, k, sizeof w);
  return mix(mix(w[0] ^ mix(w[1] * UINT64_C(0x9e3779b97f4a7c15))) ^
             mix(w[2] * UINT64_C(0xc4ceb9fe1a85ec53) + w[3]) ^
             mix(w[4] * UINT64_C(0x165667b19e3779f9)));
}

static inline int same_key(const gp__ledger_key *a, const gp__ledger_key *b) {
  uint64_t x[5], y[5];
  memcpy(x, a, sizeof x);
  memcpy(y, b, sizeof y);
  return ((x[0] ^ y[0]) | (x[1] ^ y[1]) | (x[2] ^ y[2]) | (x[3] ^ y[3]) | (x[4] ^ y[4])) == 0;
}

static void rehash(gp__ledger_map *m, size_t n_slots) {
  free(m->slots);
  m->slots = gp_xcalloc(n_slots, sizeof *m->slots);
  m->n_slots = n_slots;
  for (size_t e = 0; e < m->n; e++) {
    uint64_t h = hash_key(&m->entries[e].key);
    size_t i = h & (n_slots - 1);
    while (m->slots[i]) i = (i + 1) & (n_slots - 1);
    m->slots[i] = (h & ~UINT64_C(0xffffffff)) | (e + 1);
  }
}

gp__ledger_sums *gp__ledger_map_get(gp__ledger_map *m, const gp__ledger_key *k) {
  if ((m->n + 1) * 2 > m->n_slots) rehash(m, m->n_slots ? m->n_slots * 2 : 256);
  uint64_t h = hash_key(k), tag = h & ~UINT64_C(0xffffffff);
  size_t i = h & (m->n_slots - 1);
  for (; m->slots[i]; i = (i + 1) & (m->n_slots - 1)) {
    if ((m->slots[i] & ~UINT64_C(0xffffffff)) != tag) continue;
    gp__ledger_entry *e = &m->entries[(m->slots[i] & 0xffffffff) - 1];
    if (same_key(&e->key, k)) return &e->sums;
  }
  gp_xgrow((void **)&m->entries, &m->cap, m->n + 1, sizeof *m->entries);
  gp__ledger_entry *e = &m->entries[m->n];
  e->key = *k;
  memset(&e->sums, 0, sizeof e->sums);
  m->slots[i] = tag | ++m->n;
  return &e->sums;
}

gp__ledger_sums *gp__ledger_map_find(const gp__ledger_map *m, const gp__ledger_key *k) {
  if (!m->n_slots) return NULL;
  uint64_t h = hash_key(k), tag = h & ~UINT64_C(0xffffffff);
  for (size_t i = h & (m->n_slots - 1); m->slots[i]; i = (i + 1) & (m->n_slots - 1)) {
    if ((m->slots[i] & ~UINT64_C(0xffffffff)) != tag) continue;
    gp__ledger_entry *e = &m->entries[(m->slots[i] & 0xffffffff) - 1];
    if (same_key(&e->key, k)) return &e->sums;
  }
  return NULL;
}

void gp__ledger_map_done(gp__ledger_map *m) {
  free(m->entries);
  free(m->slots);
  memset(m, 0, sizeof *m);
}
