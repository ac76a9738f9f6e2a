/* SPDX-License-Identifier: Apache-2.0 */
/* The order kinds (order.h): one table row per kind names it on the wire and gives its
 * encoder, decoder and destructor, so adding a kind is adding a row. The start order, the
 * largest, lives in start.c. Encoders write keys in a fixed order, so the server stores and
 * sends the same bytes for the same order. */
#include "protocol/container.h"
#include "protocol/registry.h"
#include "protocol/order.h"

#include <stdio.h>
#include <string.h>

#include "protocol/proto_int.h"

/* ---- stop ---- */

static json_t *stop_encode(const gp_proto_order *o) {
  const gp_proto_stop *s = &o->u.stop;
  json_t *d = json_object();
  json_object_set_new(d, "job", json_string(s->job));
  json_object_set_new(d, "signal", json_string(s->signal));
  if (s->grace_s >= 0) json_object_set_new(d, "grace_s", json_integer(s->grace_s));
  if (s->reason[0]) json_object_set_new(d, "reason", json_string(s->reason));
  return d;
}

/* grace_s: absent or null is `dflt`; a longer period than a day is cut to a day. */
static int grace_decode(const json_t *o, const char *ctx, int dflt, int *ret, gp_err *err) {
  int64_t g;
  int r = gp__proto_int(o, ctx, "grace_s", 0, INT64_MAX, false, dflt, &g, err);
  if (!r) *ret = g > GP_PROTO_MAX_GRACE_S ? GP_PROTO_MAX_GRACE_S : (int)g;
  return r;
}

static int stop_decode(const json_t *d, gp_proto_order *o, gp_err *err) {
  gp_proto_stop *s = &o->u.stop;
  const char *job = json_string_value(json_object_get(d, "job"));
  if (!gp_proto_job_id_valid(job))
    return gp__proto_bad(err, NULL, "job", "stop without a valid job id");
  snprintf(s->job, sizeof s->job, "%s", job);
  int r = gp__proto_str_into(d, NULL, "signal", s->signal, sizeof s->signal, false, err);
  if (!r) r = grace_decode(d, NULL, -1, &s->grace_s, err);
  if (!r) r = gp__proto_str_into(d, NULL, "reason", s->reason, sizeof s->reason, false, err);
  return r;
}

/* ---- mig ---- */

static json_t *mig_encode(const gp_proto_order *o) {
  const gp_proto_mig *m = &o->u.mig;
  json_t *d = json_object(), *profiles = json_array(), *slots = json_array();
  json_object_set_new(d, "gpu", json_integer(m->gpu));
  for (int k = 0; k < m->n && k < GP_PROTO_MAX_MIG; k++) {
    json_array_append_new(profiles, json_string(m->profiles[k]));
    json_array_append_new(slots, m->start_slots[k] >= 0 ? json_integer(m->start_slots[k])
                                                        : json_null());
  }
  json_object_set_new(d, "profiles", profiles);
  json_object_set_new(d, "start_slots", slots);
  return d;
}

static int mig_decode(const json_t *d, gp_proto_order *o, gp_err *err) {
  gp_proto_mig *m = &o->u.mig;
  int64_t gpu;
  int r = gp__proto_int(d, NULL, "gpu", 0, GP_PROTO_MAX_GPUS - 1, true, 0, &gpu, err);
  if (r) return r;
  m->gpu = (int)gpu;
  const json_t *jp = json_object_get(d, "profiles"), *js = json_object_get(d, "start_slots");
  size_t n = json_array_size(jp);
  if (!json_is_array(jp) || n == 0 || n > GP_PROTO_MAX_MIG)
    return gp__proto_bad(err, NULL, "profiles", "a mig order needs 1 to %d profiles",
                         GP_PROTO_MAX_MIG);
  if (js && !json_is_null(js) && (!json_is_array(js) || json_array_size(js) != n))
    return gp__proto_bad(err, NULL, "start_slots", "a mig order needs as many start slots as "
                                                   "profiles");
  m->n = (int)n;
  for (size_t k = 0; k < n; k++) {
    const json_t *p = json_array_get(jp, k), *s = json_array_get(js, k);
    char f[32];
    snprintf(f, sizeof f, "profiles[%zu]", k);
    if (!json_is_string(p) || json_string_length(p) == 0 ||
        json_string_length(p) >= GP_PROTO_PROFILE_MAX)
      return gp__proto_bad(err, NULL, f, "not a profile name");
    snprintf(m->profiles[k], sizeof m->profiles[k], "%s", json_string_value(p));
    m->start_slots[k] = -1;
    if (s && !json_is_null(s)) {
      snprintf(f, sizeof f, "start_slots[%zu]", k);
      if (!json_is_integer(s) || json_integer_value(s) < 0 || json_integer_value(s) > 7)
        return gp__proto_bad(err, NULL, f, "a start slot is an integer from 0 to 7");
      m->start_slots[k] = (int)json_integer_value(s);
    }
  }
  return 0;
}

