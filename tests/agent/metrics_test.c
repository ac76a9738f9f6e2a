/* SPDX-License-Identifier: Apache-2.0 */
/* The agent's /metrics as a Prometheus server and a Grafana dashboard see it: dcgm-exporter
 * names and labels, job labels, per-job figures on a shared GPU from per-process accounting
 * (not the device value copied to every job), MIG instance labels, health states, series
 * that vanish with their job, and text that promtool accepts. */
#include "test.h"
#include "agent/gpu_sim.h"
#include "agent/health.h"
#include "agent/metrics.h"
#include "agent/telemetry.h"

typedef struct node {
  gp_gpu_backend *b;
  gp_telemetry *t;
  gp_health *h;
  gp_telemetry_job jobs[4];
  int n_jobs;
} node;

static node *open_node(const char *spec) {
  node *n = calloc(1, sizeof *n);
  REQUIRE(gp_gpu_sim_open(spec, &(gp_gpu_sim_opts){.node_name = "gpu-node-1"}, &n->b, NULL) == 0);
  REQUIRE(gp_telemetry_new(n->b, &(gp_telemetry_opts){.hostname = "gpu-node-1"}, &n->t, NULL) == 0);
  n->h = gp_health_new(NULL, n->b);
  return n;
}

static void close_node(node *n) {
  gp_health_free(n->h);
  gp_telemetry_free(n->t);
  n->b->ops->close(n->b);
  free(n);
}

static void add_job(node *n, const char *id, const char *queue, const char *user, int gpu,
                    pid_t pid, int util, int64_t mem, const char *mig) {
  gp_telemetry_job *j = &n->jobs[n->n_jobs++];
  memset(j, 0, sizeof *j);
  snprintf(j->id, sizeof j->id, "%s", id);
  snprintf(j->queue, sizeof j->queue, "%s", queue);
  snprintf(j->user, sizeof j->user, "%s", user);
  j->leader = pid;
  j->n_gpus = 1;
  j->gpus[0] = gpu;
  if (mig) snprintf(j->mig_uuid, sizeof j->mig_uuid, "%s", mig);
  REQUIRE(gp_telemetry_set_jobs(n->t, n->jobs, n->n_jobs, NULL) == 0);
  REQUIRE(gp_gpu_sim_attach(n->b, gpu, pid, mig, util, mem, NULL) == 0);
}

static char *scrape(node *n) {
  gp_telemetry_sample(n->t);
  gp_buf b;
  gp_buf_init(&b, 0);
  gp_agent_metrics_text(n->t, n->h, &b);
  REQUIRE(!gp_buf_truncated(&b));
  return gp_buf_steal(&b);
}

/* The value of the first series whose line starts with `prefix` and contains all of the
 * NULL-terminated `needles`; NAN when none. */
static double value_of(const char *text, const char *prefix, const char *const *needles) {
  const char *p = text;
  while ((p = strstr(p, prefix)) != NULL) {
    if (p != text && p[-1] != '\n') {
      p++;
      continue;
    }
    const char *eol = strchr(p, '\n');
    size_t len = eol ? (size_t)(eol - p) : strlen(p);
    char line[2048];
    if (len >= sizeof line) len = sizeof line - 1;
    memcpy(line, p, len);
    line[len] = '\0';
    bool all = true;
    for (int i = 0; needles && needles[i] && all; i++) all = strstr(line, needles[i]) != NULL;
    if (all && line[strlen(prefix)] == '{') return atof(strrchr(line, ' ') + 1);
    p += len;
  }
  return NAN;
}

static int count_lines(const char *text, const char *prefix) {
  int n = 0;
  for (const char *p = text; (p = strstr(p, prefix)) != NULL; p++)
    if (p == text || p[-1] == '\n') n++;
  return n;
}

