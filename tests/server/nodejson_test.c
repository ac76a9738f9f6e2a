/* SPDX-License-Identifier: Apache-2.0 */
/* A node as the API and the store show it: rendering one that reported no NVLink domains
 * gives an empty list and leaks nothing (under AddressSanitizer the test runs the leak
 * check itself), for the API's shape and the store's alike. */
#include "test.h"
#include "server/state.h"
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

GP_TESTS(a_node_without_nvlink_domains_renders_an_empty_list)