/* ---- drain_gpu, resume_gpu ---- */

static json_t *gpu_admin_encode(const gp_proto_order *o) {
  json_t *d = json_object();
  json_object_set_new(d, "gpu", json_integer(o->u.gpu.gpu));
  gp__proto_set_str(d, "reason", o->u.gpu.has_reason ? o->u.gpu.reason : NULL);
  return d;
}

static int gpu_admin_decode(const json_t *d, gp_proto_order *o, gp_err *err) {
  gp_proto_gpu_admin *g = &o->u.gpu;
  int64_t gpu;
  int r = gp__proto_int(d, NULL, "gpu", 0, GP_PROTO_MAX_GPUS - 1, true, 0, &gpu, err);
  if (r) return r;
  g->gpu = (int)gpu;
  const json_t *rv = json_object_get(d, "reason");
  g->has_reason = rv && !json_is_null(rv);
  return gp__proto_str_into(d, NULL, "reason", g->reason, sizeof g->reason, false, err);
}

/* ---- inject ---- */

static json_t *inject_encode(const gp_proto_order *o) {
  json_t *d = json_object();
  json_object_set_new(d, "fault", json_string(o->u.inject.fault));
  return d;
}

static int inject_decode(const json_t *d, gp_proto_order *o, gp_err *err) {
  gp_proto_inject *in = &o->u.inject;
  const char *spec = json_string_value(json_object_get(d, "fault"));
  if (!spec) return gp__proto_bad(err, NULL, "fault", "the order has no fault spec");
  snprintf(in->fault, sizeof in->fault, "%s", spec);
  return gp_proto_fault_parse(spec, in->faults, GP_PROTO_MAX_FAULTS, &in->n_faults, err);
}

/* ---- pull_image ---- */

static json_t *pull_encode(const gp_proto_order *o) {
  json_t *d = json_pack("{s:s}", "image", o->u.pull.image);
  if (o->u.pull.auth[0]) json_object_set_new(d, "registry_auth", json_string(o->u.pull.auth));
  return d;
}

static int pull_decode(const json_t *d, gp_proto_order *o, gp_err *err) {
  gp_proto_pull *p = &o->u.pull;
  const char *image = json_string_value(json_object_get(d, "image"));
  const char *why = image ? gp_proto_image_check(image) : "the order names no image";
  if (why) return gp__proto_bad(err, NULL, "image", "%s", why);
  snprintf(p->image, sizeof p->image, "%s", image);
  const json_t *ra = json_object_get(d, "registry_auth");
  if (ra && !json_is_null(ra)) {
    const char *a = json_string_value(ra);
    if (!a || !gp_proto_registry_auth_valid(a) || strlen(a) >= sizeof p->auth)
      return gp__proto_bad(err, NULL, "registry_auth", "a credential is bounded base64 text");
    snprintf(p->auth, sizeof p->auth, "%s", a);
  }
  return 0;
}

static void pull_done(gp_proto_order *o) { explicit_bzero(o->u.pull.auth, sizeof o->u.pull.auth); }

/* ---- start (start.c) ---- */

static json_t *start_encode(const gp_proto_order *o) {
  json_t *d = json_object();
  json_object_set_new(d, "job", gp_proto_start_encode(&o->u.start));
  return d;
}

static int start_decode(const json_t *d, gp_proto_order *o, gp_err *err) {
  const json_t *job = json_object_get(d, "job");
  if (!json_is_object(job)) return gp__proto_bad(err, NULL, "job", "start without a job object");
  return gp_proto_start_decode(job, &o->u.start, err);
}

static void start_done(gp_proto_order *o) { gp_proto_start_done(&o->u.start); }

/* ---- the kinds ---- */

