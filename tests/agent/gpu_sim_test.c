/* SPDX-License-Identifier: Apache-2.0 */
/* The simulated GPU backend as an agent (and a user of `gpool agent --sim`) sees it:
 * specs, stable identities, load that follows the jobs, faults on demand, MIG layouts. */
#include "test.h"
#include "agent/gpu_sim.h"

static int64_t virtual_ms;
static int64_t vclock(void *ctx) {
  (void)ctx;
  return virtual_ms;
}

static gp_gpu_backend *open_sim(const char *spec, const char *node) {
  gp_gpu_backend *b = NULL;
  gp_err e = {0};
  gp_gpu_sim_opts o = {.node_name = node, .clock_ms = vclock};
  if (gp_gpu_sim_open(spec, &o, &b, &e)) fprintf(stderr, "open %s: %s\n", spec, e.message);
  REQUIRE(b);
  return b;
}

static void an_h100_node_has_eight_gpus_in_one_nvlink_domain(void) {
  gp_gpu_backend *b = open_sim("8xH100-80GB", "n1");
  gp_gpu_info info[GP_GPU_MAX_DEVICES];
  int n = 0;
  CHECK_EQ_INT(0, b->ops->discover(b, info, GP_GPU_MAX_DEVICES, &n, NULL));
  CHECK_EQ_INT(8, n);
  CHECK_EQ_STR("H100-80GB", info[7].model);
  CHECK_EQ_STR("NVIDIA H100 80GB HBM3", info[0].name);
  CHECK_EQ_INT(81920, info[3].mem_mib);
  CHECK_EQ_INT(0, info[0].nvlink_domain);
  CHECK_EQ_INT(0, info[7].nvlink_domain);
  CHECK_EQ_INT(7, info[7].index);
  CHECK(strncmp(info[0].uuid, "GPU-", 4) == 0 && strlen(info[0].uuid) == 40);
  CHECK(strcmp(info[0].uuid, info[1].uuid) != 0);
  CHECK(strcmp(info[0].pci_bus_id, info[1].pci_bus_id) != 0);
  CHECK_EQ_STR("sim", b->ops->name);
  CHECK(!b->ops->has_driver);
  b->ops->close(b);
}

static void mixed_specs_and_pcie_parts_have_no_nvlink(void) {
  gp_gpu_backend *b = open_sim("4xA100-40GB, 2xL40S", "n1");
  gp_gpu_info info[GP_GPU_MAX_DEVICES];
  int n = 0;
  b->ops->discover(b, info, GP_GPU_MAX_DEVICES, &n, NULL);
  CHECK_EQ_INT(6, n);
  CHECK_EQ_INT(0, info[3].nvlink_domain);
  CHECK_EQ_INT(-1, info[4].nvlink_domain);
  CHECK_EQ_STR("L40S", info[5].model);
  CHECK_EQ_INT(49152, info[5].mem_mib);
  b->ops->close(b);
  /* Two boards of four V100s: two domains; an alias works. */
  b = open_sim("8xV100-32GB,h100", "n1");
  b->ops->discover(b, info, GP_GPU_MAX_DEVICES, &n, NULL);
  CHECK_EQ_INT(9, n);
  CHECK_EQ_INT(0, info[3].nvlink_domain);
  CHECK_EQ_INT(1, info[4].nvlink_domain);
  CHECK_EQ_INT(2, info[8].nvlink_domain);
  CHECK_EQ_STR("H100-80GB", info[8].model);
  b->ops->close(b);
}

