/* SPDX-License-Identifier: Apache-2.0 */
/* Spot interruptions: the one path a notice takes, whether the node's agent read it from
 * the cloud's metadata service (an "interruption" event) or an admin posted it
 * (POST /v1/nodes/{name}/interrupt). The node is drained at once, so nothing new lands on
 * it, and each running job is stopped with its checkpoint signal and a grace period that
 * ends before the cloud takes the node; lifecycle.c's finalize then requeues it (or fails
 * it when it does not allow a requeue). A second notice for a node already drained for one
 * changes nothing: the agent re-reads the notice, the admin may post it twice. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/elastic/interrupt.h"
#include "server/state/server_int.h"
#include "util/mem.h"

#define REASON_PREFIX "spot interruption"
/* Seconds kept between a job's last chance to exit and the deadline: the stop order's trip,
 * the agent's SIGKILL and its exit report all have to fit before the node goes. */
#define MARGIN_S 5
#define DEFAULT_NOTICE_S 120         /* an admin's notice without notice_s: AWS's two minutes */
#define MAX_NOTICE_S 86400

const char *const gp__srv_interrupt_sources[GP_SRV_INTERRUPT_SOURCES] = {"aws", "gcp", "azure",
                                                                          "admin", "other"};

static int source_index(const char *src) {
  for (int i = 0; i < GP_SRV_INTERRUPT_SOURCES - 1; i++)
    if (src && strcmp(src, gp__srv_interrupt_sources[i]) == 0) return i;
  return GP_SRV_INTERRUPT_SOURCES - 1;
}

bool gp__srv_node_interrupted(const gp_srv_node *n) {
  return n->admin_state == GP_NODE_DRAIN && n->reason &&
         strncmp(n->reason, REASON_PREFIX, strlen(REASON_PREFIX)) == 0;
}

static int64_t wall_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int gp__srv_node_interrupt(gp_srv_state *s, gp_srv_node *n, const gp_srv_interrupt *in,
                           int64_t now_s, int *ret_stopped, gp_err *err) {
  if (ret_stopped) *ret_stopped = 0;
  if (gp__srv_node_interrupted(n)) return 0;
  int idx = gp__srv_node_index(s, n->name);
  int src = source_index(in->source);
  const char *src_name = gp__srv_interrupt_sources[src];
  int64_t left = in->deadline - now_s;
  int cap = left - MARGIN_S > 0 ? (int)(left - MARGIN_S < MAX_NOTICE_S ? left - MARGIN_S
                                                                        : MAX_NOTICE_S)
                                : 0;
  char when[16] = "??:??:??";
  time_t dl = (time_t)in->deadline;
  struct tm tm;
  if (gmtime_r(&dl, &tm)) strftime(when, sizeof when, "%H:%M:%S", &tm);
  char why[96];
  snprintf(why, sizeof why, REASON_PREFIX " (deadline %s UTC)", when);
  n->admin_state = GP_NODE_DRAIN;
  free(n->reason);
  n->reason = gp_xstrdup(why);
  gp__srv_node_changed(s, n);
  s->sched_dirty = true;
  int r = gp__srv_persist_node(s, n, err);
  if (r) return r;
  /* Collect first: stopping a job may edit the active list. */
  int nj = 0;
  gp_srv_job **victims = gp_xcalloc((size_t)s->n_active + 1, sizeof *victims);
  for (int a = 0; a < s->n_active; a++) {
    gp_srv_job *j = s->active[a];
    if (j->state != GP_JOB_RUNNING) continue; /* a job already stopping keeps its stop */
    for (int t = 0; t < j->n_alloc; t++)
      if (j->alloc[t].node == idx && !j->alloc[t].exited) {
        victims[nj++] = j;
        break;
      }
  }
  for (int i = 0; i < nj && !r; i++) {
    gp_srv_job *j = victims[i];
    json_t *extra = json_object();
    json_object_set_new(extra, "node", json_string(n->name));
    json_object_set_new(extra, "deadline", json_integer(in->deadline));
    json_object_set_new(extra, "source", json_string(src_name));
    json_object_set_new(extra, "grace_s", json_integer(j->grace_s < cap ? j->grace_s : cap));
    r = gp__srv_job_event(s, j, "interrupted", now_s, extra, err);
    if (!r) r = gp__srv_job_stop_within(s, j, "interrupted", cap, now_s, err);
  }
  free(victims);
  if (r) return r;
  int cap_i = n->capacity >= 0 && (int)n->capacity < GP_SRV_CAPACITIES ? (int)n->capacity : 0;
  s->counters.interruptions[cap_i][src]++;
  if (in->noticed_ms > 0) {
    gp_hist *h = &s->counters.notice_to_stop_s;
    if (h->n_bounds == 0)
      gp_hist_init(h, gp_hist_bounds_notice_s, gp_hist_n_bounds_notice_s);
    int64_t took = wall_ms() - in->noticed_ms;
    if (took >= 0 && took < 3600 * 1000) gp_hist_observe(h, (double)took / 1000.0);
  }
  fprintf(stderr, "gpool server: node %s: spot interruption from %s%s%.200s: deadline %s UTC "
                  "(in %lld s), %d job(s) stopped with grace at most %d s\n",
          n->name, src_name, in->detail && *in->detail ? ": " : "", in->detail ? in->detail : "",
          when, (long long)left, nj, cap);
  if (ret_stopped) *ret_stopped = nj;
  return 0;
}

