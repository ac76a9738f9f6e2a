/* SPDX-License-Identifier: Apache-2.0 */
/* A process environment being built ("KEY=value" items, NULL-terminated for exec): the
 * job's tasks (agent_start.c) and srun's step tasks (agent_steps.c) build theirs with it. */
#ifndef GPOOL_AGENT_ENVV_H
#define GPOOL_AGENT_ENVV_H

#include <stddef.h>

typedef struct gp__agent_envv {
  char **items; /* NULL-terminated once anything is set */
  size_t n, cap;
} gp__agent_envv;

/* Sets key (replacing its earlier value, in place: the order of first setting is kept). */
void gp__agent_env_set(gp__agent_envv *e, const char *key, const char *value);
void gp__agent_env_int(gp__agent_envv *e, const char *key, long long v);
/* The value of key, or NULL. */
const char *gp__agent_env_get(const gp__agent_envv *e, const char *key);
void gp__agent_env_unset(gp__agent_envv *e, const char *key);
/* Puts dir first in PATH, once: a PATH that names it first already keeps its order, and
 * later entries equal to dir go (a PATH-less environment gets the system's default). */
void gp__agent_env_path_prepend(gp__agent_envv *e, const char *dir);
void gp__agent_env_free(gp__agent_envv *e);
/* Adds the NUL-separated KEY=value items of a job task's kept environment file (at most
 * 4 MiB; agent_steps.c writes it). -1 when the file cannot be opened. */
int gp__agent_env_load_file(const char *path, gp__agent_envv *e);

#endif
