/* SPDX-License-Identifier: Apache-2.0 */
/* The server config's `ha:` block (docs/config.md, "High availability"): several servers
 * on one PostgreSQL store, one leading through the lease (store/lease.h). The lease's
 * length, how often the leader renews it, the URL the others send clients and agents to,
 * and this server's id in the lease row. */
#ifndef GP_SERVER_LEADER_CONFIG_H
#define GP_SERVER_LEADER_CONFIG_H

#include <stdbool.h>

#include "util/mem.h"
#include "util/doc.h"
#include "util/error.h"

typedef struct gp_server_ha {
  bool on;                /* `ha:` is present */
  int lease_ms;           /* 10000 */
  int renew_ms;           /* 2000; at most lease_ms / 3 */
  const char *advertise;  /* "" : the listen URL (http[s]://host:port) */
  const char *id;         /* "" : the advertise URL */
  const char *url;        /* the store's postgresql:// URL, where the lease row lives */
} gp_server_ha;

void gp_server_ha_init(gp_server_ha *ha);

/* Reads the `ha` map `m` (path names it in errors) over the defaults in *ha; strings are
 * copied into `a`. */
int gp_server_ha_read(const gp_doc *d, const gp_doc_node *m, const char *path, gp_arena *a,
                      gp_server_ha *ha, gp_err *err);

#endif
