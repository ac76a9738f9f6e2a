/* SPDX-License-Identifier: Apache-2.0 */
/* The NVML backend against a fake libnvidia-ml.so.1 (tests/agent/fake_nvml_so.c): the
 * dlopen path, symbol resolution with an older driver's missing entry points, discovery
 * (MIG, NVLink, ECC), sampling with fallbacks, per-process accounting, Xid events, a lost
 * GPU, and the clear "no NVIDIA GPU found" errors. */
#include <dlfcn.h>

#include "test.h"
#include "agent/gpu_nvml.h"
#include "agent/gpu_sim.h"
#include "agent/telemetry.h"

static char libdir[64];
static char libpath[128];

/* Puts the fake where a driver's library would be: <tmp>/libnvidia-ml.so.1. */
static void install_fake(void) {
  snprintf(libdir, sizeof libdir, "/tmp/gp_nvml_XXXXXX");
  REQUIRE(mkdtemp(libdir));
  snprintf(libpath, sizeof libpath, "%s/libnvidia-ml.so.1", libdir);
  REQUIRE(symlink(GP_TESTLIB_DIR "/fake_nvml_so/libfake_nvml_so.so", libpath) == 0);
  setenv("GPOOL_NVML_LIB", libpath, 1);
}

static void remove_fake(void) {
  unlink(libpath);
  rmdir(libdir);
}

static gp_gpu_backend *open_fake(void) {
  install_fake();
  gp_gpu_backend *b = NULL;
  gp_err e = {0};
  int rc = gp_gpu_nvml_open(NULL, &b, &e);
  if (rc) fprintf(stderr, "open: %s\n", e.message);
  REQUIRE(rc == 0 && b);
  return b;
}

static void discovery_reads_identity_mig_and_nvlink(void) {
  gp_gpu_backend *b = open_fake();
  CHECK_EQ_STR("nvml", b->ops->name);
  CHECK(b->ops->has_driver);
  gp_gpu_info in[GP_GPU_MAX_DEVICES];
  int n = 0;
  REQUIRE(b->ops->discover(b, in, GP_GPU_MAX_DEVICES, &n, NULL) == 0);
  CHECK_EQ_INT(2, n);
  CHECK_EQ_STR("NVIDIA H100 80GB HBM3", in[0].name);
  CHECK_EQ_STR("H100-80GB", in[0].model);
  CHECK_EQ_STR("GPU-aaaaaaaa-0000-0000-0000-000000000000", in[0].uuid);
  CHECK_EQ_STR("00000000:2A:00.0", in[1].pci_bus_id);
  CHECK_EQ_INT(81559, in[0].mem_mib);
  CHECK(in[0].ecc_enabled);
  /* Each GPU's link 0 goes to the other: one NVLink domain. */
  CHECK_EQ_INT(0, in[0].nvlink_domain);
  CHECK_EQ_INT(0, in[1].nvlink_domain);
  CHECK(!in[0].mig_enabled);
  REQUIRE(in[1].mig_enabled && in[1].n_mig == 1);
  CHECK_EQ_STR("MIG-11111111-2222-3333-4444-000000000005", in[1].mig[0].uuid);
  CHECK_EQ_STR("1g.10gb", in[1].mig[0].profile);
  CHECK_EQ_INT(5, in[1].mig[0].gpu_instance_id);
  CHECK_EQ_INT(2, in[1].mig[0].start_slot);
  CHECK_EQ_INT(9856, in[1].mig[0].mem_mib);
  b->ops->close(b);
  remove_fake();
}

static void an_older_driver_lacks_entry_points_and_still_works(void) {
  gp_gpu_backend *b = open_fake();
  char missing[1024];
  gp_gpu_nvml_missing(b, missing, sizeof missing);
  CHECK_CONTAINS(missing, "nvmlDeviceGetMemoryInfo_v2");
  CHECK_CONTAINS(missing, "nvmlDeviceGetCurrentClocksEventReasons");
  CHECK_CONTAINS(missing, "nvmlDeviceGetFieldValues");
  CHECK(!strstr(missing, "nvmlDeviceGetUUID"));
  gp_gpu_sample s;
  REQUIRE(b->ops->sample(b, 0, &s, NULL) == 0);
  /* Fallbacks: v1 memory info (no reserved figure), the old throttle-reason call. */
  CHECK_EQ_INT(1536, s.fb_used_mib);
  CHECK_EQ_INT(81559 - 1536, s.fb_free_mib);
  CHECK_EQ_INT(-1, s.fb_reserved_mib);
  CHECK_EQ_INT(0x4, (int)s.throttle_reasons);
  CHECK_EQ_INT(-1, s.mem_temp_c);          /* field values missing */
  CHECK_EQ_INT(-1, (int)s.nvlink_bandwidth_total);
  b->ops->close(b);
  remove_fake();
}