static void dcgm_names_and_labels_are_there(void) {
  node *n = open_node("2xH100-80GB");
  add_job(n, "12", "org/vision", "alice", 0, 81001, 70, 10240, NULL);
  char *t = scrape(n);
  CHECK_CONTAINS(t, "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n");
  gp_gpu_info info[2];
  int ng;
  n->b->ops->discover(n->b, info, 2, &ng, NULL);
  char want[512];
  snprintf(want, sizeof want,
           "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"%s\",pci_bus_id=\"%s\",device=\"nvidia0\","
           "modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"gpu-node-1\",hostname=\"gpu-node-1\","
           "job=\"12\",queue=\"org/vision\",user=\"alice\"} 70\n",
           info[0].uuid, info[0].pci_bus_id);
  CHECK_CONTAINS(t, want);
  /* An idle GPU has no job labels. */
  CHECK_CONTAINS(t, "DCGM_FI_DEV_GPU_UTIL{gpu=\"1\",");
  const char *idle[] = {"gpu=\"1\"", "job=", NULL};
  CHECK(isnan(value_of(t, "DCGM_FI_DEV_GPU_UTIL", idle)));
  const char *g0[] = {"gpu=\"0\"", NULL};
  CHECK_EQ_INT(10240, (int)value_of(t, "DCGM_FI_DEV_FB_USED", g0));
  CHECK(value_of(t, "DCGM_FI_DEV_POWER_USAGE", g0) > 400);
  CHECK_EQ_INT(0, (int)value_of(t, "DCGM_FI_DEV_XID_ERRORS", g0));
  static const char *names[] = {
      "DCGM_FI_DEV_MEM_COPY_UTIL", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_FB_RESERVED",
      "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_MEMORY_TEMP",
      "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_MEM_CLOCK", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
      "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL",
      "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
      "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "DCGM_FI_DEV_ROW_REMAP_FAILURE"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    char prefix[128];
    snprintf(prefix, sizeof prefix, "%s{gpu=\"0\"", names[i]);
    CHECK_CONTAINS(t, prefix);
  }
  free(t);
  close_node(n);
}

static void shared_gpu_jobs_get_their_own_series_not_a_copy(void) {
  node *n = open_node("H100-80GB");
  add_job(n, "21", "org/a", "ann", 0, 82001, 30, 8192, NULL);
  add_job(n, "22", "org/b", "ben", 0, 82002, 45, 4096, NULL);
  char *t = scrape(n);
  /* The device says 75%; each job says its own share. */
  const char *g0[] = {"gpu=\"0\"", NULL};
  CHECK_EQ_INT(75, (int)value_of(t, "DCGM_FI_DEV_GPU_UTIL", g0));
  const char *dev_job[] = {"job=", NULL};
  CHECK(isnan(value_of(t, "DCGM_FI_DEV_GPU_UTIL", dev_job))); /* no job owns the device */
  const char *j21[] = {"job=\"21\"", "queue=\"org/a\"", "user=\"ann\"", NULL};
  const char *j22[] = {"job=\"22\"", NULL};
  CHECK_EQ_INT(30, (int)value_of(t, "gpool_job_gpu_sm_util_percent", j21));
  CHECK_EQ_INT(45, (int)value_of(t, "gpool_job_gpu_sm_util_percent", j22));
  CHECK_NEAR(8192.0 * 1048576, value_of(t, "gpool_job_gpu_memory_used_bytes", j21), 1);
  CHECK_NEAR(4096.0 * 1048576, value_of(t, "gpool_job_gpu_memory_used_bytes", j22), 1);
  free(t);
  /* Job 21 ends: its series vanish (bounded cardinality). */
  gp_gpu_sim_detach(n->b, 82001);
  n->jobs[0] = n->jobs[1];
  n->n_jobs = 1;
  gp_telemetry_set_jobs(n->t, n->jobs, 1, NULL);
  t = scrape(n);
  CHECK(!strstr(t, "job=\"21\""));
  CHECK_EQ_INT(1, count_lines(t, "gpool_job_gpu_sm_util_percent{"));
  /* Job 22 now holds the GPU alone: the device series carry its labels. */
  CHECK_EQ_INT(45, (int)value_of(t, "DCGM_FI_DEV_GPU_UTIL", j22));
  free(t);
  close_node(n);
}

static void mig_instances_carry_gpu_instance_labels(void) {
  node *n = open_node("A100-40GB");
  const char *layout[] = {"3g.20gb", "3g.20gb"};
  int slots[] = {0, 4};
  REQUIRE(n->b->ops->set_mig_layout(n->b, 0, layout, slots, 2, NULL) == 0);
  REQUIRE(gp_telemetry_rediscover(n->t, NULL) == 0);
  gp_gpu_info info[1];
  int ng;
  n->b->ops->discover(n->b, info, 1, &ng, NULL);
  add_job(n, "31", "q", "u", 0, 83001, 50, 5000, info[0].mig[1].uuid);
  char *t = scrape(n);
  const char *inst[] = {"GPU_I_PROFILE=\"3g.20gb\"", "GPU_I_ID=\"2\"", NULL};
  CHECK_EQ_INT(5000, (int)value_of(t, "DCGM_FI_DEV_FB_USED", inst));
  const char *inst1[] = {"GPU_I_ID=\"1\"", NULL};
  CHECK_EQ_INT(0, (int)value_of(t, "DCGM_FI_DEV_FB_USED", inst1));
  CHECK_EQ_INT(20480, (int)value_of(t, "DCGM_FI_DEV_FB_FREE", inst1));
  const char *job[] = {"job=\"31\"", "gpu_i_profile=\"3g.20gb\"", "gpu_i_id=\"2\"", NULL};
  CHECK_EQ_INT(50, (int)value_of(t, "gpool_job_gpu_sm_util_percent", job));
  free(t);
  close_node(n);
}

