/* SPDX-License-Identifier: Apache-2.0 */
/* Finding the state's records by name: nodes through the name index (an open-addressing
 * hash kept by gp__srv_node_add and gp__srv_node_remove, state.c), queues and the queue
 * rules a submission is checked against. A leaf: it reads the state and calls nothing else
 * of the server, so the features that look a record up (reservations, fair share, steps,
 * the event feed) need not call into the state's writers. */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "server/state.h"

uint64_t gp__srv_name_hash(const char *name) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (const unsigned char *c = (const unsigned char *)name; *c; c++) h = (h ^ *c) * 1099511628211ull;
  return h;
}

int gp__srv_node_index(const gp_srv_state *s, const char *name) {
  if (!s->n_node_slots) return -1;
  size_t i = (size_t)gp__srv_name_hash(name) & (s->n_node_slots - 1);
  for (; s->node_slots[i] >= 0; i = (i + 1) & (s->n_node_slots - 1))
    if (strcmp(s->nodes[s->node_slots[i]]->name, name) == 0) return s->node_slots[i];
  return -1;
}

gp_srv_node *gp__srv_node_get(const gp_srv_state *s, const char *name) {
  int i = name ? gp__srv_node_index(s, name) : -1;
  return i >= 0 ? s->nodes[i] : NULL;
}

gp_srv_queue *gp__srv_queue_get(const gp_srv_state *s, const char *name) {
  for (int i = 0; name && i < s->n_queues; i++)
    if (strcmp(s->queues[i]->name, name) == 0) return s->queues[i];
  return NULL;
}

bool gp__srv_queue_admits(const gp_srv_queue *q, const char *user) {
  for (int i = 0; i < q->n_users; i++)
    if (strcmp(q->users[i], "*") == 0 || strcmp(q->users[i], user) == 0) return true;
  return false;
}

const char *gp__srv_default_queue(const gp_srv_state *s, const char *user) {
  const char *any = NULL;
  for (int i = 0; i < s->cfg->n_default_queues; i++) {
    const gp_default_queue *d = &s->cfg->default_queues[i];
    if (strcmp(d->user, user) == 0) return d->queue;
    if (strcmp(d->user, "*") == 0) any = d->queue;
  }
  if (any) return any;
  /* Without a configured default, a queue called "default" is the default. */
  return gp__srv_queue_get(s, "default") ? "default" : NULL;
}

bool gp__srv_queue_allows_class(const gp_srv_state *s, const gp_srv_queue *q, const char *cls) {
  if (q->n_classes >= 0) {
    for (int i = 0; i < q->n_classes; i++)
      if (strcmp(q->classes[i], cls) == 0) return true;
    return false;
  }
  /* A non-preemptible class is a promise never to be taken back: the queue (or the policy)
   * must name it. */
  const gp_priority_class *pc = gp_priority_class_find(&s->cfg->policy, cls);
  if (pc && pc->preemptible) return true;
  const char *pol = s->cfg->policy.default_priority;
  return (pol && strcmp(pol, cls) == 0) || (q->default_priority && strcmp(q->default_priority, cls) == 0);
}

bool gp__srv_queue_is_parent(const gp_srv_state *s, const char *name) {
  size_t n = strlen(name);
  for (int i = 0; i < s->n_queues; i++)
    if (strncmp(s->queues[i]->name, name, n) == 0 && s->queues[i]->name[n] == '/') return true;
  return false;
}
