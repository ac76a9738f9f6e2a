/* SPDX-License-Identifier: Apache-2.0 */
/* How pending jobs compare (model.h): a job's keys under each order policy and the ids that
 * settle ties. A leaf, so that what orders the jobs (order.c), what weighs users' loads
 * (usage.c) and what picks a singleton's runner (deps.c) read one rule without calling into
 * one another. */
#include <stdbool.h>
#include <string.h>

#include "core/ctx.h"

/* An id of decimal digits without a leading zero ("0" itself is one). */
static bool id_is_number(const char *id) {
  if (id[0] < '0' || id[0] > '9' || (id[0] == '0' && id[1])) return false;
  for (const char *p = id; *p; p++)
    if (*p < '0' || *p > '9') return false;
  return true;
}

int gp_order_id_cmp(const char *a, const char *b) {
  bool na = id_is_number(a), nb = id_is_number(b);
  if (na != nb) return na ? -1 : 1;
  if (na) {
    size_t la = strlen(a), lb = strlen(b);
    if (la != lb) return la < lb ? -1 : 1;
  }
  int c = strcmp(a, b);
  return c < 0 ? -1 : c > 0;
}

gp_order_keys gp_order_keys_of(gp_order_policy order, int priority, int64_t limit, int64_t submitted) {
  switch (order) {
  case GP_ORDER_FIFO: return (gp_order_keys){submitted, 0};
  case GP_ORDER_SJF: return (gp_order_keys){limit > 0 ? limit : GP__NEVER, submitted};
  default: return (gp_order_keys){-(int64_t)priority, submitted}; /* fair share inside a leaf, and global priority */
  }
}
