/* SPDX-License-Identifier: Apache-2.0 */
/* The agent's container settings, the node's detected capabilities and the engine's
 * command lines (container.h). Pure but for gp_agent_container_detect. */
#include "agent/container.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/mem.h"

void gp_agent_container_cfg_init(gp_agent_container_cfg *c) {
  memset(c, 0, sizeof *c);
  snprintf(c->engine, sizeof c->engine, "podman");
  c->pull_timeout_s = 600;
  snprintf(c->shm_size, sizeof c->shm_size, "16g");
}

static int load_list(const gp_doc *d, const gp_doc_node *n, const char *field,
                     char out[][GP_CT_OPTION_MAX], int *ret_n, gp_err *err) {
  int rc = gp_doc_expect(d, n, field, GP_DOC_SEQ, err);
  if (rc) return rc;
  if (n->n > GP_CT_MAX_OPTIONS)
    return gp_err_set(err, GP_EINVAL, d->name, n->line, field, "at most %d options", GP_CT_MAX_OPTIONS);
  for (int i = 0; i < n->n; i++) {
    const char *s = NULL;
    if ((rc = gp_doc_str(d, n->items[i], field, &s, err))) return rc;
    if (!*s || strlen(s) >= GP_CT_OPTION_MAX)
      return gp_err_set(err, GP_EINVAL, d->name, n->items[i]->line, field, "an option is 1 to %d bytes",
                        GP_CT_OPTION_MAX - 1);
    snprintf(out[i], GP_CT_OPTION_MAX, "%s", s);
  }
  *ret_n = n->n;
  return 0;
}

int gp_agent_container_cfg_load(const gp_doc *d, const gp_doc_node *n, gp_agent_container_cfg *c,
                                gp_err *err) {
  static const char *const keys[] = {"engine", "runtime", "options", "run_options", "pull_options",
                                     "pull_timeout", "shm_size", "image_store_max", NULL};
  int rc = gp_doc_expect(d, n, "container", GP_DOC_MAP, err);
  if (!rc) rc = gp_doc_check_keys(d, n, "container", keys, err);
  if (rc) return rc;
  const gp_doc_node *v;
  const char *s;
  if ((v = gp_doc_get(n, "engine"))) {
    if ((rc = gp_doc_str(d, v, "container.engine", &s, err))) return rc;
    if (!*s || strlen(s) >= sizeof c->engine || s[0] == '-')
      return gp_err_set(err, GP_EINVAL, d->name, v->line, "container.engine", "expected a program name or path");
    snprintf(c->engine, sizeof c->engine, "%s", s);
  }
  if ((v = gp_doc_get(n, "runtime"))) {
    if ((rc = gp_doc_str(d, v, "container.runtime", &s, err))) return rc;
    if (strlen(s) >= sizeof c->runtime || s[0] == '-')
      return gp_err_set(err, GP_EINVAL, d->name, v->line, "container.runtime", "expected a runtime name (runc, crun)");
    snprintf(c->runtime, sizeof c->runtime, "%s", s);
  }
  if ((v = gp_doc_get(n, "options")) && (rc = load_list(d, v, "container.options", c->options, &c->n_options, err)))
    return rc;
  if ((v = gp_doc_get(n, "run_options")) &&
      (rc = load_list(d, v, "container.run_options", c->run_options, &c->n_run_options, err)))
    return rc;
  if ((v = gp_doc_get(n, "pull_options")) &&
      (rc = load_list(d, v, "container.pull_options", c->pull_options, &c->n_pull_options, err)))
    return rc;
  if ((v = gp_doc_get(n, "pull_timeout"))) {
    int64_t sec = 0;
    if ((rc = gp_doc_duration_s(d, v, "container.pull_timeout", &sec, err))) return rc;
    if (sec < 1 || sec > 86400)
      return gp_err_set(err, GP_EINVAL, d->name, v->line, "container.pull_timeout", "expected 1s to 24h");
    c->pull_timeout_s = (int)sec;
  }
  if ((v = gp_doc_get(n, "shm_size"))) {
    if ((rc = gp_doc_str(d, v, "container.shm_size", &s, err))) return rc;
    size_t k = strspn(s, "0123456789");
    if (k == 0 || k >= sizeof c->shm_size - 1 || (s[k] && (strchr("kmgKMG", s[k]) == NULL || s[k + 1])))
      return gp_err_set(err, GP_EINVAL, d->name, v->line, "container.shm_size", "expected a size such as 16g");
    snprintf(c->shm_size, sizeof c->shm_size, "%s", s);
  }
  if ((v = gp_doc_get(n, "image_store_max"))) {
    if ((rc = gp_doc_str(d, v, "container.image_store_max", &s, err))) return rc;
    /* "SIZE": bytes, or with k, m, g, t (powers of 1024); at most 1 PiB; 0: no cap. */
    size_t k = strspn(s, "0123456789");
    const char *units = "kmgt";
    const char *u = s[k] ? strchr(units, s[k] | 0x20) : NULL;
    int64_t x = 0;
    bool ok = k > 0 && k <= 10 && (!s[k] || (u && !s[k + 1]));
    for (size_t i = 0; ok && i < k; i++) x = x * 10 + (s[i] - '0');
    for (int sh = u ? (int)(u - units) + 1 : 0; ok && sh > 0; sh--) x *= 1024;
    if (!ok || x > ((int64_t)1 << 50))
      return gp_err_set(err, GP_EINVAL, d->name, v->line, "container.image_store_max",
                        "expected a size such as 200g (bytes, or k, m, g, t), at most 1024t");
    c->image_store_max = x;
  }
  return 0;
}

