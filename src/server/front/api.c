/* SPDX-License-Identifier: Apache-2.0 */
/* The public API under /v1 (docs/api.md), run on the state thread: the routing of every
 * /v1 path, the job routes and /metrics (nodes: api_nodes.c, queues: api_queues.c). Each
 * handler validates everything before it changes anything, so a 4xx never leaves a
 * half-applied change; store errors are returned so the batch is rolled back. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/fault.h"
#include "protocol/order.h"
#include "server/accounting/budgets.h"
#include "server/accounting/prices.h"
#include "server/front/routes.h"
#include "server/observe/metrics_snapshot.h"
#include "server/workloads/sessions.h"
#include "server/front/webproxy.h"
#include "server/accounting/advice.h"
#include "server/accounting/report.h"
#include "server/elastic/autoscale.h"
#include "server/streams/events.h"
#include "server/accounting/fairshare.h"
#include "server/state/reservations.h"
#include "server/state/jobmetrics.h"
#include "server/state/notify_job.h"
#include "server/workloads/image_pull.h"
#include "server/workloads/registry.h"
#include "server/state/server_int.h"
#include "server/workloads/service.h"
#include "server/workloads/steps.h"
#include "util/mem.h"
#include "util/units.h"

#define LIST_DEFAULT GP_SRV_LIST_DEFAULT
#define LIST_MAX GP_SRV_LIST_MAX
#define LIST_PAGE_BYTES GP_SRV_LIST_PAGE_BYTES

static bool may_touch(const gp_srv_req *r, const gp_srv_job *j) {
  return gp__srv_req_admin(r) || strcmp(r->user, j->user) == 0;
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
  /* The queue's own cap per user (user_limits.max_pending_jobs): counted only where one
   * is set. */
  const gp_srv_queue *q = gp__srv_queue_get(s, j->queue);
  const gp_srv_ulimit *ul = q ? gp__srv_ulimit_for(&q->user_limits, j->user) : NULL;
  if (ul && ul->max_pending_jobs >= 0) {
    int64_t n = 0;
    for (int a = 0; a < s->n_active; a++) {
      const gp_srv_job *o = s->active[a];
      n += (o->state == GP_JOB_PENDING || o->state == GP_JOB_HELD) && strcmp(o->queue, j->queue) == 0 &&
           strcmp(o->user, j->user) == 0;
    }
    if (n < ul->max_pending_jobs) return false;
    gp__srv_reply_error(r, 429, "too_many_pending", "user_limits.max_pending_jobs",
                        "UserPendingLimit: user %s has %lld jobs waiting to start in queue %s, "
                        "which allows one user %lld: wait for some to start or cancel some",
                        j->user, (long long)n, j->queue, (long long)ul->max_pending_jobs);
    return true;
  }
  return false;
}

/* Slurm's -p a,b: the job goes to the first queue of the list that takes it (it exists,
 * admits the user, is a leaf queue, and its limits could ever hold the job); when none does,
 * the error gives each queue's reason. Whether the fleet could ever run it is the same for
 * every queue (gp__srv_check_feasible, after this). */
