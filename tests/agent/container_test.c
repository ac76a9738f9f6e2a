/* SPDX-License-Identifier: Apache-2.0 */
/* The agent's container parts (src/agent/container.c): the engine's command line from the
 * node's detected capabilities and a task, the detection against a fake /proc and /sys
 * tree, the classification of a failed pull, and which variables pass into the image. */
#include "test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/container.h"
#include "agent/images.h"

static bool has_arg(char **argv, const char *a) {
  for (char **p = argv; *p; p++)
    if (!strcmp(*p, a)) return true;
  return false;
}

static int index_of(char **argv, const char *a) {
  for (int i = 0; argv[i]; i++)
    if (!strcmp(argv[i], a)) return i;
  return -1;
}

static void run_line(void) {
  gp_agent_container_cfg c;
  gp_agent_container_cfg_init(&c);
  snprintf(c.run_options[c.n_run_options++], GP_CT_OPTION_MAX, "--log-driver=none");
  gp_agent_container_caps caps = {.available = true, .engine = "/usr/bin/podman", .runtime = "runc",
                                  .set_ulimits = true, .nofile = 20000, .nproc = 32768,
                                  .memlock = 8388608, .cdi = true};
  gp_proto_container spec = {0};
  spec.image = "reg.example:5000/team/img:1";
  spec.mount_home = true;
  spec.mounts[0] = (gp_proto_mount){.src = "/data", .dst = "/data", .ro = true};
  spec.n_mounts = 1;
  char *argv[] = {"python", "train.py", "--lr", "1e-4", NULL};
  const char *uuids[] = {"GPU-aaaa", "GPU-bbbb"};
  int minors[] = {0, 3};
  gid_t groups[] = {100, 27};
  gp_agent_container_task t = {.spec = &spec, .name = "gpool-7.0", .uid = 1000, .gid = 100,
                               .n_groups = 2, .groups = groups, .workdir = "/tmp", .home = "/",
                               .job_dir = "/var/lib/gpool/agent/jobs/7.0", .env_file = "/x/container.env",
                               .tasks = 2, .n_gpus = 2, .gpu_uuids = uuids, .gpu_minors = minors,
                               .n_argv = 4, .argv = argv};
  char msg[256];
  char **v = gp_agent_container_run_argv(&c, &caps, &t, msg, sizeof msg);
  REQUIRE(v != NULL);
  CHECK_EQ_STR("/usr/bin/podman", v[0]);
  CHECK_EQ_STR("--runtime", v[1]);
  CHECK_EQ_STR("runc", v[2]);
  CHECK_EQ_STR("run", v[3]);
  CHECK_EQ_STR("1000:100", v[index_of(v, "--user") + 1]);
  CHECK_EQ_STR("27", v[index_of(v, "--group-add") + 1]); /* the primary group is not repeated */
  CHECK(has_arg(v, "--cap-drop=all"));
  CHECK(has_arg(v, "--security-opt=no-new-privileges"));
  CHECK(has_arg(v, "--network=host"));
  CHECK(has_arg(v, "--ipc=host")); /* two tasks */
  CHECK(!has_arg(v, "--shm-size=16g")); /* the host's /dev/shm: podman refuses a size there */
  CHECK(has_arg(v, "nofile=20000:20000"));
  CHECK(has_arg(v, "nproc=32768:32768"));
  CHECK(has_arg(v, "memlock=8388608:8388608"));
  CHECK(has_arg(v, "--read-only"));
  CHECK(has_arg(v, "--volume=/tmp:/tmp"));
  CHECK(has_arg(v, "--volume=/data:/data:ro"));
  CHECK(has_arg(v, "--volume=/var/lib/gpool/agent/jobs/7.0:/var/lib/gpool/agent/jobs/7.0:ro"));
  CHECK(has_arg(v, "--workdir=/tmp"));
  CHECK(has_arg(v, "--device=nvidia.com/gpu=GPU-aaaa"));
  CHECK(has_arg(v, "--device=nvidia.com/gpu=GPU-bbbb"));
  CHECK(has_arg(v, "--log-driver=none"));
  int img = index_of(v, "reg.example:5000/team/img:1");
  REQUIRE(img > 0);
  CHECK_EQ_STR("python", v[img + 1]);
  CHECK_EQ_STR("1e-4", v[img + 4]);
  CHECK(v[img + 5] == NULL);
  CHECK(index_of(v, "--log-driver=none") < img); /* options before the image, never after */
  gp_agent_container_argv_free(v);

  /* A node with all the rights; simulated GPUs: no device; one task: no host IPC. */
  caps.set_ulimits = false;
  caps.runtime[0] = '\0';
  t.gpus_simulated = true;
  t.tasks = 1;
  spec.writable = true;
  spec.workdir = "/workspace";
  v = gp_agent_container_run_argv(&c, &caps, &t, msg, sizeof msg);
  REQUIRE(v != NULL);
  CHECK_EQ_STR("run", v[1]);
  CHECK(!has_arg(v, "--cgroup-manager=cgroupfs"));
  CHECK(!has_arg(v, "--ipc=host"));
  CHECK(has_arg(v, "--shm-size=16g")); /* its own IPC namespace: its own /dev/shm */
  CHECK(!has_arg(v, "--read-only"));
  CHECK(!has_arg(v, "nofile=20000:20000"));
  CHECK(has_arg(v, "memlock=-1:-1"));
  CHECK(has_arg(v, "--workdir=/workspace"));
  CHECK(has_arg(v, "--pull=never"));
  for (char **p = v; *p; p++) CHECK(strncmp(*p, "--device", 8) != 0);
  gp_agent_container_argv_free(v);

  char **pull = gp_agent_container_pull_argv(&c, &caps, spec.image);
  CHECK_EQ_STR("pull", pull[1]);
  CHECK_EQ_STR(spec.image, pull[3]);
  gp_agent_container_argv_free(pull);

  /* In the job's cgroup v2 tree: a parent by path, through the cgroupfs manager; an image
   * the inventory names: the run pulls it if it went since. */
  t.cgroup_parent = "/gpool/job-7.0";
  t.known_present = true;
  v = gp_agent_container_run_argv(&c, &caps, &t, msg, sizeof msg);
  REQUIRE(v != NULL);
  CHECK_EQ_STR("--cgroup-manager=cgroupfs", v[1]);
  CHECK(has_arg(v, "--cgroup-parent=/gpool/job-7.0"));
  CHECK(has_arg(v, "--pull=missing"));
  gp_agent_container_argv_free(v);
}

