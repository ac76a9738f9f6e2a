/* SPDX-License-Identifier: Apache-2.0 */
/* The frag simulator's random source (frag.c, family.c): splitmix64, small, seedable and
 * the same on every machine, so a seed names one run everywhere. */
#ifndef GPOOL_SIM_FRAG_RNG_H
#define GPOOL_SIM_FRAG_RNG_H

#include <stdint.h>

typedef struct gp__sim_frag_rng {
  uint64_t s;
} gp__sim_frag_rng;

static inline uint64_t gp__sim_frag_rng_next(gp__sim_frag_rng *r) {
  uint64_t x = (r->s += 0x9e3779b97f4a7c15ULL);
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/* Uniform in [0, n) without modulo bias (n > 0). */
static inline uint64_t gp__sim_frag_rng_below(gp__sim_frag_rng *r, uint64_t n) {
  uint64_t lim = UINT64_MAX - UINT64_MAX % n;
  uint64_t x;
  do x = gp__sim_frag_rng_next(r);
  while (x >= lim);
  return x % n;
}

#endif