static void bad_specs_are_refused_with_the_reason(void) {
  gp_gpu_backend *b = NULL;
  gp_err e = {0};
  CHECK_EQ_INT(GP_EINVAL, gp_gpu_sim_open("8xH900", NULL, &b, &e));
  CHECK_CONTAINS(e.message, "unknown GPU model 'H900'");
  CHECK_CONTAINS(e.message, "H100-80GB");
  CHECK_EQ_INT(GP_EINVAL, gp_gpu_sim_open("0xH100", NULL, &b, &e));
  CHECK_EQ_INT(GP_EINVAL, gp_gpu_sim_open("17xH100", NULL, &b, &e));
  CHECK_CONTAINS(e.message, "1 to 16");
  CHECK_EQ_INT(GP_EINVAL, gp_gpu_sim_open("16xT4,16xT4,1xT4", NULL, &b, &e));
  CHECK_CONTAINS(e.message, "more than 32");
  CHECK_EQ_INT(GP_EINVAL, gp_gpu_sim_open("", NULL, &b, &e));
  CHECK_EQ_INT(GP_EINVAL, gp_gpu_sim_open(",,", NULL, &b, &e));
  CHECK_EQ_INT(GP_EINVAL, gp_gpu_sim_open("99999999999xH100", NULL, &b, &e));
  CHECK(b == NULL);
}

static void uuids_survive_a_restart_and_differ_between_nodes(void) {
  gp_gpu_info a[8], b2[8], c[8];
  int n;
  gp_gpu_backend *b = open_sim("2xH100", "node-a");
  b->ops->discover(b, a, 8, &n, NULL);
  b->ops->close(b);
  b = open_sim("2xH100", "node-a");
  b->ops->discover(b, b2, 8, &n, NULL);
  b->ops->close(b);
  b = open_sim("2xH100", "node-b");
  b->ops->discover(b, c, 8, &n, NULL);
  b->ops->close(b);
  CHECK_EQ_STR(a[1].uuid, b2[1].uuid);
  CHECK(strcmp(a[1].uuid, c[1].uuid) != 0);
  /* Neighbours do not share a prefix (CUDA_VISIBLE_DEVICES accepts unique UUID prefixes). */
  CHECK(strncmp(a[0].uuid, a[1].uuid, 8) != 0);
}

static void load_follows_the_jobs_and_each_job_keeps_its_own_figures(void) {
  virtual_ms = 0;
  gp_gpu_backend *b = open_sim("2xA100-80GB", "n1");
  gp_gpu_sample s;
  CHECK_EQ_INT(0, b->ops->sample(b, 0, &s, NULL));
  CHECK_EQ_INT(0, s.gpu_util_pct);
  CHECK_EQ_INT(0, s.n_procs);
  CHECK_EQ_INT(0, s.fb_used_mib);
  CHECK(s.throttle_reasons & 1); /* idle */
  int util;
  int64_t mem;
  gp_err e = {0};
  CHECK_EQ_INT(0, gp_gpu_sim_parse_load("35", "9G", &util, &mem, &e));
  CHECK_EQ_INT(0, gp_gpu_sim_attach(b, 0, 1001, NULL, util, mem, &e));
  CHECK_EQ_INT(0, gp_gpu_sim_attach(b, 0, 2002, NULL, 50, 2048, &e));
  CHECK_EQ_INT(0, b->ops->sample(b, 0, &s, NULL));
  CHECK_EQ_INT(85, s.gpu_util_pct);
  CHECK_EQ_INT(9216 + 2048, s.fb_used_mib);
  CHECK_EQ_INT(81920, s.fb_used_mib + s.fb_free_mib + s.fb_reserved_mib);
  REQUIRE(s.n_procs == 2);
  int first = s.procs[0].pid == 1001 ? 0 : 1;
  CHECK_EQ_INT(35, s.procs[first].sm_util_pct);
  CHECK_EQ_INT(9216, s.procs[first].used_mib);
  CHECK_EQ_INT(50, s.procs[1 - first].sm_util_pct);
  /* Over-subscribed: the device saturates, processes share like time-slicing. */
  CHECK_EQ_INT(0, gp_gpu_sim_attach(b, 0, 3003, NULL, 65, 0, &e));
  b->ops->sample(b, 0, &s, NULL);
  CHECK_EQ_INT(100, s.gpu_util_pct);
  int sum = 0;
  for (int i = 0; i < s.n_procs; i++) sum += s.procs[i].sm_util_pct;
  CHECK(sum <= 100 && sum >= 98);
  /* The other GPU saw nothing. */
  b->ops->sample(b, 1, &s, NULL);
  CHECK_EQ_INT(0, s.gpu_util_pct);
  /* Jobs end: back to idle. */
  CHECK_EQ_INT(1, gp_gpu_sim_detach(b, 1001));
  CHECK_EQ_INT(1, gp_gpu_sim_detach(b, 2002));
  CHECK_EQ_INT(1, gp_gpu_sim_detach(b, 3003));
  CHECK_EQ_INT(0, gp_gpu_sim_detach(b, 3003));
  b->ops->sample(b, 0, &s, NULL);
  CHECK_EQ_INT(0, s.gpu_util_pct);
  CHECK_EQ_INT(0, s.n_procs);
  /* Defaults and refusals. */
  CHECK_EQ_INT(0, gp_gpu_sim_attach(b, 1, 77, NULL, -1, -1, &e));
  b->ops->sample(b, 1, &s, NULL);
  CHECK_EQ_INT(80, s.gpu_util_pct);
  CHECK_EQ_INT(8192, s.fb_used_mib);
  CHECK_EQ_INT(GP_ENOENT, gp_gpu_sim_attach(b, 2, 77, NULL, 1, 1, &e));
  CHECK_EQ_INT(GP_EINVAL, gp_gpu_sim_attach(b, 1, 77, NULL, 101, 1, &e));
  CHECK_EQ_INT(GP_ENOENT, gp_gpu_sim_attach(b, 1, 77, "MIG-nope", 1, 1, &e));
  CHECK_EQ_INT(GP_EINVAL, gp_gpu_sim_parse_load("abc", NULL, &util, &mem, &e));
  CHECK_EQ_STR("GPOOL_SIM_UTIL", e.field);
  CHECK_EQ_INT(GP_EINVAL, gp_gpu_sim_parse_load(NULL, "lots", &util, &mem, &e));
  CHECK_EQ_STR("GPOOL_SIM_MEM", e.field);
  CHECK_EQ_INT(0, gp_gpu_sim_parse_load(NULL, NULL, &util, &mem, &e));
  CHECK_EQ_INT(-1, util);
  b->ops->close(b);
}

