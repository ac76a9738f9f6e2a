/* SPDX-License-Identifier: Apache-2.0 */
/* A provider's stdout as gpool checks it (src/provider/answer.c, docs/providers.md). The
 * first byte picks the verb, the exit status (0 or 1) and the count asked for; the rest is
 * the output. An accepted answer holds only safe ids and node names, no more entries than
 * asked for, no id twice, and reads back the same when written again as the protocol's
 * JSON; a refusal has a class and a message without control characters. */
#include <jansson.h>

#include "fuzz.h"
#include "provider/prov_int.h"

static json_t *render(gp_provider_verb verb, const gp_provider_result *res) {
  json_t *list = json_array();
  for (int i = 0; i < res->n; i++) {
    const gp_provider_instance *in = &res->instances[i];
    if (verb == GP_PROVIDER_DELETE) {
      json_array_append_new(list, json_string(in->id));
      continue;
    }
    json_t *o = json_pack("{s:s,s:s}", "id", in->id, "node", in->node);
    if (in->capacity[0]) json_object_set_new(o, "capacity", json_string(in->capacity));
    if (in->price_per_gpu_hour >= 0) json_object_set_new(o, "price", json_real(in->price_per_gpu_hour));
    json_array_append_new(list, o);
  }
  return json_pack("{s:o}", verb == GP_PROVIDER_DELETE ? "deleted" : "instances", list);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  gp_provider_verb verb = (gp_provider_verb)(data[0] % 3);
  int exit_status = (data[0] >> 2) & 1;
  int count = 1 + (data[0] >> 3); /* 1..32 */
  static const char *const ids[] = {"i-1", "i-2", "i-3", "i-4"};
  gp_provider_template t = {.name = "t", .provider = "/bin/true", .model = "A100", .gpus = 1};
  gp_provider_request req = {.verb = verb, .tmpl = &t, .count = count, .n_instances = 4,
                             .instances = ids, .idempotency_key = "k"};
  gp_provider_result res = {0};
  gp_provider_error e = {0};
  const char *out = (const char *)data + 1;
  int rc = gp__prov_answer_read(&req, out, size - 1, exit_status, &res, &e);
  if (rc) {
    fuzz_check(e.cls != GP_PROVIDER_OK && e.message[0] != '\0');
    for (const char *p = e.message; *p; p++) fuzz_check((unsigned char)*p >= 0x20 && *p != 0x7f);
    fuzz_check(res.instances == NULL);
    return 0;
  }
  fuzz_check(exit_status == 0);
  int max = verb == GP_PROVIDER_CREATE ? count : verb == GP_PROVIDER_DELETE ? 4 : GP_PROVIDER_MAX_INSTANCES;
  fuzz_check(res.n >= 0 && res.n <= max);
  for (int i = 0; i < res.n; i++) {
    fuzz_check(gp_provider_id_valid(res.instances[i].id));
    if (verb != GP_PROVIDER_DELETE) fuzz_check(gp_provider_node_valid(res.instances[i].node));
    for (int k = 0; k < i; k++) fuzz_check(strcmp(res.instances[k].id, res.instances[i].id) != 0);
  }
  json_t *doc = render(verb, &res);
  char *text = json_dumps(doc, JSON_COMPACT);
  gp_provider_result back = {0};
  rc = gp__prov_answer_read(&req, text, strlen(text), 0, &back, &e);
  fuzz_check(rc == 0 && back.n == res.n);
  for (int i = 0; i < res.n; i++) {
    fuzz_check(strcmp(back.instances[i].id, res.instances[i].id) == 0);
    fuzz_check(strcmp(back.instances[i].node, res.instances[i].node) == 0);
    fuzz_check(strcmp(back.instances[i].capacity, res.instances[i].capacity) == 0);
  }
  free(text);
  json_decref(doc);
  gp_provider_result_done(&back);
  gp_provider_result_done(&res);
  return 0;
}
