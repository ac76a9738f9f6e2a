/* SPDX-License-Identifier: Apache-2.0 */
/* String interning (see intern.h). The table is kept at most half full so probes stay short;
 * a hash stored per id makes growing and most mismatches cheap. */
#include "ledger/intern.h"

#include <stdlib.h>
#include <string.h>

#include "util/mem.h"

/* FNV-1a, with the high bits folded down: the table indexes by the low bits. */
static uint64_t hash_str(const char *s) {
  uint64_t h = UINT64_C(0xcbf29ce484222325);
  for (; *s; s++) h = (h ^ (unsigned char)*s) * UINT64_C(0x100000001b3);
  return h ^ (h >> 29);
}

void gp__ledger_intern_init(gp__ledger_strings *t, struct gp_arena *arena) {
  memset(t, 0, sizeof *t);
  t->arena = arena;
}

void gp__ledger_intern_done(gp__ledger_strings *t) {
  free(t->names);
  free(t->hashes);
  free(t->slots);
  free(t->tags);
  memset(t, 0, sizeof *t);
}

static void rehash(gp__ledger_strings *t, size_t n_slots) {
  free(t->slots);
  free(t->tags);
  t->slots = gp_xcalloc(n_slots, sizeof *t->slots);
  t->tags = gp_xcalloc(n_slots, sizeof *t->tags);
  t->n_slots = n_slots;
  for (size_t id = 0; id < t->n; id++) {
    size_t i = t->hashes[id] & (n_slots - 1);
    while (t->slots[i]) i = (i + 1) & (n_slots - 1);
    t->slots[i] = (int32_t)id + 1;
    t->tags[i] = (uint32_t)(t->hashes[id] >> 32);
  }
}

static int32_t lookup(const gp__ledger_strings *t, const char *s, uint64_t h, size_t *slot) {
  if (!t->n_slots) return -1;
  size_t i = h & (t->n_slots - 1);
  uint32_t tag = (uint32_t)(h >> 32);
  for (; t->slots[i]; i = (i + 1) & (t->n_slots - 1)) {
    int32_t id = t->slots[i] - 1;
    if (t->tags[i] == tag && strcmp(t->names[id], s) == 0) return id;
  }
  if (slot) *slot = i;
  return -1;
}

int32_t gp__ledger_intern_find(const gp__ledger_strings *t, const char *s) {
  if (!s) s = "";
  return lookup(t, s, hash_str(s), NULL);
}

int32_t gp__ledger_intern(gp__ledger_strings *t, const char *s) {
  if (!s) s = "";
  uint64_t h = hash_str(s);
  size_t slot = 0;
  int32_t id = lookup(t, s, h, &slot);
  if (id < 0) {
    if ((t->n + 1) * 2 > t->n_slots) {
      rehash(t, t->n_slots ? t->n_slots * 2 : 64);
      lookup(t, s, h, &slot);
    }
    gp_xgrow((void **)&t->names, &t->cap_names, t->n + 1, sizeof *t->names);
    size_t cap = t->cap_names;
    t->hashes = gp_xrealloc(t->hashes, cap * sizeof *t->hashes);
    id = (int32_t)t->n++;
    t->names[id] = gp_arena_strdup(t->arena, s);
    t->hashes[id] = h;
    t->slots[slot] = id + 1;
    t->tags[slot] = (uint32_t)(h >> 32);
  }
  return id;
}
