/* SPDX-License-Identifier: Apache-2.0 */
/* The replay's event heap (see heap.h). */
#include "sim/replay/heap.h"

#include <stdlib.h>

#include "util/mem.h"

static int before(const gp__sim_event *a, const gp__sim_event *b) {
  if (a->t != b->t) return a->t < b->t;
  if (a->kind != b->kind) return a->kind < b->kind;
  return a->seq < b->seq;
}

void gp__sim_heap_push(gp__sim_heap *h, gp_time t, int kind, int id, uint32_t gen) {
  if (h->n == h->cap) {
    h->cap = h->cap ? h->cap * 2 : 1024;
    h->ev = gp_xrealloc(h->ev, h->cap * sizeof *h->ev);
  }
  gp__sim_event e = {.t = t, .seq = h->next_seq++, .kind = kind, .id = id, .gen = gen};
  size_t i = h->n++;
  while (i > 0) {
    size_t parent = (i - 1) / 2;
    if (!before(&e, &h->ev[parent])) break;
    h->ev[i] = h->ev[parent];
    i = parent;
  }
  h->ev[i] = e;
}

void gp__sim_heap_pop(gp__sim_heap *h, gp__sim_event *ret) {
  *ret = h->ev[0];
  gp__sim_event last = h->ev[--h->n];
  size_t i = 0;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= h->n) break;
    if (c + 1 < h->n && before(&h->ev[c + 1], &h->ev[c])) c++;
    if (!before(&h->ev[c], &last)) break;
    h->ev[i] = h->ev[c];
    i = c;
  }
  if (h->n) h->ev[i] = last;
}

void gp__sim_heap_done(gp__sim_heap *h) {
  free(h->ev);
  *h = (gp__sim_heap){0};
}
