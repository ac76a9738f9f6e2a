/* SPDX-License-Identifier: Apache-2.0 */
/* Small arithmetic the core's stages share: counting bits of a GPU mask, hashing a pointer
 * into a direct-mapped cache, an id's first bytes as a number. Depends on nothing else of
 * the core, so any core file may include it. */
#ifndef GP_CORE_BITS_H
#define GP_CORE_BITS_H

#include <stdint.h>

/* Population count without relying on a POPCNT instruction (the build targets generic
 * x86-64, where __builtin_popcount is a library call). */
static inline int gp__core_popc(uint32_t x) {
  x = x - ((x >> 1) & 0x55555555u);
  x = (x & 0x33333333u) + ((x >> 2) & 0x33333333u);
  return (int)((((x + (x >> 4)) & 0x0f0f0f0fu) * 0x01010101u) >> 24);
}

/* Slot of a pointer in a direct-mapped cache of 2^bits entries. Multiplicative (Fibonacci)
 * hashing: callers often keep their names in fixed-size arrays (char name[50][32]), and
 * low address bits alone map such strings onto a few slots that then evict each other. */
static inline unsigned gp__core_ptr_slot(const void *p, int bits) {
  return (unsigned)(((uint64_t)(uintptr_t)p * 0x9e3779b97f4a7c15ull) >> (64 - bits));
}

/* The first 8 bytes of an id as a big-endian number, NUL and what follows as zeros: for
 * two ids that differ within their first 8 bytes, comparing these numbers gives strcmp's
 * answer (bytes compare unsigned, and a shorter id has a 0 where the longer has a byte). */
static inline uint64_t gp__core_id_prefix(const char *id) {
  uint64_t k = 0;
  for (int i = 0; i < 8 && id[i]; i++) k |= (uint64_t)(unsigned char)id[i] << (56 - 8 * i);
  return k;
}

#endif
