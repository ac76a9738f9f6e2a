/* SPDX-License-Identifier: Apache-2.0 */
/* A list of gpool server URLs ("http://a:8642,http://b:8642"): the servers of one pool,
 * one leading and the others following (docs/ha.md). The CLI, the agent and the benchmarks
 * take such a list wherever they take a server, try its entries in turn, and follow a
 * follower's redirect to the leader; this file parses the list and the redirect. */
#ifndef GP_UTIL_URLS_H
#define GP_UTIL_URLS_H

#include <stddef.h>

#include "util/error.h"

#define GP_URLS_MAX 8          /* servers in one list */
#define GP_URL_MAX 256         /* bytes of one base URL, NUL included */

typedef struct gp_urls {
  int n;
  char url[GP_URLS_MAX][GP_URL_MAX]; /* base URLs: scheme://host[:port], no trailing '/' */
} gp_urls;

/* Parses a comma-separated list (spaces around entries ignored; a trailing '/' dropped).
 * Each entry must be http:// or https:// followed by a host, with no path, query, user
 * info or control characters. Errors name `field` and the entry. */
int gp_urls_parse(const char *text, const char *field, gp_urls *ret, gp_err *err);

/* The base URL (scheme://host[:port]) of a redirect's absolute `location`, into out.
 * Returns 0, or GP_EINVAL when `location` is not an absolute http(s) URL or would move
 * from https to http (`from` is the base URL the redirect came from): a redirect never
 * downgrades a connection that carries a token. */
int gp_urls_redirect_base(const char *from, const char *location, char *out, size_t cap);

/* The index of `base` in the list, compared without case (scheme and host are
 * case-insensitive), or -1. */
int gp_urls_find(const gp_urls *u, const char *base);

#endif
