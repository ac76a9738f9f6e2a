/* SPDX-License-Identifier: Apache-2.0 */
/* Learning the other servers of a `gpool up` pool (up_servers.h). The answer is a server's,
 * but each URL is checked as a server list entry (gp_urls_parse) before it is kept: only
 * scheme://host[:port] URLs end up in the agent's arguments and client.json. */
#include "cli/up_servers.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "client/client.h"

bool gp_cli_up_servers_learn(const char *server, const char *token, long timeout_ms, gp_urls *list) {
  gp_client *c = gp_client_new(server, token);
  if (!c) return false;
  gp_client_set_timeout_ms(c, timeout_ms);
  json_t *doc = NULL;
  gp_err err = {0};
  bool grew = false;
  if (gp_client_call(c, "GET", "/v1/leader", NULL, &doc, NULL, &err) == 0) {
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(doc, "servers"), i, v) {
      const char *url = json_string_value(v);
      gp_urls one;
      gp_err bad = {0};
      if (!url || gp_urls_parse(url, "server", &one, &bad) || one.n != 1) continue;
      if (gp_urls_find(list, one.url[0]) >= 0 || list->n >= GP_URLS_MAX) continue;
      snprintf(list->url[list->n++], GP_URL_MAX, "%s", one.url[0]);
      grew = true;
    }
  }
  json_decref(doc);
  gp_client_free(c);
  return grew;
}

bool gp_cli_up_servers_join(const gp_urls *list, char *out, size_t cap) {
  size_t o = 0;
  if (cap) out[0] = '\0';
  for (int i = 0; i < list->n; i++) {
    int n = snprintf(out + o, cap - o, "%s%s", i ? "," : "", list->url[i]);
    if (n < 0 || (size_t)n >= cap - o) return false;
    o += (size_t)n;
  }
  return true;
}