/* POST /v1/nodes/{name}/interrupt {"notice_s": 120}: an admin (or a provider's script)
 * reports a notice the agent cannot see. */
int gp__srv_interrupt_route(gp_srv_state *s, gp_srv_req *r, gp_srv_node *n, int64_t now_s,
                            gp_err *err) {
  if (strcmp(r->method, "POST") != 0) {
    gp__srv_reply_error(r, 405, "method_not_allowed", NULL, "use POST on /v1/nodes/{name}/interrupt");
    return 0;
  }
  if (r->role != GP_ROLE_ADMIN) {
    gp__srv_reply_error(r, 403, "permission_denied", NULL, "only admins may interrupt a node");
    return 0;
  }
  if (r->json && !json_is_object(r->json)) {
    gp__srv_reply_error(r, 400, "invalid_argument", NULL, "the body must be a JSON object");
    return 0;
  }
  const char *k;
  const json_t *v;
  json_object_foreach((json_t *)r->json, k, v) {
    if (strcmp(k, "notice_s") != 0) { /* a typo never passes silently (docs/api.md) */
      gp__srv_reply_error(r, 400, "invalid_argument", k,
                          "unknown field: the body takes only notice_s");
      return 0;
    }
  }
  int64_t notice_s = DEFAULT_NOTICE_S;
  v = json_object_get(r->json, "notice_s");
  if (v && !json_is_null(v)) {
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > MAX_NOTICE_S) {
      gp__srv_reply_error(r, 400, "invalid_argument", "notice_s",
                          "notice_s must be an integer from 0 to %d seconds", MAX_NOTICE_S);
      return 0;
    }
    notice_s = json_integer_value(v);
  }
  bool again = gp__srv_node_interrupted(n);
  gp_srv_interrupt in = {.deadline = now_s + notice_s, .source = "admin",
                         .detail = "posted by an admin", .noticed_ms = wall_ms()};
  int stopped = 0;
  int rc = gp__srv_node_interrupt(s, n, &in, now_s, &stopped, err);
  if (rc) return rc;
  json_t *out = json_object();
  json_object_set_new(out, "node", gp__srv_node_to_json(s, n, false));
  json_object_set_new(out, "already_interrupted", json_boolean(again));
  json_object_set_new(out, "jobs_stopped", json_integer(stopped));
  gp__srv_reply_json(r, 200, out);
  return 0;
}
