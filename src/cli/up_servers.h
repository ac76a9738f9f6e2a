/* SPDX-License-Identifier: Apache-2.0 */
/* The servers of a `gpool up` pool on PostgreSQL (docs/ha.md, "Trying it on one machine"):
 * more servers may join its store at any time, and its agent and client.json must know
 * every one of them, or a frozen first server leaves the node to be marked lost (and its
 * jobs killed) by the follower that took over. The servers list one another in the store
 * (GET /v1/leader's "servers"); `gpool up` reads that list from its own server and grows
 * its own with it. */
#ifndef GP_CLI_UP_SERVERS_H
#define GP_CLI_UP_SERVERS_H

#include <stdbool.h>
#include <stddef.h>

#include "util/urls.h"

/* Asks `server` (a single base URL) GET /v1/leader with `token`, within timeout_ms, and adds
 * each valid server URL it names that *list lacks (up to GP_URLS_MAX). Returns true when
 * the list grew. An answer that cannot be read leaves the list as it was. */
bool gp_cli_up_servers_learn(const char *server, const char *token, long timeout_ms, gp_urls *list);

/* The list as "URL,URL,..." into out (cap bytes); false when it does not fit. */
bool gp_cli_up_servers_join(const gp_urls *list, char *out, size_t cap);

#endif
