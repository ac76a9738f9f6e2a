/* SPDX-License-Identifier: Apache-2.0 */
/* A start order with a container (docs/containers.md): the task's environment written to an
 * env file the engine reads (0600, in the agent's task directory: never on a command line
 * other users can read), the engine's command line from the node's capabilities
 * (container.c), wrapped in `gpool __container-task` for the bounded pull or the access
 * check (the run alone where the node's inventory holds the image); and at the end,
 * the pull's failure as the job's reason. The engine runs as the agent (root), the
 * container's process as the job's user. */
#include "agent/agent_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/launcher.h"
#include "protocol/registry.h"
#include "util/mem.h"

/* The owner's registry credential of a start order, as the engine's auth file: 0600 in the
 * task's directory (the agent's, which other users cannot enter), read by this pull only
 * (--authfile) and removed by `gpool __container-task` as soon as the pull ends. */
static int write_auth_file(const char *path, const char *image, const char *auth, gp_err *err) {
  char reg[GP_PROTO_REGISTRY_MAX + 1];
  if (!gp_proto_image_registry(image, reg, sizeof reg) || gp_proto_registry_check(reg) ||
      !gp_proto_registry_auth_valid(auth))
    return gp_err_set(err, GP_EINVAL, NULL, 0, "registry_auth", "no valid registry for %s", image);
  unlink(path);
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  FILE *f = fd >= 0 ? fdopen(fd, "we") : NULL;
  if (!f) {
    if (fd >= 0) close(fd);
    return gp_err_set(err, GP_EIO, NULL, 0, "container", "cannot write %s: %s", path, strerror(errno));
  }
  /* Both checked above: no character of them needs quoting in JSON. */
  fprintf(f, "{\"auths\":{\"%s\":{\"auth\":\"%s\"}}}\n", reg, auth);
  bool ok = fflush(f) == 0;
  fclose(f);
  if (!ok) {
    unlink(path);
    return gp_err_set(err, GP_EIO, NULL, 0, "container", "cannot write %s", path);
  }
  return 0;
}

static int write_env_file(const char *path, const gp_proto_container *spec, char *const *envp,
                          gp_err *err) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  FILE *f = fd >= 0 ? fdopen(fd, "we") : NULL;
  if (!f) {
    if (fd >= 0) close(fd);
    return gp_err_set(err, GP_EIO, NULL, 0, "container", "cannot write %s: %s", path, strerror(errno));
  }
  for (char *const *p = envp; p && *p; p++) {
    const char *eq = strchr(*p, '=');
    if (!eq || strchr(*p, '\n')) continue; /* one variable a line: a newline cannot pass */
    char name[256];
    snprintf(name, sizeof name, "%.*s", (int)(eq - *p), *p);
    if (gp_agent_container_env_passes(spec, name)) fprintf(f, "%s\n", *p);
  }
  bool ok = fflush(f) == 0;
  fclose(f);
  if (!ok) return gp_err_set(err, GP_EIO, NULL, 0, "container", "cannot write %s", path);
  return 0;
}

/* Whether the node's last inventory (images.c) names the image: then no check runs before
 * the start, which saves the engine's ~0.1 s. */
static bool image_known(const json_t *images, const char *ref) {
  size_t i, k;
  json_t *im, *nm;
  json_array_foreach(images, i, im) {
    json_array_foreach(json_object_get(im, "names"), k, nm) {
      const char *s = json_string_value(nm);
      if (s && !strcmp(s, ref)) return true;
    }
  }
  return false;
}

/* The task's container's name: "gpool-<agent>-<job key>" ("gpool-1a2b3c4d-7-t3" for task 3
 * of job 7), <agent> 8 hex digits of the
 * agent's data directory. The engine's names are the host's: several agents on one host
 * (simulated nodes, or two pools' tests) run jobs with the same keys. */
void gp__agent_container_name(const gp_agent *a, const char *key, char *buf, size_t size) {
  uint32_t h = 2166136261u;
  for (const char *p = a->cfg.data_dir; *p; p++) h = (h ^ (unsigned char)*p) * 16777619u;
  int n = snprintf(buf, size, "gpool-%08x-", (unsigned)h);
  /* The engine's names are [a-zA-Z0-9][a-zA-Z0-9_.-]*: a task's key "7@3" is "7-t3". */
  for (const char *p = key; *p && n + 3 < (int)size; p++) {
    char c = *p;
    if (c == '@') {
      buf[n++] = '-';
      buf[n++] = 't';
    } else {
      bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                c == '_' || c == '.' || c == '-';
      buf[n++] = ok ? c : '_';
    }
  }
  buf[n] = '\0';
}

