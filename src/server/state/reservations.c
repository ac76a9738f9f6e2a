/* SPDX-License-Identifier: Apache-2.0 */
/* Advance reservations on the server: the records, their documents in the store (setting
 * "reservation/<name>"), the scheduler's view of them and what a node shows. The routes
 * are in reservations_api.c; what a reservation does to scheduling is the core's
 * (src/core/reservation.c). */
#include "server/state/reservations.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"
#include "util/calendar.h"
#include "util/mem.h"

struct gp__srv_resvs *gp__srv_resvs_of(gp_srv_state *s) {
  if (!s->resvs) s->resvs = gp_xcalloc(1, sizeof *s->resvs);
  return s->resvs;
}

void gp__srv_resv_clear(gp__srv_resv *r) {
  free(r->name);
  for (int i = 0; i < r->n_nodes; i++) free(r->nodes[i]);
  free(r->nodes);
  free(r->queue);
  for (int i = 0; i < r->n_users; i++) free(r->users[i]);
  free(r->users);
  free(r->model);
  free(r->created_by);
  memset(r, 0, sizeof *r);
}

void gp__srv_resv_free(gp_srv_state *s) {
  struct gp__srv_resvs *v = s->resvs;
  if (!v) return;
  for (int i = 0; i < v->n; i++) gp__srv_resv_clear(&v->r[i]);
  free(v->r);
  free(v->view);
  free(v->view_nodes);
  free(v->view_users);
  free(v->view_key);
  free(v);
  s->resvs = NULL;
}

static json_t *strings(char *const *list, int n) {
  json_t *a = json_array();
  for (int i = 0; i < n; i++) json_array_append_new(a, json_string(list[i]));
  return a;
}

/* The stored document: what the API shows, less what is derived from now. */
static json_t *doc_of(const gp__srv_resv *r) {
  json_t *o = json_object();
  json_object_set_new(o, "name", json_string(r->name));
  json_object_set_new(o, "start", json_integer(r->start));
  json_object_set_new(o, "end", json_integer(r->end));
  json_object_set_new(o, "nodes", strings(r->nodes, r->n_nodes));
  json_object_set_new(o, "queue", r->queue ? json_string(r->queue) : json_null());
  json_object_set_new(o, "users", strings(r->users, r->n_users));
  json_object_set_new(o, "maint", json_boolean(r->maint));
  json_object_set_new(o, "gpus", r->gpus ? json_integer(r->gpus) : json_null());
  json_object_set_new(o, "model", r->model ? json_string(r->model) : json_null());
  json_object_set_new(o, "created_by", r->created_by ? json_string(r->created_by) : json_null());
  json_object_set_new(o, "created_at", json_integer(r->created_at));
  return o;
}

json_t *gp__srv_resv_json(const gp__srv_resv *r, int64_t now) {
  json_t *o = doc_of(r);
  char t[GP_TIME_TEXT_LEN];
  gp_format_time(r->start, t);
  json_object_set_new(o, "start_time", json_string(t));
  gp_format_time(r->end, t);
  json_object_set_new(o, "end_time", json_string(t));
  json_object_set_new(o, "duration_s", json_integer(r->end - r->start));
  json_object_set_new(o, "state", json_string(now >= r->end ? "ended" : now >= r->start ? "active" : "planned"));
  return o;
}

int gp__srv_resv_persist(gp_srv_state *s, const gp__srv_resv *r, bool del, gp_err *err) {
  char name[GP_SRV_SETTING_NAME_MAX];
  snprintf(name, sizeof name, "%s%s", GP_SRV_SETTING_RESERVATION, r->name);
  if (del) return gp_store_put_setting(s->store, name, NULL, err);
  json_t *o = doc_of(r);
  char *text = json_dumps(o, JSON_COMPACT);
  json_decref(o);
  if (!text) return GP_ENOMEM;
  int rc = gp_store_put_setting(s->store, name, text, err);
  free(text);
  return rc;
}

/* A list of strings from a stored document; false when it is not one. */
static bool read_strings(const json_t *a, char ***ret, int *ret_n, int max) {
  if (!json_is_array(a) || json_array_size(a) > (size_t)max) return false;
  int n = (int)json_array_size(a);
  char **list = gp_xcalloc((size_t)n + 1, sizeof *list);
  for (int i = 0; i < n; i++) {
    const char *v = json_string_value(json_array_get(a, (size_t)i));
    if (!v) {
      for (int k = 0; k < i; k++) free(list[k]);
      free(list);
      return false;
    }
    list[i] = gp_xstrdup(v);
  }
  *ret = list;
  *ret_n = n;
  return true;
}

