/* SPDX-License-Identifier: Apache-2.0 */
/* The replay's stateless draws: splitmix64's finaliser, a well-mixed 64-bit hash, so a
 * draw keyed by (seed, what it is for) is the same whatever else the replay did. Internal
 * to src/sim/replay. */
#ifndef GP_SIM_REPLAY_MIX_H
#define GP_SIM_REPLAY_MIX_H

#include <stdint.h>

static inline uint64_t gp__sim_mix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* A uniform draw in [0, 1) from a hash. */
static inline double gp__sim_unit(uint64_t h) { return (double)(h >> 11) / 9007199254740992.0; }

#endif
