/* SPDX-License-Identifier: Apache-2.0 */
/* The report's group map (see keymap.h): open addressing, at most half full, over a 32-byte
 * key hashed as four 64-bit words. */
#include "ledger/keymap.h"

#include <stdlib.h>
#include <string.h>

#include "util/mem.h"

_Static_assert(sizeof(gp__ledger_key) == 32, "a key is four words with no padding");

void gp__ledger_key_init(gp__ledger_key *k) {
  memset(k, 0, sizeof *k);
  k->job = -1;
  k->period = k->queue = k->user = k->model = k->node = -1;
  k->capacity = -1;
}

static uint64_t mix(uint64_t h) {
  h ^= h >> 33;
  h *= UINT64_C(0xff51afd7ed558ccd);
  h ^= h >> 33;
  return h;
}

static uint64_t hash_key(const gp__ledger_key *k) {
  uint64_t w[4];
  memcpy(w, k, sizeof w);
  uint64_t h = UINT64_C(0x9e3779b97f4a7c15);
  for (int i = 0; i < 4; i++) h = mix(h ^ w[i]) * UINT64_C(0xc4ceb9fe1a85ec53);
  return h ^ (h >> 31);
}

static void rehash(gp__ledger_map *m, size_t n_slots) {
  free(m->slots);
  m->slots = gp_xcalloc(n_slots, sizeof *m->slots);
  m->n_slots = n_slots;
  for (size_t e = 0; e < m->n; e++) {
    size_t i = hash_key(&m->keys[e]) & (n_slots - 1);
    while (m->slots[i]) i = (i + 1) & (n_slots - 1);
    m->slots[i] = (int32_t)e + 1;
  }
}

gp__ledger_sums *gp__ledger_map_get(gp__ledger_map *m, const gp__ledger_key *k) {
  if ((m->n + 1) * 2 > m->n_slots) rehash(m, m->n_slots ? m->n_slots * 2 : 256);
  size_t i = hash_key(k) & (m->n_slots - 1);
  for (; m->slots[i]; i = (i + 1) & (m->n_slots - 1)) {
    int32_t e = m->slots[i] - 1;
    if (memcmp(&m->keys[e], k, sizeof *k) == 0) return &m->sums[e];
  }
  size_t cap = m->cap;
  gp_xgrow((void **)&m->keys, &cap, m->n + 1, sizeof *m->keys);
  if (cap != m->cap) {
    m->sums = gp_xrealloc(m->sums, cap * sizeof *m->sums);
    m->cap = cap;
  }
  m->keys[m->n] = *k;
  memset(&m->sums[m->n], 0, sizeof m->sums[m->n]);
  m->slots[i] = (int32_t)m->n + 1;
  return &m->sums[m->n++];
}

void gp__ledger_map_done(gp__ledger_map *m) {
  free(m->keys);
  free(m->sums);
  free(m->slots);
  memset(m, 0, sizeof *m);
}
