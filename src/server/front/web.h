/* SPDX-License-Identifier: Apache-2.0 */
/* The web console's static files, compiled into the server (cmake/web_embed.cmake makes the
 * table from web/) and served at `/` without a token: they hold no data, every figure the
 * console shows comes through /v1 with the user's own token (docs/web.md). */
#ifndef GP_SERVER_WEB_H
#define GP_SERVER_WEB_H

#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>

/* One file of web/: its bytes, a gzip copy of them and a hash that names this content. */
typedef struct gp__srv_web_file {
  const char *name;         /* the path under web/, e.g. "app.js" */
  const unsigned char *data;
  size_t len;               /* bytes of data */
  const unsigned char *gz;  /* the same bytes, gzip -9 -n */
  size_t gz_len;
  const char *hash;         /* hex, the first 128 bits of the SHA-256 of data */
} gp__srv_web_file;

/* Generated: every file of web/, sorted by name, and the gzip copies' total size. */
extern const gp__srv_web_file gp__srv_web_files[];
extern const size_t gp__srv_web_n_files;
extern const size_t gp__srv_web_gz_total;

/* Whether `path` (decoded, without the query) is the console's: `/`, `/ui`, `/ui/`, `/web`
 * or anything under `/web/`. Those paths never reach /v1's authentication. */
bool gp__srv_web_owns(const char *path);

/* Answers a request for a path gp__srv_web_owns claims: the file (gzip when the request
 * accepts it), 304 when If-None-Match names its ETag, 308 from /ui to /, 404 for no such
 * file, 400 for a path that climbs (`..`, `.` segments, backslashes, empty segments), 405
 * for a method other than GET and HEAD. Every answer carries the console's security
 * headers. */
enum MHD_Result gp__srv_web_serve(struct MHD_Connection *c, const char *path, const char *method);

/* The file named `name` (a path under web/), or NULL. */
const gp__srv_web_file *gp__srv_web_find(const char *name);

#endif