/* ---- detection ---- */

static bool read_small(const char *root, const char *path, char *buf, size_t size) {
  char p[700];
  snprintf(p, sizeof p, "%s%s", root, path);
  FILE *f = fopen(p, "re");
  if (!f) return false;
  size_t n = fread(buf, 1, size - 1, f);
  buf[n] = '\0';
  fclose(f);
  return true;
}

static bool exists_in(const char *root, const char *path) {
  char p[700];
  snprintf(p, sizeof p, "%s%s", root, path);
  return access(p, F_OK) == 0;
}

/* A program by name in PATH, or a path. */
static bool find_program(const char *name, char *out, size_t size) {
  if (strchr(name, '/')) {
    snprintf(out, size, "%s", name);
    return access(out, X_OK) == 0;
  }
  const char *path = getenv("PATH");
  if (!path || !*path) path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
  char *copy = gp_xstrdup(path), *save = NULL;
  bool found = false;
  for (char *d = strtok_r(copy, ":", &save); d && !found; d = strtok_r(NULL, ":", &save)) {
    snprintf(out, size, "%s/%s", d, name);
    found = access(out, X_OK) == 0;
  }
  free(copy);
  return found;
}

static int64_t hard_limit(int res) {
  struct rlimit rl;
  if (getrlimit(res, &rl) != 0 || rl.rlim_max == RLIM_INFINITY) return -1;
  return (int64_t)rl.rlim_max;
}

