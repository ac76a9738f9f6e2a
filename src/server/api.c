/* SPDX-License-Identifier: Apache-2.0 */
/* The public API under /v1 (docs/api.md), run on the state thread: jobs, nodes, queues,
 * metrics. Each handler validates everything before it changes anything, so a 4xx never
 * leaves a half-applied change; store errors are returned so the batch is rolled back. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/fault.h"
#include "protocol/order.h"
#include "server/advice.h"
#include "server/report.h"
#include "server/autoscale.h"
#include "server/events.h"
#include "server/jobmetrics.h"
#include "server/notify_job.h"
#include "server/server_int.h"
#include "util/mem.h"
#include "util/units.h"

#define LIST_DEFAULT GP_SRV_LIST_DEFAULT
#define LIST_MAX GP_SRV_LIST_MAX
#define LIST_PAGE_BYTES GP_SRV_LIST_PAGE_BYTES

static bool is_admin(const gp_srv_req *r) { return r->role == GP_ROLE_ADMIN; }

static bool method_is(const gp_srv_req *r, const char *m) { return strcmp(r->method, m) == 0; }

static const char *query(const gp_srv_req *r, const char *key) {
  return json_string_value(json_object_get(r->query, key));
}

static bool may_touch(const gp_srv_req *r, const gp_srv_job *j) {
  return is_admin(r) || strcmp(r->user, j->user) == 0;
}

json_t *gp__srv_job_for(json_t *o, const gp_srv_req *r, const gp_srv_job *j) {
  return gp__srv_job_redact(o, j, r->user, r->role);
}

/* A job in memory as the caller may see it. */
static json_t *job_for(gp_srv_state *s, const gp_srv_req *r, const gp_srv_job *j) {
  return gp__srv_job_for(gp__srv_job_to_json(s, j, false), r, j);
}

static void reply_job(gp_srv_state *s, gp_srv_req *r, int status, const gp_srv_job *j) {
  json_t *o = json_object();
  json_object_set_new(o, "job", job_for(s, r, j));
  gp__srv_reply_json(r, status, o);
}

/* About how many bytes a job takes in a list: its command and environment, which may be
 * large, and a fixed allowance for the rest. */
static size_t job_size_estimate(const gp_srv_job *j) {
  size_t n = 2048;
  for (size_t i = 0; i < json_array_size(j->command); i++)
    n += json_string_length(json_array_get(j->command, i)) + 4;
  const char *k;
  json_t *v;
  json_object_foreach(j->env, k, v) n += strlen(k) + json_string_length(v) + 6;
  return n;
}

/* A job for a list the HTTP thread serialises: what the state thread changes later
 * (timeline, usage, placements) is copied; the command and env, never changed, are shared. */
static json_t *job_for_list(gp_srv_state *s, const gp_srv_req *r, const gp_srv_job *j) {
  json_t *o = job_for(s, r, j);
  static const char *const changing[] = {"timeline", "usage", "placements", "last_placements"};
  for (size_t i = 0; i < sizeof changing / sizeof changing[0]; i++) {
    json_t *v = json_object_get(o, changing[i]);
    if (v) json_object_set_new(o, changing[i], json_deep_copy(v));
  }
  return o;
}

static bool has_value(const char *csv, const char *v) {
  size_t n = strlen(v);
  for (const char *p = csv; p && *p;) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    if (len == n && strncmp(p, v, n) == 0) return true;
    p = comma ? comma + 1 : NULL;
  }
  return false;
}

/* ---- jobs ---- */

/* The caps on jobs waiting to start, per user and per queue (gp_srv_state's counts, kept
 * as jobs change state): a hostile or runaway client fills neither memory nor the
 * scheduler's step. Answers 429 and returns true when the new job would pass one. */
static bool over_pending_cap(gp_srv_state *s, gp_srv_req *r, const gp_srv_job *j) {
  int64_t by_user = gp__srv_count_get(&s->pending_by_user, j->user);
  int64_t by_queue = gp__srv_count_get(&s->pending_by_queue, j->queue);
  if (by_user >= s->cfg->max_pending_per_user) {
    gp__srv_reply_error(r, 429, "too_many_pending", "user",
                        "user %s has %lld jobs waiting to start; the limit (max_pending_per_user) "
                        "is %d: wait for some to start or cancel some",
                        j->user, (long long)by_user, s->cfg->max_pending_per_user);
    return true;
  }
  if (by_queue >= s->cfg->max_pending_per_queue) {
    gp__srv_reply_error(r, 429, "too_many_pending", "queue",
                        "queue %s has %lld jobs waiting to start; the limit "
                        "(max_pending_per_queue) is %d",
                        j->queue, (long long)by_queue, s->cfg->max_pending_per_queue);
    return true;
  }
  return false;
}