/* The driver sees the node's processes and faults by itself: what the agent says about its
 * jobs changes nothing, a fault cannot be faked and a reset stays with an operator. */
static void the_driver_needs_no_word_about_jobs(void) {
  gp_gpu_backend *b = open_fake();
  gp_err e = {0};
  int util = 5;
  int64_t mem = 5;
  CHECK_EQ_INT(0, b->ops->job_load(b, "35", "9G", &util, &mem, &e));
  CHECK_EQ_INT(-1, util);
  CHECK_EQ_INT(-1, (int)mem);
  CHECK_EQ_INT(0, b->ops->attach(b, 0, 4242, NULL, 50, 1024, &e));
  CHECK_EQ_INT(0, b->ops->detach(b, 4242));
  CHECK_EQ_INT(0, b->ops->reset(b, 0, &e));
  CHECK_EQ_INT(GP_EUNSUPP, gp_gpu_sim_inject_spec(b, "xid:79@gpu0", &e));
  CHECK_CONTAINS(e.message, "needs the simulated GPU backend (--sim)");
  CHECK_EQ_INT(GP_EINVAL, gp_gpu_sim_inject_spec(b, "nonsense@gpu0", &e));
  char missing[1024];
  b->ops->missing_readings(b, missing, sizeof missing);
  CHECK_CONTAINS(missing, "nvmlDeviceGetFieldValues");
  b->ops->close(b);
  remove_fake();
}

static void a_sample_carries_every_figure_and_each_process(void) {
  setenv("FAKE_NVML_PID", "31337", 1);
  gp_gpu_backend *b = open_fake();
  gp_gpu_sample s;
  gp_err e = {0};
  REQUIRE(b->ops->sample(b, 0, &s, &e) == 0);
  CHECK_EQ_INT(63, s.gpu_util_pct);
  CHECK_EQ_INT(21, s.mem_copy_util_pct);
  CHECK_NEAR(312.5, s.power_w, 0.001);
  CHECK_EQ_INT(123456789, s.energy_mj);
  CHECK_EQ_INT(55, s.temp_c);
  CHECK_EQ_INT(1755, s.sm_clock_mhz);
  CHECK_EQ_INT(2619, s.mem_clock_mhz);
  CHECK_EQ_INT(7, s.ecc_sbe_volatile);
  CHECK_EQ_INT(0, s.ecc_dbe_volatile);
  CHECK_EQ_INT(1, s.remapped_rows_correctable);
  CHECK(!s.row_remap_failure && !s.row_remap_pending);
  CHECK_EQ_INT(2, s.pcie_replay_counter);
  REQUIRE(s.n_procs == 1);
  CHECK_EQ_INT(31337, s.procs[0].pid);
  CHECK_EQ_INT(1024, s.procs[0].used_mib);
  CHECK_EQ_INT(36, s.procs[0].sm_util_pct); /* the mean of the new samples (30, 42) */
  CHECK_EQ_STR("", s.procs[0].mig_uuid);
  /* GPU 1 is in MIG mode: no device utilisation (unknown, not zero); its process sits on
   * the MIG instance and ran no kernels since the last read. */
  REQUIRE(b->ops->sample(b, 1, &s, &e) == 0);
  CHECK_EQ_INT(-1, s.gpu_util_pct);
  REQUIRE(s.n_procs == 1);
  CHECK_EQ_INT(31338, s.procs[0].pid);
  CHECK_EQ_INT(0, s.procs[0].sm_util_pct);
  CHECK_EQ_STR("MIG-11111111-2222-3333-4444-000000000005", s.procs[0].mig_uuid);
  CHECK_EQ_INT(GP_ENOENT, b->ops->sample(b, 2, &s, &e));
  b->ops->close(b);
  remove_fake();
}

