/* SPDX-License-Identifier: Apache-2.0 */
/* Job history from the store, on the HTTP thread that asks (never the state thread): one
 * ended job that is no longer in memory (the state thread hands its id back in
 * gp_srv_req.history_job), and GET /v1/jobs?all=1, the list of ended jobs in a period,
 * which needs nothing of the state at all. Each request opens its own store reader. A job
 * read here is the same document the state thread shows for a job in memory: its stored
 * document and its timeline, through gp__srv_job_to_json. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/front/routes.h"
#include "server/state/server_int.h"
#include "util/mem.h"
#include "util/calendar.h"
#include "util/units.h"

static const char *query(const gp_srv_req *r, const char *key) {
  return json_string_value(json_object_get(r->query, key));
}

typedef struct read_ctx {
  gp_srv_job *job;
  gp_err *err;
  size_t bytes;         /* the document and timeline read, for the page cap */
} read_ctx;

static int on_job(void *ctx, const gp_store_job *row) {
  read_ctx *c = ctx;
  c->bytes += strlen(row->doc);
  return gp__srv_job_from_doc(row->doc, &c->job, c->err);
}

static int on_event(void *ctx, const gp_store_event *row) {
  read_ctx *c = ctx;
  json_t *e = json_loads(row->doc, 0, NULL);
  c->bytes += strlen(row->doc);
  if (e && c->job) json_array_append_new(c->job->timeline, e);
  else json_decref(e);
  return 0;
}

/* Reads job `id` whole; the caller frees *ret. */
static int read_job(gp_store_reader *rd, int64_t id, gp_srv_job **ret, size_t *bytes, gp_err *err) {
  read_ctx c = {NULL, err, 0};
  int rc = gp_store_reader_job(rd, id, on_job, on_event, &c, err);
  if (rc) {
    gp__srv_job_free(c.job);
    return rc;
  }
  *ret = c.job;
  if (bytes) *bytes = c.bytes;
  return 0;
}

/* The API document of a job read from the store (an ended job holds nothing, so the
 * state is not needed), as caller r may see it. */
static json_t *job_doc(const gp_srv_req *r, const gp_srv_job *j) {
  return gp__srv_job_for(gp__srv_job_to_json(NULL, j, false), r, j);
}

static int open_reader(gp_store *store, gp_srv_req *r, gp_store_reader **rd) {
  gp_err err = {0};
  int rc = gp_store_reader_open(store, rd, &err);
  if (rc) gp__srv_reply_error(r, 503, "unavailable", NULL, "the store cannot be read: %s", err.message);
  return rc;
}

void gp__srv_history_job(gp_store *store, gp_srv_req *r) {
  int64_t id = r->history_job;
  r->history_job = 0;
  gp_store_reader *rd = NULL;
  if (open_reader(store, r, &rd)) return;
  gp_err err = {0};
  gp_srv_job *j = NULL;
  int rc = read_job(rd, id, &j, NULL, &err);
  gp_store_reader_close(rd);
  if (rc == GP_ENOENT) {
    gp__srv_reply_error(r, 404, "not_found", NULL, "no job %lld", (long long)id);
    return;
  }
  if (rc) {
    gp__srv_reply_error(r, 503, "unavailable", NULL, "reading job %lld failed: %s", (long long)id,
                        err.message);
    return;
  }
  json_t *o = json_object();
  json_object_set_new(o, "job", job_doc(r, j));
  gp__srv_job_free(j);
  gp__srv_reply_json(r, 200, o);
}

bool gp__srv_history_is_list(const gp_srv_req *r) {
  return strcmp(r->method, "GET") == 0 && strcmp(r->path, "/v1/jobs") == 0 && query(r, "all") &&
         r->role != GP_ROLE_AGENT;
}

/* A time parameter (from, to): absent leaves *ret; bad answers 400 naming it. */
static bool time_param(gp_srv_req *r, const char *key, int64_t *ret) {
  const char *v = query(r, key);
  if (!v || gp_parse_time(v, ret)) return true;
  gp__srv_reply_error(r, 400, "invalid_argument", key,
                      "%s must be a time: RFC 3339 (2026-01-31T12:00:00Z), a date (2026-01-31, "
                      "00:00 UTC) or Unix seconds",
                      key);
  return false;
}