static int submit(gp_srv_state *s, gp_srv_req *r, int64_t now, gp_err *err) {
  gp_err verr = {0};
  gp_srv_job *j = NULL;
  if (!r->json) {
    gp__srv_reply_error(r, 400, "invalid_argument", NULL, "the body must be a JSON job description");
    return 0;
  }
  int rc = 0;
  if (r->job) { /* parsed by the HTTP thread */
    j = r->job;
    r->job = NULL;
  } else {
    rc = gp__srv_job_parse(s->cfg, r->json, r->user, is_admin(r), &j, &verr);
  }
  if (!rc) rc = gp__srv_job_admit(s, j, is_admin(r), &verr);
  if (!rc && over_pending_cap(s, r, j)) {
    gp__srv_job_free(j);
    return 0;
  }
  if (!rc) gp__srv_job_fleet_models(s, j);
  if (!rc) rc = gp__srv_check_feasible(s, j, &verr);
  if (rc) {
    gp__srv_job_free(j);
    gp__srv_reply_err(r, rc, &verr);
    return 0;
  }
  j->id = s->next_job_id;
  snprintf(j->idstr, sizeof j->idstr, "%lld", (long long)j->id);
  j->submitted_at = now;
  gp__srv_job_insert(s, j);
  s->sched_dirty = true;
  s->counters.submissions++;
  /* An array's elements have their ids from now on: a restart never hands them out. */
  if (j->array && (rc = gp_store_set_meta(s->store, "next_job_id", s->next_job_id, err))) return rc;
  json_t *extra = json_object();
  json_object_set_new(extra, "user", json_string(j->user));
  rc = gp__srv_job_event(s, j, "submitted", now, extra, err);
  if (!rc && j->state == GP_JOB_HELD) rc = gp__srv_job_event(s, j, "held", now, NULL, err);
  if (!rc) rc = gp__srv_budget_on_submit(s, j, now, err);
  char *doc = NULL;
  if (!rc) rc = gp__srv_persist_job_doc(s, j, &doc, err);
  if (rc) return rc;
  /* The hot path: the answer is the stored document plus the API-only fields, spliced as
   * text rather than built and serialised a second time. */
  json_t *api = gp__srv_job_api_fields(s, j);
  char *tail = json_dumps(api, JSON_COMPACT);
  json_decref(api);
  size_t dl = strlen(doc), tl = strlen(tail);
  char *resp = gp_xmalloc(dl + tl + 16);
  memcpy(resp, "{\"job\":", 7);
  memcpy(resp + 7, doc, dl - 1);          /* without its closing brace */
  size_t n = 7 + dl - 1;
  if (tl > 2) resp[n++] = ',';
  memcpy(resp + n, tail + 1, tl - 1);     /* without its opening brace */
  n += tl - 1;
  resp[n++] = '}';
  resp[n] = '\0';
  free(doc);
  free(tail);
  free(r->resp);
  r->resp = resp;
  r->status = 201;
  r->answered = true;
  return 0;
}

static void list_jobs(gp_srv_state *s, gp_srv_req *r) {
  static const char *const keys[] = {"state", "queue", "user", "limit", "next", NULL};
  if (!gp__srv_query_known(r, keys, "the list takes state, queue, user, limit and next (all=1: the history)"))
    return;
  const char *states = query(r, "state"), *queue = query(r, "queue"), *user = query(r, "user");
  const char *lim = query(r, "limit"), *next = query(r, "next");
  int64_t limit = LIST_DEFAULT, from = 1;
  if (lim && (gp_parse_int64(lim, &limit) || limit < 1 || limit > LIST_MAX)) {
    gp__srv_reply_error(r, 400, "invalid_argument", "limit", "limit must be between 1 and %d", LIST_MAX);
    return;
  }
  if (next && (gp_parse_int64(next, &from) || from < 1)) {
    gp__srv_reply_error(r, 400, "invalid_argument", "next", "next must be the cursor a previous list returned");
    return;
  }
  if (states) {
    for (const char *p = states; *p;) {
      const char *comma = strchr(p, ',');
      size_t len = comma ? (size_t)(comma - p) : strlen(p);
      char one[32];
      gp_job_state st;
      snprintf(one, sizeof one, "%.*s", (int)(len < 31 ? len : 31), p);
      if (len >= 31 || gp_job_state_parse(one, &st)) {
        gp__srv_reply_error(r, 400, "invalid_argument", "state", "unknown job state \"%s\"", one);
        return;
      }
      p = comma ? comma + 1 : p + len;
    }
  }
  /* The state thread only builds the page's tree (sharing the large strings); the HTTP
   * thread turns it into text. */
  json_t *list = json_array();
  size_t bytes = 0;
  int64_t id = from, cursor = 0, n = 0;
  for (; id < s->next_job_id; id++) {
    const gp_srv_job *j = (size_t)id < s->cap_jobs ? s->jobs[id] : NULL;
    if (!j) continue;
    if (states && !has_value(states, gp_job_state_name(j->state))) continue;
    if (queue && strcmp(queue, j->queue) != 0 &&
        !(strncmp(j->queue, queue, strlen(queue)) == 0 && j->queue[strlen(queue)] == '/'))
      continue;
    if (user && strcmp(user, j->user) != 0) continue;
    if (n == limit || (n > 0 && bytes >= LIST_PAGE_BYTES)) {
      cursor = id;
      break;
    }
    json_array_append_new(list, job_for_list(s, r, j));
    bytes += job_size_estimate(j);
    n++;
  }
  json_t *o = json_object();
  json_object_set_new(o, "jobs", list);
  char cur[32];
  snprintf(cur, sizeof cur, "%lld", (long long)cursor);
  json_object_set_new(o, "next", cursor ? json_string(cur) : json_null());
  gp__srv_reply_doc(r, 200, o);
}