static void an_mps_clients_utilisation_is_unknown_not_zero(void) {
  /* Under MPS the driver samples the clients' kernels under the server's pid: the client
   * (GPU 0's process) has no samples of its own. Zero would call a busy job idle. */
  setenv("FAKE_NVML_PID", "31337", 1);
  setenv("FAKE_NVML_MPS", "1", 1);
  gp_gpu_backend *b = open_fake();
  gp_gpu_sample s;
  REQUIRE(b->ops->sample(b, 0, &s, NULL) == 0);
  REQUIRE(s.n_procs == 1);
  CHECK_EQ_INT(31337, s.procs[0].pid);
  CHECK_EQ_INT(1024, s.procs[0].used_mib); /* its memory is still its own */
  CHECK_EQ_INT(-1, s.procs[0].sm_util_pct);
  /* GPU 1's process is no MPS client: no samples there still means it ran no kernels. */
  REQUIRE(b->ops->sample(b, 1, &s, NULL) == 0);
  CHECK_EQ_INT(0, s.procs[0].sm_util_pct);
  unsetenv("FAKE_NVML_MPS");
  b->ops->close(b);
  remove_fake();
}

static int64_t test_clock_ms;
static int64_t test_clock(void *ctx) {
  (void)ctx;
  return test_clock_ms;
}

static int fake_counter(const char *name) {
  void *h = dlopen(libpath, RTLD_NOW | RTLD_NOLOAD);
  REQUIRE(h);
  int (*count)(void) = (int (*)(void))dlsym(h, name);
  REQUIRE(count);
  int n = count();
  dlclose(h);
  return n;
}

static void slow_calls_are_spared_and_energy_integrates_power(void) {
  /* The energy counter (ms per read on real GPUs) is read once per 10 s and reported as
   * read in between; an idle GPU's utilisation list is not asked for. A job's energy
   * integrates the power read every round, so it grows while the counter stands still. */
  setenv("FAKE_NVML_IDLE", "1", 1);
  gp_gpu_backend *b = open_fake();
  gp_telemetry_opts to = {.hostname = "n1", .clock_ms = test_clock};
  gp_telemetry *t = NULL;
  REQUIRE(gp_telemetry_new(b, &to, &t, NULL) == 0);
  gp_telemetry_job j;
  memset(&j, 0, sizeof j);
  snprintf(j.id, sizeof j.id, "7");
  j.leader = 1;
  j.n_gpus = 1;
  j.gpus[0] = 0;
  REQUIRE(gp_telemetry_set_jobs(t, &j, 1, NULL) == 0);
  int energy0 = fake_counter("fake_nvml_energy_reads"), util0 = fake_counter("fake_nvml_util_reads");
  test_clock_ms = 1000;
  for (int round = 0; round < 3; round++, test_clock_ms += 1000) gp_telemetry_sample(t);
  CHECK_EQ_INT(2, fake_counter("fake_nvml_energy_reads") - energy0); /* once per GPU */
  CHECK_EQ_INT(0, fake_counter("fake_nvml_util_reads") - util0);
  gp_gpu_sample s;
  REQUIRE(b->ops->sample(b, 0, &s, NULL) == 0);
  CHECK_EQ_INT(123456789, s.energy_mj); /* the last read */
  gp_job_usage u;
  REQUIRE(gp_telemetry_job_usage(t, "7", &u) == 0);
  CHECK_NEAR(2 * 312.5, u.energy_j, 0.01); /* two rounds of 1 s at 312.5 W */
  gp_telemetry_free(t);
  b->ops->close(b);
  remove_fake();
}

static void long_process_lists_are_read_in_full_and_bounded(void) {
  /* 150 processes: more than a first buffer holds, so the backend asks again with the size
   * the driver named; the sample keeps the first GP_GPU_MAX_PROCS. */
  setenv("FAKE_NVML_PID", "50000", 1);
  setenv("FAKE_NVML_NPROCS", "150", 1);
  gp_gpu_backend *b = open_fake();
  gp_gpu_sample s;
  REQUIRE(b->ops->sample(b, 0, &s, NULL) == 0);
  CHECK_EQ_INT(GP_GPU_MAX_PROCS, s.n_procs);
  CHECK_EQ_INT(50000, s.procs[0].pid);
  CHECK_EQ_INT(50063, s.procs[63].pid);
  CHECK_EQ_INT(256, s.procs[10].used_mib);
  CHECK_EQ_INT(36, s.procs[0].sm_util_pct);  /* utilisation list (300 samples) read too */
  CHECK_EQ_INT(36, s.procs[63].sm_util_pct);
  b->ops->close(b);
  remove_fake();
}