/* The agent reaches the model only through the backend's operations (gpu.h). */
static void the_operations_drive_the_model(void) {
  virtual_ms = 0;
  gp_gpu_backend *b = open_sim("2xA100-80GB", "n1");
  gp_err e = {0};
  char missing[64] = "x";
  b->ops->missing_readings(b, missing, sizeof missing);
  CHECK_EQ_STR("", missing);
  int util;
  int64_t mem;
  CHECK_EQ_INT(0, b->ops->job_load(b, "35", "9G", &util, &mem, &e));
  CHECK_EQ_INT(35, util);
  CHECK_EQ_INT(9216, (int)mem);
  CHECK_EQ_INT(GP_EINVAL, b->ops->job_load(b, "abc", NULL, &util, &mem, &e));
  CHECK_EQ_INT(0, b->ops->attach(b, 1, 1001, NULL, 35, 9216, &e));
  gp_gpu_sample s;
  CHECK_EQ_INT(0, b->ops->sample(b, 1, &s, NULL));
  CHECK_EQ_INT(35, s.gpu_util_pct);
  CHECK_EQ_INT(GP_ESTATE, b->ops->reset(b, 1, &e)); /* busy */
  CHECK_EQ_INT(1, b->ops->detach(b, 1001));
  CHECK_EQ_INT(0, b->ops->sample(b, 1, &s, NULL));
  CHECK_EQ_INT(0, s.n_procs);
  gp_proto_fault f;
  int n = 0;
  REQUIRE(gp_proto_fault_parse("xid:79@gpu1", &f, 1, &n, &e) == 0);
  CHECK_EQ_INT(0, b->ops->inject(b, &f, n, &e));
  CHECK(b->ops->sample(b, 1, &s, NULL) != 0); /* fell off the bus */
  CHECK_EQ_INT(0, b->ops->reset(b, 1, &e));
  CHECK_EQ_INT(0, b->ops->sample(b, 1, &s, NULL));
  b->ops->close(b);
}

