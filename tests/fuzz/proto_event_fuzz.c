/* SPDX-License-Identifier: Apache-2.0 */
/* Events as the server reads them from an agent's heartbeat (docs/internals/protocol.md):
 * each input is one JSON event, or an array of them as a heartbeat carries. An event that
 * decodes must encode to a document that decodes to the same event, since the agent
 * encodes with the same structs the server decodes with. */
#include <jansson.h>

#include "fuzz.h"
#include "protocol/event.h"

static void one_event(const json_t *doc) {
  gp_proto_event ev;
  gp_err err = {0};
  int rc = gp_proto_event_decode(doc, &ev, &err);
  if (rc != 0) {
    fuzz_check(rc == GP_ENOENT || err.message[0] != '\0');
    return;
  }
  json_t *enc = gp_proto_event_encode(&ev);
  fuzz_check(enc != NULL);
  gp_proto_event back;
  gp_err berr = {0};
  rc = gp_proto_event_decode(enc, &back, &berr);
  char *a = json_dumps(enc, JSON_COMPACT | JSON_SORT_KEYS);
  if (rc) fprintf(stderr, "an encoded event does not decode: %s\n%s\n", berr.message, a);
  fuzz_check(rc == 0);
  json_t *enc2 = gp_proto_event_encode(&back);
  char *b = json_dumps(enc2, JSON_COMPACT | JSON_SORT_KEYS);
  if (strcmp(a, b) != 0) fprintf(stderr, "event changed on the way:\n%s\n%s\n", a, b);
  fuzz_check(strcmp(a, b) == 0);
  free(a);
  free(b);
  json_decref(enc2);
  json_decref(enc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  json_error_t je;
  json_t *doc = json_loadb((const char *)data, size, 0, &je);
  if (!doc) return 0;
  if (json_is_array(doc)) {
    for (size_t i = 0; i < json_array_size(doc); i++) one_event(json_array_get(doc, i));
  } else {
    one_event(doc);
  }
  json_decref(doc);
  return 0;
}
