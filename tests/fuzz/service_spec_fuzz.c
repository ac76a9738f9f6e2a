/* SPDX-License-Identifier: Apache-2.0 */
/* PUT /v1/services/{name} bodies (gp__srv_service_spec_parse) and a replica's metrics page
 * (gp_proto_metric_sum): the bytes are tried as a JSON spec and as Prometheus text. A spec
 * it accepts must be accepted again as it normalised it (that is what the store keeps); a
 * figure it reads is finite and within its bounds. */
#include <jansson.h>
#include <math.h>

#include "fuzz.h"
#include "protocol/service.h"
#include "server/workloads/service.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  double v = -1;
  if (gp_proto_metric_sum((const char *)data, size, "load", &v)) fuzz_check(isfinite(v) && v >= 0);
  json_error_t je;
  json_t *body = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &je);
  if (!body) return 0;
  json_t *spec = NULL;
  gp_err err = {0};
  if (gp__srv_service_spec_parse(body, &spec, &err) == 0) {
    json_t *again = NULL;
    gp_err err2 = {0};
    fuzz_check(gp__srv_service_spec_parse(spec, &again, &err2) == 0);
    fuzz_check(json_equal(spec, again));
    json_decref(again);
    json_decref(spec);
  } else {
    fuzz_check(err.message[0] != '\0');
  }
  json_decref(body);
  return 0;
}