static const struct {
  gp_proto_order_kind kind;
  const char *name;
  json_t *(*encode)(const gp_proto_order *o); /* the fields after "kind" */
  int (*decode)(const json_t *doc, gp_proto_order *o, gp_err *err);
  void (*done)(gp_proto_order *o);             /* NULL: owns nothing */
} kinds[] = {
    {GP_PROTO_START, "start", start_encode, start_decode, start_done},
    {GP_PROTO_STOP, "stop", stop_encode, stop_decode, NULL},
    {GP_PROTO_MIG, "mig", mig_encode, mig_decode, NULL},
    {GP_PROTO_DRAIN_GPU, "drain_gpu", gpu_admin_encode, gpu_admin_decode, NULL},
    {GP_PROTO_RESUME_GPU, "resume_gpu", gpu_admin_encode, gpu_admin_decode, NULL},
    {GP_PROTO_INJECT, "inject", inject_encode, inject_decode, NULL},
    {GP_PROTO_STEP, "step", gp__proto_step_encode, gp__proto_step_decode, gp__proto_step_done},
    {GP_PROTO_STEP_STOP, "step_stop", gp__proto_step_stop_encode, gp__proto_step_stop_decode, NULL},
    {GP_PROTO_PULL_IMAGE, "pull_image", pull_encode, pull_decode, pull_done},
};
#define N_KINDS (sizeof kinds / sizeof kinds[0])

static int kind_row(gp_proto_order_kind kind) {
  for (size_t i = 0; i < N_KINDS; i++)
    if (kinds[i].kind == kind) return (int)i;
  return -1;
}

const char *gp_proto_order_kind_name(gp_proto_order_kind kind) {
  int i = kind_row(kind);
  return i < 0 ? NULL : kinds[i].name;
}

gp_proto_order_kind gp_proto_order_kind_parse(const char *name) {
  for (size_t i = 0; name && i < N_KINDS; i++)
    if (strcmp(kinds[i].name, name) == 0) return kinds[i].kind;
  return 0;
}

bool gp_proto_job_id_valid(const char *id) {
  if (!id || !*id || strlen(id) >= GP_PROTO_ID_MAX || id[0] == '.') return false;
  for (const char *p = id; *p; p++)
    if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
          *p == '-' || *p == '_' || *p == '.'))
      return false;
  return true;
}

int gp_proto_order_head(const json_t *doc, const char **ret_id, const char **ret_kind,
                        gp_err *err) {
  const char *id = json_string_value(json_object_get(doc, "id"));
  const char *kind = json_string_value(json_object_get(doc, "kind"));
  if (!id || !*id || strlen(id) >= GP_PROTO_ID_MAX)
    return gp__proto_bad(err, NULL, "id", "an order needs an id of 1 to %d bytes",
                         GP_PROTO_ID_MAX - 1);
  if (!kind || !*kind) return gp__proto_bad(err, NULL, "kind", "an order needs a kind");
  *ret_id = id;
  *ret_kind = kind;
  return 0;
}

json_t *gp_proto_order_encode(const gp_proto_order *o) {
  int i = kind_row(o->kind);
  if (i < 0) return NULL;
  json_t *d = json_object();
  json_object_set_new(d, "kind", json_string(kinds[i].name));
  json_t *fields = kinds[i].encode(o);
  json_object_update(d, fields);
  json_decref(fields);
  if (o->id[0]) json_object_set_new(d, "id", json_string(o->id));
  return d;
}

int gp_proto_order_decode(const json_t *doc, gp_proto_order *ret, gp_err *err) {
  memset(ret, 0, sizeof *ret);
  if (!json_is_object(doc)) return gp__proto_bad(err, NULL, "order", "an order is an object");
  const char *kind = json_string_value(json_object_get(doc, "kind"));
  int i = kind_row(gp_proto_order_kind_parse(kind));
  if (i < 0)
    return gp_err_set(err, GP_ENOENT, NULL, 0, "kind", "unknown order kind '%.32s'",
                      kind ? kind : "");
  ret->kind = kinds[i].kind;
  const char *id = json_string_value(json_object_get(doc, "id"));
  if (id && strlen(id) < GP_PROTO_ID_MAX) snprintf(ret->id, sizeof ret->id, "%s", id);
  int r = kinds[i].decode(doc, ret, err);
  if (r) {
    gp_proto_order_done(ret);
    memset(ret, 0, sizeof *ret);
  }
  return r;
}

void gp_proto_order_done(gp_proto_order *o) {
  if (!o) return;
  int i = kind_row(o->kind);
  if (i >= 0 && kinds[i].done) kinds[i].done(o);
}
