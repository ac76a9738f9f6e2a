/* SPDX-License-Identifier: Apache-2.0 */
/* /v1/reservations (docs/api.md): list and show for every caller; create (POST), update
 * (PATCH) and delete for admins. Every field of a body is checked, and an error names it.
 * Times are Unix seconds, RFC 3339, a date, "now" or "now+DURATION"; a duration is
 * seconds or "2h", "1h30m", "D-HH:MM:SS". A reservation of N GPUs (`gpus`, optionally of
 * one `model`) gets its nodes here, when it is made: the fewest nodes free of other
 * reservations over its window, the smallest node that holds all N first. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "server/front/routes.h"
#include "server/state/reservations.h"
#include "server/state/server_int.h"
#include "server/state/state.h"
#include "util/calendar.h"
#include "util/mem.h"
#include "util/units.h"

static bool name_ok(const char *n) {
  size_t len = strlen(n);
  if (len == 0 || len >= GP_SRV_RESV_NAME_MAX || !isalnum((unsigned char)n[0])) return false;
  for (size_t i = 0; i < len; i++)
    if (!isalnum((unsigned char)n[i]) && n[i] != '-' && n[i] != '_' && n[i] != '.') return false;
  return true;
}

static bool user_ok(const char *u) {
  size_t len = strlen(u);
  if (len == 0 || len > 64) return false;
  for (size_t i = 0; i < len; i++)
    if (!isgraph((unsigned char)u[i]) || u[i] == ',') return false;
  return true;
}

/* A time: Unix seconds (number or text), RFC 3339, a date, "now" or "now+DURATION". */
static bool read_time(const json_t *v, int64_t now, int64_t *ret) {
  if (json_is_integer(v)) {
    *ret = json_integer_value(v);
    return *ret >= 0 && *ret <= GP_CALENDAR_MAX;
  }
  const char *t = json_string_value(v);
  if (!t) return false;
  if (strcmp(t, "now") == 0) {
    *ret = now;
    return true;
  }
  if (strncmp(t, "now+", 4) == 0) {
    int64_t d;
    if (gp_parse_duration_s(t + 4, &d) || d < 0 || d > GP_SRV_RESV_MAX_DURATION_S) return false;
    *ret = now + d;
    return true;
  }
  return gp_parse_time(t, ret);
}

static bool read_duration(const json_t *v, int64_t *ret) {
  if (json_is_integer(v)) *ret = json_integer_value(v);
  else if (!json_string_value(v) || gp_parse_duration_s(json_string_value(v), ret)) return false;
  return *ret > 0 && *ret <= GP_SRV_RESV_MAX_DURATION_S;
}

static gp__srv_resv *find(gp_srv_state *s, const char *name) {
  struct gp__srv_resvs *v = gp__srv_resvs_of(s);
  for (int i = 0; i < v->n; i++)
    if (strcmp(v->r[i].name, name) == 0) return &v->r[i];
  return NULL;
}

static bool overlaps(const gp__srv_resv *a, int64_t start, int64_t end) {
  return a->start < end && start < a->end;
}

/* Another reservation over [start, end) that holds node `name`, or NULL. */
static const gp__srv_resv *holder(gp_srv_state *s, const char *name, int64_t start, int64_t end,
                                  const char *self) {
  struct gp__srv_resvs *v = gp__srv_resvs_of(s);
  for (int i = 0; i < v->n; i++) {
    const gp__srv_resv *r = &v->r[i];
    if ((self && strcmp(r->name, self) == 0) || !overlaps(r, start, end)) continue;
    for (int k = 0; k < r->n_nodes; k++)
      if (strcmp(r->nodes[k], name) == 0) return r;
  }
  return NULL;
}

static void set_strings(char ***list, int *n, const json_t *a) {
  for (int i = 0; i < *n; i++) free((*list)[i]);
  free(*list);
  *n = (int)json_array_size(a);
  *list = gp_xcalloc((size_t)*n + 1, sizeof **list);
  for (int i = 0; i < *n; i++) (*list)[i] = gp_xstrdup(json_string_value(json_array_get(a, (size_t)i)));
}