void gp__srv_resv_loaded(gp_srv_state *s, const char *name, const char *doc) {
  json_t *o = json_loads(doc, 0, NULL);
  gp__srv_resv r = {0};
  const json_t *q = json_object_get(o, "queue"), *m = json_object_get(o, "model");
  bool ok = json_is_object(o) && json_is_integer(json_object_get(o, "start")) &&
            json_is_integer(json_object_get(o, "end")) && (!q || json_is_null(q) || json_is_string(q)) &&
            (!m || json_is_null(m) || json_is_string(m));
  if (ok) {
    r.name = gp_xstrdup(name);
    r.start = json_integer_value(json_object_get(o, "start"));
    r.end = json_integer_value(json_object_get(o, "end"));
    r.queue = json_is_string(q) ? gp_xstrdup(json_string_value(q)) : NULL;
    r.model = json_is_string(m) ? gp_xstrdup(json_string_value(m)) : NULL;
    r.maint = json_is_true(json_object_get(o, "maint"));
    r.gpus = (int)json_integer_value(json_object_get(o, "gpus"));
    const char *by = json_string_value(json_object_get(o, "created_by"));
    r.created_by = by ? gp_xstrdup(by) : NULL;
    r.created_at = json_integer_value(json_object_get(o, "created_at"));
    ok = r.end > r.start && read_strings(json_object_get(o, "nodes"), &r.nodes, &r.n_nodes, GP_SRV_RESV_MAX_NODES) &&
         read_strings(json_object_get(o, "users"), &r.users, &r.n_users, GP_SRV_RESV_MAX_USERS);
  }
  json_decref(o);
  struct gp__srv_resvs *v = gp__srv_resvs_of(s);
  if (!ok || v->n >= GP_MAX_VIEW_RESERVATIONS) {
    fprintf(stderr, "gpool server: stored reservation %s does not read; it is left out\n", name);
    gp__srv_resv_clear(&r);
    return;
  }
  gp_xgrow((void **)&v->r, &v->cap, (size_t)v->n + 1, sizeof *v->r);
  v->r[v->n++] = r;
}

const gp__srv_resv *gp__srv_resv_of_node(const gp_srv_state *s, const char *name, int64_t now) {
  const struct gp__srv_resvs *v = s->resvs;
  const gp__srv_resv *best = NULL;
  for (int i = 0; v && i < v->n; i++) {
    const gp__srv_resv *r = &v->r[i];
    if (r->end <= now) continue;
    for (int k = 0; k < r->n_nodes; k++)
      if (strcmp(r->nodes[k], name) == 0 && (!best || r->start < best->start)) best = r;
  }
  return best;
}

/* Drops reservations that have ended, from memory and the store. */
static int expire(gp_srv_state *s, int64_t now, gp_err *err) {
  struct gp__srv_resvs *v = s->resvs;
  int rc = 0;
  for (int i = 0; i < v->n && !rc;) {
    if (v->r[i].end > now) {
      i++;
      continue;
    }
    rc = gp__srv_resv_persist(s, &v->r[i], true, err);
    if (rc) break;
    gp__srv_resv_clear(&v->r[i]);
    memmove(&v->r[i], &v->r[i + 1], (size_t)(v->n - i - 1) * sizeof *v->r);
    v->n--;
  }
  return rc;
}

int gp__srv_resv_view(gp_srv_state *s, int64_t now, gp_err *err) {
  gp_view *view = &s->view.view;
  struct gp__srv_resvs *v = s->resvs;
  view->n_reservations = 0;
  view->reservations = NULL;
  if (!v) return 0;
  int rc = expire(s, now, err);
  if (rc) return rc;
  size_t n_nodes = 0, n_users = 0;
  for (int i = 0; i < v->n; i++) {
    n_nodes += (size_t)v->r[i].n_nodes;
    n_users += (size_t)v->r[i].n_users;
  }
  free(v->view);
  free(v->view_nodes);
  free(v->view_users);
  v->view = gp_xcalloc((size_t)v->n + 1, sizeof *v->view);
  v->view_nodes = gp_xcalloc(n_nodes + 1, sizeof *v->view_nodes);
  v->view_users = gp_xcalloc(n_users + 1, sizeof *v->view_users);
  /* The view's entries, and the same as text: when it differs from the last step's, the
   * view's rev changes (the scheduler's memo depends on it). */
  gp_buf key;
  gp_buf_init(&key, 0);
  size_t at_node = 0, at_user = 0;
  int n = 0;
  for (int i = 0; i < v->n; i++) {
    const gp__srv_resv *r = &v->r[i];
    gp_reservation *e = &v->view[n++];
    *e = (gp_reservation){.name = r->name, .start = r->start, .end = r->end, .queue = r->queue,
                          .maint = r->maint, .nodes = v->view_nodes + at_node,
                          .users = v->view_users + at_user};
    gp_buf_printf(&key, "%s|%lld|%lld|%s|%d|", r->name, (long long)r->start, (long long)r->end,
                  r->queue ? r->queue : "", r->maint);
    for (int k = 0; k < r->n_nodes; k++) {
      int idx = gp__srv_node_index(s, r->nodes[k]); /* a node not registered (now) holds nothing */
      if (idx < 0) continue;
      v->view_nodes[at_node++] = idx;
      e->n_nodes++;
      gp_buf_printf(&key, "%d,", idx);
    }
    for (int k = 0; k < r->n_users; k++) {
      v->view_users[at_user++] = r->users[k];
      e->n_users++;
      gp_buf_printf(&key, "%s,", r->users[k]);
    }
    gp_buf_puts(&key, "\n");
  }
  char *text = gp_buf_steal(&key);
  if (!v->view_key || strcmp(text, v->view_key) != 0) {
    free(v->view_key);
    v->view_key = text;
    s->view_rev = ++s->revs;
  } else {
    free(text);
  }
  view->n_reservations = n;
  view->reservations = v->view;
  view->rev = s->view_rev;
  return 0;
}