static int cancel(gp_srv_state *s, gp_srv_req *r, gp_srv_job *j, int64_t now, gp_err *err) {
  int rc = 0;
  switch (j->state) {
  case GP_JOB_PENDING:
  case GP_JOB_HELD:
    rc = gp__srv_job_end(s, j, GP_JOB_CANCELLED, "cancelled", now, err);
    break;
  case GP_JOB_RUNNING:
    rc = gp__srv_job_event(s, j, "cancel_requested", now, json_pack("{s:s}", "by", r->user), err);
    if (!rc) rc = gp__srv_job_stop(s, j, "cancelled", now, err);
    break;
  case GP_JOB_STOPPING:
    /* Already stopping (preempted, timed out): make it end as cancelled, not requeued. */
    free(j->stop_reason);
    j->stop_reason = gp_xstrdup("cancelled");
    rc = gp__srv_persist_job(s, j, err);
    break;
  default:
    gp__srv_reply_error(r, 409, "conflict", NULL, "job %s has already ended (%s)", j->idstr,
                    gp_job_state_name(j->state));
    return 0;
  }
  if (!rc) reply_job(s, r, 200, j);
  return rc;
}

/* The owner's hold and the budget's are told apart (budget_hold.c): only an admin, or the
 * next period, lifts the budget's. */
static int hold_release(gp_srv_state *s, gp_srv_req *r, gp_srv_job *j, bool hold, int64_t now,
                        gp_err *err) {
  gp_srv_hold_refusal why = GP_SRV_HOLD_DONE;
  int rc = gp__srv_job_hold_change(s, j, hold, r->user, is_admin(r), now, &why, err);
  if (rc) return rc;
  if (why == GP_SRV_HOLD_WRONG_STATE) {
    gp__srv_reply_error(r, 409, "conflict", NULL, "job %s is %s: only %s jobs can be %s", j->idstr,
                    gp_job_state_name(j->state), hold ? "pending" : "held",
                    hold ? "held" : "released");
  } else if (why == GP_SRV_HOLD_BY_BUDGET) {
    gp__srv_reply_error(r, 403, "permission_denied", NULL,
                        "job %s is held by its queue's budget (%s); only an admin may release it "
                        "before the period ends",
                        j->idstr, gp__srv_job_budget_hold_reason(j));
  } else {
    reply_job(s, r, 200, j);
  }
  return 0;
}

/* The node task `task` of a job ran on last (for its log): its placement, else the last
 * "started" event, which names each task's node for a gang. */
static gp_srv_node *log_node(gp_srv_state *s, const gp_srv_job *j, int task) {
  if (j->n_alloc > task && j->alloc[task].node >= 0 && j->alloc[task].node < s->n_nodes)
    return s->nodes[j->alloc[task].node];
  for (int i = (int)json_array_size(j->timeline) - 1; i >= 0; i--) {
    const json_t *e = json_array_get(j->timeline, (size_t)i);
    const char *ev = json_string_value(json_object_get(e, "event"));
    if (!ev || strcmp(ev, "started") != 0) continue;
    const json_t *nodes = json_object_get(e, "nodes");
    const json_t *name = json_is_array(nodes) ? json_array_get(nodes, (size_t)task)
                                              : task == 0 ? json_object_get(e, "node") : NULL;
    return gp__srv_node_get(s, json_string_value(name));
  }
  return NULL;
}

static void job_log(gp_srv_state *s, gp_srv_req *r, gp_srv_job *j) {
  const char *stream = query(r, "stream"), *off = query(r, "offset");
  if (!stream) stream = "stdout";
  if (strcmp(stream, "stdout") != 0 && strcmp(stream, "stderr") != 0) {
    gp__srv_reply_error(r, 400, "invalid_argument", "stream", "stream must be stdout or stderr");
    return;
  }
  int64_t offset = 0;
  if (off && (gp_parse_int64(off, &offset) || offset < 0)) {
    gp__srv_reply_error(r, 400, "invalid_argument", "offset", "offset must be a byte offset >= 0");
    return;
  }
  const char *tv = query(r, "task");
  int64_t task = 0;
  if (tv && (gp_parse_int64(tv, &task) || task < 0 || task >= (j->tasks > 0 ? j->tasks : 1))) {
    gp__srv_reply_error(r, 400, "invalid_argument", "task", "job %s has tasks 0..%d", j->idstr,
                        (j->tasks > 0 ? j->tasks : 1) - 1);
    return;
  }
  gp_srv_node *n = log_node(s, j, (int)task);
  if (!n) {
    gp__srv_reply_error(r, 404, "not_found", NULL, "job %s has not run yet, so it has no log", j->idstr);
    return;
  }
  if (!n->agent_url) {
    gp__srv_reply_error(r, 503, "unavailable", NULL, "node %s has no agent address", n->name);
    return;
  }
  const char *tok = n->agent_token;
  for (int i = 0; !tok && i < s->cfg->n_tokens; i++)
    if (s->cfg->tokens[i].role == GP_ROLE_AGENT) tok = s->cfg->tokens[i].token;
  /* The URL and the token travel together: "URL\nTOKEN" (the HTTP thread splits them). */
  char url[1200];
  snprintf(url, sizeof url, "%s/logs/%s?stream=%s&offset=%lld&task=%lld\n%s", n->agent_url,
           j->idstr, stream, (long long)offset, (long long)task, tok ? tok : "");
  r->proxy_url = gp_xstrdup(url);
  r->status = 200;
  r->answered = true;
}

/* GET /v1/jobs/{id}/metrics: its GPUs' telemetry, for its owner, admins and viewers (as
 * its log, it tells what the job does). Written as text: a long gang's answer holds
 * hundreds of thousands of numbers. */
