/* SPDX-License-Identifier: Apache-2.0 */
/* Pre-pulls (docs/containers.md#pre-pulling): `POST /v1/images/pull {"image", "nodes"}`
 * (admins) queues a pull_image order for each node named (every node when none is), and
 * `GET /v1/images/pulls` shows each one's result as its agent answers (pull_done: pulled
 * in how long, or the final reason), and while it runs the bytes pulled so far of the
 * image's (pull_progress: done_bytes, total_bytes). The results are kept in memory (the last
 * MAX_PULLS): they are an admin's feedback, not state the scheduler needs; the orders
 * themselves are stored as every order is, so a pull reaches an agent that was away. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/container.h"
#include "protocol/event.h"
#include "protocol/order.h"
#include "server/workloads/image_pull.h"
#include "server/state/server_int.h"
#include "util/mem.h"

#define MAX_PULLS 256
#define MAX_NODES_ASKED 1024

typedef struct rec {
  char order[32];
  char *node, *image, *message;
  const char *state; /* pending, pulled, failed */
  int64_t at;
  int64_t done, total; /* pending: bytes pulled of the image's (total 0: not known); -1: none said */
} rec;

struct gp__srv_pulls {
  rec v[MAX_PULLS];
  int n, next; /* a ring: the oldest is overwritten */
};

static void rec_done(rec *r) {
  free(r->node);
  free(r->image);
  free(r->message);
  memset(r, 0, sizeof *r);
}

void gp__srv_pulls_free(gp_srv_state *s) {
  if (!s->pulls) return;
  for (int i = 0; i < s->pulls->n; i++) rec_done(&s->pulls->v[i]);
  free(s->pulls);
  s->pulls = NULL;
}

static json_t *rec_json(const rec *r) {
  json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:o, s:I}", "id", r->order, "node", r->node, "image",
                        r->image, "state", r->state, "message",
                        r->message ? json_string(r->message) : json_null(), "at", (json_int_t)r->at);
  if (!strcmp(r->state, "pending") && r->done >= 0) {
    json_object_set_new(o, "done_bytes", json_integer(r->done));
    json_object_set_new(o, "total_bytes", json_integer(r->total >= 0 ? r->total : 0));
  }
  return o;
}

static rec *pending(gp_srv_state *s, const gp_srv_node *n, const char *order) {
  struct gp__srv_pulls *p = s->pulls;
  for (int i = 0; p && i < p->n; i++) {
    rec *r = &p->v[i];
    if (!strcmp(r->order, order) && !strcmp(r->node, n->name) && !strcmp(r->state, "pending")) return r;
  }
  return NULL;
}

void gp__srv_pull_moved(gp_srv_state *s, const gp_srv_node *n, const char *order, int64_t done,
                        int64_t total) {
  rec *r = pending(s, n, order);
  if (!r || done < 0) return; /* a pull answered already, or bytes out of bounds */
  /* Never back: events of one pull come in order, but a total learnt late may clamp. */
  if (done < r->done) done = r->done;
  r->done = done;
  if (total >= 0) r->total = total;
}

void gp__srv_pull_done(gp_srv_state *s, const gp_srv_node *n, const char *order, bool ok,
                       const char *message) {
  rec *r = pending(s, n, order);
  if (!r) return;
  r->state = ok ? "pulled" : "failed";
  free(r->message);
  r->message = gp_xstrdup(message);
}

static int queue(gp_srv_state *s, gp_srv_node *n, const char *image, int64_t now_s, json_t *out,
                 gp_err *err) {
  gp_proto_order o = {.kind = GP_PROTO_PULL_IMAGE};
  snprintf(o.u.pull.image, sizeof o.u.pull.image, "%s", image);
  int rc = gp__srv_order_add(s, n, gp_proto_order_encode(&o), 0, false, err);
  if (rc) return rc;
  if (!s->pulls) s->pulls = gp_xcalloc(1, sizeof *s->pulls);
  struct gp__srv_pulls *p = s->pulls;
  rec *r = &p->v[p->next];
  if (p->n == MAX_PULLS) rec_done(r);
  else p->n++;
  p->next = (p->next + 1) % MAX_PULLS;
  snprintf(r->order, sizeof r->order, "o%lld", (long long)(s->next_order_id - 1));
  r->node = gp_xstrdup(n->name);
  r->image = gp_xstrdup(image);
  r->state = "pending";
  r->at = now_s;
  r->done = r->total = -1;
  json_array_append_new(out, rec_json(r));
  return 0;
}

