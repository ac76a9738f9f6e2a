/* SPDX-License-Identifier: Apache-2.0 */
/* The accepting side of a WebSocket handshake on libmicrohttpd (ws_upgrade.h): the
 * request's check, the 101 and the thread that owns the upgraded socket. */
#include "tls/ws_upgrade.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/mem.h"
#include "util/thread.h"

typedef struct upgrade {
  size_t out_cap;
  void (*run)(void *arg, gp_tls_ws *w);
  void (*done)(void *arg);
  void *arg;
  struct MHD_UpgradeResponseHandle *urh;
  int sock;
  uint8_t *extra; /* bytes past the handshake's headers */
  size_t n_extra;
} upgrade;

/* Whether the comma-separated header value `v` holds `tok` (case-insensitive). */
static bool has_token(const char *v, const char *tok) {
  size_t n = strlen(tok);
  for (const char *p = v; p && *p;) {
    while (*p == ' ' || *p == ',' || *p == '\t') p++;
    if (strncasecmp(p, tok, n) == 0 && (p[n] == '\0' || p[n] == ',' || p[n] == ' ')) return true;
    p = strchr(p, ',');
  }
  return false;
}

const char *gp_tls_ws_upgrade_check(struct MHD_Connection *c, char accept[GP_TLS_WS_ACCEPT_LEN + 1],
                                    const char **why) {
  const char *up = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Upgrade");
  const char *conn = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Connection");
  const char *ver = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Sec-WebSocket-Version");
  const char *key = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Sec-WebSocket-Key");
  if (!up || strcasecmp(up, "websocket") != 0 || !conn || !has_token(conn, "upgrade")) {
    *why = "a session is a WebSocket: send Upgrade: websocket and Connection: Upgrade";
    return "Upgrade";
  }
  if (!ver || strcmp(ver, "13") != 0) {
    *why = "Sec-WebSocket-Version must be 13";
    return "Sec-WebSocket-Version";
  }
  if (gp_tls_ws_accept_key(key, accept) != 0) {
    *why = "Sec-WebSocket-Key must be the base64 of 16 bytes";
    return "Sec-WebSocket-Key";
  }
  *why = NULL;
  return NULL;
}

static void upgrade_free(upgrade *u) {
  free(u->extra);
  free(u);
}

static void *upgraded_thread(void *arg) {
  upgrade *u = arg;
  gp_tls_ws *w = gp_tls_ws_new(u->sock, NULL, false, u->out_cap);
  gp_tls_ws_keep_fd(w); /* libmicrohttpd's to close */
  if (u->n_extra) gp_tls_ws_preload(w, u->extra, u->n_extra);
  u->run(u->arg, w);
  gp_tls_ws_free(w);
  MHD_upgrade_action(u->urh, MHD_UPGRADE_ACTION_CLOSE);
  u->done(u->arg);
  upgrade_free(u);
  return NULL;
}

static void on_upgrade(void *cls, struct MHD_Connection *c, void *req_cls, const char *extra_in,
                       size_t extra_in_size, MHD_socket sock, struct MHD_UpgradeResponseHandle *urh) {
  (void)c;
  (void)req_cls;
  upgrade *u = cls;
  u->urh = urh;
  u->sock = sock;
  if (extra_in_size) {
    u->extra = gp_xmalloc(extra_in_size);
    memcpy(u->extra, extra_in, extra_in_size);
    u->n_extra = extra_in_size;
  }
  if (gp_thread_start_detached(upgraded_thread, u) != 0) {
    MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
    u->done(u->arg);
    upgrade_free(u);
  }
}

enum MHD_Result gp_tls_ws_upgrade(struct MHD_Connection *c, const char *accept, size_t out_cap,
                                  void (*run)(void *arg, gp_tls_ws *w), void (*done)(void *arg), void *arg) {
  upgrade *u = gp_xcalloc(1, sizeof *u);
  u->out_cap = out_cap;
  u->run = run;
  u->done = done;
  u->arg = arg;
  struct MHD_Response *r = MHD_create_response_for_upgrade(on_upgrade, u);
  MHD_add_response_header(r, "Upgrade", "websocket");
  MHD_add_response_header(r, "Sec-WebSocket-Accept", accept);
  enum MHD_Result ok = MHD_queue_response(c, MHD_HTTP_SWITCHING_PROTOCOLS, r);
  MHD_destroy_response(r);
  if (ok != MHD_YES) { /* never upgraded: on_upgrade will not run */
    done(arg);
    free(u);
  }
  return ok;
}