static void energy_integrates_power_over_time(void) {
  virtual_ms = 1000;
  gp_gpu_backend *b = open_sim("H100", "n1"); /* idle 70 W, max 700 W */
  gp_gpu_sample s;
  virtual_ms = 2000; /* 1 s idle: 70 J */
  b->ops->sample(b, 0, &s, NULL);
  CHECK_EQ_INT(70000, s.energy_mj);
  CHECK_NEAR(70, s.power_w, 0.01);
  gp_gpu_sim_attach(b, 0, 10, NULL, 100, 1024, NULL);
  virtual_ms = 4000; /* 2 s at full load: 1400 J more */
  b->ops->sample(b, 0, &s, NULL);
  CHECK_NEAR(700, s.power_w, 0.01);
  CHECK_EQ_INT(70000 + 1400000, s.energy_mj);
  CHECK_EQ_INT(1980, s.sm_clock_mhz);
  b->ops->close(b);
}

static void injected_faults_fire_on_time(void) {
  virtual_ms = 0;
  gp_gpu_backend *b = open_sim("4xH100", "n1");
  gp_err e = {0};
  CHECK_EQ_INT(0, gp_gpu_sim_inject_spec(b, "xid:79@gpu3,after=5s; ecc_sbe:20@gpu1", &e));
  gp_gpu_event ev[8];
  int n = -1;
  CHECK_EQ_INT(0, b->ops->poll_events(b, ev, 8, 0, &n));
  CHECK_EQ_INT(0, n); /* not yet */
  gp_gpu_sample s;
  b->ops->sample(b, 1, &s, NULL);
  CHECK_EQ_INT(20, s.ecc_sbe_volatile);
  virtual_ms = 5000;
  CHECK_EQ_INT(0, b->ops->poll_events(b, ev, 8, 0, &n));
  REQUIRE(n == 1);
  CHECK_EQ_INT(3, ev[0].gpu);
  CHECK_EQ_INT(79, ev[0].xid);
  CHECK_EQ_INT(5000, ev[0].at_ms);
  /* The GPU fell off the bus: it cannot be read until it is reset. */
  CHECK_EQ_INT(GP_EIO, b->ops->sample(b, 3, &s, &e));
  CHECK_CONTAINS(e.message, "fallen off the bus");
  CHECK_EQ_INT(0, gp_gpu_sim_reset(b, 3, &e));
  CHECK_EQ_INT(0, b->ops->sample(b, 3, &s, &e));
  /* A double-bit error raises the counter and reports Xid 48. */
  gp_gpu_sim_inject_spec(b, "ecc_dbe:1@gpu0", &e);
  b->ops->poll_events(b, ev, 8, 0, &n);
  REQUIRE(n == 1);
  CHECK_EQ_INT(48, ev[0].xid);
  b->ops->sample(b, 0, &s, NULL);
  CHECK_EQ_INT(1, s.ecc_dbe_volatile);
  /* Throttling for a while, then it ends by itself. */
  gp_gpu_sim_inject_spec(b, "thermal@gpu2,for=10s;remap_failure@gpu1;pcie_replay:3@gpu2", &e);
  b->ops->sample(b, 2, &s, NULL);
  CHECK(s.throttle_reasons & 0x40);
  CHECK_EQ_INT(92, s.temp_c);
  CHECK_EQ_INT(3, s.pcie_replay_counter);
  virtual_ms = 16000;
  b->ops->sample(b, 2, &s, NULL);
  CHECK(!(s.throttle_reasons & 0x40));
  b->ops->sample(b, 1, &s, NULL);
  CHECK(s.row_remap_failure);
  /* A reset does not cure a failed remap; a busy GPU cannot be reset. */
  gp_gpu_sim_reset(b, 1, &e);
  b->ops->sample(b, 1, &s, NULL);
  CHECK(s.row_remap_failure);
  gp_gpu_sim_attach(b, 1, 5, NULL, 10, 10, NULL);
  CHECK_EQ_INT(GP_ESTATE, gp_gpu_sim_reset(b, 1, &e));
  /* Faults for a GPU the node lacks. */
  CHECK_EQ_INT(GP_ENOENT, gp_gpu_sim_inject_spec(b, "xid:79@gpu9", &e));
  CHECK_CONTAINS(e.message, "no GPU 9");
  b->ops->close(b);
}

