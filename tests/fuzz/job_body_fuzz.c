/* SPDX-License-Identifier: Apache-2.0 */
/* POST /v1/jobs bodies as the server reads them: the bytes are parsed as the HTTP layer
 * parses a body (duplicate keys refused), then validated by gp__srv_job_parse for a plain
 * user and for an admin. A body it accepts must survive the store: its stored document
 * must read back (gp__srv_job_from_doc) as the same document, or a restart would lose or
 * change an acknowledged job. */
#include <jansson.h>

#include "fuzz.h"
#include "server/state/config.h"
#include "server/state/state.h"

/* Priority classes, a queue and a user list, so that the checks against the config run. */
static const char config_text[] =
    "listen: 127.0.0.1:0\n"
    "data_dir: /nonexistent\n"
    "priority_classes:\n"
    "  - {name: urgent, priority: 90, preemptible: false}\n"
    "queues:\n"
    "  - {name: default, users: [\"*\"]}\n"
    "  - {name: research/vision, deserved: 8, users: [alice]}\n"
    "default_queue: default\n";

static gp_server_config *config(void) {
  static gp_server_config *cfg;
  if (!cfg) {
    gp_err err = {0};
    fuzz_check(gp_server_config_parse("fuzz.yaml", config_text, sizeof config_text - 1, &cfg,
                                      &err) == 0);
  }
  return cfg;
}

static void round_trip(gp_srv_job *j) {
  j->id = 42;
  snprintf(j->idstr, sizeof j->idstr, "42");
  if (!j->queue) j->queue = strdup("default"); /* what admission fills in */
  char *doc = gp__srv_job_store_doc(j);
  gp_srv_job *back = NULL;
  gp_err err = {0};
  int rc = gp__srv_job_from_doc(doc, &back, &err);
  if (rc) fprintf(stderr, "stored document does not read back: %s: %s\n%s\n", err.field,
                  err.message, doc);
  fuzz_check(rc == 0);
  char *again = gp__srv_job_store_doc(back);
  fuzz_check(strcmp(doc, again) == 0);
  free(again);
  free(doc);
  gp__srv_job_free(back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  json_error_t je;
  json_t *body = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &je);
  if (!body) return 0;
  for (int admin = 0; admin <= 1; admin++) {
    gp_srv_job *j = NULL;
    gp_err err = {0};
    if (gp__srv_job_parse(config(), body, "bob", admin, &j, &err) == 0) {
      round_trip(j);
      gp__srv_job_free(j);
    } else {
      fuzz_check(err.message[0] != '\0'); /* a refusal says why */
    }
  }
  json_decref(body);
  return 0;
}