/* The nodes for N GPUs (of `model`, when given) free of other reservations over the
 * window: the node with the fewest GPUs that holds all N, else the biggest nodes until N
 * are held. Fills r->nodes; false when the fleet cannot. */
static bool pick_nodes(gp_srv_state *s, gp__srv_resv *r, const char *self) {
  int *cand = gp_xcalloc((size_t)s->n_nodes + 1, sizeof *cand), nc = 0, free_gpus = 0;
  for (int i = 0; i < s->n_nodes; i++) {
    const gp_srv_node *n = s->nodes[i];
    if (n->n_gpus <= 0 || (r->model && (!n->model || strcasecmp(n->model, r->model) != 0))) continue;
    if (holder(s, n->name, r->start, r->end, self)) continue;
    cand[nc++] = i;
    free_gpus += n->n_gpus;
  }
  int one = -1;
  for (int k = 0; k < nc; k++) {
    const gp_srv_node *n = s->nodes[cand[k]];
    if (n->n_gpus >= r->gpus && (one < 0 || n->n_gpus < s->nodes[one]->n_gpus)) one = cand[k];
  }
  bool ok = true;
  for (int i = 0; i < r->n_nodes; i++) free(r->nodes[i]);
  free(r->nodes);
  r->nodes = NULL;
  r->n_nodes = 0;
  if (one >= 0) {
    r->nodes = gp_xcalloc(2, sizeof *r->nodes);
    r->nodes[r->n_nodes++] = gp_xstrdup(s->nodes[one]->name);
  } else if (free_gpus < r->gpus) {
    ok = false;
  } else {
    r->nodes = gp_xcalloc((size_t)nc + 1, sizeof *r->nodes);
    for (int held = 0; held < r->gpus;) { /* the biggest left each time (ties: view order) */
      int best = -1;
      for (int k = 0; k < nc; k++)
        if (cand[k] >= 0 && (best < 0 || s->nodes[cand[k]]->n_gpus > s->nodes[cand[best]]->n_gpus)) best = k;
      held += s->nodes[cand[best]]->n_gpus;
      r->nodes[r->n_nodes++] = gp_xstrdup(s->nodes[cand[best]]->name);
      cand[best] = -1;
    }
  }
  free(cand);
  return ok;
}

static const char *const fields[] = {"name", "nodes", "gpus", "model", "start", "duration", "end",
                                     "queue", "users", "maint", NULL};

/* Applies body b to r (a copy: the caller keeps it only on success). Answers the error
 * and returns false when a field is wrong. `creating`: POST (name and a start needed). */
