/* SPDX-License-Identifier: Apache-2.0 */
/* The hooks' registry (hooks.h): a fixed table per state, filled when the state is made
 * and read on the state thread only, so it needs no lock. */
#include "server/state/hooks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void gp__srv_hook_add(gp_srv_hooks *h, gp_srv_hook_kind kind, const char *name, gp_srv_hook_fn fn) {
  if (kind < 0 || kind >= GP_SRV_HOOK_N || h->n[kind] >= GP_SRV_HOOKS_MAX) {
    fprintf(stderr, "gpool server: too many hooks of kind %d\n", (int)kind);
    abort();
  }
  h->at[kind][h->n[kind]++] = (gp_srv_hook){fn, name};
}

static int name_matches(const char *want, const char *name) {
  size_t n = strlen(want);
  if (n && want[n - 1] == '/') return strncmp(name, want, n) == 0;
  return strcmp(name, want) == 0;
}

int gp__srv_hook_fire(struct gp_srv_state *s, const gp_srv_hooks *h, gp_srv_hook_kind kind,
                      const gp_srv_hook_ev *ev, gp_err *err) {
  for (int i = 0; i < h->n[kind]; i++) {
    const gp_srv_hook *k = &h->at[kind][i];
    if (kind == GP_SRV_HOOK_SETTING && (!k->name || !ev->name || !name_matches(k->name, ev->name)))
      continue;
    int r = k->fn(s, ev, err);
    if (r) return r;
  }
  return 0;
}