static void xid_events_arrive_through_the_event_api(void) {
  setenv("FAKE_NVML_XID", "79", 1);
  gp_gpu_backend *b = open_fake();
  gp_gpu_event ev[4];
  int n = 0;
  REQUIRE(b->ops->poll_events(b, ev, 4, 10, &n) == 0);
  REQUIRE(n == 1);
  CHECK_EQ_INT(1, ev[0].gpu);
  CHECK_EQ_INT(79, ev[0].xid);
  CHECK_EQ_STR("MIG-11111111-2222-3333-4444-000000000005", ev[0].mig_uuid);
  REQUIRE(b->ops->poll_events(b, ev, 4, 10, &n) == 0);
  CHECK_EQ_INT(0, n);
  b->ops->close(b);
  remove_fake();
}

static void a_lost_gpu_fails_its_sample(void) {
  setenv("FAKE_NVML_MODE", "lost1", 1);
  gp_gpu_backend *b = open_fake();
  gp_gpu_sample s;
  gp_err e = {0};
  CHECK_EQ_INT(GP_EIO, b->ops->sample(b, 1, &s, &e));
  CHECK_CONTAINS(e.message, "fallen off the bus");
  CHECK_EQ_INT(0, b->ops->sample(b, 0, &s, &e));
  b->ops->close(b);
  remove_fake();
}

static void close_shuts_nvml_down(void) {
  gp_gpu_backend *b = open_fake();
  void *h = dlopen(libpath, RTLD_NOW | RTLD_NOLOAD);
  REQUIRE(h);
  int (*count)(void) = (int (*)(void))dlsym(h, "fake_nvml_init_count");
  REQUIRE(count);
  CHECK_EQ_INT(1, count());
  b->ops->close(b);
  /* Still mapped through our own handle: the backend called nvmlShutdown. */
  CHECK_EQ_INT(0, count());
  dlclose(h);
  remove_fake();
}

static void a_busy_gpu_is_not_repartitioned(void) {
  gp_gpu_backend *b = open_fake();
  const char *p[] = {"7g.80gb"};
  int s[] = {0};
  gp_err e = {0};
  CHECK_EQ_INT(GP_ESTATE, b->ops->set_mig_layout(b, 0, p, s, 1, &e)); /* a process runs */
  CHECK_CONTAINS(e.message, "busy");
  b->ops->close(b);
  remove_fake();
}

static void an_idle_mig_gpu_is_repartitioned_through_nvml(void) {
  setenv("FAKE_NVML_IDLE", "1", 1);
  gp_gpu_backend *b = open_fake();
  gp_err e = {0};
  /* The layout is checked against the model before NVML is touched. */
  const char *bad[] = {"4g.40gb", "4g.40gb"};
  int zero[] = {0, 0};
  CHECK_EQ_INT(GP_EINVAL, b->ops->set_mig_layout(b, 1, bad, zero, 2, &e));
  CHECK_CONTAINS(e.message, "overlaps");
  /* 4g + 3g replaces the 1g.10gb instance: GPU and compute instances at their placements. */
  const char *layout[] = {"4g.40gb", "3g.40gb"};
  int slots[] = {0, 4};
  int rc = b->ops->set_mig_layout(b, 1, layout, slots, 2, &e);
  if (rc) fprintf(stderr, "set_mig_layout: %s\n", e.message);
  REQUIRE(rc == 0);
  gp_gpu_info in[2];
  int n = 0;
  REQUIRE(b->ops->discover(b, in, 2, &n, NULL) == 0);
  REQUIRE(in[1].n_mig == 2);
  CHECK_EQ_STR("4g.40gb", in[1].mig[0].profile);
  CHECK_EQ_INT(0, in[1].mig[0].start_slot);
  CHECK_EQ_STR("3g.40gb", in[1].mig[1].profile);
  CHECK_EQ_INT(4, in[1].mig[1].start_slot);
  CHECK_EQ_INT(40192, in[1].mig[1].mem_mib);
  CHECK(strcmp(in[1].mig[0].uuid, "MIG-11111111-2222-3333-4444-000000000005") != 0);
  /* And back to one whole-GPU instance. */
  const char *whole[] = {"7g.80gb"};
  int s0[] = {0};
  CHECK_EQ_INT(0, b->ops->set_mig_layout(b, 1, whole, s0, 1, &e));
  b->ops->discover(b, in, 2, &n, NULL);
  REQUIRE(in[1].n_mig == 1);
  CHECK_EQ_STR("7g.80gb", in[1].mig[0].profile);
  /* GPU 0 is not in MIG mode: switching it needs a reset, which gpool does not do. */
  CHECK_EQ_INT(GP_ESTATE, b->ops->set_mig_layout(b, 0, whole, s0, 1, &e));
  CHECK_CONTAINS(e.message, "nvidia-smi -i 0 -mig 1");
  b->ops->close(b);
  remove_fake();
}