static int admit_partition(gp_srv_state *s, gp_srv_job *j, bool admin, gp_err *err) {
  char why[1024] = "";
  size_t o = 0;
  for (int i = 0; i < j->n_partitions; i++) {
    free(j->queue);
    j->queue = gp_xstrdup(j->partitions[i]);
    gp_err e = {0};
    if (!gp__srv_job_admit(s, j, admin, &e)) {
      for (int k = 0; k < j->n_partitions; k++) free(j->partitions[k]); /* not kept */
      free(j->partitions);
      j->partitions = NULL;
      j->n_partitions = 0;
      return 0;
    }
    if (o < sizeof why) o += (size_t)snprintf(why + o, sizeof why - o, "%s%s", i ? "; " : "", e.message);
  }
  return gp_err_set(err, GP_EINVAL, NULL, 0, "partitions", "no queue of the partition list can take the job: %s",
                    why);
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
    rc = gp__srv_job_parse(s->cfg, r->json, r->user, gp__srv_req_admin(r), &j, &verr);
  }
  if (!rc) rc = j->n_partitions ? admit_partition(s, j, gp__srv_req_admin(r), &verr)
                                 : gp__srv_job_admit(s, j, gp__srv_req_admin(r), &verr);
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
  const char *states = gp__srv_req_query(r, "state"), *queue = gp__srv_req_query(r, "queue");
  const char *user = gp__srv_req_query(r, "user");
  const char *lim = gp__srv_req_query(r, "limit"), *next = gp__srv_req_query(r, "next");
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
  int rc = gp__srv_job_hold_change(s, j, hold, r->user, gp__srv_req_admin(r), now, &why, err);
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
  const char *stream = gp__srv_req_query(r, "stream"), *off = gp__srv_req_query(r, "offset");
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
  const char *tv = gp__srv_req_query(r, "task");
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
  const char *tok = gp__srv_node_agent_token(s, n);
  /* The URL and the token travel together: "URL\nTOKEN" (the HTTP thread splits them). */
  char url[1200];
  snprintf(url, sizeof url, "%s/logs/%s?stream=%s&offset=%lld&task=%lld\n%s", n->agent_url,
           j->idstr, stream, (long long)offset, (long long)task, tok);
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
    if (!gp__srv_req_method(r, "GET")) {
      gp__srv_reply_error(r, 405, "method_not_allowed", NULL, "use GET on /v1/jobs/{id}");
      return 0;
    }
    r->history_job = gp__srv_job_id_parse(id);
    r->status = 200;
    r->answered = true;
    return 0;
  }
  if (strcmp(action, "log") == 0 && gp__srv_req_method(r, "GET")) {
    gp__srv_reply_error(r, 404, "not_found", NULL,
                        "job %s ended (%s) before the last %d ended jobs; its log is no longer "
                        "kept reachable",
                        id, gp_job_state_name(st), s->cfg->recent_ended_jobs);
    return 0;
  }
  if (strcmp(action, "metrics") == 0 && gp__srv_req_method(r, "GET")) {
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
  if (!gp__srv_req_method(r, "POST")) {
    gp__srv_reply_error(r, 405, "method_not_allowed", NULL, "use POST on /v1/jobs/{id}/%s", action);
    return 0;
  }
  gp__srv_reply_error(r, 409, "conflict", NULL, "job %s has already ended (%s)", id, gp_job_state_name(st));
  return 0;
}