static void job_metrics(gp_srv_state *s, gp_srv_req *r, const gp_srv_job *j) {
  if (!gp__srv_job_may_read_use(j, r->user, r->role)) {
    gp__srv_reply_error(r, 403, "permission_denied", NULL,
                        "job %s belongs to %s; its owner, admins and viewers see its metrics", j->idstr, j->user);
    return;
  }
  gp_buf out;
  gp_buf_init(&out, 0);
  gp__srv_jobmetrics_json(j, s->cfg->heartbeat_s, &out);
  free(r->resp);
  r->resp = gp_buf_steal(&out);
  r->status = 200;
  r->resp_type = "application/json";
  r->answered = true;
}

/* A job that ended and is no longer in memory: the store has it. Reads go to the HTTP
 * thread (history.c); changes are refused as for any ended job. */
static int ended_route(gp_srv_state *s, gp_srv_req *r, const char *id, const char *action,
                       gp_job_state st) {
  (void)s;
  if (!*action) {
    if (!method_is(r, "GET")) {
      gp__srv_reply_error(r, 405, "method_not_allowed", NULL, "use GET on /v1/jobs/{id}");
      return 0;
    }
    r->history_job = gp__srv_job_id_parse(id);
    r->status = 200;
    r->answered = true;
    return 0;
  }
  if (strcmp(action, "log") == 0 && method_is(r, "GET")) {
    gp__srv_reply_error(r, 404, "not_found", NULL,
                        "job %s ended (%s) before the last %d ended jobs; its log is no longer "
                        "kept reachable",
                        id, gp_job_state_name(st), s->cfg->recent_ended_jobs);
    return 0;
  }
  if (strcmp(action, "metrics") == 0 && method_is(r, "GET")) {
    gp__srv_reply_error(r, 404, "not_found", NULL,
                        "job %s ended (%s) before the last %d ended jobs; its GPU metrics are "
                        "kept only while the job is in memory",
                        id, gp_job_state_name(st), s->cfg->recent_ended_jobs);
    return 0;
  }
  if (strcmp(action, "cancel") != 0 && strcmp(action, "hold") != 0 && strcmp(action, "release") != 0) {
    gp__srv_reply_error(r, 404, "not_found", NULL, "no route %s %s", r->method, r->path);
    return 0;
  }
  if (!method_is(r, "POST")) {
    gp__srv_reply_error(r, 405, "method_not_allowed", NULL, "use POST on /v1/jobs/{id}/%s", action);
    return 0;
  }
  gp__srv_reply_error(r, 409, "conflict", NULL, "job %s has already ended (%s)", id, gp_job_state_name(st));
  return 0;
}

/* An array element not made a job yet: what it would be, and cancel, hold or release. */
static int array_elem_route(gp_srv_state *s, gp_srv_req *r, gp_srv_job *p, int64_t pos, const char *action,
                            int64_t now, gp_err *err) {
  bool get = !*action && method_is(r, "GET");
  if (!get && (!method_is(r, "POST") || (strcmp(action, "cancel") && strcmp(action, "hold") && strcmp(action, "release")))) {
    gp__srv_reply_error(r, 404, "not_found", NULL, "array element %lld_%lld has not started: it has no %s",
                        (long long)p->id, (long long)gp__srv_array_index(p->array, pos), *action ? action : "such route");
    return 0;
  }
  if (!get && !may_touch(r, p)) {
    gp__srv_reply_error(r, 403, "permission_denied", NULL, "job %s belongs to %s; only its owner or an admin may %s it",
                        p->idstr, p->user, action);
    return 0;
  }
  int rc = get ? 0 : gp__srv_array_elem_action(s, p, pos, action, now, err);
  if (rc) return rc;
  int64_t made = p->id + 1 + pos;
  gp_srv_job *e = (size_t)made < s->cap_jobs ? s->jobs[made] : NULL;
  if (e) { /* a cancel made it a job */
    reply_job(s, r, 200, e);
    return 0;
  }
  json_t *o = job_for(s, r, p);
  char aid[48], eid[24];
  snprintf(aid, sizeof aid, "%lld_%lld", (long long)p->id, (long long)gp__srv_array_index(p->array, pos));
  snprintf(eid, sizeof eid, "%lld", (long long)(p->id + 1 + pos));
  json_object_del(o, "array");
  json_object_set_new(o, "id", json_string(eid));
  json_object_set_new(o, "array_id", json_string(aid));
  json_object_set_new(o, "array_job_id", json_string(p->idstr));
  json_object_set_new(o, "array_index", json_integer(gp__srv_array_index(p->array, pos)));
  json_object_set_new(o, "state", json_string(gp__srv_array_elem_state(p, pos)));
  json_t *w = json_object();
  json_object_set_new(w, "job", o);
  gp__srv_reply_json(r, 200, w);
  return 0;
}