static bool apply_body(gp_srv_state *s, gp_srv_req *q, const json_t *b, gp__srv_resv *r, bool creating,
                       int64_t now) {
  const char *key;
  const json_t *val;
  json_object_foreach((json_t *)b, key, val) {
    bool known = false;
    for (int i = 0; fields[i] && !known; i++) known = strcmp(fields[i], key) == 0;
    if (!known) {
      gp__srv_reply_error(q, 400, "invalid_argument", key, "unknown field %s (a reservation takes "
                          "name, nodes or gpus and model, start, duration or end, queue or users, maint)", key);
      return false;
    }
  }
  const json_t *v;
  if ((v = json_object_get(b, "name"))) {
    if (!creating) {
      gp__srv_reply_error(q, 400, "invalid_argument", "name", "a reservation's name cannot change");
      return false;
    }
    if (!json_is_string(v) || !name_ok(json_string_value(v))) {
      gp__srv_reply_error(q, 400, "invalid_argument", "name", "a name is 1 to %d letters, digits, "
                          "'.', '_' or '-', starting with a letter or digit", GP_SRV_RESV_NAME_MAX - 1);
      return false;
    }
    free(r->name);
    r->name = gp_xstrdup(json_string_value(v));
  }
  const json_t *nodes = json_object_get(b, "nodes"), *gpus = json_object_get(b, "gpus");
  if (nodes && gpus) {
    gp__srv_reply_error(q, 400, "invalid_argument", "gpus", "give nodes or gpus, not both");
    return false;
  }
  if (nodes) {
    if (!json_is_array(nodes) || json_array_size(nodes) == 0 || json_array_size(nodes) > GP_SRV_RESV_MAX_NODES) {
      gp__srv_reply_error(q, 400, "invalid_argument", "nodes", "nodes is a list of 1 to %d node names",
                          GP_SRV_RESV_MAX_NODES);
      return false;
    }
    for (size_t i = 0; i < json_array_size(nodes); i++) {
      const char *n = json_string_value(json_array_get(nodes, i));
      if (!n || !gp__srv_node_get(s, n)) {
        gp__srv_reply_error(q, 400, "invalid_argument", "nodes", "no node named %s", n ? n : "(not a string)");
        return false;
      }
      for (size_t k = 0; k < i; k++)
        if (strcmp(n, json_string_value(json_array_get(nodes, k))) == 0) {
          gp__srv_reply_error(q, 400, "invalid_argument", "nodes", "node %s is listed twice", n);
          return false;
        }
    }
    set_strings(&r->nodes, &r->n_nodes, nodes);
    r->gpus = 0;
    free(r->model);
    r->model = NULL;
  }
  if (gpus) {
    if (!json_is_integer(gpus) || json_integer_value(gpus) < 1 || json_integer_value(gpus) > 1000000) {
      gp__srv_reply_error(q, 400, "invalid_argument", "gpus", "gpus is a whole number from 1 to 1000000");
      return false;
    }
    r->gpus = (int)json_integer_value(gpus);
  }
  if ((v = json_object_get(b, "model"))) {
    if (!gpus && !r->gpus) {
      gp__srv_reply_error(q, 400, "invalid_argument", "model", "model goes with gpus");
      return false;
    }
    if (!json_is_string(v) || !*json_string_value(v) || strlen(json_string_value(v)) > 64) {
      gp__srv_reply_error(q, 400, "invalid_argument", "model", "model is a GPU model name (at most 64 bytes)");
      return false;
    }
    free(r->model);
    r->model = gp_xstrdup(json_string_value(v));
  }
  int64_t len = r->end - r->start;
  if ((v = json_object_get(b, "start")) && !read_time(v, now, &r->start)) {
    gp__srv_reply_error(q, 400, "invalid_argument", "start", "start is a time: Unix seconds, RFC 3339 "
                        "(2026-12-24T14:00:00Z), a date, now or now+DURATION (now+1h)");
    return false;
  }
  if (creating && !v) {
    gp__srv_reply_error(q, 400, "invalid_argument", "start", "a reservation needs a start");
    return false;
  }
  const json_t *dur = json_object_get(b, "duration"), *end = json_object_get(b, "end");
  if (dur && end) {
    gp__srv_reply_error(q, 400, "invalid_argument", "end", "give duration or end, not both");
    return false;
  }
  if (dur) {
    if (!read_duration(dur, &len)) {
      gp__srv_reply_error(q, 400, "invalid_argument", "duration", "duration is seconds or a duration "
                          "(90m, 2h, 1-00:00:00) of at most 366 days");
      return false;
    }
    r->end = r->start + len;
  } else if (end) {
    if (!read_time(end, now, &r->end)) {
      gp__srv_reply_error(q, 400, "invalid_argument", "end", "end is a time, as start");
      return false;
    }
  } else if (creating) {
    gp__srv_reply_error(q, 400, "invalid_argument", "duration", "a reservation needs a duration or an end");
    return false;
  } else {
    r->end = r->start + len; /* a new start keeps the length */
  }
  if (r->end <= r->start || r->end - r->start > GP_SRV_RESV_MAX_DURATION_S) {
    gp__srv_reply_error(q, 400, "invalid_argument", end ? "end" : "duration",
                        "a reservation lasts from 1 second to 366 days");
    return false;
  }
  if (r->end <= now) {
    gp__srv_reply_error(q, 400, "invalid_argument", end ? "end" : "start", "the reservation would be over already");
    return false;
  }
  if ((v = json_object_get(b, "queue")) && !json_is_null(v)) {
    const char *qn = json_string_value(v);
    if (!qn || !gp_queue_name_ok(qn) || !gp__srv_queue_get(s, qn)) {
      gp__srv_reply_error(q, 400, "invalid_argument", "queue", "no queue named %s", qn ? qn : "(not a string)");
      return false;
    }
    free(r->queue);
    r->queue = gp_xstrdup(qn);
  } else if (v) {
    free(r->queue);
    r->queue = NULL;
  }
  if ((v = json_object_get(b, "users"))) {
    if (!json_is_array(v) || json_array_size(v) > GP_SRV_RESV_MAX_USERS) {
      gp__srv_reply_error(q, 400, "invalid_argument", "users", "users is a list of at most %d user names",
                          GP_SRV_RESV_MAX_USERS);
      return false;
    }
    for (size_t i = 0; i < json_array_size(v); i++) {
      const char *u = json_string_value(json_array_get(v, i));
      if (!u || !user_ok(u)) {
        gp__srv_reply_error(q, 400, "invalid_argument", "users", "a user name is 1 to 64 printable bytes "
                            "without spaces or commas");
        return false;
      }
    }
    set_strings(&r->users, &r->n_users, v);
  }
  if (r->queue && r->n_users) {
    gp__srv_reply_error(q, 400, "invalid_argument", "users", "a reservation is for a queue or for users, not both");
    return false;
  }
  if ((v = json_object_get(b, "maint"))) {
    if (!json_is_boolean(v)) {
      gp__srv_reply_error(q, 400, "invalid_argument", "maint", "maint is true or false");
      return false;
    }
    r->maint = json_is_true(v);
  }
  /* Nodes for N GPUs, picked now (again when the window moves), then no node twice. */
  if (r->gpus && (gpus || json_object_get(b, "start") || dur || end || json_object_get(b, "model")) &&
      !pick_nodes(s, r, creating ? NULL : r->name)) {
    gp__srv_reply_error(q, 409, "conflict", "gpus", "not %d GPUs%s%s on nodes free of other reservations "
                        "over that window", r->gpus, r->model ? " of model " : "", r->model ? r->model : "");
    return false;
  }
  if (!r->n_nodes) {
    gp__srv_reply_error(q, 400, "invalid_argument", "nodes", "a reservation needs nodes or gpus");
    return false;
  }
  for (int k = 0; k < r->n_nodes; k++) {
    const gp__srv_resv *o = holder(s, r->nodes[k], r->start, r->end, creating ? NULL : r->name);
    if (o) {
      gp__srv_reply_error(q, 409, "conflict", "nodes", "node %s is in reservation %s over that window",
                          r->nodes[k], o->name);
      return false;
    }
  }
  return true;
}

