/* SPDX-License-Identifier: Apache-2.0 */
/* A node as the API and the store show it: rendering one that reported no NVLink domains
 * gives an empty list and leaks nothing (under AddressSanitizer the test runs the leak
 * check itself), for the API's shape and the store's alike; numbers an agent sends past
 * any integer's range are refused, naming the GPU. */
#include "test.h"
#include "server/state/state.h"
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#endif

static void a_node_without_nvlink_domains_renders_an_empty_list(void) {
  gp_srv_node *n = calloc(1, sizeof *n);
  n->name = strdup("n1");
  n->model = strdup("H100-80GB");
  for (int round = 0; round < 2; round++) {
    json_t *o = gp__srv_node_to_json(NULL, n, round == 1);
    REQUIRE(o);
    const json_t *d = json_object_get(o, "nvlink_domains");
    CHECK(json_is_array(d) && json_array_size(d) == 0);
    json_decref(o);
  }
  gp__srv_node_free(n);
#if defined(__SANITIZE_ADDRESS__)
  CHECK(__lsan_do_recoverable_leak_check() == 0);
#endif
}

/* 819e20 MiB does not fit an int64 (a cast would be undefined) and 2^32 + 2 replicas once
 * wrapped to 2 on the way to an int: both are refused. */
static void numbers_past_any_range_are_refused(void) {
  static const char *const gpus[] = {
      "{\"index\": 0, \"mem_mib\": 819e20}",
      "{\"index\": 0, \"mem_mib\": -819e20}",
      "{\"index\": 0, \"mode\": \"timeslice\", \"replicas\": 4294967298}",
      "{\"index\": 0, \"mode\": \"timeslice\", \"replicas\": 4294967298.0}",
  };
  for (size_t i = 0; i < sizeof gpus / sizeof gpus[0]; i++) {
    char text[300];
    snprintf(text, sizeof text, "{\"name\": \"n1\", \"gpus\": 1, \"gpu_list\": [%s]}", gpus[i]);
    json_t *o = json_loads(text, 0, NULL);
    REQUIRE(o);
    gp_srv_node *n = calloc(1, sizeof *n);
    gp_err err = {0};
    CHECK_EQ_INT(GP_EINVAL, gp__srv_node_from_json(o, n, false, &err));
    CHECK_EQ_STR("node.gpu_list[0]", err.field);
    gp__srv_node_free(n);
    json_decref(o);
  }
}

GP_TESTS(a_node_without_nvlink_domains_renders_an_empty_list, numbers_past_any_range_are_refused)