void gp_agent_container_detect(const gp_agent_container_cfg *c, const char *sys_root,
                               gp_agent_container_caps *caps) {
  memset(caps, 0, sizeof *caps);
  const char *root = sys_root ? sys_root : "";
  if (!find_program(c->engine, caps->engine, sizeof caps->engine)) {
    snprintf(caps->message, sizeof caps->message, "no container engine '%.100s' on this node", c->engine);
    return;
  }
  caps->available = true;
  /* CAP_SYS_RESOURCE (24) in the effective set: the runtime may raise limits; without it
   * every limit the engine sets must stay at or below the agent's hard limits. */
  char status[8192] = "";
  unsigned long long eff = ~0ull;
  if (read_small(root, "/proc/self/status", status, sizeof status)) {
    const char *p = strstr(status, "CapEff:");
    if (p) eff = strtoull(p + 7, NULL, 16);
  }
  caps->set_ulimits = !(eff & (1ull << 24));
  caps->nofile = hard_limit(RLIMIT_NOFILE);
  caps->memlock = hard_limit(RLIMIT_MEMLOCK);
  caps->nproc = hard_limit(RLIMIT_NPROC);
  /* podman caps its own process limit at the kernel's pid_max: above it runc refuses. */
  char pm[32];
  if (read_small(root, "/proc/sys/kernel/pid_max", pm, sizeof pm)) {
    int64_t pid_max = strtoll(pm, NULL, 10);
    if (pid_max > 0 && (caps->nproc < 0 || caps->nproc > pid_max)) caps->nproc = pid_max;
  }
  /* crun refuses hybrid cgroups (v1 with a v2 "unified" mount): runc where so. */
  bool hybrid = exists_in(root, "/sys/fs/cgroup/unified/cgroup.controllers") ||
                (exists_in(root, "/sys/fs/cgroup/memory") && exists_in(root, "/sys/fs/cgroup/unified"));
  char rt[512];
  if (c->runtime[0]) snprintf(caps->runtime, sizeof caps->runtime, "%s", c->runtime);
  else if (hybrid && find_program("runc", rt, sizeof rt)) snprintf(caps->runtime, sizeof caps->runtime, "runc");
  if (!find_program("skopeo", caps->inspect, sizeof caps->inspect)) caps->inspect[0] = '\0';
  caps->cdi = exists_in(root, "/etc/cdi/nvidia.yaml") || exists_in(root, "/var/run/cdi/nvidia.yaml") ||
              exists_in(root, "/etc/cdi/nvidia.json") || exists_in(root, "/var/run/cdi/nvidia.json");
  snprintf(caps->message, sizeof caps->message,
           "containers: %.200s, runtime %s%s%s, GPUs by %s%s", caps->engine,
           caps->runtime[0] ? caps->runtime : "(the engine's default)", hybrid ? " (hybrid cgroups)" : "",
           caps->set_ulimits ? ", limits at the hard ones (no CAP_SYS_RESOURCE)" : "",
           caps->cdi ? "CDI" : "device nodes",
           caps->inspect[0] ? "" : ", pulls without their total (no skopeo)");
}

/* ---- command lines ---- */

typedef struct argvb {
  char **v;
  size_t n, cap;
} argvb;

static void add(argvb *a, const char *s) {
  gp_xgrow((void **)&a->v, &a->cap, a->n + 2, sizeof *a->v);
  a->v[a->n++] = gp_xstrdup(s);
  a->v[a->n] = NULL;
}

static void addf(argvb *a, const char *fmt, const char *x, const char *y) {
  size_t n = strlen(fmt) + strlen(x) + (y ? strlen(y) : 0) + 1;
  char *s = gp_xmalloc(n);
  snprintf(s, n, fmt, x, y ? y : "");
  gp_xgrow((void **)&a->v, &a->cap, a->n + 2, sizeof *a->v);
  a->v[a->n++] = s;
  a->v[a->n] = NULL;
}

static void head(argvb *a, const gp_agent_container_cfg *c, const gp_agent_container_caps *caps) {
  add(a, caps->engine[0] ? caps->engine : c->engine);
  if (caps->runtime[0]) {
    add(a, "--runtime");
    add(a, caps->runtime);
  }
  for (int i = 0; i < c->n_options; i++) add(a, c->options[i]);
}

static void ulimit(argvb *a, const char *name, int64_t v) {
  char buf[96];
  if (v < 0) snprintf(buf, sizeof buf, "%s=-1:-1", name);
  else snprintf(buf, sizeof buf, "%s=%lld:%lld", name, (long long)v, (long long)v);
  add(a, "--ulimit");
  add(a, buf);
}