static void copy_resv(gp__srv_resv *d, const gp__srv_resv *r) {
  *d = *r;
  d->name = r->name ? gp_xstrdup(r->name) : NULL;
  d->nodes = gp_xcalloc((size_t)r->n_nodes + 1, sizeof *d->nodes);
  for (int i = 0; i < r->n_nodes; i++) d->nodes[i] = gp_xstrdup(r->nodes[i]);
  d->users = gp_xcalloc((size_t)r->n_users + 1, sizeof *d->users);
  for (int i = 0; i < r->n_users; i++) d->users[i] = gp_xstrdup(r->users[i]);
  d->queue = r->queue ? gp_xstrdup(r->queue) : NULL;
  d->model = r->model ? gp_xstrdup(r->model) : NULL;
  d->created_by = r->created_by ? gp_xstrdup(r->created_by) : NULL;
}

static void reply_one(gp_srv_req *q, int status, const gp__srv_resv *r, int64_t now) {
  json_t *o = json_object();
  json_object_set_new(o, "reservation", gp__srv_resv_json(r, now));
  gp__srv_reply_json(q, status, o);
}

static void list(gp_srv_state *s, gp_srv_req *q, int64_t now) {
  struct gp__srv_resvs *v = gp__srv_resvs_of(s);
  json_t *a = json_array();
  for (int i = 0; i < v->n; i++)
    if (v->r[i].end > now) json_array_append_new(a, gp__srv_resv_json(&v->r[i], now));
  json_t *o = json_object();
  json_object_set_new(o, "reservations", a);
  gp__srv_reply_json(q, 200, o);
}

