/* SPDX-License-Identifier: Apache-2.0 */
/* The request gpool writes on a provider's stdin (docs/providers.md, "Requests"): the
 * template as the provider needs it to pick a machine, and for create and delete the
 * count or ids, an idempotency key and the deadline. Checked here so that a bad request
 * is gpool's error, never the provider's. */
#include <jansson.h>
#include <math.h>
#include <string.h>

#include "provider/prov_int.h"

static json_t *template_json(const gp_provider_template *t) {
  json_t *o = json_object();
  json_object_set_new(o, "name", json_string(t->name));
  json_object_set_new(o, "model", json_string(t->model ? t->model : ""));
  json_object_set_new(o, "gpus", json_integer(t->gpus));
  if (t->gpu_mem_mib > 0) json_object_set_new(o, "gpu_mem_mib", json_integer(t->gpu_mem_mib));
  json_object_set_new(o, "capacity", json_string(t->capacity ? t->capacity : "on-demand"));
  if (t->price_per_gpu_hour >= 0 && isfinite(t->price_per_gpu_hour))
    json_object_set_new(o, "price_per_gpu_hour", json_real(t->price_per_gpu_hour));
  json_t *labels = json_object();
  for (int i = 0; i < t->n_labels; i++)
    json_object_set_new(labels, t->label_keys[i], json_string(t->label_values[i]));
  json_object_set_new(o, "labels", labels);
  return o;
}

static bool key_valid(const char *k) {
  size_t n = k ? strlen(k) : 0;
  if (n == 0 || n > GP_PROVIDER_KEY_MAX) return false;
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)k[i] <= 0x20 || (unsigned char)k[i] >= 0x7f) return false;
  return true;
}

char *gp__prov_request_json(const gp_provider_request *req, gp_provider_error *e) {
  const gp_provider_template *t = req->tmpl;
  if (!t || !t->name || !gp_provider_node_valid(t->name) || !t->provider || t->provider[0] != '/') {
    gp__prov_error(e, GP_PROVIDER_INVALID, GP_EINVAL,
                   "the template needs a valid name and an absolute provider path");
    return NULL;
  }
  json_t *o = json_object();
  json_object_set_new(o, "template", template_json(t));
  if (req->verb == GP_PROVIDER_CREATE) {
    if (req->count < 1 || req->count > GP_PROVIDER_MAX_INSTANCES) {
      json_decref(o);
      gp__prov_error(e, GP_PROVIDER_INVALID, GP_EINVAL, "count must be 1..%d, not %d",
                     GP_PROVIDER_MAX_INSTANCES, req->count);
      return NULL;
    }
    json_object_set_new(o, "count", json_integer(req->count));
  } else if (req->verb == GP_PROVIDER_DELETE) {
    if (req->n_instances < 1 || req->n_instances > GP_PROVIDER_MAX_INSTANCES) {
      json_decref(o);
      gp__prov_error(e, GP_PROVIDER_INVALID, GP_EINVAL, "delete names 1..%d instances, not %d",
                     GP_PROVIDER_MAX_INSTANCES, req->n_instances);
      return NULL;
    }
    json_t *ids = json_array();
    for (int i = 0; i < req->n_instances; i++) {
      if (!gp_provider_id_valid(req->instances[i])) {
        json_decref(ids);
        json_decref(o);
        gp__prov_error(e, GP_PROVIDER_INVALID, GP_EINVAL, "instances[%d] is not a valid id", i);
        return NULL;
      }
      json_array_append_new(ids, json_string(req->instances[i]));
    }
    json_object_set_new(o, "instances", ids);
  }
  if (req->verb != GP_PROVIDER_LIST) {
    if (!key_valid(req->idempotency_key)) {
      json_decref(o);
      gp__prov_error(e, GP_PROVIDER_INVALID, GP_EINVAL,
                     "idempotency_key must be 1..%d printable characters", GP_PROVIDER_KEY_MAX);
      return NULL;
    }
    json_object_set_new(o, "idempotency_key", json_string(req->idempotency_key));
  }
  json_object_set_new(o, "deadline", json_integer((req->deadline_ms + 999) / 1000));
  char *s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
  json_decref(o);
  if (!s) gp__prov_error(e, GP_PROVIDER_INVALID, GP_EINVAL, "the template holds text that is not UTF-8");
  return s;
}
