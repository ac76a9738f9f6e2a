/* SPDX-License-Identifier: Apache-2.0 */
/* cgroup v2 limits, against a directory laid out like a delegated cgroup v2 sub-tree (the
 * CI machine's own cgroup tree is not writable): a job's cgroup gets cpu.max and memory.max,
 * OOM kills are noticed, and a tree without the controllers is refused with a sentence. */
#include <sys/stat.h>

#include "agent/cgroup.h"
#include "test.h"

static char root[160];

static void put(const char *rel, const char *text) {
  char path[300];
  snprintf(path, sizeof path, "%s/%s", root, rel);
  FILE *f = fopen(path, "w");
  REQUIRE(f);
  fputs(text, f);
  fclose(f);
}

static char *get(const char *rel) {
  char path[300];
  snprintf(path, sizeof path, "%s/%s", root, rel);
  FILE *f = fopen(path, "r");
  if (!f) return NULL;
  static char buf[512];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

static char base[128];

static void cleanup(void) {
  char cmd[200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
  if (system(cmd)) {}
}

static void fake_tree(bool controllers) {
  snprintf(base, sizeof base, "/tmp/gpool-cg-XXXXXX");
  REQUIRE(mkdtemp(base));
  snprintf(root, sizeof root, "%s/gpool", base);
  REQUIRE(mkdir(root, 0755) == 0);
  put("cgroup.controllers", controllers ? "cpuset cpu io memory pids\n" : "pids\n");
  put("cgroup.subtree_control", "");
}

static void job_cgroup_carries_cpu_and_memory_limits(void) {
  fake_tree(true);
  gp_cgroup cg;
  REQUIRE(gp_cgroup_probe(root, &cg) == 0);
  CHECK(cg.ok);
  CHECK_EQ_STR("+cpu +memory", get("cgroup.subtree_control"));
  char procs[800];
  gp_err err = {0};
  CHECK_EQ_INT(0, gp_cgroup_job_create(&cg, "17", 2500, 4096, procs, sizeof procs, &err));
  CHECK_EQ_STR("250000 100000", get("job-17/cpu.max")); /* 2.5 CPUs per 100 ms period */
  CHECK_EQ_STR("4294967296", get("job-17/memory.max"));
  CHECK_CONTAINS(procs, "/job-17/cgroup.procs");
  CHECK(!gp_cgroup_job_oom_killed(&cg, "17"));
  put("job-17/memory.events", "low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n");
  CHECK(gp_cgroup_job_oom_killed(&cg, "17"));
  /* No limits asked: the job still gets a cgroup, without caps. */
  CHECK_EQ_INT(0, gp_cgroup_job_create(&cg, "18", 0, 0, procs, sizeof procs, &err));
  CHECK_EQ_STR("max 100000", get("job-18/cpu.max"));
  CHECK_EQ_STR("max", get("job-18/memory.max"));
  cleanup();
}

static void tree_without_controllers_is_refused_with_a_reason(void) {
  fake_tree(false);
  gp_cgroup cg;
  CHECK_EQ_INT(GP_EUNSUPP, gp_cgroup_probe(root, &cg));
  CHECK(!cg.ok);
  CHECK_CONTAINS(cg.message, "lacks the cpu and memory controllers");
  CHECK_CONTAINS(cg.message, "not enforced");
  char procs[800];
  gp_err err = {0};
  CHECK_EQ_INT(GP_EUNSUPP, gp_cgroup_job_create(&cg, "1", 1000, 0, procs, sizeof procs, &err));
  cleanup();
}

static void root_outside_cgroup_v2_is_refused_and_never_created(void) {
  gp_cgroup cg;
  CHECK_EQ_INT(GP_EUNSUPP, gp_cgroup_probe("/proc/gpool-cannot-exist/gpool", &cg));
  CHECK_CONTAINS(cg.message, "cgroup v2 is not mounted at /proc/gpool-cannot-exist");
  CHECK_EQ_INT(0, access("/proc/gpool-cannot-exist", F_OK) == 0);
  /* A plain directory (like a cgroup v1 host's tmpfs /sys/fs/cgroup) is left untouched. */
  char plain[128], sub[200];
  snprintf(plain, sizeof plain, "/tmp/gpool-cg-XXXXXX");
  REQUIRE(mkdtemp(plain));
  snprintf(sub, sizeof sub, "%s/gpool", plain);
  CHECK_EQ_INT(GP_EUNSUPP, gp_cgroup_probe(sub, &cg));
  CHECK_CONTAINS(cg.message, "not enforced");
  CHECK(access(sub, F_OK) != 0);
  rmdir(plain);
}

GP_TESTS(job_cgroup_carries_cpu_and_memory_limits, tree_without_controllers_is_refused_with_a_reason,
         root_outside_cgroup_v2_is_refused_and_never_created)
