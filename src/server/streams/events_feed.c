/* SPDX-License-Identifier: Apache-2.0 */
/* What the event streams hear (events.h), on the state thread: records are noted as they
 * change during a batch or a scheduling step, and published after the commit, so a client
 * never hears of a change the store does not hold. A record changed many times in one
 * batch gives one event, and a change that leaves its summary as it was (a usage report,
 * a new revision) gives none: each record keeps the hash of the summary it last sent. */
#include <stdlib.h>
#include <string.h>

#include "server/streams/events.h"
#include "server/state/state.h"
#include "util/mem.h"

/* gp_srv_state.events_feed (events.h): what changed since the last flush. */
struct gp__srv_events_feed {
  int64_t *jobs;            /* ids, each once (gp_srv_job.events_noted) */
  int n_jobs;
  size_t cap_jobs;
  char **nodes;             /* names (owned), each once while the node lives
                               (gp_srv_node.events_noted) */
  int n_nodes;
  size_t cap_nodes;
  char **queues;            /* names (owned), each once */
  int n_queues;
  size_t cap_queues;
  char **services;          /* `service` events' data (owned), in order */
  int n_services;
  size_t cap_services;
};

/* The record of s, made on first use. */
static struct gp__srv_events_feed *feed_of(gp_srv_state *s) {
  if (!s->events_feed) s->events_feed = gp_xcalloc(1, sizeof *s->events_feed);
  return s->events_feed;
}

/* FNV-1a: a change detector, not a security boundary. 0 is kept for "never sent". */
static uint64_t text_hash(const char *t) {
  uint64_t h = UINT64_C(1469598103934665603);
  for (; *t; t++) h = (h ^ (uint8_t)*t) * UINT64_C(1099511628211);
  return h ? h : 1;
}

/* Nothing is noted while no stream is open: a submission then pays nothing for events.
 * The hashes then mix in the hub's epoch (gp__srv_events_epoch): a record changed while
 * nobody listened may hold the hash of a summary it no longer has, and the first change
 * after a stream opens must be sent even when it matches that one. */
void gp__srv_events_note_job(gp_srv_state *s, gp_srv_job *j) {
  if (j->events_noted || !gp__srv_events_listening(s->events)) return;
  struct gp__srv_events_feed *d = feed_of(s);
  j->events_noted = true;
  gp_xgrow((void **)&d->jobs, &d->cap_jobs, (size_t)d->n_jobs + 1, sizeof *d->jobs);
  d->jobs[d->n_jobs++] = j->id;
}

void gp__srv_events_note_node(gp_srv_state *s, gp_srv_node *n) {
  if (n->events_noted || !gp__srv_events_listening(s->events)) return;
  struct gp__srv_events_feed *d = feed_of(s);
  n->events_noted = true;
  gp_xgrow((void **)&d->nodes, &d->cap_nodes, (size_t)d->n_nodes + 1, sizeof *d->nodes);
  d->nodes[d->n_nodes++] = gp_xstrdup(n->name);
}

void gp__srv_events_note_queue(gp_srv_state *s, const char *name) {
  if (!gp__srv_events_listening(s->events)) return;
  struct gp__srv_events_feed *d = feed_of(s);
  for (int i = 0; i < d->n_queues; i++)
    if (strcmp(d->queues[i], name) == 0) return;
  gp_xgrow((void **)&d->queues, &d->cap_queues, (size_t)d->n_queues + 1, sizeof *d->queues);
  d->queues[d->n_queues++] = gp_xstrdup(name);
}

void gp__srv_events_note_service(gp_srv_state *s, const char *data) {
  if (!gp__srv_events_listening(s->events)) return;
  struct gp__srv_events_feed *d = feed_of(s);
  gp_xgrow((void **)&d->services, &d->cap_services, (size_t)d->n_services + 1, sizeof *d->services);
  d->services[d->n_services++] = gp_xstrdup(data);
}

static json_t *time_or_null(int64_t t) { return t ? json_integer(t) : json_null(); }

/* The job's summary, the data of a `job` event (docs/api.md). Every stream hears it, so it
 * holds only what every user reads of any job in GET /v1/jobs (docs/security.md): never
 * its command, environment, end reason or measured use. */