typedef struct page {
  gp_store_reader *rd;
  const gp_srv_req *r;
  json_t *jobs;
  int limit, n;
  size_t bytes;
  int64_t last_ended, last_id; /* the last job on the page */
  bool more;
  int rc;
  gp_err err;
} page;

static int page_row(void *ctx, const gp_store_job *row, int64_t ended_at) {
  page *p = ctx;
  if (p->n == p->limit || (p->n > 0 && p->bytes >= GP_SRV_LIST_PAGE_BYTES)) {
    p->more = true;
    return 1;
  }
  gp_srv_job *j = NULL;
  size_t bytes = 0;
  /* Its own read of the document and timeline: the row's strings are the list's. */
  int rc = read_job(p->rd, row->id, &j, &bytes, &p->err);
  if (rc == GP_ENOENT) return 0;
  if (rc) return p->rc = rc;
  json_array_append_new(p->jobs, job_doc(p->r, j));
  gp__srv_job_free(j);
  p->bytes += bytes + 512;
  p->n++;
  p->last_ended = ended_at;
  p->last_id = row->id;
  return 0;
}

void gp__srv_history_list(gp_store *store, gp_srv_req *r) {
  static const char *const keys[] = {"all", "from", "to", "user", "queue", "limit", "cursor", NULL};
  if (!gp__srv_query_known(r, keys, "the history takes all, from, to, user, queue, limit and cursor"))
    return;
  const char *all = query(r, "all");
  if (strcmp(all, "1") != 0 && strcmp(all, "true") != 0) {
    gp__srv_reply_error(r, 400, "invalid_argument", "all", "all must be 1 or true");
    return;
  }
  gp_store_job_filter f = {0, INT64_MAX, NULL, NULL};
  if (!time_param(r, "from", &f.from) || !time_param(r, "to", &f.to)) return;
  if (f.to <= f.from) {
    gp__srv_reply_error(r, 400, "invalid_argument", "to", "to must be after from");
    return;
  }
  int64_t limit = GP_SRV_LIST_DEFAULT;
  const char *lim = query(r, "limit");
  if (lim && (gp_parse_int64(lim, &limit) || limit < 1 || limit > GP_SRV_LIST_MAX)) {
    gp__srv_reply_error(r, 400, "invalid_argument", "limit", "limit must be between 1 and %d",
                        GP_SRV_LIST_MAX);
    return;
  }
  int64_t after_ended = 0, after_id = 0;
  const char *cur = query(r, "cursor");
  if (cur) {
    const char *dot = strchr(cur, '.');
    char head[24];
    bool ok = dot && (size_t)(dot - cur) < sizeof head;
    if (ok) {
      snprintf(head, sizeof head, "%.*s", (int)(dot - cur), cur);
      ok = !gp_parse_int64(head, &after_ended) && after_ended >= 0 &&
           !gp_parse_int64(dot + 1, &after_id) && after_id > 0;
    }
    if (!ok) {
      gp__srv_reply_error(r, 400, "invalid_argument", "cursor",
                          "cursor must be the `next` a previous page returned");
      return;
    }
  }
  f.queue = query(r, "queue");
  f.user = query(r, "user");
  if (!gp_role_reads_all(r->role)) {
    if (f.user && strcmp(f.user, r->user) != 0) {
      gp__srv_reply_error(r, 403, "permission_denied", "user",
                          "only admins may list another user's jobs");
      return;
    }
    f.user = r->user; /* users see their own history */
  }
  gp_store_reader *rd = NULL;
  if (open_reader(store, r, &rd)) return;
  page p = {.rd = rd, .r = r, .jobs = json_array(), .limit = (int)limit};
  int rc = gp_store_reader_jobs(rd, &f, after_ended, after_id, (int)limit + 1, page_row, &p, &p.err);
  gp_store_reader_close(rd);
  if (rc || p.rc) {
    json_decref(p.jobs);
    gp__srv_reply_error(r, 503, "unavailable", NULL, "reading the job history failed: %s",
                        p.err.message);
    return;
  }
  json_t *o = json_object();
  json_object_set_new(o, "jobs", p.jobs);
  char next[48];
  snprintf(next, sizeof next, "%lld.%lld", (long long)p.last_ended, (long long)p.last_id);
  json_object_set_new(o, "next", p.more ? json_string(next) : json_null());
  gp__srv_reply_json(r, 200, o);
}
