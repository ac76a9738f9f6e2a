/* SPDX-License-Identifier: Apache-2.0 */
/* Finding the state's records: a job by id (an array's element by "J_I" too), a node
 * through the name index (an open-addressing hash kept by gp__srv_node_add and
 * gp__srv_node_remove, records.c), a queue and the queue rules a submission is checked
 * against; and what a job asks for in all, which queues' limits are compared with. A leaf:
 * it reads the state and calls nothing else of the server but the arrays' arithmetic
 * (array.c), so the files that look a record up (features, documents, the view) need not
 * call into the state's writers. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "server/state/array.h"
#include "server/state/state.h"

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

int64_t gp__srv_job_id_parse(const char *id) {
  if (!id || !*id || strlen(id) > 18) return 0;
  int64_t v = 0;
  for (const char *c = id; *c; c++) {
    if (*c < '0' || *c > '9') return 0;
    v = v * 10 + (*c - '0');
  }
  return v;
}

gp_srv_job *gp__srv_job_get(const gp_srv_state *s, const char *id) {
  int64_t v = gp__srv_job_id_parse(id);
  if (v <= 0 && id && strchr(id, '_')) v = gp__srv_array_elem_id(s, id, NULL, NULL); /* "J_I" */
  if (v <= 0 || (size_t)v >= s->cap_jobs) return NULL;
  return s->jobs[v];
}

int64_t gp__srv_array_elem_id(const gp_srv_state *s, const char *id, gp_srv_job **ret_parent, int64_t *ret_pos) {
  const char *us = id ? strchr(id, '_') : NULL;
  if (!us || us == id || us - id > 18 || !us[1] || strlen(us + 1) > 9) return 0;
  char head[20];
  snprintf(head, sizeof head, "%.*s", (int)(us - id), id);
  int64_t j = gp__srv_job_id_parse(head), idx = gp__srv_job_id_parse(us + 1);
  if (j <= 0 || (idx == 0 && strcmp(us + 1, "0") != 0)) return 0;
  gp_srv_job *p = j > 0 && (size_t)j < s->cap_jobs ? s->jobs[j] : NULL;
  if (!p || !p->array) return 0;
  int64_t pos = gp__srv_array_pos(p->array, idx);
  if (pos < 0) return 0;
  if (ret_parent) *ret_parent = p;
  if (ret_pos) *ret_pos = pos;
  return j + 1 + pos;
}

double gp__srv_job_asked_gpus(const gp_srv_job *j) {
  if (j->gpus > 0) return (double)j->gpus * j->tasks;
  if (j->gpu_milli > 0) return j->gpu_milli / 1000.0 * j->tasks;
  if (j->mig) return (j->mig[0] >= '1' && j->mig[0] <= '7' ? (j->mig[0] - '0') / 7.0 : 1 / 7.0) * j->tasks;
  return 0;
}

const char *gp__srv_node_agent_token(const gp_srv_state *s, const gp_srv_node *n) {
  if (n->agent_token) return n->agent_token;
  for (int i = 0; i < s->cfg->n_tokens; i++)
    if (s->cfg->tokens[i].role == GP_ROLE_AGENT) return s->cfg->tokens[i].token;
  return "";
}