static int create(gp_srv_state *s, gp_srv_req *q, int64_t now, gp_err *err) {
  struct gp__srv_resvs *v = gp__srv_resvs_of(s);
  if (v->n >= GP_MAX_VIEW_RESERVATIONS) {
    gp__srv_reply_error(q, 409, "limit", NULL, "at most %d reservations at a time: delete one first",
                        GP_MAX_VIEW_RESERVATIONS);
    return 0;
  }
  gp__srv_resv r = {.created_at = now, .created_by = gp_xstrdup(q->user ? q->user : "")};
  if (!apply_body(s, q, q->json, &r, true, now)) {
    gp__srv_resv_clear(&r);
    return 0;
  }
  if (!r.name) { /* resv-1, resv-2, ...: the first free */
    char name[32];
    for (int k = 1; !r.name; k++) {
      snprintf(name, sizeof name, "resv-%d", k);
      if (!find(s, name)) r.name = gp_xstrdup(name);
    }
  }
  if (find(s, r.name)) {
    gp__srv_reply_error(q, 409, "conflict", "name", "a reservation named %s exists", r.name);
    gp__srv_resv_clear(&r);
    return 0;
  }
  int rc = gp__srv_resv_persist(s, &r, false, err);
  if (rc) {
    gp__srv_resv_clear(&r);
    return rc;
  }
  gp_xgrow((void **)&v->r, &v->cap, (size_t)v->n + 1, sizeof *v->r);
  v->r[v->n++] = r;
  s->sched_dirty = true;
  reply_one(q, 201, &r, now);
  return 0;
}

int gp__srv_reservations_route(gp_srv_state *s, gp_srv_req *q, const char *rest, int64_t now, gp_err *err) {
  bool get = strcmp(q->method, "GET") == 0;
  bool post = strcmp(q->method, "POST") == 0, patch = strcmp(q->method, "PATCH") == 0,
       del = strcmp(q->method, "DELETE") == 0;
  if (!*rest ? !get && !post : !get && !patch && !del) {
    gp__srv_reply_error(q, 405, "method_not_allowed", NULL, *rest ? "use GET, PATCH or DELETE on a reservation"
                                                                  : "use GET or POST on /v1/reservations");
    return 0;
  }
  if (!get && !gp__srv_req_admin(q)) {
    gp__srv_reply_error(q, 403, "permission_denied", NULL, "only admins may create, change or delete reservations");
    return 0;
  }
  if ((post || patch) && !json_is_object(q->json)) {
    gp__srv_reply_error(q, 400, "invalid_argument", NULL, "the body must be a JSON object");
    return 0;
  }
  if (!*rest) {
    if (get) list(s, q, now);
    return get ? 0 : create(s, q, now, err);
  }
  gp__srv_resv *r = find(s, rest);
  if (!r || r->end <= now) {
    gp__srv_reply_error(q, 404, "not_found", "name", "no reservation named %.*s", GP_SRV_RESV_NAME_MAX, rest);
    return 0;
  }
  if (get) {
    reply_one(q, 200, r, now);
    return 0;
  }
  int rc = 0;
  if (del) {
    rc = gp__srv_resv_persist(s, r, true, err);
    if (rc) return rc;
    json_t *o = json_object();
    json_object_set_new(o, "reservation", json_string(r->name));
    json_object_set_new(o, "deleted", json_true());
    struct gp__srv_resvs *v = gp__srv_resvs_of(s);
    gp__srv_resv_clear(r);
    size_t at = (size_t)(r - v->r);
    memmove(r, r + 1, ((size_t)v->n - at - 1) * sizeof *r);
    v->n--;
    s->sched_dirty = true;
    gp__srv_reply_json(q, 200, o);
    return 0;
  }
  gp__srv_resv upd;
  copy_resv(&upd, r);
  if (!apply_body(s, q, q->json, &upd, false, now)) {
    gp__srv_resv_clear(&upd);
    return 0;
  }
  rc = gp__srv_resv_persist(s, &upd, false, err);
  if (rc) {
    gp__srv_resv_clear(&upd);
    return rc;
  }
  gp__srv_resv_clear(r);
  *r = upd;
  s->sched_dirty = true;
  reply_one(q, 200, r, now);
  return 0;
}
