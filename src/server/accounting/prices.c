/* SPDX-License-Identifier: Apache-2.0 */
/* The price catalogue in force (prices.h) and /v1/prices: the config's `prices:`
 * unless an admin set one through PUT /v1/prices, which is kept in the store (a setting) so
 * that it wins over the config's across restarts until DELETE /v1/prices. The admin's body
 * goes through the same reader as the config file (src/ledger/prices.h), so it is checked
 * the same way and its errors name the same keys. State thread. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/accounting/prices.h"

#include "ledger/prices.h"
#include "server/state/server_int.h"
#include "util/doc.h"
#include "util/mem.h"

/* Reads a catalogue from JSON text (the admin's body or its stored copy). */
static int prices_from_text(const char *text, gp_prices **ret, gp_err *err) {
  gp_doc *d = NULL;
  int r = gp_doc_load_string("body", text, strlen(text), &d, err);
  if (!r && !d->root) r = gp_err_set(err, GP_EINVAL, NULL, 0, "prices", "the body is empty");
  if (!r) r = gp_prices_read(d, d->root, "prices", ret, err);
  gp_doc_free(d);
  return r;
}

/* gp_srv_state.pricing (prices.h). */
struct gp__srv_pricing {
  gp_prices *in_force;  /* one reference, NULL: none */
  char *set;            /* the catalogue an admin set (JSON, as stored), NULL: the config's */
};

/* The record of s, made on first use. */
static struct gp__srv_pricing *pricing_of(gp_srv_state *s) {
  if (!s->pricing) s->pricing = gp_xcalloc(1, sizeof *s->pricing);
  return s->pricing;
}

const gp_prices *gp__srv_prices(const gp_srv_state *s) {
  return s->pricing ? s->pricing->in_force : NULL;
}

gp_prices *gp__srv_prices_ref(const gp_srv_state *s) {
  return s->pricing ? gp_prices_ref(s->pricing->in_force) : NULL;
}

void gp__srv_prices_loaded(gp_srv_state *s, const char *doc) {
  struct gp__srv_pricing *p = pricing_of(s);
  free(p->set);
  p->set = gp_xstrdup(doc);
}

void gp__srv_prices_free(gp_srv_state *s) {
  if (!s->pricing) return;
  free(s->pricing->set);
  gp_prices_free(s->pricing->in_force);
  free(s->pricing);
  s->pricing = NULL;
}

int gp__srv_prices_init(gp_srv_state *s, gp_err *err) {
  struct gp__srv_pricing *pr = pricing_of(s);
  gp_prices_free(pr->in_force);
  pr->in_force = NULL;
  if (pr->set) {
    gp_err e = {0};
    if (prices_from_text(pr->set, &pr->in_force, &e) == 0) return 0;
    /* The store's copy was checked when it was set; a newer reader may refuse it. The
     * config's catalogue still applies rather than none. */
    fprintf(stderr, "gpool server: the price catalogue set by an admin is no longer valid "
                    "(%s: %s); using the config's\n", e.field, e.message);
  }
  (void)err;
  pr->in_force = gp_prices_ref(s->cfg->prices);
  return 0;
}

/* A date as the reader takes it back; 0 (no `from`: always) is null, except where the
 * reader requires a date (`always`: a commitment's from and to). */
static json_t *date_json(int64_t t, bool always) {
  if (t < 0 || (t == 0 && !always)) return json_null();
  time_t tt = (time_t)t;
  struct tm tm;
  char buf[32];
  gmtime_r(&tt, &tm);
  strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
  return json_string(buf);
}

json_t *gp__srv_prices_json(const gp_srv_state *s) {
  const gp_prices *p = gp__srv_prices(s);
  json_t *o = json_object();
  json_object_set_new(o, "source", json_string(!p ? "none" : s->pricing->set ? "admin" : "config"));
  if (!p) return o;
  json_object_set_new(o, "currency", json_string(p->currency));
  json_t *list = json_array();
  for (int i = 0; i < p->n_prices; i++) {
    const gp_price *e = &p->prices[i];
    json_array_append_new(list, json_pack("{s:s,s:s,s:f,s:o}", "model", e->model, "capacity",
                                          gp_capacity_name(e->capacity), "price",
                                          e->per_gpu_hour, "from", date_json(e->from, false)));
  }
  json_object_set_new(o, "gpu_hour", list);
  list = json_array();
  for (int i = 0; i < p->n_commitments; i++) {
    const gp_commitment *e = &p->commitments[i];
    json_array_append_new(list, json_pack("{s:s,s:i,s:f,s:o,s:o}", "model", e->model, "gpus",
                                          e->gpus, "price", e->per_gpu_hour, "from",
                                          date_json(e->from, true), "to", date_json(e->to, true)));
  }
  json_object_set_new(o, "commitments", list);
  list = json_array();
  for (int i = 0; i < p->n_energy; i++)
    json_array_append_new(list, json_pack("{s:f,s:o}", "price_per_kwh", p->energy[i].per_kwh,
                                          "from", date_json(p->energy[i].from, false)));
  json_object_set_new(o, "energy", list);
  return o;
}