static void pull_reasons(void) {
  CHECK_EQ_STR("image not found", gp_agent_container_pull_reason(
      "Error: initializing source docker://127.0.0.1:5123/nope:1: reading manifest 1 in "
      "127.0.0.1:5123/nope: manifest unknown: manifest unknown"));
  CHECK_EQ_STR("unauthorized", gp_agent_container_pull_reason(
      "Error: initializing source docker://127.0.0.1:5123/gptest:1: reading manifest 1 in "
      "127.0.0.1:5123/gptest: unauthorized: authentication required"));
  CHECK_EQ_STR("registry unreachable", gp_agent_container_pull_reason(
      "Error: initializing source docker://127.0.0.1:5999/x:1: pinging container registry "
      "127.0.0.1:5999: Get \"http://127.0.0.1:5999/v2/\": dial tcp 127.0.0.1:5999: connect: "
      "connection refused"));
  CHECK_EQ_STR("image pull failed", gp_agent_container_pull_reason("Error: disk full"));
  CHECK_EQ_STR("image pull failed", gp_agent_container_pull_reason(NULL));
}

static void env_filter(void) {
  gp_proto_container spec = {0};
  CHECK(!gp_agent_container_env_passes(&spec, "PATH"));
  CHECK(!gp_agent_container_env_passes(&spec, "LD_LIBRARY_PATH"));
  CHECK(gp_agent_container_env_passes(&spec, "CUDA_VISIBLE_DEVICES"));
  CHECK(gp_agent_container_env_passes(&spec, "GPOOL_JOB_ID"));
  char *names[] = {"PATH"};
  spec.env = names;
  spec.n_env = 1;
  CHECK(gp_agent_container_env_passes(&spec, "PATH"));
}

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  REQUIRE(f != NULL);
  fputs(text, f);
  fclose(f);
}