static int jobs_route(gp_srv_state *s, gp_srv_req *r, const char *rest, int64_t now, gp_err *err) {
  if (!*rest) {
    if (method_is(r, "POST")) return submit(s, r, now, err);
    if (method_is(r, "GET")) {
      list_jobs(s, r);
      return 0;
    }
    gp__srv_reply_error(r, 405, "method_not_allowed", NULL, "use GET or POST on /v1/jobs");
    return 0;
  }
  char id[32];
  const char *slash = strchr(rest, '/');
  size_t len = slash ? (size_t)(slash - rest) : strlen(rest);
  snprintf(id, sizeof id, "%.*s", (int)(len < 31 ? len : 31), rest);
  gp_srv_job *j = len < 31 ? gp__srv_job_get(s, id) : NULL;
  const char *action = slash ? slash + 1 : "";
  gp_job_state ended;
  gp_srv_job *p = NULL;
  int64_t pos = 0, eid = !j && strchr(id, '_') ? gp__srv_array_elem_id(s, id, &p, &pos) : 0;
  if (eid) {
    snprintf(id, sizeof id, "%lld", (long long)eid); /* an element made a job and ended since */
    if (!gp__srv_array_made(p->array, pos)) return array_elem_route(s, r, p, pos, action, now, err);
  }
  if (!j && len < 31 && gp__srv_ended_state(s, gp__srv_job_id_parse(id), &ended))
    return ended_route(s, r, id, action, ended);
  if (!j) {
    gp__srv_reply_error(r, 404, "not_found", NULL, "no job %s", id);
    return 0;
  }
  if (!*action) {
    if (!method_is(r, "GET")) {
      gp__srv_reply_error(r, 405, "method_not_allowed", NULL, "use GET on /v1/jobs/{id}");
      return 0;
    }
    reply_job(s, r, 200, j);
    return 0;
  }
  if (strcmp(action, "metrics") == 0 && method_is(r, "GET")) {
    job_metrics(s, r, j);
    return 0;
  }
  if (strcmp(action, "log") == 0 && method_is(r, "GET")) {
    if (!may_touch(r, j)) {
      gp__srv_reply_error(r, 403, "permission_denied", NULL, "job %s belongs to %s", j->idstr, j->user);
      return 0;
    }
    job_log(s, r, j);
    return 0;
  }
  bool is_cancel = strcmp(action, "cancel") == 0, is_hold = strcmp(action, "hold") == 0,
       is_release = strcmp(action, "release") == 0;
  if (!is_cancel && !is_hold && !is_release) {
    gp__srv_reply_error(r, 404, "not_found", NULL, "no route %s %s", r->method, r->path);
    return 0;
  }
  if (!method_is(r, "POST")) {
    gp__srv_reply_error(r, 405, "method_not_allowed", NULL, "use POST on /v1/jobs/{id}/%s", action);
    return 0;
  }
  if (!may_touch(r, j)) {
    gp__srv_reply_error(r, 403, "permission_denied", NULL,
                    "job %s belongs to %s; only its owner or an admin may %s it", j->idstr,
                    j->user, action);
    return 0;
  }
  if (j->array) { /* the whole array */
    int rc = is_cancel ? gp__srv_array_cancel(s, j, r->user, now, err)
                       : gp__srv_array_hold(s, j, is_hold, r->user, is_admin(r), now, err);
    if (!rc) reply_job(s, r, 200, j);
    return rc;
  }
  if (is_cancel) return cancel(s, r, j, now, err);
  return hold_release(s, r, j, is_hold, now, err);
}

/* ---- nodes ---- */

static int node_action(gp_srv_state *s, gp_srv_req *r, gp_srv_node *n, const char *action,
                       int64_t now, gp_err *err) {
  (void)now;
  if (!is_admin(r)) {
    gp__srv_reply_error(r, 403, "permission_denied", NULL, "only admins may %s nodes", action);
    return 0;
  }
  const json_t *body = r->json;
  if (body && !json_is_object(body)) {
    gp__srv_reply_error(r, 400, "invalid_argument", NULL, "the body must be a JSON object");
    return 0;
  }
  const char *k;
  const json_t *v;
  bool inject = strcmp(action, "inject") == 0;
  json_object_foreach((json_t *)body, k, v) {
    if (strcmp(k, inject ? "fault" : "reason") != 0 && (inject || strcmp(k, "gpu") != 0)) {
      gp__srv_reply_error(r, 400, "invalid_argument", k, "unknown field");
      return 0;
    }
  }
  const json_t *rv = json_object_get(body, inject ? "fault" : "reason");
  if (rv && (!json_is_string(rv) || json_string_length(rv) > 512)) {
    gp__srv_reply_error(r, 400, "invalid_argument", inject ? "fault" : "reason",
                    "must be a string of at most 512 characters");
    return 0;
  }
  const char *reason = rv ? json_string_value(rv) : NULL;
  if (inject) {
    if (!reason || !*reason) {
      gp__srv_reply_error(r, 400, "invalid_argument", "fault", "say which fault, e.g. \"xid:79@gpu3\"");
      return 0;
    }
    gp_proto_fault faults[GP_PROTO_MAX_FAULTS];
    int nf = 0;
    gp_err ferr = {0};
    if (gp_proto_fault_parse(reason, faults, GP_PROTO_MAX_FAULTS, &nf, &ferr)) {
      gp__srv_reply_error(r, 400, "invalid_argument", "fault", "%s", ferr.message);
      return 0;
    }
    for (int i = 0; i < nf; i++)
      if (faults[i].gpu < 0 || faults[i].gpu >= n->n_gpus) {
        gp__srv_reply_error(r, 400, "invalid_argument", "fault", "node %s has GPUs 0..%d, not gpu%d",
                            n->name, n->n_gpus - 1, faults[i].gpu);
        return 0;
      }
    gp_proto_order o = {.kind = GP_PROTO_INJECT};
    snprintf(o.u.inject.fault, sizeof o.u.inject.fault, "%s", reason);
    int rc = gp__srv_order_add(s, n, gp_proto_order_encode(&o), 0, false, err);
    if (rc) return rc;
    json_t *out = json_object();
    json_object_set_new(out, "node", gp__srv_node_to_json(s, n, false));
    gp__srv_reply_json(r, 200, out);
    return 0;
  }
  const json_t *gv = json_object_get(body, "gpu");
  int gpu = -1;
  if (gv && !json_is_null(gv)) {
    if (!json_is_integer(gv) || json_integer_value(gv) < 0 || json_integer_value(gv) >= n->n_gpus) {
      gp__srv_reply_error(r, 400, "invalid_argument", "gpu", "node %s has GPUs 0..%d", n->name, n->n_gpus - 1);
      return 0;
    }
    gpu = (int)json_integer_value(gv);
  }
  bool resume = strcmp(action, "resume") == 0;
  int rc = 0;
  if (gpu >= 0) {
    if (strcmp(action, "cordon") == 0) {
      gp__srv_reply_error(r, 400, "invalid_argument", "gpu", "cordon applies to whole nodes; drain a GPU instead");
      return 0;
    }
    gp_srv_gpu *g = &n->gpus[gpu];
    free(g->reason);
    g->reason = NULL;
    if (resume) {
      g->admin_drained = false;
      g->health = GP_GPU_HEALTHY;
    } else {
      g->admin_drained = true;
      if (g->health == GP_GPU_HEALTHY) g->health = GP_GPU_DRAINED;
      g->reason = gp_xstrdup(reason ? reason : "drained by an admin");
    }
    gp_proto_order o = {.kind = resume ? GP_PROTO_RESUME_GPU : GP_PROTO_DRAIN_GPU};
    o.u.gpu.gpu = gpu;
    o.u.gpu.has_reason = reason != NULL;
    snprintf(o.u.gpu.reason, sizeof o.u.gpu.reason, "%s", reason ? reason : "");
    rc = gp__srv_order_add(s, n, gp_proto_order_encode(&o), 0, false, err);
  } else {
    n->admin_state = resume ? GP_NODE_UP : strcmp(action, "drain") == 0 ? GP_NODE_DRAIN : GP_NODE_CORDON;
    free(n->reason);
    n->reason = !resume && reason && *reason ? gp_xstrdup(reason) : NULL;
  }
  gp__srv_node_changed(s, n);
  s->sched_dirty = true;
  if (!rc) rc = gp__srv_persist_node(s, n, err);
  if (rc) return rc;
  json_t *out = json_object();
  json_object_set_new(out, "node", gp__srv_node_to_json(s, n, false));
  gp__srv_reply_json(r, 200, out);
  return 0;
}

