/* SPDX-License-Identifier: Apache-2.0 */
/* A process environment being built (envv.h): one definition for the job's tasks and for
 * srun's step tasks, so both replace, look up and order variables alike; and a job task's
 * kept environment read back (for its steps and sessions). */
#include "agent/envv.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/mem.h"

#define ENV_FILE_MAX (4 << 20) /* a job task's environment as kept: the protocol's bound and more */

static ptrdiff_t find(const gp__agent_envv *e, const char *key) {
  size_t kl = strlen(key);
  for (size_t i = 0; i < e->n; i++)
    if (strncmp(e->items[i], key, kl) == 0 && e->items[i][kl] == '=') return (ptrdiff_t)i;
  return -1;
}

void gp__agent_env_set(gp__agent_envv *e, const char *key, const char *value) {
  size_t need = strlen(key) + 1 + strlen(value) + 1;
  char *item = gp_xmalloc(need);
  snprintf(item, need, "%s=%s", key, value);
  ptrdiff_t at = find(e, key);
  if (at >= 0) {
    free(e->items[at]);
    e->items[at] = item;
    return;
  }
  gp_xgrow((void **)&e->items, &e->cap, e->n + 2, sizeof *e->items);
  e->items[e->n++] = item;
  e->items[e->n] = NULL;
}

void gp__agent_env_int(gp__agent_envv *e, const char *key, long long v) {
  char buf[32];
  snprintf(buf, sizeof buf, "%lld", v);
  gp__agent_env_set(e, key, buf);
}

const char *gp__agent_env_get(const gp__agent_envv *e, const char *key) {
  ptrdiff_t at = find(e, key);
  return at >= 0 ? e->items[at] + strlen(key) + 1 : NULL;
}

void gp__agent_env_unset(gp__agent_envv *e, const char *key) {
  ptrdiff_t at = find(e, key);
  if (at < 0) return;
  free(e->items[at]);
  e->items[at] = e->items[--e->n];
  e->items[e->n] = NULL;
}

void gp__agent_env_path_prepend(gp__agent_envv *e, const char *dir) {
  const char *path = gp__agent_env_get(e, "PATH");
  if (!path || !*path) path = "/usr/local/bin:/usr/bin:/bin";
  /* Once: a step's caller names its node's shims, which are this node's when the step runs
   * where srun does; the entries equal to dir further on are dropped (the first one wins a
   * lookup, so they change nothing) and a PATH that names dir first stays as it is. */
  size_t n = strlen(dir), need = n + strlen(path) + 2, len = n;
  char *joined = gp_xmalloc(need);
  memcpy(joined, dir, n + 1);
  for (const char *p = path;; p++) {
    const char *colon = strchr(p, ':');
    size_t k = colon ? (size_t)(colon - p) : strlen(p);
    if (!(k == n && strncmp(p, dir, n) == 0)) {
      joined[len++] = ':';
      memcpy(joined + len, p, k);
      len += k;
      joined[len] = '\0';
    }
    if (!colon) break;
    p = colon;
  }
  gp__agent_env_set(e, "PATH", joined);
  free(joined);
}

void gp__agent_env_free(gp__agent_envv *e) {
  for (size_t i = 0; i < e->n; i++) free(e->items[i]);
  free(e->items);
}

int gp__agent_env_load_file(const char *path, gp__agent_envv *e) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return -1;
  char *buf = gp_xmalloc(ENV_FILE_MAX + 1);
  size_t len = 0;
  ssize_t k;
  while (len < ENV_FILE_MAX && (k = read(fd, buf + len, ENV_FILE_MAX - len)) > 0) len += (size_t)k;
  close(fd);
  buf[len] = '\0';
  for (size_t i = 0; i < len;) {
    const char *item = buf + i, *eq = strchr(item, '=');
    size_t il = strlen(item);
    if (eq && eq > item) {
      char key[512];
      snprintf(key, sizeof key, "%.*s", (int)(eq - item) < 511 ? (int)(eq - item) : 511, item);
      gp__agent_env_set(e, key, eq + 1);
    }
    i += il + 1;
  }
  free(buf);
  return 0;
}