static void detection(void) {
  char root[] = "/tmp/gp-ct-XXXXXX";
  REQUIRE(mkdtemp(root) != NULL);
  char p[512];
  const char *dirs[] = {"/proc", "/proc/self", "/proc/sys", "/proc/sys/kernel", "/sys", "/sys/fs",
                        "/sys/fs/cgroup", "/sys/fs/cgroup/unified", "/sys/fs/cgroup/memory", "/etc", "/etc/cdi"};
  for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++) {
    snprintf(p, sizeof p, "%s%s", root, dirs[i]);
    mkdir(p, 0755);
  }
  snprintf(p, sizeof p, "%s/proc/self/status", root);
  write_file(p, "Name:\tx\nCapEff:\t000001fffeffffff\n"); /* all but CAP_SYS_RESOURCE */
  snprintf(p, sizeof p, "%s/proc/sys/kernel/pid_max", root);
  write_file(p, "1\n"); /* lower than any hard limit: it bounds nproc */
  gp_agent_container_cfg c;
  gp_agent_container_cfg_init(&c);
  snprintf(c.engine, sizeof c.engine, "/bin/sh"); /* any executable stands for the engine */
  gp_agent_container_caps caps;
  gp_agent_container_detect(&c, root, &caps);
  CHECK(caps.available);
  CHECK(caps.set_ulimits);
  CHECK_EQ_INT(1, (int)caps.nproc);
  CHECK(!caps.cdi);
  snprintf(p, sizeof p, "%s/proc/self/status", root);
  write_file(p, "CapEff:\t000001ffffffffff\n");
  snprintf(p, sizeof p, "%s/etc/cdi/nvidia.yaml", root);
  write_file(p, "cdiVersion: 0.5.0\n");
  snprintf(c.runtime, sizeof c.runtime, "crun");
  gp_agent_container_detect(&c, root, &caps);
  CHECK(!caps.set_ulimits);
  CHECK(caps.cdi);
  CHECK_EQ_STR("crun", caps.runtime); /* configured: kept */
  snprintf(c.engine, sizeof c.engine, "no-such-engine-here");
  gp_agent_container_detect(&c, root, &caps);
  CHECK(!caps.available);
  CHECK_CONTAINS(caps.message, "no container engine");
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
  CHECK(system(cmd) == 0);
}

static void images_inventory(void) {
  const char *out = "[{\"Id\":\"a\",\"Names\":[\"127.0.0.1:5000/e2e/x:1\",\"-bad\"],\"Size\":1083737},"
                    "{\"Id\":\"b\",\"Size\":5},"                 /* untagged: left out */
                    "{\"Id\":\"c\",\"Names\":[\"busybox:1\"],\"Size\":-3}]";
  json_t *l = gp_agent_images_parse(out, strlen(out));
  REQUIRE(l != NULL);
  CHECK_EQ_INT(2, (int)json_array_size(l));
  json_t *a = json_array_get(l, 0);
  CHECK_EQ_INT(1, (int)json_array_size(json_object_get(a, "names"))); /* "-bad" dropped */
  CHECK_EQ_INT(1083737, (int)json_integer_value(json_object_get(a, "size")));
  CHECK_EQ_INT(0, (int)json_integer_value(json_object_get(json_array_get(l, 1), "size")));
  json_decref(l);
  CHECK(gp_agent_images_parse("{\"x\":1}", 7) == NULL);
  CHECK(gp_agent_images_parse("[", 1) == NULL);
  /* Bounded: a thousand images give GP_AGENT_MAX_IMAGES. */
  json_t *many = json_array();
  for (int i = 0; i < 1000; i++) json_array_append_new(many, json_pack("{s:[s], s:i}", "Names", "img:1", "Size", i));
  char *text = json_dumps(many, 0);
  l = gp_agent_images_parse(text, strlen(text));
  CHECK_EQ_INT(GP_AGENT_MAX_IMAGES, (int)json_array_size(l));
  json_decref(l);
  free(text);
  json_decref(many);
}