/* An array element not made a job yet: what it would be, and cancel, hold or release. */
static int array_elem_route(gp_srv_state *s, gp_srv_req *r, gp_srv_job *p, int64_t pos, const char *action,
                            int64_t now, gp_err *err) {
  bool get = !*action && gp__srv_req_method(r, "GET");
  if (!get && (!gp__srv_req_method(r, "POST") || (strcmp(action, "cancel") && strcmp(action, "hold") && strcmp(action, "release")))) {
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
    if (gp__srv_req_method(r, "POST")) return submit(s, r, now, err);
    if (gp__srv_req_method(r, "GET")) {
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
    if (!gp__srv_req_method(r, "GET")) {
      gp__srv_reply_error(r, 405, "method_not_allowed", NULL, "use GET on /v1/jobs/{id}");
      return 0;
    }
    reply_job(s, r, 200, j);
    return 0;
  }
  if (strcmp(action, "metrics") == 0 && gp__srv_req_method(r, "GET")) {
    job_metrics(s, r, j);
    return 0;
  }
  if (strcmp(action, "session") == 0) {
    gp__srv_session_route(s, r, j);
    return 0;
  }
  if (strcmp(action, "proxy") == 0) {
    gp__srv_links_create_route(s, r, j, now);
    return 0;
  }
  if (strncmp(action, "steps", 5) == 0 && (!action[5] || action[5] == '/'))
    return gp__srv_steps_route(s, r, j, action + 5, now, err);
  if (strcmp(action, "log") == 0 && gp__srv_req_method(r, "GET")) {
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
  if (!gp__srv_req_method(r, "POST")) {
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
                       : gp__srv_array_hold(s, j, is_hold, r->user, gp__srv_req_admin(r), now, err);
    if (!rc) reply_job(s, r, 200, j);
    return rc;
  }
  if (is_cancel) return cancel(s, r, j, now, err);
  return hold_release(s, r, j, is_hold, now, err);
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
    gp__srv_fairshare_metrics(s, now_s, &out);
    gp__srv_services_metrics(s, &out);
    free(r->resp);
    r->resp = gp_buf_steal(&out);
    r->status = 200;
    r->answered = true;
    return 0;
  }
  if (gp__srv_webproxy_path(p) && !r->user && !r->job_key) { /* a console link (webproxy.h) */
    gp__srv_links_route(s, r, now_s);
    return 0;
  }
  if (r->role == GP_ROLE_AGENT) {
    gp__srv_reply_error(r, 403, "permission_denied", NULL, "agent tokens may use only /v1/agent/*");
    return 0;
  }
  char rq[32];
  if (gp__srv_requeue_path(p, rq, sizeof rq)) return gp__srv_requeue_route(s, r, rq, now_s, err);
  if (r->job_key) { /* a job's step credential: its steps, nothing else (server_http.c) */
    char id[32];
    gp_srv_job *j = gp__srv_steps_path(p, id, sizeof id) ? gp__srv_job_get(s, id) : NULL;
    if (!j) {
      gp__srv_reply_error(r, 403, "permission_denied", NULL, "a step credential is good for its job's running steps only");
      return 0;
    }
    return gp__srv_steps_route(s, r, j, p + 9 + strlen(id) + 6, now_s, err);
  }
  /* One gate for every route, present and future: a viewer changes nothing. */
  if (r->role == GP_ROLE_VIEWER && !gp__srv_req_method(r, "GET")) {
    gp__srv_reply_error(r, 403, "permission_denied", NULL, "a viewer token is read-only");
    return 0;
  }
  if (strcmp(p, "/v1/whoami") == 0) return gp__srv_whoami_route(s, r);
  if (strcmp(p, "/v1/jobs") == 0) return jobs_route(s, r, "", now_s, err);
  if (strncmp(p, "/v1/jobs/", 9) == 0) return jobs_route(s, r, p + 9, now_s, err);
  if (strcmp(p, "/v1/nodes") == 0) return gp__srv_nodes_route(s, r, "", now_s, err);
  if (strncmp(p, "/v1/nodes/", 10) == 0) return gp__srv_nodes_route(s, r, p + 10, now_s, err);
  if (strcmp(p, "/v1/queues") == 0) return gp__srv_queues_route(s, r, "", err);
  if (strncmp(p, "/v1/queues/", 11) == 0) return gp__srv_queues_route(s, r, p + 11, err);
  if (strncmp(p, "/v1/reports/", 12) == 0) {
    gp__srv_report_route(s, r, p + 12, now_s);
    return 0;
  }
  if (strcmp(p, "/v1/advice") == 0) {
    gp__srv_advice_route(s, r, now_s);
    return 0;
  }
  if (strcmp(p, "/v1/prices") == 0) return gp__srv_prices_route(s, r, err);
  if (strcmp(p, "/v1/shares") == 0) return gp__srv_shares_route(s, r, now_s);
  if (strcmp(p, "/v1/reservations") == 0) return gp__srv_reservations_route(s, r, "", now_s, err);
  if (strncmp(p, "/v1/reservations/", 17) == 0)
    return gp__srv_reservations_route(s, r, p + 17, now_s, err);
  if (strcmp(p, "/v1/notify") == 0) return gp__srv_notify_route(s, r, err);
  if (strncmp(p, "/v1/images/", 11) == 0) return gp__srv_images_route(s, r, p + 10, now_s, err);
  if (strncmp(p, "/v1/registries", 14) == 0 && (!p[14] || p[14] == '/'))
    return gp__srv_registry_route(s, r, p + 14, err);
  if (strncmp(p, "/v1/services", 12) == 0 && (!p[12] || p[12] == '/'))
    return gp__srv_services_route(s, r, p + 12, now_s, err);
  if (strcmp(p, "/v1/templates") == 0) return gp__srv_templates_route(s, r, now_s, err);
  gp__srv_reply_error(r, 404, "not_found", NULL, "no route %s %s", r->method, p);
  return 0;
}
