/* SPDX-License-Identifier: Apache-2.0 */
/* gp__core_vec (vec.h): out of line, so that the callers' hot loops stay small. */
#include "core/vec.h"

#include <string.h>

#include "util/mem.h"

void *gp__core_vec_push(gp__core_vec *v, size_t elem) {
  gp_xgrow(&v->items, &v->cap, v->n + 1, elem);
  void *p = (char *)v->items + v->n * elem;
  memset(p, 0, elem);
  v->n++;
  return p;
}