static bool is_dir(const char *p) {
  struct stat st;
  return p && *p && stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool mounted_at(const gp_proto_container *s, const char *dst) {
  for (int i = 0; i < s->n_mounts; i++)
    if (!strcmp(s->mounts[i].dst, dst)) return true;
  return false;
}

char **gp_agent_container_run_argv(const gp_agent_container_cfg *c, const gp_agent_container_caps *caps,
                                   const gp_agent_container_task *t, char *msg, size_t size) {
  argvb a = {0};
  head(&a, c, caps);
  /* A parent by path is cgroupfs's form (systemd's takes slices). */
  if (t->cgroup_parent) add(&a, "--cgroup-manager=cgroupfs");
  add(&a, "run");
  add(&a, "--rm");
  /* Pulled already, within its time (container_task.c); or known present, when the
   * check is skipped: then a vanished image is pulled by the run. */
  add(&a, t->known_present ? "--pull=missing" : "--pull=never");
  add(&a, "--name");
  add(&a, t->name);
  char buf[128];
  /* The submitting user, never root: ids kept, no capabilities, no setuid gains. */
  snprintf(buf, sizeof buf, "%u:%u", (unsigned)t->uid, (unsigned)t->gid);
  add(&a, "--user");
  add(&a, buf);
  for (int i = 0; i < t->n_groups && i < 32; i++) {
    if (t->groups[i] == t->gid) continue;
    snprintf(buf, sizeof buf, "%u", (unsigned)t->groups[i]);
    add(&a, "--group-add");
    add(&a, buf);
  }
  add(&a, "--cap-drop=all");
  add(&a, "--security-opt=no-new-privileges");
  /* The node's network as a bare job has it (NCCL, rendezvous); the host's IPC for the
   * tasks of a multi-task job; a generous /dev/shm for data loaders. */
  add(&a, "--network=host");
  /* The host's IPC brings the host's /dev/shm, whose size podman refuses to set ("cannot
   * set shmsize when running in the host IPC Namespace"): shm_size is a lone task's. */
  if (t->tasks > 1) add(&a, "--ipc=host");
  else addf(&a, "--shm-size=%s", c->shm_size, NULL);
  if (caps->set_ulimits) {
    if (caps->nofile > 0) ulimit(&a, "nofile", caps->nofile);
    if (caps->nproc > 0) ulimit(&a, "nproc", caps->nproc);
    ulimit(&a, "memlock", caps->memlock);
  } else {
    ulimit(&a, "memlock", -1);
  }
  if (t->cgroup_parent) addf(&a, "--cgroup-parent=%s", t->cgroup_parent, NULL);
  if (!t->spec->writable) add(&a, "--read-only"); /* /tmp, /run stay writable tmpfs */
  add(&a, "--env-file");
  add(&a, t->env_file);
  /* pyxis's defaults: the working directory and the home at their own paths. */
  const char *wd = t->spec->workdir ? t->spec->workdir : t->workdir;
  if (is_dir(t->workdir) && strcmp(t->workdir, "/") && !mounted_at(t->spec, t->workdir))
    addf(&a, "--volume=%s:%s", t->workdir, t->workdir);
  if (t->spec->mount_home && is_dir(t->home) && strcmp(t->home, "/") &&
      !(t->workdir && !strcmp(t->home, t->workdir)) && !mounted_at(t->spec, t->home))
    addf(&a, "--volume=%s:%s", t->home, t->home);
  if (t->job_dir) addf(&a, "--volume=%s:%s:ro", t->job_dir, t->job_dir); /* GPOOL_HOSTFILE */
  if (t->mps_dir && is_dir(t->mps_dir) && !mounted_at(t->spec, t->mps_dir))
    addf(&a, "--volume=%s:%s", t->mps_dir, t->mps_dir); /* a fraction's MPS client pipes */
  for (int i = 0; i < t->spec->n_mounts; i++) {
    const gp_proto_mount *m = &t->spec->mounts[i];
    addf(&a, m->ro ? "--volume=%s:%s:ro" : "--volume=%s:%s", m->src, m->dst);
  }
  if (wd) addf(&a, "--workdir=%s", wd, NULL);
  /* Exactly the granted GPUs: CDI names where the node has a spec, else their device nodes
   * and the control ones; none for simulated GPUs (the variables still say which). */
  if (t->n_gpus > 0 && !t->gpus_simulated) {
    if (caps->cdi) {
      for (int i = 0; i < t->n_gpus; i++) addf(&a, "--device=nvidia.com/gpu=%s", t->gpu_uuids[i], NULL);
    } else {
      if (access("/dev/nvidiactl", F_OK) != 0) {
        snprintf(msg, size, "this node has neither an NVIDIA CDI spec nor /dev/nvidiactl: "
                            "its GPUs cannot be given to a container");
        gp_agent_container_argv_free(a.v);
        return NULL;
      }
      for (int i = 0; i < t->n_gpus; i++) {
        snprintf(buf, sizeof buf, "%d", t->gpu_minors[i]);
        addf(&a, "--device=/dev/nvidia%s", buf, NULL);
      }
      static const char *const ctl[] = {"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", NULL};
      for (int i = 0; ctl[i]; i++)
        if (access(ctl[i], F_OK) == 0) addf(&a, "--device=%s", ctl[i], NULL);
    }
  }
  for (int i = 0; i < c->n_run_options; i++) add(&a, c->run_options[i]);
  add(&a, t->image ? t->image : t->spec->image);
  for (int i = 0; i < t->n_argv; i++) add(&a, t->argv[i]);
  return a.v;
}

char **gp_agent_container_pull_argv(const gp_agent_container_cfg *c, const gp_agent_container_caps *caps,
                                    const char *image) {
  argvb a = {0};
  head(&a, c, caps);
  add(&a, "pull");
  add(&a, "--quiet");
  for (int i = 0; i < c->n_pull_options; i++) add(&a, c->pull_options[i]);
  add(&a, image);
  return a.v;
}

char **gp_agent_container_exists_argv(const gp_agent_container_cfg *c,
                                      const gp_agent_container_caps *caps, const char *image) {
  argvb a = {0};
  head(&a, c, caps);
  add(&a, "image");
  add(&a, "exists");
  add(&a, image);
  return a.v;
}

char **gp_agent_container_inspect_argv(const gp_agent_container_cfg *c,
                                       const gp_agent_container_caps *caps, const char *authfile) {
  if (!caps->inspect[0]) return NULL;
  argvb a = {0};
  add(&a, caps->inspect);
  add(&a, "inspect");
  add(&a, "--raw");
  /* The options both tools read alike: how to reach the registry and whose credential. */
  static const char *const shared[] = {"--tls-verify", "--authfile", "--cert-dir", "--creds", NULL};
  for (int i = 0; i < c->n_pull_options; i++) {
    const char *o = c->pull_options[i];
    for (int k = 0; shared[k]; k++) {
      size_t n = strlen(shared[k]);
      if (strncmp(o, shared[k], n) || (o[n] != '\0' && o[n] != '=')) continue;
      add(&a, o);
      if (o[n] == '\0' && strcmp(shared[k], "--tls-verify") && i + 1 < c->n_pull_options)
        add(&a, c->pull_options[++i]); /* "--authfile FILE": its value too */
    }
  }
  if (authfile && *authfile) {
    add(&a, "--authfile");
    add(&a, authfile);
  }
  return a.v;
}

void gp_agent_container_argv_free(char **argv) {
  for (char **p = argv; p && *p; p++) free(*p);
  free(argv);
}

static bool has(const char *text, const char *needle) { return strstr(text, needle) != NULL; }

const char *gp_agent_container_pull_reason(const char *e) {
  if (!e) return "image pull failed";
  /* Registries answer an anonymous pull of a private or missing name with 401: an
   * authentication error is "unauthorized" even when the name may not exist. */
  if (has(e, "unauthorized") || has(e, "authentication required") || has(e, "denied:") ||
      has(e, "invalid username/password"))
    return "unauthorized";
  if (has(e, "manifest unknown") || has(e, "name unknown") || has(e, "not found") ||
      has(e, "no such image"))
    return "image not found";
  if (has(e, "connection refused") || has(e, "no such host") || has(e, "i/o timeout") ||
      has(e, "network is unreachable") || has(e, "no route to host") || has(e, "dial tcp") ||
      has(e, "TLS handshake timeout") || has(e, "pinging container registry") ||
      has(e, "server gave HTTP response"))
    return "registry unreachable";
  return "image pull failed";
}

bool gp_agent_container_env_passes(const gp_proto_container *spec, const char *name) {
  for (int i = 0; i < spec->n_env; i++)
    if (!strcmp(spec->env[i], name)) return true;
  static const char *const host_only[] = {"PATH", "LD_LIBRARY_PATH", "LD_PRELOAD", "PYTHONPATH",
                                          "PYTHONHOME", "SHELL", "TMPDIR", NULL};
  for (int i = 0; host_only[i]; i++)
    if (!strcmp(host_only[i], name)) return false;
  return true;
}
