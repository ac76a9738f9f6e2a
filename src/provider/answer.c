/* SPDX-License-Identifier: Apache-2.0 */
/* The provider's answer (docs/providers.md, "Answers" and "Errors"), checked field by
 * field: the output is untrusted, so a wrong type, an unknown class, an unsafe id or node
 * name, a duplicate, or more instances than asked for is a BROKEN call naming the field,
 * and nothing of it reaches the caller. */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "provider/prov_int.h"
#include "util/mem.h"

static const char *const error_classes[] = {"capacity", "quota", "auth", "transient", "invalid"};

static int broken(gp_provider_error *e, const char *fmt, const char *field) {
  return gp__prov_error(e, GP_PROVIDER_BROKEN, GP_EIO, fmt, field);
}

/* An exit status 1 answer: {"error": {"class", "message", "retry_after"?}}. */
static int read_error(const json_t *root, gp_provider_error *e) {
  const json_t *err = json_object_get(root, "error");
  if (!json_is_object(err))
    return broken(e, "the provider exited with 1 but its answer has no %s object", "error");
  const json_t *cls = json_object_get(err, "class");
  int k = -1;
  for (int i = 0; json_is_string(cls) && i < 5; i++)
    if (strcmp(json_string_value(cls), error_classes[i]) == 0) k = i;
  if (k < 0)
    return broken(e, "%s must be capacity, quota, auth, transient or invalid", "error.class");
  const json_t *msg = json_object_get(err, "message");
  if (msg && !json_is_string(msg)) return broken(e, "%s must be a string", "error.message");
  const json_t *ra = json_object_get(err, "retry_after");
  int retry = -1;
  if (ra && !json_is_null(ra)) {
    double v = json_is_number(ra) ? json_number_value(ra) : -1;
    if (!(v >= 0) || !isfinite(v))
      return broken(e, "%s must be a number of seconds, 0 or more", "error.retry_after");
    retry = v > GP_PROVIDER_MAX_RETRY_AFTER_S ? GP_PROVIDER_MAX_RETRY_AFTER_S : (int)ceil(v);
  }
  e->cls = (gp_provider_class)(GP_PROVIDER_CAPACITY + k);
  e->retry_after_s = retry;
  const char *m = msg ? json_string_value(msg) : "";
  gp__prov_clean(e->message, sizeof e->message, m, strlen(m), false);
  if (!e->message[0]) snprintf(e->message, sizeof e->message, "%s", "(no message)");
  return GP_EIO;
}

static int read_instance(const json_t *v, int i, bool with_node, gp_provider_instance *out,
                         gp_provider_error *e) {
  char f[64];
  if (!json_is_object(v)) {
    snprintf(f, sizeof f, "instances[%d]", i);
    return broken(e, "%s must be an object", f);
  }
  const json_t *id = json_object_get(v, "id");
  if (!json_is_string(id) || !gp_provider_id_valid(json_string_value(id))) {
    snprintf(f, sizeof f, "instances[%d].id", i);
    return broken(e, "%s must be 1..128 characters of A-Z a-z 0-9 . _ : @ / -", f);
  }
  snprintf(out->id, sizeof out->id, "%s", json_string_value(id));
  const json_t *node = json_object_get(v, "node");
  if (with_node || node) {
    if (!json_is_string(node) || !gp_provider_node_valid(json_string_value(node))) {
      snprintf(f, sizeof f, "instances[%d].node", i);
      return broken(e, "%s must be a node name: 1..63 characters of A-Z a-z 0-9 . _ -", f);
    }
    snprintf(out->node, sizeof out->node, "%s", json_string_value(node));
  }
  const json_t *cap = json_object_get(v, "capacity");
  if (cap) {
    static const char *const caps[] = {"on-demand", "reserved", "spot", "on-prem"};
    bool ok = false;
    for (int k = 0; json_is_string(cap) && k < 4; k++)
      if (strcmp(json_string_value(cap), caps[k]) == 0) ok = true;
    if (!ok) {
      snprintf(f, sizeof f, "instances[%d].capacity", i);
      return broken(e, "%s must be on-demand, reserved, spot or on-prem", f);
    }
    snprintf(out->capacity, sizeof out->capacity, "%s", json_string_value(cap));
  }
  out->price_per_gpu_hour = -1;
  const json_t *price = json_object_get(v, "price");
  if (price) {
    double p = json_is_number(price) ? json_number_value(price) : -1;
    if (!(p >= 0 && p <= 1e6)) {
      snprintf(f, sizeof f, "instances[%d].price", i);
      return broken(e, "%s must be a price per GPU-hour, 0..1000000", f);
    }
    out->price_per_gpu_hour = p;
  }
  return 0;
}

