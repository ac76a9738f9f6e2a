/* SPDX-License-Identifier: Apache-2.0 */
/* A route's query parameters checked against the ones it takes: an unknown one is 400
 * naming it, never dropped, since a misspelt filter would answer more than was asked
 * (docs/api.md, "Targets and queries"). Any thread: it reads only the request. */
#include <string.h>

#include "server/state/server_int.h"

bool gp__srv_query_known(gp_srv_req *r, const char *const *keys, const char *takes) {
  const char *k;
  const json_t *v;
  json_object_foreach(r->query, k, v) {
    int i = 0;
    while (keys[i] && strcmp(k, keys[i]) != 0) i++;
    if (keys[i]) continue;
    gp__srv_reply_error(r, 400, "invalid_argument", k, "unknown parameter \"%.64s\": %s", k, takes);
    return false;
  }
  return true;
}
