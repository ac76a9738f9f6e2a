/* SPDX-License-Identifier: Apache-2.0 */
/* The store's read-only mode after a failed write (store_health.h): when it starts and
 * ends, how often to probe, and what the log and /healthz say about it. */
#include "server/state/store_health.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#define PROBE_FIRST_MS 100
#define PROBE_MAX_MS 2000
#define FLAP_WINDOW_MS 60000   /* failing again this soon after recovering is flapping */
#define FLAP_MAX_MS 30000
#define SUMMARY_EVERY_MS 60000

void gp__srv_store_failed(gp_srv_store_health *h, const gp_store *store, const char *detail,
                          int64_t now_ms) {
  h->write_failures++;
  if (h->degraded) return;
  const char *cause = gp_store_failure(store);
  h->degraded = true;
  snprintf(h->cause, sizeof h->cause, "%s", cause && *cause ? cause : "I/O error");
  snprintf(h->detail, sizeof h->detail, "%s", detail && *detail ? detail : h->cause);
  h->since_ms = now_ms;
  h->refused = 0;
  h->failed_probes = 0;
  bool flapping = h->recovered_ms && now_ms - h->recovered_ms < FLAP_WINDOW_MS;
  if (!flapping) h->probe_every_ms = PROBE_FIRST_MS;
  else h->probe_every_ms = h->probe_every_ms * 2 < FLAP_MAX_MS ? h->probe_every_ms * 2 : FLAP_MAX_MS;
  if (h->probe_every_ms < PROBE_FIRST_MS) h->probe_every_ms = PROBE_FIRST_MS;
  h->next_probe_ms = now_ms + h->probe_every_ms;
  h->next_summary_ms = now_ms + SUMMARY_EVERY_MS;
  /* The store's messages begin with the cause already. */
  bool named = strncmp(h->detail, h->cause, strlen(h->cause)) == 0;
  fprintf(stderr, "gpool server: store: %s%s%s; answering reads from memory and refusing "
                  "writes with 503 until a write fits again\n", named ? "" : h->cause,
          named ? "" : ": ", h->detail);
}

void gp__srv_store_refused(gp_srv_store_health *h) {
  h->refused++;
  h->refused_total++;
}

bool gp__srv_store_probe(gp_srv_store_health *h, gp_store *store, int64_t now_ms) {
  if (!h->degraded || now_ms < h->next_probe_ms) return false;
  gp_err err = {0};
  if (gp_store_probe(store, &err) == 0) {
    fprintf(stderr, "gpool server: store: writable again after %.1f s (%s); %llu writes "
                    "refused, %llu probes failed meanwhile\n",
            (double)(now_ms - h->since_ms) / 1000.0, h->cause, (unsigned long long)h->refused,
            (unsigned long long)h->failed_probes);
    h->degraded = false;
    h->cause[0] = '\0';
    h->recovered_ms = now_ms;
    return true;
  }
  h->failed_probes++;
  int64_t cap = h->probe_every_ms > PROBE_MAX_MS ? h->probe_every_ms : PROBE_MAX_MS;
  h->probe_every_ms = h->probe_every_ms * 2 < cap ? h->probe_every_ms * 2 : cap;
  h->next_probe_ms = now_ms + h->probe_every_ms;
  if (now_ms >= h->next_summary_ms) {
    const char *cause = gp_store_failure(store);
    fprintf(stderr, "gpool server: store: still %s after %.0f s (%s); %llu writes refused, "
                    "%llu probes failed (repeated failures are not logged)\n",
            cause && *cause ? cause : h->cause, (double)(now_ms - h->since_ms) / 1000.0,
            err.message, (unsigned long long)h->refused, (unsigned long long)h->failed_probes);
    h->next_summary_ms = now_ms + SUMMARY_EVERY_MS;
  }
  return false;
}

char *gp__srv_store_health_json(const gp_srv_store_health *h) {
  json_t *o = json_object();
  json_object_set_new(o, "ok", json_boolean(!h->degraded));
  if (h->degraded) {
    json_object_set_new(o, "store", json_string(h->cause));
    json_object_set_new(o, "message", json_string(h->detail));
  }
  char *text = json_dumps(o, JSON_COMPACT);
  json_decref(o);
  return text;
}