static char *job_summary(const gp_srv_job *j) {
  const char *reason, *message;
  gp__srv_job_pending_why(j, &reason, &message);
  json_t *o = json_object();
  json_object_set_new(o, "id", json_string(j->idstr));
  json_object_set_new(o, "state", json_string(gp_job_state_name(j->state)));
  json_object_set_new(o, "user", json_string(j->user ? j->user : ""));
  json_object_set_new(o, "queue", json_string(j->queue ? j->queue : ""));
  json_object_set_new(o, "name", json_string(j->name ? j->name : ""));
  json_object_set_new(o, "gpus", json_integer(j->gpus));
  json_object_set_new(o, "pending_reason", reason ? json_string(reason) : json_null());
  json_object_set_new(o, "pending_message", message ? json_string(message) : json_null());
  json_object_set_new(o, "submitted_at", json_integer(j->submitted_at));
  json_object_set_new(o, "started_at", time_or_null(j->started_at));
  json_object_set_new(o, "ended_at", time_or_null(j->ended_at));
  char *text = json_dumps(o, JSON_COMPACT);
  json_decref(o);
  return text;
}

/* A node's `node` event: its name, state and reason; the hash also covers its GPUs'
 * health, so a drained GPU is heard of (the client reads the node again). */
static char *node_summary(gp_srv_state *s, const char *name, uint64_t *ret_sig) {
  gp_srv_node *n = gp__srv_node_get(s, name);
  json_t *o = json_object();
  json_object_set_new(o, "name", json_string(name));
  if (!n) {
    json_object_set_new(o, "state", json_string("deleted"));
    json_object_set_new(o, "reason", json_null());
    char *text = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    *ret_sig = 0;
    return text;
  }
  json_t *doc = gp__srv_node_to_json(NULL, n, false);
  json_object_set(o, "state", json_object_get(doc, "state"));
  json_object_set(o, "reason", json_object_get(doc, "reason"));
  char *text = json_dumps(o, JSON_COMPACT);
  json_t *health = json_array();
  const json_t *gpus = json_object_get(doc, "gpus");
  for (size_t g = 0; g < json_array_size(gpus); g++) {
    json_array_append(health, json_object_get(json_array_get(gpus, g), "health"));
    json_array_append(health, json_object_get(json_array_get(gpus, g), "reason"));
  }
  char *htext = json_dumps(health, JSON_COMPACT);
  *ret_sig = text_hash(text) ^ (text_hash(htext) * 31);
  free(htext);
  json_decref(health);
  json_decref(doc);
  json_decref(o);
  return text;
}

void gp__srv_events_flush(gp_srv_state *s) {
  struct gp__srv_events_feed *d = s->events_feed;
  if (!d || d->n_jobs + d->n_nodes + d->n_queues + d->n_services == 0) return;
  uint64_t epoch = gp__srv_events_epoch(s->events) * UINT64_C(0x9e3779b97f4a7c15);
  for (int i = 0; i < d->n_jobs; i++) {
    int64_t id = d->jobs[i];
    gp_srv_job *j = id > 0 && (size_t)id < s->cap_jobs ? s->jobs[id] : NULL;
    if (!j) continue;
    j->events_noted = false;
    char *text = job_summary(j);
    uint64_t sig = text_hash(text) ^ epoch;
    if (sig != j->events_sig) {
      j->events_sig = sig;
      gp__srv_events_publish(s->events, "job", text);
    }
    free(text);
  }
  d->n_jobs = 0;
  for (int i = 0; i < d->n_nodes; i++) {
    gp_srv_node *n = gp__srv_node_get(s, d->nodes[i]);
    uint64_t sig = 0;
    char *text = node_summary(s, d->nodes[i], &sig);
    sig ^= epoch;
    if (!n || sig != n->events_sig) gp__srv_events_publish(s->events, "node", text);
    if (n) {
      n->events_noted = false;
      n->events_sig = sig;
    }
    free(text);
    free(d->nodes[i]);
  }
  d->n_nodes = 0;
  for (int i = 0; i < d->n_queues; i++) {
    json_t *o = json_pack("{s:s}", "name", d->queues[i]);
    char *text = json_dumps(o, JSON_COMPACT);
    gp__srv_events_publish(s->events, "queue", text);
    free(text);
    json_decref(o);
    free(d->queues[i]);
  }
  d->n_queues = 0;
  for (int i = 0; i < d->n_services; i++) {
    gp__srv_events_publish(s->events, "service", d->services[i]);
    free(d->services[i]);
  }
  d->n_services = 0;
  gp__srv_events_wake(s->events);
}

void gp__srv_events_feed_free(gp_srv_state *s) {
  struct gp__srv_events_feed *d = s->events_feed;
  if (!d) return;
  free(d->jobs);
  for (int i = 0; i < d->n_nodes; i++) free(d->nodes[i]);
  free(d->nodes);
  for (int i = 0; i < d->n_queues; i++) free(d->queues[i]);
  free(d->queues);
  for (int i = 0; i < d->n_services; i++) free(d->services[i]);
  free(d->services);
  free(d);
  s->events_feed = NULL;
}
