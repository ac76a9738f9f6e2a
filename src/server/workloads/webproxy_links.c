/* SPDX-License-Identifier: Apache-2.0 */
/* The console's links to a job's port, on the state thread (webproxy.h): made by
 * POST /v1/jobs/{id}/proxy, looked up for every request under /proxy/. Kept in memory
 * only: a link is a capability of the leader that made it, bound to one run of the job. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "server/state/job.h"
#include "server/state/state.h"
#include "server/workloads/webproxy_links.h"
#include "util/mem.h"
#include "util/units.h"

#define CAP_HEX 64 /* 256 bits */

typedef struct wplink {
  char cap[CAP_HEX + 1];
  char *job;            /* the job's id */
  char *user;           /* who made it */
  int task, port;
  int64_t run_started;  /* the run it is bound to (gp_srv_job.started_at) */
  int64_t expires_at;
  struct wplink *next;
} wplink;

struct gp_srv_links {
  wplink *head;
  int n;
};

bool gp__srv_webproxy_path(const char *path) { return strncmp(path, "/proxy/", 7) == 0; }

static void link_free(wplink *l) {
  free(l->job);
  free(l->user);
  free(l);
}

void gp__srv_links_free(gp_srv_state *s) {
  if (!s->links) return;
  for (wplink *l = s->links->head, *n; l; l = n) {
    n = l->next;
    link_free(l);
  }
  free(s->links);
  s->links = NULL;
}

/* The job's task `task` in the run the wplink was made for, or NULL once that run ended. */
static gp_srv_job *live_job(gp_srv_state *s, const char *id, int task, int64_t run_started) {
  gp_srv_job *j = gp__srv_job_get(s, id);
  if (!j || j->state != GP_JOB_RUNNING || j->started_at != run_started || task >= j->n_alloc ||
      j->alloc[task].exited || j->alloc[task].node < 0 || j->alloc[task].node >= s->n_nodes)
    return NULL;
  return j;
}

/* Drops the links that expired or whose run ended: the revocation. */
static void sweep(gp_srv_state *s, int64_t now_s) {
  if (!s->links) return;
  for (wplink **pp = &s->links->head; *pp;) {
    wplink *l = *pp;
    if (l->expires_at <= now_s || !live_job(s, l->job, l->task, l->run_started)) {
      *pp = l->next;
      s->links->n--;
      link_free(l);
    } else pp = &l->next;
  }
}

void gp__srv_links_create_route(gp_srv_state *s, gp_srv_req *r, gp_srv_job *j, int64_t now_s) {
  if (!gp__srv_req_method(r, "POST")) {
    gp__srv_reply_error(r, 405, "method_not_allowed", NULL, "use POST on /v1/jobs/{id}/proxy");
    return;
  }
  bool owner = r->user && j->user && strcmp(r->user, j->user) == 0;
  if (r->role == GP_ROLE_VIEWER || r->role == GP_ROLE_AGENT || r->role == GP_ROLE_NONE ||
      (!owner && r->role != GP_ROLE_ADMIN)) {
    gp__srv_reply_error(r, 403, "permission_denied", NULL,
                        "job %s belongs to %s; only its owner or an admin may open a wplink to its port", j->idstr,
                        j->user);
    return;
  }
  if (!json_is_object(r->json)) {
    gp__srv_reply_error(r, 400, "invalid_argument", NULL, "the body must be a JSON object: {\"port\": N, \"task\": T}");
    return;
  }
  const char *key;
  json_t *v;
  json_object_foreach(r->json, key, v) {
    if (strcmp(key, "port") != 0 && strcmp(key, "task") != 0) {
      gp__srv_reply_error(r, 400, "invalid_argument", key, "unknown field %.80s (a wplink takes port and task)", key);
      return;
    }
  }
  json_t *pv = json_object_get(r->json, "port"), *tv = json_object_get(r->json, "task");
  if (!json_is_integer(pv) || json_integer_value(pv) < 1 || json_integer_value(pv) > 65535) {
    gp__srv_reply_error(r, 400, "invalid_argument", "port", "port must be 1 to 65535");
    return;
  }
  int tasks = j->tasks > 0 ? j->tasks : 1;
  if (tv && (!json_is_integer(tv) || json_integer_value(tv) < 0 || json_integer_value(tv) >= tasks)) {
    gp__srv_reply_error(r, 400, "invalid_argument", "task", "job %s has tasks 0..%d", j->idstr, tasks - 1);
    return;
  }
  int task = tv ? (int)json_integer_value(tv) : 0, port = (int)json_integer_value(pv);
  if (!live_job(s, j->idstr, task, j->started_at)) {
    gp__srv_reply_error(r, 409, "conflict", NULL, "task %d of job %s is not running (the job is %s)", task, j->idstr,
                        gp_job_state_name(j->state));
    return;
  }
  sweep(s, now_s);
  if (!s->links) s->links = gp_xcalloc(1, sizeof *s->links);
  int mine = 0;
  for (wplink *l = s->links->head; l; l = l->next) mine += strcmp(l->user, r->user) == 0;
  if (mine >= GP_SRV_LINK_PER_USER || s->links->n >= GP_SRV_LINK_MAX) {
    gp__srv_reply_error(r, 429, "too_many_requests", NULL,
                        "%s has %d live links (at most %d a user, %d in all); they expire after %d s or with their job",
                        r->user, mine, GP_SRV_LINK_PER_USER, GP_SRV_LINK_MAX, s->cfg->link_ttl_s);
    return;
  }
  unsigned char raw[CAP_HEX / 2];
  if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw) {
    gp__srv_reply_error(r, 503, "unavailable", NULL, "no randomness for a wplink; retry");
    return;
  }
  wplink *l = gp_xcalloc(1, sizeof *l);
  for (size_t i = 0; i < sizeof raw; i++) snprintf(l->cap + 2 * i, 3, "%02x", raw[i]);
  l->job = gp_xstrdup(j->idstr);
  l->user = gp_xstrdup(r->user);
  l->task = task;
  l->port = port;
  l->run_started = j->started_at;
  l->expires_at = now_s + s->cfg->link_ttl_s;
  l->next = s->links->head;
  s->links->head = l;
  s->links->n++;
  char url[128];
  snprintf(url, sizeof url, "/proxy/%s/%d/", l->cap, port);
  gp__srv_reply_json(r, 201, json_pack("{s:s,s:s,s:i,s:i,s:I}", "url", url, "job", j->idstr, "task", task, "port",
                                        port, "expires_at", (json_int_t)l->expires_at));
}