static void push(char ***v, size_t *n, size_t *cap, const char *s) {
  gp_xgrow((void **)v, cap, *n + 2, sizeof **v);
  (*v)[(*n)++] = gp_xstrdup(s);
  (*v)[*n] = NULL;
}

int gp__agent_container_prepare(gp_agent *a, const gp_proto_start *o, const gp__agent_job *j,
                                const char *workdir, uid_t uid, gid_t gid, int n_groups,
                                const gid_t *groups, const char *home, const int *gpus,
                                int n_gpus, char *const *envp, struct gp_launch_spec *spec,
                                char ***ret_argv, gp_err *err) {
  const gp_agent_container_caps *caps = &a->container;
  if (!caps->available)
    return gp_err_set(err, GP_EINVAL, NULL, 0, "container", "node %s cannot run containers: %s",
                      a->cfg.name, caps->message);
  if (!a->cfg.self_exe[0])
    return gp_err_set(err, GP_EINVAL, NULL, 0, "container", "the agent does not know its own binary");
  char env_path[800], name[160];
  gp__agent_job_path(j, "container.env", env_path, sizeof env_path);
  int rc = write_env_file(env_path, o->container, envp, err);
  if (rc) return rc;
  char failure[800];
  static const char *const stale[] = {"container.failure", "container.pulling", "container.pulled",
                                      "container.auth", "container.progress"};
  for (size_t k = 0; k < sizeof stale / sizeof *stale; k++) { /* an earlier run's */
    gp__agent_job_path(j, stale[k], failure, sizeof failure);
    unlink(failure);
  }
  gp__agent_container_name(a, j->key, name, sizeof name);
  const char *uuids[GP_GPU_MAX_DEVICES];
  int minors[GP_GPU_MAX_DEVICES];
  for (int i = 0; i < n_gpus && i < GP_GPU_MAX_DEVICES; i++) {
    uuids[i] = a->gpus[gpus[i]].uuid;
    minors[i] = a->gpus[gpus[i]].index;
  }
  gp_agent_container_task t = {
      .spec = o->container, .name = name, .uid = uid, .gid = gid, .n_groups = n_groups,
      .groups = groups, .workdir = workdir, .home = home, .job_dir = j->dir, .env_file = env_path,
      .tasks = o->tasks, .n_gpus = n_gpus, .gpu_uuids = uuids, .gpu_minors = minors,
      .gpus_simulated = a->sim_bin[0] != '\0' || a->cfg.sim[0] != '\0', .n_argv = o->n_argv,
      .argv = o->argv};
  /* The job's cgroup (cgroup.c made it, with its limits): podman puts the container under
   * it, by path, so its processes are the job's for the limits and the figures. */
  char parent[700] = "";
  if (j->cgroup) {
    const char *rel = a->cgroup.root;
    if (!strncmp(rel, "/sys/fs/cgroup/", 15)) rel += 14;
    snprintf(parent, sizeof parent, "%s/job-%s", rel, j->key);
    t.cgroup_parent = parent;
  }
  for (char *const *p = envp; p && *p; p++)
    if (!strncmp(*p, "CUDA_MPS_PIPE_DIRECTORY=", 24)) t.mps_dir = *p + 24;
  /* By its full name, never a short one or an ID: an engine would match those against an
   * image of any registry it holds (image_access.c checks by the registry). */
  char image[GP_PROTO_IMAGE_FULL_MAX];
  if (!gp_proto_image_full(o->container->image, image, sizeof image))
    return gp_err_set(err, GP_EINVAL, NULL, 0, "container.image", "the image reference is too long");
  t.image = image;
  /* A user's own credential: this registry keeps images from some users, so from now on
   * each job in one of its images has its own user's access checked. */
  if (o->registry_auth && !o->registry_auth_pool) gp__agent_registry_mark_private(a, image);
  bool verify = gp__agent_registry_private(a, image);
  bool known = image_known(a->images, image);
  /* Checked: the run never pulls on its own (--pull=never), the task's pull decided. */
  t.known_present = known && !verify;
  char msg[400];
  char **run = gp_agent_container_run_argv(&a->cfg.container, caps, &t, msg, sizeof msg);
  if (!run) return gp_err_set(err, GP_EINVAL, NULL, 0, "container", "%s", msg);
  if (t.known_present) {
    /* Nothing to pull or check: the task is the engine's run itself, without the exec of
     * `gpool __container-task` between (a few ms, tens on a loaded node: the agent's
     * binary loads some 40 libraries). A vanished image is pulled by the run. */
    spec->argv = run;
    spec->switch_user = false;
    spec->workdir = j->dir;
    spec->cgroup_procs = NULL;
    *ret_argv = run;
    return 0;
  }
  char **exists = gp_agent_container_exists_argv(&a->cfg.container, caps, image);
  char **pull = gp_agent_container_pull_argv(&a->cfg.container, caps, image);
  char auth_path[800];
  gp__agent_job_path(j, "container.auth", auth_path, sizeof auth_path);
  if (o->registry_auth) {
    rc = write_auth_file(auth_path, image, o->registry_auth, err);
    if (rc) {
      gp_agent_container_argv_free(run);
      gp_agent_container_argv_free(exists);
      gp_agent_container_argv_free(pull);
      return rc;
    }
    /* `--authfile FILE` just before the image: after the node's own pull_options, so the
     * owner's credential is the one this pull uses. */
    size_t c = 0;
    while (pull[c]) c++;
    pull = gp_xrealloc(pull, (c + 3) * sizeof *pull);
    pull[c + 1] = pull[c - 1];
    pull[c - 1] = gp_xstrdup("--authfile");
    pull[c] = gp_xstrdup(auth_path);
    pull[c + 2] = NULL;
  }
  char **v = NULL;
  size_t n = 0, cap = 0;
  char num[32];
  push(&v, &n, &cap, a->cfg.self_exe);
  push(&v, &n, &cap, "__container-task");
  push(&v, &n, &cap, j->dir);
  snprintf(num, sizeof num, "%d", a->cfg.container.pull_timeout_s);
  push(&v, &n, &cap, num);
  /* check: pull unless present; present: neither (the inventory holds it); verify: the
   * pull runs either way, a check of this user's access where the image is present. */
  push(&v, &n, &cap, verify ? "verify" : known ? "present" : "check");
  char *none[] = {NULL};
  char **inspect = gp_agent_container_inspect_argv(&a->cfg.container, caps, o->registry_auth ? auth_path : "");
  char **parts[] = {known ? none : exists, pull, inspect ? inspect : none};
  for (int k = 0; k < 3; k++) {
    int c = 0;
    while (parts[k][c]) c++;
    snprintf(num, sizeof num, "%d", c);
    push(&v, &n, &cap, num);
    for (int i = 0; i < c; i++) push(&v, &n, &cap, parts[k][i]);
  }
  for (char **p = run; *p; p++) push(&v, &n, &cap, *p);
  gp_agent_container_argv_free(run);
  gp_agent_container_argv_free(exists);
  gp_agent_container_argv_free(pull);
  gp_agent_container_argv_free(inspect);
  /* The engine runs as the agent; the container's process as the user (--user). The
   * engine's own process stays out of the job's cgroup, whose limits podman puts on the
   * container through --cgroup-parent where the agent has a cgroup v2 tree. */
  spec->argv = v;
  spec->switch_user = false;
  spec->workdir = j->dir;
  spec->cgroup_procs = NULL;
  *ret_argv = v;
  return 0;
}