/* The store's cap (image_lru.c): the least recently used unused images go first, the
 * larger among equals; never one in use, even when that leaves the store over the cap. */
static void lru_pick(void) {
  gp_agent_image_entry v[4] = {
      {.id = "a", .size = 400, .last_used_ms = 3000},
      {.id = "b", .size = 300, .last_used_ms = 1000, .in_use = true},
      {.id = "c", .size = 200, .last_used_ms = 2000},
      {.id = "d", .size = 100, .last_used_ms = 2000},
  };
  int out[4];
  CHECK_EQ_INT(0, gp_agent_images_evict_pick(v, 4, 1000, out)); /* 1000 fit */
  CHECK_EQ_INT(1, gp_agent_images_evict_pick(v, 4, 800, out));  /* c: oldest unused, larger */
  CHECK_EQ_INT(2, out[0]);
  CHECK_EQ_INT(2, gp_agent_images_evict_pick(v, 4, 750, out));  /* c, then d */
  CHECK_EQ_INT(3, out[1]);
  CHECK_EQ_INT(3, gp_agent_images_evict_pick(v, 4, 10, out));   /* all but b, in use */
  CHECK_EQ_INT(0, out[2]);
  /* The engine's answer: one entry per id, in use from its count of containers, the
   * build time as the last use; ids that are no hex are skipped. */
  const char *text = "[{\"Id\":\"aa\",\"Names\":[\"r:5000/x:1\"],\"Size\":10,\"Created\":7,\"Containers\":0},"
                     "{\"Id\":\"aa\",\"Names\":[\"localhost/x:1\"],\"Size\":10,\"Containers\":0},"
                     "{\"Id\":\"bb\",\"Size\":5,\"Containers\":2},{\"Id\":\"-x\",\"Size\":1}]";
  gp_agent_image_entry e[4];
  uint64_t names[4][GP_AGENT_MAX_IMAGE_NAMES];
  int n_names[4];
  REQUIRE(gp_agent_images_entries(text, strlen(text), e, 4, names, n_names) == 2);
  CHECK_EQ_STR("aa", e[0].id);
  CHECK_EQ_INT(2, n_names[0]);
  CHECK(names[0][0] == gp_proto_image_hash("r:5000/x:1"));
  CHECK_EQ_INT(7000, (int)e[0].last_used_ms);
  CHECK(!e[0].in_use && e[1].in_use);
  CHECK_EQ_INT(-1, gp_agent_images_entries("{}", 2, e, 4, names, n_names));
}

/* container.image_store_max: a size in bytes or k, m, g, t; anything else is refused by name. */
static int64_t store_max(const char *yaml, int *rc) {
  gp_doc *d = NULL;
  gp_err err = {0};
  gp_agent_container_cfg c;
  gp_agent_container_cfg_init(&c);
  *rc = gp_doc_load_string("t", yaml, strlen(yaml), &d, &err);
  if (!*rc) *rc = gp_agent_container_cfg_load(d, gp_doc_get(d->root, "container"), &c, &err);
  if (*rc) CHECK_EQ_STR("container.image_store_max", err.field);
  gp_doc_free(d);
  return c.image_store_max;
}

