/* SPDX-License-Identifier: Apache-2.0 */
/* A job's pull, measured (docs/containers.md#pulling): podman prints no progress without a
 * terminal, so `gpool __container-task` measures it itself. The total is the image's
 * manifest's (its config and layers, as the registry sends them, compressed), read with
 * `skopeo inspect --raw` beside the pull (a manifest list: the entry of this machine's
 * platform, read next); the bytes so far are those of the blobs the engine has written in
 * the pull's own temporary directory (TMPDIR, which the engine's image copy uses), which it
 * removes once the layers are stored. Both go to JOBDIR/container.progress ("DONE TOTAL",
 * TOTAL 0 when not known), written whole, which the agent reports (agent_container.c).
 * Layers the node already holds are not fetched: such a pull ends below its total. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "agent/container.h"
#include "protocol/container.h"

#define MANIFEST_MAX (4 << 20) /* bytes of a manifest read; a real one is a few KB */
#define MAX_LAYERS 1024
#define SIZE_MAX_BYTES (INT64_C(1) << 50)

/* The platform's architecture as OCI names it. */
static const char *oci_arch(void) {
  struct utsname u;
  if (uname(&u) != 0) return "amd64";
  if (!strcmp(u.machine, "x86_64")) return "amd64";
  if (!strcmp(u.machine, "aarch64")) return "arm64";
  if (!strcmp(u.machine, "ppc64le")) return "ppc64le";
  if (!strcmp(u.machine, "s390x")) return "s390x";
  return "amd64";
}

static bool size_of(const json_t *o, int64_t *ret) {
  const json_t *v = json_object_get(o, "size");
  if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > SIZE_MAX_BYTES) return false;
  *ret = json_integer_value(v);
  return true;
}

int64_t gp_agent_manifest_total(const char *text, size_t len, const char *arch, char *digest,
                                size_t size) {
  if (digest && size) digest[0] = '\0';
  json_t *doc = text && len <= MANIFEST_MAX ? json_loadb(text, len, 0, NULL) : NULL;
  if (!json_is_object(doc)) {
    json_decref(doc);
    return -1;
  }
  int64_t total = -1;
  const json_t *layers = json_object_get(doc, "layers");
  const json_t *list = json_object_get(doc, "manifests");
  if (json_is_array(layers) && json_array_size(layers) <= MAX_LAYERS) {
    int64_t sum = 0, n = 0;
    if (!size_of(json_object_get(doc, "config"), &n)) goto out;
    sum = n;
    size_t i;
    const json_t *l;
    json_array_foreach(layers, i, l) {
      if (!size_of(l, &n)) goto out;
      sum += n;
      if (sum > SIZE_MAX_BYTES) goto out;
    }
    total = sum;
  } else if (json_is_array(list) && json_array_size(list) <= MAX_LAYERS && digest) {
    /* A manifest list (or image index): the entry for linux on this architecture. */
    size_t i;
    const json_t *m;
    json_array_foreach(list, i, m) {
      const json_t *pl = json_object_get(m, "platform");
      const char *os = json_string_value(json_object_get(pl, "os"));
      const char *ar = json_string_value(json_object_get(pl, "architecture"));
      const char *d = json_string_value(json_object_get(m, "digest"));
      if (!os || !ar || !d || strcmp(os, "linux") || strcmp(ar, arch)) continue;
      if (strncmp(d, "sha256:", 7) || strlen(d) != 71 || strspn(d + 7, "0123456789abcdef") != 64) break;
      snprintf(digest, size, "%s", d);
      total = -2;
      break;
    }
  }
out:
  json_decref(doc);
  return total;
}

/* Bytes of the regular files under dir (the engine's blobs being written), depth bounded. */
static int64_t tree_bytes(const char *dir, int depth) {
  DIR *d = depth < 4 ? opendir(dir) : NULL;
  if (!d) return 0;
  int64_t sum = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    char p[1200];
    if (snprintf(p, sizeof p, "%s/%s", dir, e->d_name) >= (int)sizeof p) continue;
    struct stat st;
    if (lstat(p, &st) != 0) continue;
    if (S_ISREG(st.st_mode)) sum += st.st_size;
    else if (S_ISDIR(st.st_mode)) sum += tree_bytes(p, depth + 1);
  }
  closedir(d);
  return sum;
}

static void rm_tree(const char *dir, int depth) {
  DIR *d = depth < 6 ? opendir(dir) : NULL;
  if (d) {
    struct dirent *e;
    while ((e = readdir(d))) {
      if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
      char p[1200];
      if (snprintf(p, sizeof p, "%s/%s", dir, e->d_name) >= (int)sizeof p) continue;
      struct stat st;
      if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode)) rm_tree(p, depth + 1);
      else unlink(p);
    }
    closedir(d);
  }
  rmdir(dir);
}