/* DELETE /v1/nodes/{name}/credential: frees the name for the next agent that registers it
 * (a reinstalled machine whose agent lost its data directory). */
static int node_forget(gp_srv_state *s, gp_srv_req *r, gp_srv_node *n, gp_err *err) {
  if (!method_is(r, "DELETE")) {
    gp__srv_reply_error(r, 405, "method_not_allowed", NULL, "use DELETE on /v1/nodes/{name}/credential");
    return 0;
  }
  if (!is_admin(r)) {
    gp__srv_reply_error(r, 403, "permission_denied", NULL, "only admins may forget a node's credential");
    return 0;
  }
  int rc = gp__srv_node_forget(s, n, err);
  if (rc) return rc;
  gp__srv_reply_json(r, 200, json_pack("{s:s,s:b}", "node", n->name, "credential", 0));
  return 0;
}

/* DELETE /v1/nodes/{name}[?force=1]: forgets a node for good (a machine given back to its
 * provider): only a drained or cordoned node that holds no job, unless forced, when its
 * jobs are lost as on a lost node (requeued or failed). An agent still polling is told the
 * node is gone; one that registers again later is a new node. */
static int node_delete(gp_srv_state *s, gp_srv_req *r, gp_srv_node *n, int64_t now, gp_err *err) {
  if (!is_admin(r)) {
    gp__srv_reply_error(r, 403, "permission_denied", NULL, "only admins may delete nodes");
    return 0;
  }
  const char *fv = query(r, "force");
  bool force = fv && (strcmp(fv, "1") == 0 || strcmp(fv, "true") == 0);
  if (fv && !force && strcmp(fv, "0") != 0 && strcmp(fv, "false") != 0) {
    gp__srv_reply_error(r, 400, "invalid_argument", "force", "must be 1 or 0");
    return 0;
  }
  const gp_srv_job *holder = gp__srv_node_holder(s, n);
  if (!force) {
    if (n->alive && n->admin_state == GP_NODE_UP) {
      gp__srv_reply_error(r, 409, "conflict", "node",
                          "node %s is up: drain or cordon it first (or use force=1)", n->name);
      return 0;
    }
    if (holder) {
      gp__srv_reply_error(r, 409, "conflict", "node",
                          "node %s still runs job %s: wait for it to end (or use force=1, which "
                          "requeues or fails its jobs)",
                          n->name, holder->idstr);
      return 0;
    }
  }
  int rc = 0;
  if (n->alive) rc = gp__srv_node_down(s, n, "node deleted", now, err);
  for (gp_srv_job *j; !rc && (j = gp__srv_node_holder(s, n));)
    rc = gp__srv_job_lost(s, j, "node deleted", now, err);
  if (rc) return rc;
  gp__srv_waiter_node_gone(n);
  char *name = gp_xstrdup(n->name);
  rc = gp__srv_node_remove(s, n, now, err);
  if (!rc) gp__srv_reply_json(r, 200, json_pack("{s:s,s:b}", "node", name, "deleted", 1));
  free(name);
  return rc;
}