static void faults_show_as_last_xid_and_health_state(void) {
  node *n = open_node("2xH100");
  free(scrape(n));
  REQUIRE(gp_gpu_sim_inject_spec(n->b, "xid:79@gpu1", NULL) == 0);
  gp_telemetry_sample(n->t);
  gp_gpu_event ev[8];
  int nev = 0;
  gp_telemetry_take_events(n->t, ev, 8, &nev);
  gp_telemetry_view *v = malloc(sizeof *v);
  gp_telemetry_view_get(n->t, v);
  gp_health_action acts[8];
  int na = 0;
  gp_health_evaluate(n->h, v, ev, nev, NULL, 0, 1000, acts, 8, &na);
  free(v);
  gp_buf b;
  gp_buf_init(&b, 0);
  gp_agent_metrics_text(n->t, n->h, &b);
  char *t = gp_buf_steal(&b);
  /* The lost GPU has no device series (nothing made up), but its state is visible. */
  const char *g1[] = {"gpu=\"1\"", NULL};
  CHECK(isnan(value_of(t, "DCGM_FI_DEV_GPU_UTIL", g1)));
  CHECK_EQ_INT(0, (int)value_of(t, "gpool_gpu_sample_ok", g1));
  CHECK_EQ_INT(0, (int)value_of(t, "gpool_gpu_healthy", g1));
  CHECK_EQ_INT(1, (int)value_of(t, "gpool_gpu_xid_events_total", g1));
  const char *drained[] = {"gpu=\"1\"", "reason=\"xid 79 (GPU has fallen off the bus) on GPU 1\"", NULL};
  CHECK_EQ_INT(1, (int)value_of(t, "gpool_gpu_drained_info", drained));
  const char *g0[] = {"gpu=\"0\"", NULL};
  CHECK_EQ_INT(1, (int)value_of(t, "gpool_gpu_healthy", g0));
  free(t);
  close_node(n);
}

static void a_stranger_process_keeps_job_labels_off_the_device_series(void) {
  node *n = open_node("H100-80GB");
  add_job(n, "41", "q", "u", 0, 85001, 30, 1024, NULL);
  REQUIRE(gp_gpu_sim_attach(n->b, 0, 85999, NULL, 40, 2048, NULL) == 0); /* nobody's process */
  char *t = scrape(n);
  const char *dev_job[] = {"job=", NULL};
  CHECK(isnan(value_of(t, "DCGM_FI_DEV_GPU_UTIL", dev_job)));
  const char *j41[] = {"job=\"41\"", NULL};
  CHECK_EQ_INT(30, (int)value_of(t, "gpool_job_gpu_sm_util_percent", j41));
  free(t);
  close_node(n);
}

/* promtool must find no format error; its naming lint may object only to dcgm-exporter's
 * own names, which are kept for dashboard compatibility. */
static void promtool_accepts_the_agent_metrics(void) {
  if (system("command -v promtool >/dev/null 2>&1") != 0) {
    fprintf(stderr, "  promtool not installed (Debian package prometheus)\n");
    exit(1);
  }
  node *n = open_node("2xH100");
  add_job(n, "1", "org/\"odd\" queue", "u\\ser", 0, 84001, 40, 1000, NULL);
  add_job(n, "2", "q", "v", 0, 84002, 40, 1000, NULL);
  REQUIRE(gp_gpu_sim_inject_spec(n->b, "xid:13@gpu1", NULL) == 0);
  char *t = scrape(n);
  char path[] = "/tmp/gp_agent_metrics_XXXXXX";
  int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  REQUIRE(write(fd, t, strlen(t)) == (ssize_t)strlen(t));
  close(fd);
  char cmd[256];
  snprintf(cmd, sizeof cmd, "promtool check metrics < %s 2>&1", path);
  FILE *p = popen(cmd, "r");
  REQUIRE(p);
  char line[512];
  int foreign = 0;
  while (fgets(line, sizeof line, p)) {
    if (strncmp(line, "DCGM_FI_", 8) != 0) {
      fprintf(stderr, "  promtool: %s", line);
      foreign++;
    }
  }
  int st = pclose(p);
  unlink(path);
  CHECK(WIFEXITED(st));
  int rc = WEXITSTATUS(st);
  CHECK(rc == 0 || rc == 3); /* 1 would be a format error */
  CHECK_EQ_INT(0, foreign);
  free(t);
  close_node(n);
}

GP_TESTS(dcgm_names_and_labels_are_there, shared_gpu_jobs_get_their_own_series_not_a_copy,
         mig_instances_carry_gpu_instance_labels, faults_show_as_last_xid_and_health_state,
         a_stranger_process_keeps_job_labels_off_the_device_series,
         promtool_accepts_the_agent_metrics)
