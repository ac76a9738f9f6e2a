/* SPDX-License-Identifier: Apache-2.0 */
/* gpool's HTTP client for the public API (/v1, docs/internals/protocol.md): one libcurl
 * easy handle per gp_client, so consecutive requests reuse one keep-alive connection.
 * A gp_client is not thread-safe: give each thread its own (the submit benchmark does).
 *
 * Every answer is untrusted: bodies are capped (GP_CLIENT_MAX_BODY) and must be JSON
 * objects. An API error object {"error": {"code", "message", "field"}} becomes a gp_err
 * whose message is the server's sentence and whose field is the server's field, so a
 * program can print it as is. */
#ifndef GP_CLIENT_CLIENT_H
#define GP_CLIENT_CLIENT_H

#include <jansson.h>
#include <stddef.h>

#include "util/error.h"

#define GP_CLIENT_MAX_BODY ((size_t)64 << 20)
#define GP_CLIENT_DEFAULT_SERVER "http://127.0.0.1:8642"

typedef struct gp_client gp_client;

/* A client for `server` ("http://host:port", no trailing path) with bearer `token`
 * (NULL: none). Both strings are copied. Returns NULL only when libcurl cannot make a
 * handle. */
gp_client *gp_client_new(const char *server, const char *token);
void gp_client_free(gp_client *c); /* accepts NULL */

/* The server URL this client talks to (owned by the client). */
const char *gp_client_server(const gp_client *c);

/* The CA file that verifies an https:// server (copied; NULL or "": the system's CA
 * store). The server's certificate and its host name are always verified. */
void gp_client_set_ca(gp_client *c, const char *ca_file);

/* Per-request timeout in milliseconds (default 30000; 0: none). */
void gp_client_set_timeout_ms(gp_client *c, long timeout_ms);

/* Sends `method` `path` (starting with "/", e.g. "/v1/jobs?state=running") with `body`
 * (borrowed; NULL: no body) and, on a 2xx answer, returns the decoded JSON object in
 * *ret_json (the caller json_decref()s it; with ret_json NULL a 2xx answer is not decoded
 * or checked at all). *ret_status (may be
 * NULL) gets the HTTP status whenever one was received, also on failure.
 * Errors: GP_EIO (no connection, timeout: the message names the server and suggests
 * `gpool up`), GP_EPARSE (an answer that is not a JSON object), GP_ELIMIT (answer too
 * large), and for 4xx/5xx the code mapped from the API's error code (invalid_argument ->
 * GP_EINVAL, unauthenticated/permission_denied -> GP_EPERM, not_found -> GP_ENOENT,
 * conflict -> GP_ESTATE, too_large -> GP_ELIMIT, others -> GP_EIO) with the server's
 * message and field in *err. */
int gp_client_call(gp_client *c, const char *method, const char *path, json_t *body,
                   json_t **ret_json, long *ret_status, gp_err *err);

/* Appends `s` percent-encoded for a URL path segment or query value to `out` (cap bytes,
 * always NUL-terminated). Returns 0 or GP_ELIMIT when it does not fit. '/' is kept when
 * keep_slash is set (queue names are paths: /v1/queues/org/team). */
int gp_client_escape(const char *s, int keep_slash, char *out, size_t cap);

/* Where the server address and token come from, in order: the flags (--server/--token),
 * the environment (GPOOL_SERVER/GPOOL_TOKEN), then client.json (gp_client_config_path()).
 * Each value is resolved on its own; the server defaults to GP_CLIENT_DEFAULT_SERVER.
 * Returns 0 with malloc'd *ret_server and *ret_token (token may come back NULL when no
 * source has one), or GP_EINVAL/GP_EPARSE when client.json exists but is malformed (the
 * error names the file and field). */
int gp_client_resolve(const char *flag_server, const char *flag_token, char **ret_server,
                      char **ret_token, gp_err *err);

/* The CA file for https:// servers, in order: `flag_ca` (--ca), GPOOL_CA, then client.json's
 * "ca" (an absolute path). Returns 0 with a malloc'd *ret_ca, or NULL when no source names
 * one; GP_EINVAL/GP_EPARSE when client.json exists but is malformed. */
int gp_client_resolve_ca(const char *flag_ca, char **ret_ca, gp_err *err);

/* The path of client.json: $GPOOL_CONFIG_DIR/client.json, else
 * $XDG_CONFIG_HOME/gpool/client.json, else $HOME/.config/gpool/client.json. Writes into
 * out (cap bytes); returns 0 or GP_ELIMIT/GP_ENOENT (no HOME). */
int gp_client_config_path(char *out, size_t cap);

/* Writes client.json atomically with mode 0600 (it holds a token), creating the
 * directory. Used by `gpool up`. */
int gp_client_config_write(const char *path, const char *server, const char *token,
                           gp_err *err);

#endif
