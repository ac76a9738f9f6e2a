/* SPDX-License-Identifier: Apache-2.0 */
/* cgroup v2 setup and per-job limits (see cgroup.h). Control files are written with plain
 * open/write so that a test can point the root at an ordinary directory tree. */
#include "agent/cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int write_file(const char *path, const char *text) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return -errno;
  ssize_t n = write(fd, text, strlen(text));
  int e = n == (ssize_t)strlen(text) ? 0 : (n < 0 ? -errno : -EIO);
  close(fd);
  return e;
}

static int read_file(const char *path, char *buf, size_t size) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -errno;
  ssize_t n = read(fd, buf, size - 1);
  close(fd);
  if (n < 0) return -errno;
  buf[n] = '\0';
  return 0;
}

static bool has_word(const char *list, const char *word) {
  size_t wl = strlen(word);
  for (const char *p = list; (p = strstr(p, word)) != NULL; p += wl) {
    bool start = p == list || p[-1] == ' ' || p[-1] == '\n';
    bool end = p[wl] == '\0' || p[wl] == ' ' || p[wl] == '\n';
    if (start && end) return true;
  }
  return false;
}

/* vsnprintf: messages are cut to fit, on purpose (paths can be long). */
static int unsupported(gp_cgroup *ret, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int unsupported(gp_cgroup *ret, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(ret->message, sizeof ret->message, fmt, ap);
  va_end(ap);
  ret->ok = false;
  return GP_EUNSUPP;
}

int gp_cgroup_probe(const char *root, gp_cgroup *ret) {
  memset(ret, 0, sizeof *ret);
  snprintf(ret->root, sizeof ret->root, "%s", root ? root : "/sys/fs/cgroup/gpool");
  char path[700], buf[512], parent[600];
  /* Only ever create the sub-tree inside a cgroup v2 directory (every one has
   * cgroup.controllers): never litter a v1 or tmpfs mount. */
  snprintf(parent, sizeof parent, "%s", ret->root);
  char *slash = strrchr(parent, '/');
  if (slash && slash != parent) *slash = '\0';
  snprintf(path, sizeof path, "%s/cgroup.controllers", parent);
  if (access(ret->root, F_OK) != 0 && access(path, F_OK) != 0)
    return unsupported(ret, "cgroup v2 is not mounted at %s (no cgroup.controllers there%s): CPU "
                       "and memory limits are not enforced", parent,
                       access("/sys/fs/cgroup/unified/cgroup.controllers", F_OK) == 0
                           ? "; this host runs the hybrid cgroup v1/v2 layout" : "");
  if (mkdir(ret->root, 0755) != 0 && errno != EEXIST)
    return unsupported(ret, "cannot create the cgroup %s (%s): CPU and memory limits are not "
                       "enforced", ret->root, strerror(errno));
  snprintf(path, sizeof path, "%s/cgroup.controllers", ret->root);
  if (read_file(path, buf, sizeof buf) != 0)
    return unsupported(ret, "%s is not a cgroup v2 directory (%s): CPU and memory limits are "
                       "not enforced", ret->root, "no cgroup.controllers");
  if (!has_word(buf, "cpu") || !has_word(buf, "memory")) {
    /* Ask the parent to delegate the controllers, then look again. */
    snprintf(path, sizeof path, "%s/cgroup.subtree_control", parent);
    write_file(path, "+cpu +memory");
    snprintf(path, sizeof path, "%s/cgroup.controllers", ret->root);
    if (read_file(path, buf, sizeof buf) != 0 || !has_word(buf, "cpu") ||
        !has_word(buf, "memory"))
      return unsupported(ret, "the cgroup %s lacks the cpu and memory controllers (has: %s): "
                         "CPU and memory limits are not enforced", ret->root,
                         buf[0] ? strtok(buf, "\n") : "none");
  }
  snprintf(path, sizeof path, "%s/cgroup.subtree_control", ret->root);
  int e = write_file(path, "+cpu +memory");
  if (e != 0)
    return unsupported(ret, "cannot enable cpu and memory controllers under %s (%s): CPU and "
                       "memory limits are not enforced", ret->root, strerror(-e));
  ret->ok = true;
  return 0;
}

int gp_cgroup_job_create(const gp_cgroup *cg, const char *job_id, int64_t cpu_milli,
                         int64_t mem_mib, char *procs_path, size_t size, gp_err *err) {
  if (!cg->ok) return gp_err_set(err, GP_EUNSUPP, NULL, 0, NULL, "%s", cg->message);
  char dir[700], path[800], text[64];
  snprintf(dir, sizeof dir, "%s/job-%s", cg->root, job_id);
  if (mkdir(dir, 0755) != 0 && errno != EEXIST)
    return gp_err_set(err, GP_EIO, dir, 0, NULL, "cannot create the job's cgroup: %s",
                      strerror(errno));
  /* cpu.max: quota per 100 ms period; 1000 milli-CPU = one full CPU = 100000 us. */
  if (cpu_milli > 0) snprintf(text, sizeof text, "%" PRId64 " 100000", cpu_milli * 100);
  else snprintf(text, sizeof text, "max 100000");
  snprintf(path, sizeof path, "%s/cpu.max", dir);
  int e = write_file(path, text);
  if (e != 0)
    return gp_err_set(err, GP_EIO, path, 0, NULL, "cannot set the CPU limit: %s", strerror(-e));
  if (mem_mib > 0) snprintf(text, sizeof text, "%" PRId64, mem_mib * 1024 * 1024);
  else snprintf(text, sizeof text, "max");
  snprintf(path, sizeof path, "%s/memory.max", dir);
  e = write_file(path, text);
  if (e != 0)
    return gp_err_set(err, GP_EIO, path, 0, NULL, "cannot set the memory limit: %s",
                      strerror(-e));
  snprintf(procs_path, size, "%s/cgroup.procs", dir);
  return 0;
}

bool gp_cgroup_job_oom_killed(const gp_cgroup *cg, const char *job_id) {
  if (!cg->ok) return false;
  char path[800], buf[1024];
  snprintf(path, sizeof path, "%s/job-%s/memory.events", cg->root, job_id);
  if (read_file(path, buf, sizeof buf) != 0) return false;
  const char *p = strstr(buf, "oom_kill ");
  return p && strtol(p + 9, NULL, 10) > 0;
}

int gp_cgroup_job_remove(const gp_cgroup *cg, const char *job_id) {
  if (!cg->ok) return 0;
  char dir[700];
  snprintf(dir, sizeof dir, "%s/job-%s", cg->root, job_id);
  return rmdir(dir) == 0 || errno == ENOENT ? 0 : GP_EIO;
}