static bool seen_before(const gp_provider_instance *in, int i) {
  for (int k = 0; k < i; k++)
    if (strcmp(in[k].id, in[i].id) == 0) return true;
  return false;
}

static bool was_asked(const gp_provider_request *req, const char *id) {
  for (int k = 0; k < req->n_instances; k++)
    if (strcmp(req->instances[k], id) == 0) return true;
  return false;
}

static int read_list(const gp_provider_request *req, const json_t *root, gp_provider_result *res,
                     gp_provider_error *e) {
  bool del = req->verb == GP_PROVIDER_DELETE;
  const char *key = del ? "deleted" : "instances";
  const json_t *arr = json_object_get(root, key);
  if (!json_is_array(arr)) return broken(e, "the answer has no %s list", key);
  size_t n = json_array_size(arr);
  size_t max = req->verb == GP_PROVIDER_CREATE ? (size_t)req->count
               : del                           ? (size_t)req->n_instances
                                               : GP_PROVIDER_MAX_INSTANCES;
  if (n > max) {
    char why[160];
    snprintf(why, sizeof why, "%s holds %zu entries, more than the %zu asked for", key, n, max);
    return broken(e, "%s", why);
  }
  gp_provider_instance *in = gp_xcalloc(n ? n : 1, sizeof *in);
  int r = 0;
  for (size_t i = 0; i < n && !r; i++) {
    const json_t *v = json_array_get(arr, i);
    char f[64];
    snprintf(f, sizeof f, "%s[%zu]", key, i);
    if (del) {
      in[i].price_per_gpu_hour = -1;
      if (!json_is_string(v) || !gp_provider_id_valid(json_string_value(v)))
        r = broken(e, "%s must be an instance id", f);
      else if (snprintf(in[i].id, sizeof in[i].id, "%s", json_string_value(v)),
               !was_asked(req, in[i].id))
        r = broken(e, "%s names an instance that was not asked to be deleted", f);
    } else {
      r = read_instance(v, (int)i, true, &in[i], e);
    }
    if (!r && seen_before(in, (int)i)) r = broken(e, "%s repeats an id", f);
  }
  if (r) {
    free(in);
    return r;
  }
  res->instances = in;
  res->n = (int)n;
  return 0;
}

int gp__prov_answer_read(const gp_provider_request *req, const char *out, size_t len,
                         int exit_status, gp_provider_result *res, gp_provider_error *e) {
  if (exit_status != 0 && exit_status != 1) {
    char why[128];
    snprintf(why, sizeof why, "the provider exited with status %d (0: an answer, 1: an error)",
             exit_status);
    return broken(e, "%s", why);
  }
  json_error_t jerr;
  json_t *root = json_loadb(out, len, JSON_REJECT_DUPLICATES, &jerr);
  if (!root || !json_is_object(root)) {
    char why[GP_PROVIDER_MESSAGE_MAX];
    char text[200];
    gp__prov_clean(text, sizeof text, root ? "not an object" : jerr.text,
                   strlen(root ? "not an object" : jerr.text), false);
    snprintf(why, sizeof why, "the provider's output (%zu bytes, exit status %d) is not a JSON "
             "object: %s", len, exit_status, text);
    json_decref(root);
    return broken(e, "%s", why);
  }
  int r = exit_status == 1 ? read_error(root, e) : read_list(req, root, res, e);
  json_decref(root);
  return r;
}
