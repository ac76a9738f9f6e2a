/* SPDX-License-Identifier: Apache-2.0 */
/* Internals shared by the server's files: the request that travels from an HTTP thread to
 * the state thread and back, and the handlers the state thread runs. */
#ifndef GP_SERVER_SERVER_INT_H
#define GP_SERVER_SERVER_INT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "server/state/state.h"
#include "util/buf.h"

#define GP_SRV_MAX_BODY ((size_t)1 << 20)
/* A larger body announced by Content-Length is read and thrown away up to this many bytes
 * before its 413, so that clients that send it whole can read the answer (on_headers). */
#define GP_SRV_DRAIN_MAX ((size_t)128 << 20)
/* Request intake limits (docs/api.md): a larger request is refused with 400 naming the part. */
#define GP_SRV_MAX_QUERY_PARAMS 32
#define GP_SRV_MAX_QUERY_KEY 64
#define GP_SRV_MAX_QUERY_VALUE 4096
/* Job lists (GET /v1/jobs): jobs per page by default and at most, and the bytes after which
 * a page ends (with at least one job), so a page's memory stays bounded however large the
 * jobs are. */
#define GP_SRV_LIST_DEFAULT 1000
#define GP_SRV_LIST_MAX 10000
#define GP_SRV_LIST_PAGE_BYTES ((size_t)4 << 20)

/* Why a request is refused before it is handled: status, the field named, the message. */
typedef struct gp_srv_bad {
  int status;               /* 0: nothing wrong */
  char field[80];
  char message[300];
} gp_srv_bad;

struct MHD_Connection;

typedef struct gp_srv_req {
  struct MHD_Connection *conn;
  /* Filled by the HTTP thread. */
  bool started;             /* the headers are in (the first handler call is over) */
  gp_srv_bad bad;           /* found in the raw target, answered once the headers are in */
  char method[8];
  char *path;               /* without the query string */
  char *target;             /* the raw request target (path and query, as sent) */
  json_t *query;            /* object: name -> string */
  gp_buf body;
  bool too_large;
  size_t discarded;         /* bytes of a too large body read and thrown away */
  json_t *json;             /* the parsed body, or NULL when empty */
  struct gp_srv_job *job;   /* POST /v1/jobs: the submission, parsed by the HTTP thread */
  const char *user;         /* from the token (borrowed from the config) */
  const char *token;        /* the bearer token itself (borrowed from the config) */
  char *job_key;            /* or a job's step credential (steps.h): its steps and requeue routes only */
  gp_role role;
  /* Filled by the state thread. */
  int status;
  char *resp;               /* malloc'd body */
  json_t *resp_doc;         /* or a body the HTTP thread serialises (gp__srv_reply_doc) */
  char *proxy_url;          /* log requests: fetch this from the agent */
  char *session_spec;       /* a session's agent (session_api.c): "URL\nTOKEN\nNODE" */
  bool upgraded;            /* answered 101: the connection is a session's now */
  int link_port;            /* a console link's request (webproxy.h): the job's port, with session_spec */
  struct gp_srv_wp *wp;     /* its relay, once started (webproxy.c) */
  struct gp_srv_report *report; /* GET /v1/reports: made by the HTTP thread (report.h) */
  struct gp_srv_advice *advice; /* GET /v1/advice: made by the HTTP thread (advice.h) */
  const char *resp_type;    /* the answer's Content-Type when not JSON (static) */
  char *location;           /* a Location header (a redirect to the leader), or NULL */
  int retry_after_s;        /* > 0: a Retry-After header */
  bool parked;              /* a long poll waiting for orders */
  bool in_batch;            /* being handled in the state thread's current batch: it is
                               resumed once, at the end of the batch, never earlier */
  bool answered;
  int64_t history_job;      /* GET /v1/jobs/{id} of an ended job no longer in memory: the
                               HTTP thread reads it from the store (history.c) */
  struct gp_srv_req *next;
} gp_srv_req;

/* Sets the answer: `body` is stolen (json) or copied (text). */
void gp__srv_reply_json(gp_srv_req *r, int status, json_t *body);
/* The same, but `doc` (stolen) is serialised by the HTTP thread after the batch, so a large
 * answer costs the state thread no more than building its tree. `doc` may share only
 * values the state thread never changes (a job's command and env); anything it changes
 * must be a copy. */
void gp__srv_reply_doc(gp_srv_req *r, int status, json_t *doc);
void gp__srv_reply_error(gp_srv_req *r, int status, const char *code, const char *field,
                     const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* Maps a GP_E* and its gp_err to an error answer (400/403/404/409/413/503). */
void gp__srv_reply_err(gp_srv_req *r, int code, const gp_err *err);
/* query.c: is every query parameter of r one of `keys` (NULL-ended)? Otherwise answers 400
 * naming the first other, with `takes` (what the route takes) in the message. */
bool gp__srv_query_known(gp_srv_req *r, const char *const *keys, const char *takes);

/* The caller's role, method and query parameters, as every route checks them. */
static inline bool gp__srv_req_admin(const gp_srv_req *r) { return r->role == GP_ROLE_ADMIN; }
static inline bool gp__srv_req_method(const gp_srv_req *r, const char *m) {
  return strcmp(r->method, m) == 0;
}
static inline const char *gp__srv_req_query(const gp_srv_req *r, const char *key) {
  return json_string_value(json_object_get(r->query, key));
}

/* Hands a request back to its HTTP thread (after setting its answer). */
void gp__srv_req_resume(gp_srv_req *r);

#endif