static void poll_events_waits_for_a_delayed_fault_in_real_time(void) {
  gp_gpu_backend *b = NULL;
  REQUIRE(gp_gpu_sim_open("T4", NULL, &b, NULL) == 0);
  REQUIRE(gp_gpu_sim_inject_spec(b, "xid:13@gpu0,after=150ms", NULL) == 0);
  gp_gpu_event ev[4];
  int n = 0;
  CHECK_EQ_INT(0, b->ops->poll_events(b, ev, 4, 2000, &n));
  CHECK_EQ_INT(1, n);
  CHECK_EQ_INT(13, ev[0].xid);
  CHECK_EQ_INT(0, b->ops->poll_events(b, ev, 4, 20, &n));
  CHECK_EQ_INT(0, n);
  b->ops->close(b);
}

static void mig_layouts_are_validated_and_refused_when_busy(void) {
  gp_gpu_backend *b = open_sim("2xA100-40GB", "n1");
  gp_err e = {0};
  const char *bad[] = {"4g.20gb", "4g.20gb"};
  int zero[] = {0, 0};
  CHECK_EQ_INT(GP_EINVAL, b->ops->set_mig_layout(b, 0, bad, zero, 2, &e));
  CHECK_CONTAINS(e.message, "overlaps");
  int slots[3];
  CHECK_EQ_INT(GP_EINVAL, gp_gpu_model_place_mig(gp_gpu_model_find("A100-40GB"), bad, 2, slots, &e));
  const char *layout[] = {"1g.5gb", "3g.20gb", "2g.10gb"};
  CHECK_EQ_INT(0, gp_gpu_model_place_mig(gp_gpu_model_find("A100-40GB"), layout, 3, slots, &e));
  CHECK_EQ_INT(0, b->ops->set_mig_layout(b, 0, layout, slots, 3, &e));
  gp_gpu_info info[2];
  int n;
  b->ops->discover(b, info, 2, &n, NULL);
  CHECK(info[0].mig_enabled);
  CHECK_EQ_INT(3, info[0].n_mig);
  CHECK_EQ_STR("3g.20gb", info[0].mig[1].profile);
  CHECK_EQ_INT(20480, info[0].mig[1].mem_mib);
  CHECK(strncmp(info[0].mig[0].uuid, "MIG-", 4) == 0);
  /* A job on an instance: its memory shows on the instance, util scales to the device. */
  CHECK_EQ_INT(0, gp_gpu_sim_attach(b, 0, 42, info[0].mig[1].uuid, 70, 4096, &e));
  gp_gpu_sample s;
  b->ops->sample(b, 0, &s, NULL);
  CHECK_EQ_INT(30, s.gpu_util_pct); /* 70% of 3 of 7 slices */
  CHECK_EQ_STR(info[0].mig[1].uuid, s.procs[0].mig_uuid);
  const char *one[] = {"7g.40gb"};
  int s0[] = {0};
  CHECK_EQ_INT(GP_ESTATE, b->ops->set_mig_layout(b, 0, one, s0, 1, &e));
  CHECK_CONTAINS(e.message, "busy");
  gp_gpu_sim_detach(b, 42);
  CHECK_EQ_INT(0, b->ops->set_mig_layout(b, 0, one, s0, 1, &e));
  CHECK_EQ_INT(0, b->ops->set_mig_layout(b, 0, NULL, NULL, 0, &e));
  b->ops->discover(b, info, 2, &n, NULL);
  CHECK(!info[0].mig_enabled);
  b->ops->close(b);
  b = open_sim("L40S", "n1");
  CHECK_EQ_INT(GP_EUNSUPP, b->ops->set_mig_layout(b, 0, one, s0, 1, &e));
  b->ops->close(b);
}