static int nodes_route(gp_srv_state *s, gp_srv_req *r, const char *rest, int64_t now, gp_err *err) {
  if (!*rest) {
    if (!method_is(r, "GET")) {
      gp__srv_reply_error(r, 405, "method_not_allowed", NULL, "use GET on /v1/nodes");
      return 0;
    }
    json_t *list = json_array();
    for (int i = 0; i < s->n_nodes; i++)
      json_array_append_new(list, gp__srv_node_to_json_for(s, s->nodes[i], r->user, r->role));
    gp__srv_reply_json(r, 200, json_pack("{s:o}", "nodes", list));
    return 0;
  }
  char name[300];
  const char *slash = strchr(rest, '/');
  size_t len = slash ? (size_t)(slash - rest) : strlen(rest);
  snprintf(name, sizeof name, "%.*s", (int)(len < 299 ? len : 299), rest);
  gp_srv_node *n = gp__srv_node_get(s, name);
  if (!n) {
    gp__srv_reply_error(r, 404, "not_found", NULL, "no node %s", name);
    return 0;
  }
  const char *action = slash ? slash + 1 : "";
  if (!*action && method_is(r, "GET")) {
    gp__srv_reply_json(r, 200,
                       json_pack("{s:o}", "node", gp__srv_node_to_json_for(s, n, r->user, r->role)));
    return 0;
  }
  if (!*action && method_is(r, "DELETE")) return node_delete(s, r, n, now, err);
  if (strcmp(action, "drain") == 0 || strcmp(action, "cordon") == 0 ||
      strcmp(action, "resume") == 0 || strcmp(action, "inject") == 0) {
    if (!method_is(r, "POST")) {
      gp__srv_reply_error(r, 405, "method_not_allowed", NULL, "use POST on /v1/nodes/{name}/%s", action);
      return 0;
    }
    return node_action(s, r, n, action, now, err);
  }
  if (strcmp(action, "credential") == 0) return node_forget(s, r, n, err);
  if (strcmp(action, "interrupt") == 0) return gp__srv_interrupt_route(s, r, n, now, err);
  gp__srv_reply_error(r, 404, "not_found", NULL, "no route %s %s", r->method, r->path);
  return 0;
}

/* ---- queues ---- */

/* A new queue "a/b" makes "a" a parent, and jobs go to leaves only. Refused when "a" is a
 * leaf of the config file (the file says what it is) or holds unfinished jobs (they
 * could never start). Returns true when it answered. */
static bool refuse_new_parent(gp_srv_state *s, gp_srv_req *r, const char *name) {
  for (const char *p = strchr(name, '/'); p; p = strchr(p + 1, '/')) {
    char *prefix = gp_xstrndup(name, (size_t)(p - name));
    const gp_srv_queue *pq = gp__srv_queue_get(s, prefix);
    const char *busy = NULL;
    for (int a = 0; pq && !pq->from_config && a < s->n_active && !busy; a++)
      if (strcmp(s->active[a]->queue, prefix) == 0) busy = s->active[a]->idstr;
    if (pq && pq->from_config)
      gp__srv_reply_error(r, 409, "conflict", "name",
                          "queue %s is a leaf defined in the config file; a queue under it "
                          "would make it a parent (define both in the config file)",
                          prefix);
    else if (busy)
      gp__srv_reply_error(r, 409, "conflict", "name",
                          "queue %s has unfinished jobs (e.g. %s); a queue under it would make "
                          "it a parent, where jobs cannot run",
                          prefix, busy);
    free(prefix);
    if ((pq && pq->from_config) || busy) return true;
  }
  return false;
}