/* `INSPECT... docker://IMAGE` (IMAGE: the reference, or its repository@DIGEST), stdout to
 * the file `out`; the child's pid or -1. */
static pid_t start_inspect(char **inspect, const char *image, const char *digest, const char *out) {
  int n = 0;
  while (inspect[n]) n++;
  char ref[GP_PROTO_IMAGE_FULL_MAX + 100];
  if (digest) {
    /* The repository: the reference without its tag or digest. */
    char repo[GP_PROTO_IMAGE_FULL_MAX];
    snprintf(repo, sizeof repo, "%s", image);
    char *at = strchr(repo, '@');
    if (at) *at = '\0';
    char *slash = strrchr(repo, '/'), *colon = strrchr(repo, ':');
    if (colon && (!slash || colon > slash)) *colon = '\0';
    snprintf(ref, sizeof ref, "docker://%s@%s", repo, digest);
  } else {
    snprintf(ref, sizeof ref, "docker://%s", image);
  }
  char **argv = calloc((size_t)n + 2, sizeof *argv);
  if (!argv) return -1;
  for (int i = 0; i < n; i++) argv[i] = inspect[i];
  argv[n] = ref;
  int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  pid_t pid = fd >= 0 ? fork() : -1;
  if (pid == 0) {
    int null = open("/dev/null", O_RDWR);
    dup2(null, 0);
    dup2(fd, 1);
    dup2(null, 2); /* the pull's own error says what is wrong */
    execvp(argv[0], argv);
    _exit(127);
  }
  if (fd >= 0) close(fd);
  free(argv);
  return pid;
}

void gp_agent_pull_progress_start(gp_agent_pull_progress *p, const char *dir, char **inspect,
                                  const char *image) {
  memset(p, 0, sizeof *p);
  p->inspect_pid = -1;
  p->inspect = inspect;
  snprintf(p->dir, sizeof p->dir, "%s", dir);
  snprintf(p->image, sizeof p->image, "%s", image);
  snprintf(p->tmp, sizeof p->tmp, "%s/pull.tmp", dir);
  rm_tree(p->tmp, 0); /* an earlier run's */
  if (mkdir(p->tmp, 0700) != 0) p->tmp[0] = '\0';
  char out[1100];
  snprintf(out, sizeof out, "%s/pull.manifest", dir);
  if (inspect && inspect[0]) p->inspect_pid = start_inspect(inspect, image, NULL, out);
}

/* The manifest read: its total, or the next read for a list's entry. */
static void inspect_done(gp_agent_pull_progress *p, int st) {
  p->inspect_pid = -1;
  char path[1100];
  snprintf(path, sizeof path, "%s/pull.manifest", p->dir);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) return; /* no total: bytes only */
  FILE *f = fopen(path, "re");
  if (!f) return;
  char *buf = malloc(MANIFEST_MAX + 1);
  size_t n = buf ? fread(buf, 1, MANIFEST_MAX + 1, f) : 0;
  fclose(f);
  char digest[80];
  int64_t total = buf ? gp_agent_manifest_total(buf, n, oci_arch(), digest, sizeof digest) : -1;
  free(buf);
  if (total >= 0) p->total = total;
  else if (total == -2 && !p->list_seen) { /* one level only: a list of lists is no image */
    p->list_seen = true;
    p->inspect_pid = start_inspect(p->inspect, p->image, digest, path);
  }
}

void gp_agent_pull_progress_tick(gp_agent_pull_progress *p) {
  int st;
  if (p->inspect_pid > 0 && waitpid(p->inspect_pid, &st, WNOHANG) == p->inspect_pid) inspect_done(p, st);
  int64_t done = p->tmp[0] ? tree_bytes(p->tmp, 0) : 0;
  /* Monotonic: the engine deletes its blobs once stored, which is no step back. */
  if (done < p->done) done = p->done;
  if (p->total > 0 && done > p->total) done = p->total;
  if (done == p->done && p->total == p->written_total && p->written) return;
  p->done = done;
  p->written_total = p->total;
  p->written = true;
  char path[1100], tmp[1120];
  snprintf(path, sizeof path, "%s/container.progress", p->dir);
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "we");
  if (!f) return;
  fprintf(f, "%lld %lld\n", (long long)p->done, (long long)p->total);
  if (fclose(f) == 0) rename(tmp, path);
  else unlink(tmp);
}

void gp_agent_pull_progress_end(gp_agent_pull_progress *p) {
  if (p->inspect_pid > 0) {
    kill(p->inspect_pid, SIGKILL);
    while (waitpid(p->inspect_pid, NULL, 0) < 0 && errno == EINTR) {}
    p->inspect_pid = -1;
  }
  if (p->tmp[0]) rm_tree(p->tmp, 0);
  char path[1100];
  snprintf(path, sizeof path, "%s/pull.manifest", p->dir);
  unlink(path);
}
