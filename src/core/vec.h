/* SPDX-License-Identifier: Apache-2.0 */
/* A growable array of fixed-size items, for the lists a step builds as it goes (starts,
 * preemptions, reservations, MIG actions, ended jobs). The lowest layer of the core's
 * internals: any core file may include it. */
#ifndef GP_CORE_VEC_H
#define GP_CORE_VEC_H

#include <stddef.h>

typedef struct gp__core_vec {
  void *items;
  size_t n, cap;
} gp__core_vec;

/* Grows a vector of elem-sized items and returns a pointer to a new zeroed slot. */
void *gp__core_vec_push(gp__core_vec *v, size_t elem);

#endif
