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

/* A job id's order key (gp_order_id_cmp's order, which the full comparison settles on equal
 * keys): an id of decimal digits without a leading zero (the server's job numbers) is its
 * number, capped at 10^18 (longer numbers tie there: compared in full); any other id is
 * 2^63 plus its first 8 bytes as a big-endian number, halved (NUL and what follows as
 * zeros), so numbers come first and other ids keep strcmp's order up to the key's bits. */
static inline uint64_t gp__core_id_key(const char *id) {
  uint64_t k = 0;
  int i = 0;
  if (id[0] >= '1' && id[0] <= '9') {
    for (; id[i] >= '0' && id[i] <= '9'; i++)
      if (k < 1000000000000000000ull) k = k * 10 + (uint64_t)(id[i] - '0');
    if (!id[i]) return k < 1000000000000000000ull ? k : 1000000000000000000ull;
  } else if (id[0] == '0' && !id[1]) {
    return 0;
  }
  k = 0;
  for (i = 0; i < 8 && id[i]; i++) k |= (uint64_t)(unsigned char)id[i] << (56 - 8 * i);
  return (1ull << 63) | (k >> 1);
}

#endif