int gp__srv_images_route(gp_srv_state *s, gp_srv_req *req, const char *rest, int64_t now_s, gp_err *err) {
  if (!strcmp(rest, "/pulls")) {
    if (!gp__srv_req_method(req, "GET")) {
      gp__srv_reply_error(req, 405, "method_not_allowed", NULL, "use GET on /v1/images/pulls");
      return 0;
    }
    json_t *a = json_array();
    for (int i = 0; s->pulls && i < s->pulls->n; i++) json_array_append_new(a, rec_json(&s->pulls->v[i]));
    gp__srv_reply_json(req, 200, json_pack("{s:o}", "pulls", a));
    return 0;
  }
  if (strcmp(rest, "/pull")) {
    gp__srv_reply_error(req, 404, "not_found", NULL, "no route %s /v1/images%s", req->method, rest);
    return 0;
  }
  if (!gp__srv_req_method(req, "POST")) {
    gp__srv_reply_error(req, 405, "method_not_allowed", NULL, "use POST on /v1/images/pull");
    return 0;
  }
  if (!gp__srv_req_admin(req)) {
    gp__srv_reply_error(req, 403, "permission_denied", NULL, "only an admin pre-pulls images");
    return 0;
  }
  const char *image = json_string_value(json_object_get(req->json, "image"));
  const char *why = image ? gp_proto_image_check(image) : "the body is {\"image\", \"nodes\": [...]}";
  if (why) {
    gp__srv_reply_error(req, 400, "invalid_argument", "image", "image: %s", why);
    return 0;
  }
  const json_t *names = json_object_get(req->json, "nodes");
  if (names && !json_is_null(names) &&
      (!json_is_array(names) || json_array_size(names) > MAX_NODES_ASKED)) {
    gp__srv_reply_error(req, 400, "invalid_argument", "nodes", "nodes: a list of at most %d node names",
                        MAX_NODES_ASKED);
    return 0;
  }
  size_t i;
  const json_t *nm;
  json_array_foreach(names, i, nm) { /* all known before anything is queued */
    const char *name = json_string_value(nm);
    if (!name || !gp__srv_node_get(s, name)) {
      gp__srv_reply_error(req, 404, "not_found", "nodes", "nodes: no node %s", name ? name : "(not a string)");
      return 0;
    }
  }
  json_t *out = json_array();
  int rc = 0;
  if (json_array_size(names) > 0) {
    json_array_foreach(names, i, nm) {
      if ((rc = queue(s, gp__srv_node_get(s, json_string_value(nm)), image, now_s, out, err))) break;
    }
  } else {
    for (int k = 0; k < s->n_nodes && !rc; k++) rc = queue(s, s->nodes[k], image, now_s, out, err);
  }
  if (rc) {
    json_decref(out);
    return rc;
  }
  gp__srv_reply_json(req, 202, json_pack("{s:o}", "pulls", out));
  return 0;
}

/* A job's own pull (not a pre-pull): its timeline's open pulling_image entry shows the
 * bytes so far (state.h). */
int gp__srv_pull_progress(gp_srv_state *s, gp_srv_job *j, int task, int64_t done, int64_t total) {
  if (done < 0 || total < 0 || (total > 0 && done > total) || !json_is_array(j->timeline)) return 0;
  /* The task's pull under way: its last pulling_image, with no image_pulled after it. */
  json_t *entry = NULL;
  for (size_t i = json_array_size(j->timeline); i-- > 0;) {
    json_t *e = json_array_get(j->timeline, i);
    const char *ev = json_string_value(json_object_get(e, "event"));
    const json_t *t = json_object_get(e, "task");
    if (!ev || (task >= 0 && json_is_integer(t) && json_integer_value(t) != task)) continue;
    if (!strcmp(ev, "image_pulled")) return 0;
    if (!strcmp(ev, "pulling_image")) {
      entry = e;
      break;
    }
  }
  const char *msg = entry ? json_string_value(json_object_get(entry, "message")) : NULL;
  if (!msg) return 0;
  const json_t *old_done = json_object_get(entry, "done_bytes");
  const json_t *old_total = json_object_get(entry, "total_bytes");
  if (json_is_integer(old_done) && done < json_integer_value(old_done)) return 0; /* never back */
  /* The manifest's total does not change: the first one known stays. */
  if (json_is_integer(old_total) && json_integer_value(old_total) > 0) {
    if (total != json_integer_value(old_total) || done > total) return 0;
  }
  char base[GP_PROTO_TEXT_MAX];
  snprintf(base, sizeof base, "%s", msg);
  char *paren = old_done ? strstr(base, " (") : NULL; /* a reference has no space */
  if (paren) *paren = '\0';
  char bytes[80], text[GP_PROTO_TEXT_MAX + 100];
  gp_proto_pull_bytes_text(done, total, bytes, sizeof bytes);
  snprintf(text, sizeof text, "%s (%s)", base, bytes);
  json_object_set_new(entry, "message", json_string(text));
  json_object_set_new(entry, "done_bytes", json_integer(done));
  json_object_set_new(entry, "total_bytes", json_integer(total));
  gp__srv_job_changed(s, j); /* its readers (the console, the events feed) see it move */
  return 0;
}
