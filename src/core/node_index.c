/* SPDX-License-Identifier: Apache-2.0 */
/* Free-capacity buckets of nodes (see node_index.h). Each bucket is a bitmap over the
 * group's nodes (bit = node present) plus a summary bitmap with one bit per non-zero word,
 * so finding the next member skips empty stretches 64 words at a time. */
#include "core/node_index.h"

#include <stdlib.h>
#include <string.h>

#include "util/mem.h"

/* The int tables share one allocation (and the bitmaps another): a scheduler step builds
 * an index every time. */
void gp__core_index_init(gp__core_index *ix, int n_nodes, const int *node_group, int n_groups) {
  memset(ix, 0, sizeof *ix);
  ix->n_nodes = n_nodes;
  ix->n_groups = n_groups;
  size_t ng = (size_t)n_groups + 1, nn = (size_t)n_nodes + 1, nb = (size_t)n_groups * GP__LEVELS;
  int *ints = gp_xcalloc(2 * ng + 4 * nn + 3 * (nb + 1), sizeof(int));
  ix->group_start = ints;
  int *fill = ints + ng;
  ix->members = fill + ng;
  ix->node_group = ix->members + nn;
  ix->node_local = ix->node_group + nn;
  ix->node_level = ix->node_local + nn;
  ix->lo_off = ix->node_level + nn;
  ix->hi_off = ix->lo_off + nb + 1;
  ix->count = ix->hi_off + nb + 1;
  for (int i = 0; i < n_nodes; i++) {
    ix->node_group[i] = node_group[i];
    ix->node_level[i] = -1;
    if (node_group[i] >= 0) ix->group_start[node_group[i] + 1]++;
  }
  for (int g = 0; g < n_groups; g++) ix->group_start[g + 1] += ix->group_start[g];
  for (int i = 0; i < n_nodes; i++) {
    int g = node_group[i];
    if (g < 0) continue;
    ix->node_local[i] = fill[g];
    ix->members[ix->group_start[g] + fill[g]++] = i;
  }
  size_t total = 0;
  for (int g = 0; g < n_groups; g++) {
    size_t n = (size_t)(ix->group_start[g + 1] - ix->group_start[g]);
    size_t lo = (n + 63) / 64, hi = (lo + 63) / 64;
    for (int l = 0; l < GP__LEVELS; l++) {
      ix->lo_off[g * GP__LEVELS + l] = (int)total;
      total += lo;
      ix->hi_off[g * GP__LEVELS + l] = (int)total;
      total += hi;
    }
  }
  ix->words = gp_xcalloc(total + 1, sizeof(uint64_t));
}

void gp__core_index_done(gp__core_index *ix) {
  if (!ix) return;
  free(ix->group_start); /* (all the int tables) */
  free(ix->words);
  memset(ix, 0, sizeof *ix);
}

static void bit_set(gp__core_index *ix, int b, int pos) {
  uint64_t *lo = ix->words + ix->lo_off[b], *hi = ix->words + ix->hi_off[b];
  lo[pos >> 6] |= (uint64_t)1 << (pos & 63);
  hi[pos >> 12] |= (uint64_t)1 << ((pos >> 6) & 63);
}

static void bit_clear(gp__core_index *ix, int b, int pos) {
  uint64_t *lo = ix->words + ix->lo_off[b], *hi = ix->words + ix->hi_off[b];
  lo[pos >> 6] &= ~((uint64_t)1 << (pos & 63));
  if (!lo[pos >> 6]) hi[pos >> 12] &= ~((uint64_t)1 << ((pos >> 6) & 63));
}

void gp__core_index_set(gp__core_index *ix, int node, int free_gpus) {
  int g = ix->node_group[node];
  if (g < 0) return;
  if (free_gpus < 0) free_gpus = 0;
  if (free_gpus > GP_MAX_NODE_GPUS) free_gpus = GP_MAX_NODE_GPUS;
  int old = ix->node_level[node];
  if (old == free_gpus) return;
  int pos = ix->node_local[node];
  if (old >= 0) {
    bit_clear(ix, g * GP__LEVELS + old, pos);
    ix->count[g * GP__LEVELS + old]--;
    if (--ix->level_count[old] == 0) ix->levels &= ~((uint64_t)1 << old);
  }
  bit_set(ix, g * GP__LEVELS + free_gpus, pos);
  ix->count[g * GP__LEVELS + free_gpus]++;
  ix->level_count[free_gpus]++;
  ix->levels |= (uint64_t)1 << free_gpus;
  ix->node_level[node] = free_gpus;
}

int gp__core_index_next(const gp__core_index *ix, int group, int level, int from) {
  int b = group * GP__LEVELS + level;
  if (!ix->count[b] || from < 0) return -1;
  int n = ix->group_start[group + 1] - ix->group_start[group];
  if (from >= n) return -1;
  const uint64_t *lo = ix->words + ix->lo_off[b], *hi = ix->words + ix->hi_off[b];
  int nlo = (n + 63) / 64, nhi = (nlo + 63) / 64;
  int w = from >> 6;
  uint64_t bits = lo[w] & (~(uint64_t)0 << (from & 63));
  if (bits) return (w << 6) + __builtin_ctzll(bits);
  /* Next non-empty word after w, through the summary. */
  int hw = (w + 1) >> 6;
  if (hw >= nhi) return -1;
  uint64_t hb = (w + 1) & 63 ? hi[hw] & (~(uint64_t)0 << ((w + 1) & 63)) : hi[hw];
  for (;;) {
    if (hb) {
      int wi = (hw << 6) + __builtin_ctzll(hb);
      return (wi << 6) + __builtin_ctzll(lo[wi]);
    }
    if (++hw >= nhi) return -1;
    hb = hi[hw];
  }
}

_Static_assert(GP__LEVELS <= 64, "gp__core_index.levels has one bit per level");

int gp__core_index_max_level(const gp__core_index *ix) {
  return ix->levels ? 63 - __builtin_clzll(ix->levels) : -1;
}