static void repartitioning_without_root_says_so(void) {
  setenv("FAKE_NVML_IDLE", "1", 1);
  setenv("FAKE_NVML_MODE", "noroot", 1);
  gp_gpu_backend *b = open_fake();
  const char *whole[] = {"7g.80gb"};
  int s0[] = {0};
  gp_err e = {0};
  CHECK_EQ_INT(GP_EPERM, b->ops->set_mig_layout(b, 1, whole, s0, 1, &e));
  CHECK_CONTAINS(e.message, "needs root");
  /* Nothing was destroyed: the old instance is still reported. */
  gp_gpu_info in[2];
  int n = 0;
  b->ops->discover(b, in, 2, &n, NULL);
  CHECK_EQ_INT(1, in[1].n_mig);
  b->ops->close(b);
  remove_fake();
}

static void no_driver_no_gpu_no_library_all_say_no_gpu_found(void) {
  gp_gpu_backend *b = NULL;
  gp_err e = {0};
  setenv("FAKE_NVML_MODE", "nodriver", 1);
  install_fake();
  CHECK_EQ_INT(GP_EUNSUPP, gp_gpu_nvml_open(NULL, &b, &e));
  CHECK_CONTAINS(e.message, "no NVIDIA GPU found");
  CHECK_CONTAINS(e.message, "driver is not loaded");
  setenv("FAKE_NVML_MODE", "nogpu", 1);
  CHECK_EQ_INT(GP_EUNSUPP, gp_gpu_nvml_open(NULL, &b, &e));
  CHECK_CONTAINS(e.message, "no NVIDIA GPU found");
  remove_fake();
  CHECK_EQ_INT(GP_EUNSUPP, gp_gpu_nvml_open("/nonexistent/libnvidia-ml.so.1", &b, &e));
  CHECK_CONTAINS(e.message, "no NVIDIA GPU found: cannot load /nonexistent/libnvidia-ml.so.1");
  /* A library that is not NVML at all. */
  CHECK_EQ_INT(GP_EUNSUPP, gp_gpu_nvml_open("libm.so.6", &b, &e));
  CHECK_CONTAINS(e.message, "not a usable NVML library (missing nvmlInit_v2)");
  CHECK(b == NULL);
}

static void the_simulated_backend_stands_in_only_when_asked(void) {
  setenv("GPOOL_NVML_LIB", "/nonexistent/libnvidia-ml.so.1", 1);
  gp_gpu_backend *b = NULL;
  gp_err e = {0};
  CHECK_EQ_INT(GP_EUNSUPP, gp_gpu_open_backend(NULL, false, "n1", &b, &e));
  CHECK_CONTAINS(e.message, "no NVIDIA GPU found");
  CHECK_EQ_INT(0, gp_gpu_open_backend("2xL40S", false, "n1", &b, &e));
  REQUIRE(b);
  CHECK_EQ_STR("sim", b->ops->name);
  b->ops->close(b);
  /* With a GPU present and --sim forced, the simulation wins. */
  install_fake();
  CHECK_EQ_INT(0, gp_gpu_open_backend("T4", true, "n1", &b, &e));
  CHECK_EQ_STR("sim", b->ops->name);
  b->ops->close(b);
  CHECK_EQ_INT(0, gp_gpu_open_backend("T4", false, "n1", &b, &e));
  CHECK_EQ_STR("nvml", b->ops->name);
  b->ops->close(b);
  remove_fake();
}

GP_TESTS(discovery_reads_identity_mig_and_nvlink, an_older_driver_lacks_entry_points_and_still_works,
         the_driver_needs_no_word_about_jobs,
         a_sample_carries_every_figure_and_each_process, an_mps_clients_utilisation_is_unknown_not_zero,
         slow_calls_are_spared_and_energy_integrates_power,
         long_process_lists_are_read_in_full_and_bounded,
         xid_events_arrive_through_the_event_api,
         a_lost_gpu_fails_its_sample, close_shuts_nvml_down, a_busy_gpu_is_not_repartitioned,
         an_idle_mig_gpu_is_repartitioned_through_nvml, repartitioning_without_root_says_so,
         no_driver_no_gpu_no_library_all_say_no_gpu_found,
         the_simulated_backend_stands_in_only_when_asked)