static int queues_route(gp_srv_state *s, gp_srv_req *r, const char *name, gp_err *err) {
  if (!*name) {
    if (!method_is(r, "GET")) {
      gp__srv_reply_error(r, 405, "method_not_allowed", NULL, "use GET on /v1/queues");
      return 0;
    }
    gp__srv_reply_json(r, 200, json_pack("{s:o}", "queues", gp__srv_queues_json(s)));
    return 0;
  }
  gp_srv_queue *q = gp__srv_queue_get(s, name);
  if (method_is(r, "GET")) {
    json_t *all = gp__srv_queues_json(s);
    json_t *found = NULL;
    for (size_t i = 0; i < json_array_size(all) && !found; i++)
      if (strcmp(json_string_value(json_object_get(json_array_get(all, i), "name")), name) == 0)
        found = json_incref(json_array_get(all, i));
    json_decref(all);
    if (!found) gp__srv_reply_error(r, 404, "not_found", NULL, "no queue %s", name);
    else gp__srv_reply_json(r, 200, json_pack("{s:o}", "queue", found));
    return 0;
  }
  bool put = method_is(r, "PUT"), del = method_is(r, "DELETE");
  if (!put && !del) {
    gp__srv_reply_error(r, 405, "method_not_allowed", NULL, "use GET, PUT or DELETE on /v1/queues/{name}");
    return 0;
  }
  if (!is_admin(r)) {
    gp__srv_reply_error(r, 403, "permission_denied", NULL, "only admins may change queues");
    return 0;
  }
  if (q && q->from_config) {
    gp__srv_reply_error(r, 409, "conflict", "name",
                    "queue %s is defined in the config file; change it there", name);
    return 0;
  }
  if (del) {
    if (!q) {
      gp__srv_reply_error(r, 404, "not_found", NULL, "no queue %s", name);
      return 0;
    }
    for (int a = 0; a < s->n_active; a++)
      if (strcmp(s->active[a]->queue, name) == 0) {
        gp__srv_reply_error(r, 409, "conflict", NULL, "queue %s still has unfinished jobs (e.g. %s)",
                        name, s->active[a]->idstr);
        return 0;
      }
    int rc = gp_store_del_queue(s->store, name, err);
    if (rc) return rc;
    for (int i = 0; i < s->n_queues; i++)
      if (s->queues[i] == q) {
        s->queues[i] = s->queues[--s->n_queues];
        break;
      }
    gp__srv_queue_free(q);
    gp__srv_queues_changed(s);
    gp__srv_events_note_queue(s, name);
    s->sched_dirty = true;
    gp__srv_reply_json(r, 200, json_pack("{s:s,s:b}", "queue", name, "deleted", 1));
    return 0;
  }
  if (!r->json) {
    gp__srv_reply_error(r, 400, "invalid_argument", NULL, "the body must be a JSON queue description");
    return 0;
  }
  const char *prio = json_string_value(json_object_get(r->json, "default_priority"));
  if (prio && !gp_priority_class_find(&s->cfg->policy, prio)) {
    gp__srv_reply_error(r, 400, "invalid_argument", "default_priority", "no priority class is called \"%s\"", prio);
    return 0;
  }
  const json_t *pcs = json_object_get(r->json, "priority_classes");
  for (size_t i = 0; json_is_array(pcs) && i < json_array_size(pcs); i++) {
    const char *cls = json_string_value(json_array_get(pcs, i));
    if (cls && !gp_priority_class_find(&s->cfg->policy, cls)) {
      gp__srv_reply_error(r, 400, "invalid_argument", "priority_classes",
                          "no priority class is called \"%.64s\"", cls);
      return 0;
    }
  }
  if (!q && gp_queue_name_ok(name) && refuse_new_parent(s, r, name)) return 0;
  if (!q && s->n_queues >= GP_SRV_MAX_QUEUES) {
    gp__srv_reply_error(r, 413, "too_large", NULL, "at most %d queues", GP_SRV_MAX_QUEUES);
    return 0;
  }
  bool created = !q;
  gp_srv_queue *target = q;
  if (created) {
    target = gp_xcalloc(1, sizeof *target);
    target->n_classes = -1;
    target->weight = 1;
    target->limit = GP_NO_LIMIT;
    static const char *const everyone = "*";
    target->users = gp_xcalloc(2, sizeof *target->users);
    target->users[0] = gp_xstrdup(everyone);
    target->n_users = 1;
  }
  gp_err verr = {0};
  int rc = gp__srv_queue_from_json(r->json, name, target, &verr);
  if (rc) {
    if (created) gp__srv_queue_free(target);
    gp__srv_reply_err(r, rc, &verr);
    return 0;
  }
  if (created) {
    gp_xgrow((void **)&s->queues, &s->cap_queues, (size_t)s->n_queues + 1, sizeof *s->queues);
    s->queues[s->n_queues++] = target;
  }
  gp__srv_queues_changed(s);
  gp__srv_events_note_queue(s, name);
  s->sched_dirty = true;
  rc = gp__srv_persist_queue(s, target, err);
  if (rc) return rc;
  gp__srv_reply_json(r, created ? 201 : 200, json_pack("{s:o}", "queue", gp__srv_queue_to_json(target)));
  return 0;
}

/* ---- dispatch ---- */

int gp__srv_api_handle(gp_srv_state *s, gp_srv_req *r, int64_t now_s, int64_t now_ms, gp_err *err) {
  (void)now_ms;
  const char *p = r->path;
  if (strcmp(p, "/metrics") == 0) {
    char *text = gp__srv_metrics_text(s);
    gp_buf out;
    gp_buf_init(&out, 0);
    gp_buf_puts(&out, text);
    free(text);
    gp__srv_events_metrics(s->events, &out);
    gp__srv_notify_metrics(s->notify, &out);
    free(r->resp);
    r->resp = gp_buf_steal(&out);
    r->status = 200;
    r->answered = true;
    return 0;
  }
  if (r->role == GP_ROLE_AGENT) {
    gp__srv_reply_error(r, 403, "permission_denied", NULL, "agent tokens may use only /v1/agent/*");
    return 0;
  }
  /* One gate for every route, present and future: a viewer changes nothing. */
  if (r->role == GP_ROLE_VIEWER && !method_is(r, "GET")) {
    gp__srv_reply_error(r, 403, "permission_denied", NULL, "a viewer token is read-only");
    return 0;
  }
  if (strcmp(p, "/v1/whoami") == 0) return gp__srv_whoami_route(s, r);
  if (strcmp(p, "/v1/jobs") == 0) return jobs_route(s, r, "", now_s, err);
  if (strncmp(p, "/v1/jobs/", 9) == 0) return jobs_route(s, r, p + 9, now_s, err);
  if (strcmp(p, "/v1/nodes") == 0) return nodes_route(s, r, "", now_s, err);
  if (strncmp(p, "/v1/nodes/", 10) == 0) return nodes_route(s, r, p + 10, now_s, err);
  if (strcmp(p, "/v1/queues") == 0) return queues_route(s, r, "", err);
  if (strncmp(p, "/v1/queues/", 11) == 0) return queues_route(s, r, p + 11, err);
  if (strncmp(p, "/v1/reports/", 12) == 0) {
    gp__srv_report_route(s, r, p + 12, now_s);
    return 0;
  }
  if (strcmp(p, "/v1/advice") == 0) {
    gp__srv_advice_route(s, r, now_s);
    return 0;
  }
  if (strcmp(p, "/v1/prices") == 0) return gp__srv_prices_route(s, r, err);
  if (strcmp(p, "/v1/notify") == 0) return gp__srv_notify_route(s, r, err);
  if (strcmp(p, "/v1/templates") == 0) return gp__srv_templates_route(s, r, now_s, err);
  gp__srv_reply_error(r, 404, "not_found", NULL, "no route %s %s", r->method, p);
  return 0;
}
