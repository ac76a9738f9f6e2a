/* SPDX-License-Identifier: Apache-2.0 */
/* The share of a GPU a ledger interval holds: a whole GPU 1, a fraction its milli-GPUs, a
 * time-slice replica 1 / replicas whatever fraction was asked, a MIG instance its compute
 * slices over the GPU's 7; four quarter jobs on one GPU add up to the GPU. An agent's use
 * and energy figures are cut to what the job's GPUs could have done since it started. */
#include "test.h"
#include "server/accounting/ledger.h"
#include "server/state/state.h"

static gp_srv_node node_of(gp_share_mode mode) {
  gp_srv_node n;
  memset(&n, 0, sizeof n);
  n.model = "H100-80GB";
  n.n_gpus = 1;
  n.gpus[0].mode = mode;
  n.gpus[0].replicas = mode == GP_SHARE_TIMESLICE ? 4 : 0;
  return n;
}

static gp_srv_alloc alloc_of(int milli, int mig_instance) {
  gp_srv_alloc a = {0, 1, milli, 0, mig_instance, false, 0, 0, -1, -1, 0, 0};
  return a;
}

static void whole_fraction_and_replica_shares(void) {
  gp_srv_node ex = node_of(GP_SHARE_EXCLUSIVE), sh = node_of(GP_SHARE_SHARED),
              ts = node_of(GP_SHARE_TIMESLICE);
  gp_srv_alloc whole = alloc_of(1000, -1), quarter = alloc_of(250, -1), third = alloc_of(300, -1);
  CHECK_NEAR(1, gp__srv_gpu_share(&ex, 0, &whole), 1e-12);
  CHECK_NEAR(0.3, gp__srv_gpu_share(&sh, 0, &third), 1e-12);
  /* A replica of a 4-way time-sliced GPU is a quarter, whatever fraction it asked for. */
  CHECK_NEAR(0.25, gp__srv_gpu_share(&ts, 0, &third), 1e-12);
  /* A whole GPU on a shared one is still the whole GPU. */
  CHECK_NEAR(1, gp__srv_gpu_share(&sh, 0, &whole), 1e-12);
  double sum = 0;
  for (int i = 0; i < 4; i++) sum += gp__srv_gpu_share(&sh, 0, &quarter);
  CHECK_NEAR(1, sum, 1e-12);
}

static void mig_instances_hold_their_compute_slices(void) {
  gp_srv_node n = node_of(GP_SHARE_MIG);
  n.gpus[0].n_mig = 3;
  n.gpus[0].mig[0] = (gp_mig_instance){"3g.40gb", 0, NULL};
  n.gpus[0].mig[1] = (gp_mig_instance){"2g.20gb", 4, NULL};
  n.gpus[0].mig[2] = (gp_mig_instance){"1g.10gb", 6, NULL};
  gp_srv_alloc a3 = alloc_of(1000, 0), a2 = alloc_of(1000, 1), a1 = alloc_of(1000, 2);
  CHECK_NEAR(3.0 / 7, gp__srv_gpu_share(&n, 0, &a3), 1e-12);
  CHECK_NEAR(2.0 / 7, gp__srv_gpu_share(&n, 0, &a2), 1e-12);
  CHECK_NEAR(1.0 / 7, gp__srv_gpu_share(&n, 0, &a1), 1e-12);
  /* The whole layout: 6 of the 7 slices held. */
  CHECK_NEAR(6.0 / 7, gp__srv_gpu_share(&n, 0, &a3) + gp__srv_gpu_share(&n, 0, &a2) +
                          gp__srv_gpu_share(&n, 0, &a1), 1e-12);
}

static void an_agents_figures_beyond_its_gpus_are_cut(void) {
  gp_srv_node n = node_of(GP_SHARE_EXCLUSIVE);
  gp_srv_node *nodes[1] = {&n};
  gp_srv_state s;
  memset(&s, 0, sizeof s);
  s.nodes = nodes;
  s.n_nodes = 1;
  gp__srv_ledger_set_off(&s, true); /* the figures land in memory; no store here */
  gp_srv_alloc a = alloc_of(1000, -1);
  gp_srv_job j;
  memset(&j, 0, sizeof j);
  j.n_alloc = 1;
  j.alloc = &a;
  j.started_at = 1000;
  gp_err e = {0};
  /* An hour in: a believable report is kept as it is... */
  CHECK_EQ_INT(0, gp__srv_ledger_use(&s, &j, 0, -1, 1800, 9e5, 4600, &e));
  CHECK_NEAR(1800, a.used_gpu_s, 1e-9);
  CHECK_NEAR(9e5, a.energy_j, 1e-9);
  /* ...one claiming more than one GPU busy the whole hour (and a minute) is cut to it. */
  CHECK_EQ_INT(0, gp__srv_ledger_use(&s, &j, 0, -1, 1e12, 1e14, 4600, &e));
  CHECK_NEAR(3660, a.used_gpu_s, 1e-9);
  CHECK_NEAR(3660 * GP_SRV_MAX_GPU_WATTS, a.energy_j, 1e-6);
  gp__srv_ledger_free(&s);
}

GP_TESTS(whole_fraction_and_replica_shares, mig_instances_hold_their_compute_slices,
         an_agents_figures_beyond_its_gpus_are_cut)
