/* SPDX-License-Identifier: Apache-2.0 */
/* Scratch memory for one step: the arrays a step builds and drops when it ends (per-node
 * and per-queue tables, preemption's lists) come from one block instead of a hundred
 * malloc/free pairs per step. A memo keeps the block for its next step: a replay calls the
 * core a hundred thousand times, each step needing about what the last one did. Under
 * AddressSanitizer every request is an allocation of its own, so bounds stay checked. */
#include <stdlib.h>
#include <string.h>

#include "core/scratch.h"
#include "core/ctx.h"

#if defined(__SANITIZE_ADDRESS__)
#define GP__SCRATCH_ONE_BY_ONE 1
#else
#define GP__SCRATCH_ONE_BY_ONE 0
#endif

#define BLOCK_MIN (256u << 10)

static void keep_aside(gp__core_scratch *s, void *p) {
  gp_xgrow((void **)&s->aside, &s->aside_cap, s->n_aside + 1, sizeof *s->aside);
  s->aside[s->n_aside++] = p;
}

void *gp__core_salloc(gp__core_ctx *c, size_t bytes) {
  gp__core_scratch *s = c->scratch;
  bytes = bytes ? (bytes + 15) & ~(size_t)15 : 16;
  if (GP__SCRATCH_ONE_BY_ONE) {
    void *p = gp_xmalloc(bytes);
    keep_aside(s, p);
    return p;
  }
  if (s->used + bytes > s->cap) {
    /* A bigger block; the full one goes when the step ends (what it handed out lives
     * until then), and the next step starts with the bigger one. */
    if (s->block) keep_aside(s, s->block);
    size_t cap = s->cap * 2 > BLOCK_MIN ? s->cap * 2 : BLOCK_MIN;
    while (cap < bytes) cap *= 2;
    s->block = gp_xmalloc(cap);
    s->cap = cap;
    s->used = 0;
  }
  void *p = s->block + s->used;
  s->used += bytes;
  return p;
}

void *gp__core_scalloc(gp__core_ctx *c, size_t n, size_t size) {
  size_t bytes = n * size;
  void *p = gp__core_salloc(c, bytes);
  memset(p, 0, bytes);
  return p;
}

void gp__core_scratch_end(gp__core_scratch *s, bool keep) {
  if (!s) return;
  for (size_t i = 0; i < s->n_aside; i++) free(s->aside[i]);
  s->n_aside = 0;
  s->used = 0;
  if (keep) return;
  free(s->aside);
  free(s->block);
  memset(s, 0, sizeof *s);
}
