/* SPDX-License-Identifier: Apache-2.0 */
/* What ties an agent to its node and to the store it serves (docs/agent.md):
 * - the node's credential, a random secret the agent makes once per node name and keeps in
 *   <data>/credential.json (mode 0600); it goes with every call, and the server accepts
 *   only the credential that first registered the name (node_credential.c on its side);
 * - the id of the store it last served, in <data>/store. A server on another store (a moved
 *   data directory, a restored backup) numbers jobs and orders from scratch: the agent then
 *   forgets the order ids it executed, kills the old store's jobs and moves their
 *   directories (logs included) to <data>/retired/<old id>, so the new store's job 23 never
 *   shows the old job 23's output. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/agent_int.h"

/* Writes text to path through a temporary file, with the given mode. */
static int write_file(const char *path, const char *text, mode_t mode) {
  char tmp[800];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
  if (fd < 0) return -1;
  size_t len = strlen(text);
  int ok = fchmod(fd, mode) == 0 && write(fd, text, len) == (ssize_t)len && fsync(fd) == 0;
  close(fd);
  if (!ok || rename(tmp, path) != 0) {
    unlink(tmp);
    return -1;
  }
  return 0;
}

static void new_credential(gp_agent *a, const char *path) {
  unsigned char raw[GP_PROTO_CREDENTIAL_MIN / 2];
  if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw) {
    gp__agent_log("cannot make the node's credential: %s", strerror(errno));
    a->credential[0] = '\0';
    return;
  }
  for (size_t i = 0; i < sizeof raw; i++) snprintf(a->credential + 2 * i, 3, "%02x", raw[i]);
  json_t *doc = json_pack("{s:s,s:s}", "node", a->cfg.name, "secret", a->credential);
  char *text = json_dumps(doc, JSON_COMPACT);
  json_decref(doc);
  if (!text || write_file(path, text, 0600) != 0)
    gp__agent_log("cannot keep the node's credential in %s: %s", path, strerror(errno));
  free(text);
}

void gp__agent_identity_load(gp_agent *a) {
  char path[700];
  snprintf(path, sizeof path, "%s/credential.json", a->cfg.data_dir);
  json_error_t je;
  json_t *doc = json_load_file(path, 0, &je);
  const char *node = json_string_value(json_object_get(doc, "node"));
  const char *secret = json_string_value(json_object_get(doc, "secret"));
  size_t len = secret ? strlen(secret) : 0;
  if (node && strcmp(node, a->cfg.name) == 0 && len >= GP_PROTO_CREDENTIAL_MIN &&
      len <= GP_PROTO_CREDENTIAL_MAX && strspn(secret, "0123456789abcdef") == len) {
    snprintf(a->credential, sizeof a->credential, "%s", secret);
    chmod(path, 0600); /* a copy restored more open than it should be */
  } else {
    if (doc) gp__agent_log("%s is for another node or unreadable: making a new credential", path);
    new_credential(a, path);
  }
  json_decref(doc);
  snprintf(path, sizeof path, "%s/store", a->cfg.data_dir);
  FILE *f = fopen(path, "re");
  char line[128] = "";
  if (f) {
    if (!fgets(line, sizeof line, f)) line[0] = '\0';
    fclose(f);
  }
  line[strcspn(line, "\n")] = '\0';
  if (strlen(line) < sizeof a->store_id) memcpy(a->store_id, line, strlen(line) + 1);
}

/* Kills every job of the old store and moves the job directories out of the endpoint's
 * reach. */
static void retire_jobs(gp_agent *a, const char *old_id, const char *new_id) {
  size_t killed = 0;
  for (size_t i = 0; i < a->n_jobs; i++) {
    gp__agent_job *j = a->jobs[i];
    if (!j->ended) {
      killpg(j->pid, SIGKILL);
      killed++;
    }
    a->gpu->ops->detach(a->gpu, j->pid);
    if (j->cgroup) gp_cgroup_job_remove(&a->cgroup, j->id);
    /* The shim follows its job at once; a short bounded wait reaps it. */
    for (int k = 0; j->is_child && k < 100 && waitpid(j->shim_pid, NULL, WNOHANG) == 0; k++)
      usleep(10000);
    free(j);
  }
  a->n_jobs = 0;
  a->jobs_dirty = true;
  char dir[700], to[800];
  snprintf(dir, sizeof dir, "%s/retired", a->cfg.data_dir);
  if (mkdir(dir, 0700) != 0 && errno != EEXIST)
    gp__agent_log("cannot create %s: %s", dir, strerror(errno));
  snprintf(to, sizeof to, "%s/%s", dir, old_id);
  if (rename(a->jobs_dir, to) != 0)
    gp__agent_log("cannot move %s to %s: %s", a->jobs_dir, to, strerror(errno));
  if (mkdir(a->jobs_dir, 0755) != 0 && errno != EEXIST)
    gp__agent_log("cannot create %s: %s", a->jobs_dir, strerror(errno));
  gp__agent_log("the server serves another store (%s, this agent served %s): killed %zu job(s) of "
                "the old store and moved their directories to %s",
                new_id, old_id, killed, to);
}

void gp__agent_store_seen(gp_agent *a, const char *id) {
  if (!id || !*id || strlen(id) >= sizeof a->store_id || strcmp(id, a->store_id) == 0) return;
  /* An agent that kept no id (a new data directory) has nothing of another store to drop. */
  if (a->store_id[0]) {
    retire_jobs(a, a->store_id, id);
    gp__agent_orders_forget(a);
    a->gen = 0;
    json_array_clear(a->events);
    json_array_clear(a->inflight);
  }
  char path[700], text[80];
  snprintf(path, sizeof path, "%s/store", a->cfg.data_dir);
  snprintf(text, sizeof text, "%s\n", id);
  if (write_file(path, text, 0644) != 0)
    gp__agent_log("cannot keep the store id in %s: %s", path, strerror(errno));
  snprintf(a->store_id, sizeof a->store_id, "%s", id);
}
