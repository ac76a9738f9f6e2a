/* SPDX-License-Identifier: Apache-2.0 */
/* String interning for the ledger report: each distinct name (queue, user, model, node) gets
 * a small integer id once, so the per-interval work hashes integers, not strings, and rows
 * hold stable copies. Open addressing over a power-of-two table; the names live in the
 * report's arena. */
#ifndef GP_LEDGER_INTERN_H
#define GP_LEDGER_INTERN_H

#include <stddef.h>
#include <stdint.h>

struct gp_arena;

typedef struct gp__ledger_strings {
  struct gp_arena *arena;   /* borrowed: owns the copies of the names */
  const char **names;       /* by id */
  uint64_t *hashes;         /* by id */
  int32_t *slots;           /* id + 1, or 0 for an empty slot */
  uint32_t *tags;           /* by slot: the high half of its name's hash, checked first */
  size_t n, cap_names, n_slots;
} gp__ledger_strings;

void gp__ledger_intern_init(gp__ledger_strings *t, struct gp_arena *arena);
void gp__ledger_intern_done(gp__ledger_strings *t);
/* The id of s (NULL reads as ""), adding it when new. */
int32_t gp__ledger_intern(gp__ledger_strings *t, const char *s);
/* The id of s, or -1 when it was never added. */
int32_t gp__ledger_intern_find(const gp__ledger_strings *t, const char *s);

#endif