static void reply_prices(gp_srv_state *s, gp_srv_req *r) {
  gp__srv_reply_json(r, 200, json_pack("{s:o}", "prices", gp__srv_prices_json(s)));
}

/* GET's answer goes back through PUT unchanged: its `source` says where the catalogue came
 * from, so it is no part of the catalogue. It must still be one of GET's own values (a
 * typo is refused like any other key), and "none" (no catalogue at all) cannot be set:
 * DELETE drops the admin's. On success *ret_text is the map without it, as compact text
 * (NULL when it cannot be written); false when r was answered. */
static bool map_without_source(gp_srv_req *r, const json_t *map, char **ret_text) {
  const json_t *src = json_object_get(map, "source");
  if (!src) {
    *ret_text = json_dumps(map, JSON_COMPACT);
    return true;
  }
  const char *v = json_string_value(src);
  if (!v || (strcmp(v, "config") != 0 && strcmp(v, "admin") != 0 && strcmp(v, "none") != 0)) {
    gp__srv_reply_error(r, 400, "invalid_argument", "prices.source",
                        "source is what GET /v1/prices answers (config, admin or none); a "
                        "catalogue set here is the admin's");
    return false;
  }
  if (strcmp(v, "none") == 0) {
    gp__srv_reply_error(r, 400, "invalid_argument", "prices.source",
                        "source none means no catalogue, which PUT cannot set: DELETE "
                        "/v1/prices drops the one an admin set");
    return false;
  }
  json_t *copy = json_copy((json_t *)map);
  json_object_del(copy, "source");
  *ret_text = json_dumps(copy, JSON_COMPACT);
  json_decref(copy);
  return true;
}

int gp__srv_prices_route(gp_srv_state *s, gp_srv_req *r, gp_err *err) {
  bool get = strcmp(r->method, "GET") == 0, put = strcmp(r->method, "PUT") == 0,
       del = strcmp(r->method, "DELETE") == 0;
  if (!get && !put && !del) {
    gp__srv_reply_error(r, 405, "method_not_allowed", NULL, "use GET, PUT or DELETE on /v1/prices");
    return 0;
  }
  if (get) {
    reply_prices(s, r);
    return 0;
  }
  if (r->role != GP_ROLE_ADMIN) {
    gp__srv_reply_error(r, 403, "permission_denied", NULL, "only admins may change prices");
    return 0;
  }
  if (del) {
    int rc = gp_store_put_setting(s->store, GP_SRV_SETTING_PRICES, NULL, err);
    if (rc) return rc;
    struct gp__srv_pricing *pr = pricing_of(s);
    free(pr->set);
    pr->set = NULL;
    gp__srv_prices_init(s, err);
    reply_prices(s, r);
    return 0;
  }
  if (!json_is_object(r->json)) {
    gp__srv_reply_error(r, 400, "invalid_argument", "prices",
                        "the body must be the prices map as a JSON object");
    return 0;
  }
  /* A body that wraps the map as {"prices": {...}} (what GET answers) is read the same. */
  const json_t *map = r->json;
  if (json_object_size(map) == 1 && json_is_object(json_object_get(map, "prices")))
    map = json_object_get(map, "prices");
  char *text = NULL;
  if (!map_without_source(r, map, &text)) return 0;
  gp_prices *p = NULL;
  gp_err verr = {0};
  int rc = text ? prices_from_text(text, &p, &verr) : GP_EINVAL;
  if (rc) {
    free(text);
    /* The body is one document of its own: its name and line say nothing to the caller. */
    verr.file[0] = '\0';
    verr.line = 0;
    gp__srv_reply_err(r, rc == GP_ELIMIT ? GP_ELIMIT : GP_EINVAL, &verr);
    return 0;
  }
  rc = gp_store_put_setting(s->store, GP_SRV_SETTING_PRICES, text, err);
  if (rc) {
    free(text);
    gp_prices_free(p);
    return rc;
  }
  struct gp__srv_pricing *pr = pricing_of(s);
  free(pr->set);
  pr->set = text;
  gp_prices_free(pr->in_force);
  pr->in_force = p;
  reply_prices(s, r);
  return 0;
}
