/* SPDX-License-Identifier: Apache-2.0 */
/* The ledger report's per-group sums: a hash map from a fixed-size key of interned ids
 * (period, queue, user, model, capacity, node, service, job, row kind; -1 where not grouped) to the
 * running sums of one row. Each slot keeps part of its key's hash, so a probe touches an
 * entry only when that part matches. Keys are compared as bytes, so callers start a key with
 * gp__ledger_key_init. */
#ifndef GP_LEDGER_KEYMAP_H
#define GP_LEDGER_KEYMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct gp__ledger_key {
  int64_t job;
  int32_t period, queue, user, model, node, service;
  int16_t capacity, kind;
  int32_t pad;             /* 0: the key is compared and hashed as bytes */
} gp__ledger_key;

typedef struct gp__ledger_sums {
  double gpu_s, used_gpu_s, known_gpu_s, energy_j, cost, idle_share_cost;
  bool cost_unknown;
  bool energy_known;       /* some piece had its energy measured */
} gp__ledger_sums;

typedef struct gp__ledger_entry {
  gp__ledger_key key;
  gp__ledger_sums sums;
} gp__ledger_entry;

typedef struct gp__ledger_map {
  gp__ledger_entry *entries;
  uint64_t *slots;         /* high 32 bits of the key's hash, then entry + 1; 0: empty */
  size_t n, cap, n_slots;
} gp__ledger_map;

/* Every field -1 (not grouped), kind 0. */
void gp__ledger_key_init(gp__ledger_key *k);
/* The sums of k, added (zeroed) when new. The pointer is valid until the next call. */
gp__ledger_sums *gp__ledger_map_get(gp__ledger_map *m, const gp__ledger_key *k);
/* The sums of k, or NULL when k has none (nothing added). */
gp__ledger_sums *gp__ledger_map_find(const gp__ledger_map *m, const gp__ledger_key *k);
void gp__ledger_map_done(gp__ledger_map *m);

#endif