/* Compares every byte, so timing says nothing about how much of a guess was right. */
static bool same_cap(const char *a, const char *b) {
  unsigned diff = 0;
  for (int i = 0; i < CAP_HEX; i++) diff |= (unsigned)(a[i] ^ b[i]);
  return diff == 0;
}

void gp__srv_links_route(gp_srv_state *s, gp_srv_req *r, int64_t now_s) {
  /* /proxy/<64 hex>/<port>[/...] */
  const char *p = r->path + 7;
  char cap[CAP_HEX + 1] = "";
  size_t n = strspn(p, "0123456789abcdef");
  if (n == CAP_HEX && p[n] == '/') memcpy(cap, p, CAP_HEX);
  const char *ps = p + n + 1, *slash = cap[0] ? strchr(ps, '/') : NULL;
  char portv[8] = "";
  size_t pl = cap[0] ? (slash ? (size_t)(slash - ps) : strlen(ps)) : 0;
  if (pl > 0 && pl < 6 && strspn(ps, "0123456789") == pl) memcpy(portv, ps, pl);
  sweep(s, now_s);
  wplink *found = NULL;
  for (wplink *l = s->links && portv[0] ? s->links->head : NULL; l; l = l->next)
    if (same_cap(l->cap, cap) && l->port == atoi(portv)) found = l;
  if (!found) {
    gp__srv_reply_error(r, 404, "not_found", NULL,
                        "no such wplink: it may have expired, its job ended, or the server restarted; make a new one");
    return;
  }
  if (!slash) { /* relative links on the page resolve only below the port's slash */
    free(r->location);
    size_t tl = strlen(r->target);
    const char *q = strchr(r->target, '?');
    r->location = gp_xmalloc(tl + 2);
    size_t head = q ? (size_t)(q - r->target) : tl;
    memcpy(r->location, r->target, head);
    r->location[head] = '/';
    strcpy(r->location + head + 1, r->target + head);
    gp__srv_reply_json(r, 308, json_pack("{s:s}", "location", r->location));
    return;
  }
  gp_srv_job *j = live_job(s, found->job, found->task, found->run_started);
  gp_srv_node *nd = s->nodes[j->alloc[found->task].node];
  if (!nd->agent_url) {
    gp__srv_reply_error(r, 503, "unavailable", NULL, "node %s has no agent address", nd->name);
    return;
  }
  const char *tok = gp__srv_node_agent_token(s, nd);
  /* The same "URL\nTOKEN\nNODE" as a session's (session_api.c). */
  char spec[1400];
  snprintf(spec, sizeof spec, "%s/sessions/%s?task=%d\n%s\n%s", nd->agent_url, j->idstr, found->task, tok,
           nd->name);
  free(r->session_spec);
  r->session_spec = gp_xstrdup(spec);
  r->link_port = found->port;
  r->status = 200;
  r->answered = true;
}
