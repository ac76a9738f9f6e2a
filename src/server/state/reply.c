/* SPDX-License-Identifier: Apache-2.0 */
/* The answers' helpers every route uses (server_int.h): set a request's answer (a JSON
 * body, a document the HTTP thread serialises, an error naming its field) and hand the
 * request back to its HTTP thread. A leaf: it calls nothing else of the server, so the
 * handlers that answer do not reach up into the server's lifetime (server.c). */
#include <microhttpd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "server/state/server_int.h"

void gp__srv_reply_json(gp_srv_req *r, int status, json_t *body) {
  free(r->resp);
  r->resp = json_dumps(body, JSON_COMPACT);
  json_decref(body);
  r->status = status;
  r->answered = true;
}

void gp__srv_reply_doc(gp_srv_req *r, int status, json_t *doc) {
  free(r->resp);
  r->resp = NULL;
  json_decref(r->resp_doc);
  r->resp_doc = doc;
  r->status = status;
  r->answered = true;
}

void gp__srv_reply_error(gp_srv_req *r, int status, const char *code, const char *field,
                     const char *fmt, ...) {
  char msg[600];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  json_t *e = json_object();
  json_object_set_new(e, "code", json_string(code));
  json_object_set_new(e, "message", json_string(msg));
  json_object_set_new(e, "field", field && *field ? json_string(field) : json_null());
  json_t *o = json_object();
  json_object_set_new(o, "error", e);
  gp__srv_reply_json(r, status, o);
}

void gp__srv_reply_err(gp_srv_req *r, int code, const gp_err *err) {
  const char *msg = err && err->message[0] ? err->message : gp_strerror(code);
  const char *field = err ? err->field : NULL;
  switch (code) {
  case GP_EPERM: gp__srv_reply_error(r, 403, "permission_denied", field, "%s", msg); break;
  case GP_ENOENT: gp__srv_reply_error(r, 404, "not_found", field, "%s", msg); break;
  case GP_ESTATE:
  case GP_EEXIST: gp__srv_reply_error(r, 409, "conflict", field, "%s", msg); break;
  case GP_ELIMIT: gp__srv_reply_error(r, 413, "too_large", field, "%s", msg); break;
  case GP_EIO: gp__srv_reply_error(r, 503, "unavailable", NULL, "%s", msg); break;
  default: gp__srv_reply_error(r, 400, "invalid_argument", field, "%s", msg); break;
  }
}

void gp__srv_req_resume(gp_srv_req *r) {
  /* A request of the current batch is resumed with the batch, exactly once. */
  if (!r->in_batch) MHD_resume_connection(r->conn);
}