static void store_cap_config(void) {
  int rc;
  CHECK(store_max("container: {image_store_max: 200g}\n", &rc) == (int64_t)200 << 30 && rc == 0);
  CHECK(store_max("container: {image_store_max: 5M}\n", &rc) == (int64_t)5 << 20 && rc == 0);
  CHECK(store_max("container: {image_store_max: 1234}\n", &rc) == 1234 && rc == 0);
  CHECK(store_max("container: {shm_size: 1g}\n", &rc) == 0 && rc == 0); /* no cap */
  store_max("container: {image_store_max: 5gb}\n", &rc);
  CHECK(rc != 0);
  store_max("container: {image_store_max: -1}\n", &rc);
  CHECK(rc != 0);
  store_max("container: {image_store_max: 2000t}\n", &rc);
  CHECK(rc != 0);
}

/* A pull's total from the image's manifest (pull_progress.c): config and layers; a list
 * names its entry for this platform; anything out of bounds gives no total. */
static void manifest_total(void) {
  static const char m[] = "{\"schemaVersion\":2,\"config\":{\"size\":409},\"layers\":"
                          "[{\"size\":41088414},{\"size\":1000}]}";
  char d[80];
  CHECK(gp_agent_manifest_total(m, strlen(m), "amd64", d, sizeof d) == 409 + 41088414 + 1000);
  static const char list[] =
      "{\"manifests\":[{\"digest\":\"sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\","
      "\"platform\":{\"os\":\"linux\",\"architecture\":\"arm64\"}},"
      "{\"digest\":\"sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\","
      "\"platform\":{\"os\":\"linux\",\"architecture\":\"amd64\"}}]}";
  CHECK(gp_agent_manifest_total(list, strlen(list), "amd64", d, sizeof d) == -2);
  CHECK_EQ_STR("sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", d);
  CHECK(gp_agent_manifest_total(list, strlen(list), "s390x", d, sizeof d) == -1);
  static const char *const bad[] = {
      "not json", "[]", "{\"layers\":[{\"size\":1}]}",                   /* no config */
      "{\"config\":{\"size\":1},\"layers\":[{\"size\":-5}]}",            /* negative */
      "{\"config\":{\"size\":1},\"layers\":[{\"size\":\"12\"}]}",        /* not a number */
      "{\"config\":{\"size\":1},\"layers\":[{\"size\":1125899906842625}]}", /* past 1 PiB */
      "{\"manifests\":[{\"digest\":\"sha256:--\",\"platform\":{\"os\":\"linux\",\"architecture\":\"amd64\"}}]}"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    CHECK(gp_agent_manifest_total(bad[i], strlen(bad[i]), "amd64", d, sizeof d) == -1);
}

/* skopeo's command line: the pull options it shares with the engine, and the job's
 * credential file; none without skopeo. */
static void inspect_line(void) {
  gp_agent_container_cfg c;
  gp_agent_container_cfg_init(&c);
  gp_agent_container_caps caps = {.available = true};
  CHECK(gp_agent_container_inspect_argv(&c, &caps, "") == NULL);
  snprintf(caps.inspect, sizeof caps.inspect, "/usr/bin/skopeo");
  static const char *const opts[] = {"--tls-verify=false", "--authfile", "/etc/node.json", "--quiet",
                                     "--cert-dir=/etc/certs"};
  c.n_pull_options = 5;
  for (int i = 0; i < 5; i++) snprintf(c.pull_options[i], sizeof c.pull_options[i], "%s", opts[i]);
  char **v = gp_agent_container_inspect_argv(&c, &caps, "/jobs/7/container.auth");
  REQUIRE(v != NULL);
  static const char *const want[] = {"/usr/bin/skopeo", "inspect", "--raw", "--tls-verify=false", "--authfile",
                                     "/etc/node.json", "--cert-dir=/etc/certs", "--authfile",
                                     "/jobs/7/container.auth", NULL};
  for (int i = 0; want[i]; i++) CHECK_EQ_STR(want[i], v[i]);
  CHECK(!has_arg(v, "--quiet"));
  gp_agent_container_argv_free(v);
}

GP_TESTS(manifest_total, inspect_line, run_line, pull_reasons, env_filter, detection, images_inventory, lru_pick,
         store_cap_config)
