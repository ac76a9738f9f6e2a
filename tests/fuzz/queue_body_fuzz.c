/* SPDX-License-Identifier: Apache-2.0 */
/* PUT /v1/queues/{name} bodies: the bytes are parsed as the HTTP layer parses a body, then
 * read by gp__srv_queue_from_json into a new queue (as api.c creates one) and into an
 * existing one. A queue it accepts must render (gp__srv_queue_to_json) and, rendered, be
 * accepted again: that document is what the store keeps and reads at the next start. */
#include <jansson.h>

#include "fuzz.h"
#include "server/state/state.h"
#include "util/mem.h"

/* A fresh queue as the API creates one before reading the body. */
static gp_srv_queue *new_queue(void) {
  gp_srv_queue *q = gp_xcalloc(1, sizeof *q);
  q->weight = 1;
  q->limit = GP_NO_LIMIT;
  q->users = gp_xcalloc(2, sizeof *q->users);
  q->users[0] = gp_xstrdup("*");
  q->n_users = 1;
  return q;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  json_error_t je;
  json_t *body = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &je);
  if (!body) return 0;
  static const char *const names[] = {"team/a", "default"};
  for (int i = 0; i < 2; i++) {
    gp_srv_queue *q = new_queue();
    gp_err err = {0};
    if (gp__srv_queue_from_json(body, names[i], q, &err) == 0) {
      json_t *doc = gp__srv_queue_to_json(q);
      fuzz_check(doc != NULL);
      gp_srv_queue *back = new_queue();
      gp_err err2 = {0};
      int rc = gp__srv_queue_from_json(doc, names[i], back, &err2);
      if (rc) fprintf(stderr, "rendered queue refused: %s: %s\n", err2.field, err2.message);
      fuzz_check(rc == 0);
      gp__srv_queue_free(back);
      json_decref(doc);
    } else {
      fuzz_check(err.message[0] != '\0');
    }
    gp__srv_queue_free(q);
  }
  json_decref(body);
  return 0;
}