static void driver_names_map_to_models(void) {
  CHECK_EQ_STR("A100-40GB", gp_gpu_model_from_driver_name("NVIDIA A100-SXM4-40GB", 40960)->model);
  CHECK_EQ_STR("A100-80GB", gp_gpu_model_from_driver_name("NVIDIA A100 80GB PCIe", 81920)->model);
  CHECK_EQ_STR("H100-80GB", gp_gpu_model_from_driver_name("NVIDIA H100 80GB HBM3", 81559)->model);
  CHECK_EQ_STR("H100-NVL", gp_gpu_model_from_driver_name("NVIDIA H100 NVL", 95830)->model);
  CHECK_EQ_STR("A10", gp_gpu_model_from_driver_name("NVIDIA A10", 23028)->model);
  CHECK_EQ_STR("T4", gp_gpu_model_from_driver_name("Tesla T4", 15360)->model);
  CHECK(gp_gpu_model_from_driver_name("NVIDIA GeForce RTX 4090", 24564) == NULL);
}

/* Random and mangled specs never crash or leak (ASan watches), and whatever is accepted is
 * within bounds. */
static void hostile_specs_are_refused_or_bounded(void) {
  static const char alphabet[] = "0123456789xX@:;,=.-_ gpuxidecsbtrmalfhpowGHAT1004080";
  static const char *seeds[] = {"8xH100-80GB", "xid:79@gpu3,after=5s", "ecc_sbe:20@gpu1;thermal@gpu0,for=1s"};
  unsigned seed = 12345;
  for (int round = 0; round < 3000; round++) {
    char buf[96];
    size_t n = 0;
    if (round % 2) {
      const char *base = seeds[round % 3];
      snprintf(buf, sizeof buf, "%s", base);
      n = strlen(buf);
      for (int k = 0; k < 3 && n; k++) {
        seed = seed * 1103515245u + 12345u;
        buf[(seed >> 8) % n] = alphabet[(seed >> 16) % (sizeof alphabet - 1)];
      }
    } else {
      seed = seed * 1103515245u + 12345u;
      n = (seed >> 16) % (sizeof buf - 1);
      for (size_t k = 0; k < n; k++) {
        seed = seed * 1103515245u + 12345u;
        buf[k] = alphabet[(seed >> 16) % (sizeof alphabet - 1)];
      }
      buf[n] = '\0';
    }
    gp_gpu_backend *b = NULL;
    gp_err e = {0};
    if (gp_gpu_sim_open(buf, NULL, &b, &e) == 0) {
      gp_gpu_info info[GP_GPU_MAX_DEVICES];
      int ng = 0;
      b->ops->discover(b, info, GP_GPU_MAX_DEVICES, &ng, NULL);
      CHECK(ng >= 1 && ng <= GP_GPU_MAX_DEVICES);
      b->ops->close(b);
    } else {
      CHECK(e.message[0] != '\0');
    }
    gp_proto_fault f[GP_PROTO_MAX_FAULTS];
    int nf = 0;
    memset(&e, 0, sizeof e);
    if (gp_proto_fault_parse(buf, f, GP_PROTO_MAX_FAULTS, &nf, &e) == 0) {
      CHECK(nf >= 1 && nf <= GP_PROTO_MAX_FAULTS);
      for (int k = 0; k < nf; k++) CHECK(f[k].gpu >= 0 && f[k].gpu < GP_GPU_MAX_DEVICES);
    } else {
      CHECK(e.message[0] != '\0');
    }
  }
}

GP_TESTS(an_h100_node_has_eight_gpus_in_one_nvlink_domain, mixed_specs_and_pcie_parts_have_no_nvlink,
         bad_specs_are_refused_with_the_reason, uuids_survive_a_restart_and_differ_between_nodes,
         load_follows_the_jobs_and_each_job_keeps_its_own_figures, the_operations_drive_the_model,
         energy_integrates_power_over_time,
         injected_faults_fire_on_time, poll_events_waits_for_a_delayed_fault_in_real_time,
         mig_layouts_are_validated_and_refused_when_busy,
         driver_names_map_to_models, hostile_specs_are_refused_or_bounded)