/* `engine rm -f -t 0 --ignore NAME`, waited for: a SIGKILL of `podman run` leaves its
 * container behind. */
static void remove_container(gp_agent *a, const char *name) {
  const char *argv[] = {a->container.engine, "rm", "-f", "-t", "0", "--ignore", name, NULL};
  pid_t pid = fork();
  if (pid == 0) {
    int null = open("/dev/null", O_RDWR);
    dup2(null, 0);
    dup2(null, 1);
    dup2(null, 2);
    execv(argv[0], (char **)argv);
    _exit(127);
  }
  int st;
  while (pid > 0 && waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
}

/* The first line of the task's file `name`, or false. */
static bool read_marker(const gp__agent_job *j, const char *name, char *buf, size_t size) {
  char path[800];
  gp__agent_job_path(j, name, path, sizeof path);
  FILE *f = fopen(path, "re");
  if (!f) return false;
  bool ok = fgets(buf, (int)size, f) != NULL;
  fclose(f);
  if (ok) buf[strcspn(buf, "\n")] = '\0';
  return ok;
}

static void image_event(gp_agent *a, const gp__agent_job *j, const char *phase, const char *msg,
                        int64_t done, int64_t total) {
  gp_proto_event *ev = gp_xcalloc(1, sizeof *ev);
  ev->kind = GP_PROTO_EV_IMAGE;
  snprintf(ev->job, sizeof ev->job, "%s", j->id);
  ev->task = j->task;
  snprintf(ev->order, sizeof ev->order, "%s", j->order_id);
  ev->at = gp__agent_now_ms() / 1000;
  ev->has_reason = ev->has_message = true;
  snprintf(ev->reason, sizeof ev->reason, "%s", phase);
  snprintf(ev->message, sizeof ev->message, "%s", msg);
  ev->done_bytes = done;
  ev->total_bytes = total;
  gp__agent_event(a, gp_proto_event_encode(ev));
  free(ev);
}

/* The pull's progress (pull_progress.c writes it) as a "progress" event, at most every
 * two seconds and only when it moved: the server shows the last one in the timeline. */
static void progress_tick(gp_agent *a, gp__agent_job *j, const char *image_line) {
  char line[128];
  long long done, total;
  int64_t now = gp__agent_now_ms();
  if (j->pull_progress_ms && now - j->pull_progress_ms < 2000) return;
  if (!read_marker(j, "container.progress", line, sizeof line) ||
      sscanf(line, "%lld %lld", &done, &total) != 2 || done < 0 || total < 0 ||
      done > GP_PROTO_PULL_BYTES_MAX || total > GP_PROTO_PULL_BYTES_MAX)
    return;
  if (j->pull_progress_ms && done == j->pull_done_sent && total == j->pull_total_sent) return;
  j->pull_done_sent = done;
  j->pull_total_sent = total;
  j->pull_progress_ms = now;
  char bytes[80], msg[600];
  gp_proto_pull_bytes_text(done, total, bytes, sizeof bytes);
  snprintf(msg, sizeof msg, "%.400s (%s)", image_line, bytes);
  image_event(a, j, "progress", msg, done, total);
}

/* Its pull's start and end as "image" events, once each (from the task's marker files), and
 * its progress between them. */
static void pull_events(gp_agent *a, gp__agent_job *j) {
  char line[400];
  if (j->pull_noted < 1 && read_marker(j, "container.pulling", line, sizeof line)) {
    j->pull_noted = 1;
    image_event(a, j, "pulling", line, 0, 0);
  }
  if (j->pull_noted == 1 && read_marker(j, "container.pulled", line, sizeof line)) {
    j->pull_noted = 2;
    image_event(a, j, "pulled", line, 0, 0);
    a->images_next_ms = 0; /* reported, and the store's cap applied, at the next heartbeat */
  } else if (j->pull_noted == 1 && read_marker(j, "container.pulling", line, sizeof line)) {
    progress_tick(a, j, line);
  }
}

/* At a container task's end: its pull's failure as the job's reason, and no container
 * left behind by a SIGKILL. */
static void finish(gp_agent *a, gp__agent_job *j) {
  char path[800];
  gp__agent_job_path(j, "container.env", path, sizeof path);
  if (access(path, F_OK) != 0) return; /* a bare task */
  gp__agent_job_path(j, "container.failure", path, sizeof path);
  FILE *f = fopen(path, "re");
  if (f) {
    char line[400] = "";
    if (fgets(line, sizeof line, f)) {
      line[strcspn(line, "\n")] = '\0';
      snprintf(j->fault_reason, sizeof j->fault_reason, "start_failed");
      snprintf(j->message, sizeof j->message, "%s", line);
    }
    fclose(f);
  }
  gp__agent_job_path(j, "container.auth", path, sizeof path);
  unlink(path); /* __container-task removed it after the pull, unless it died first */
  a->images_next_ms = 0; /* it may have pulled one: the next heartbeat says */
  if (j->killed_hard && a->container.available) {
    char name[160];
    gp__agent_container_name(a, j->key, name, sizeof name);
    remove_container(a, name);
  }
}

static void on_tick(gp_agent *a, gp__agent_job *j, int64_t now_ms) {
  (void)now_ms;
  if (j->container) pull_events(a, j);
}

/* A pull's end goes before the task's; an adopted task (container unknown) is told by its
 * container.env. */
static void on_ending(gp_agent *a, gp__agent_job *j) {
  if (j->container) pull_events(a, j);
  finish(a, j);
}

/* A container task's pull events while it runs, and its end (agent_hooks.c). */
const gp__agent_job_hooks gp__agent_container_hooks = {
    .name = "container",
    .ending = on_ending,
    .tick = on_tick,
};
