/* SPDX-License-Identifier: Apache-2.0 */
/* Counts by name (pending jobs per user and per queue, see state.h): an open-addressing
 * map from owned strings to numbers. Kept up to date as jobs change state, so a
 * submission reads its caps in O(1) instead of walking the jobs. Names are never removed:
 * they are bounded by the users and queues the pool knows, and a count of 0 is cheap. */
#include <stdlib.h>
#include <string.h>

#include "server/state/state.h"
#include "util/mem.h"

static uint64_t hash(const char *name) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (const unsigned char *c = (const unsigned char *)name; *c; c++) h = (h ^ *c) * 1099511628211ull;
  return h;
}

static gp_srv_count *slot(const gp_srv_counts *m, const char *name) {
  size_t i = (size_t)hash(name) & (m->cap - 1);
  while (m->slots[i].name && strcmp(m->slots[i].name, name) != 0) i = (i + 1) & (m->cap - 1);
  return &m->slots[i];
}

int64_t gp__srv_count_get(const gp_srv_counts *m, const char *name) {
  if (!m->cap || !name) return 0;
  const gp_srv_count *c = slot(m, name);
  return c->name ? c->n : 0;
}

void gp__srv_count_add(gp_srv_counts *m, const char *name, int64_t delta) {
  if (!name) return;
  if ((m->used + 1) * 2 > m->cap) {
    gp_srv_counts bigger = {gp_xcalloc(m->cap ? m->cap * 2 : 64, sizeof *bigger.slots),
                            m->cap ? m->cap * 2 : 64, m->used};
    for (size_t i = 0; i < m->cap; i++)
      if (m->slots[i].name) *slot(&bigger, m->slots[i].name) = m->slots[i];
    free(m->slots);
    *m = bigger;
  }
  gp_srv_count *c = slot(m, name);
  if (!c->name) {
    c->name = gp_xstrdup(name);
    m->used++;
  }
  c->n += delta;
}

void gp__srv_counts_free(gp_srv_counts *m) {
  for (size_t i = 0; i < m->cap; i++) free(m->slots[i].name);
  free(m->slots);
  memset(m, 0, sizeof *m);
}
