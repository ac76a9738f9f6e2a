/* SPDX-License-Identifier: Apache-2.0 */
/* Benchmark of `gpool sim frag` (issue 5, §2): the CPU time of one (trace, policy, seed)
 * run of the FGD paper's experiment, for each of the four shared openb traces and each
 * placement policy, over a few seeds. It measures process CPU time (clock()), so a busy
 * machine slows the wall clock but not the figure; it runs on one core (nothing here is
 * parallel). Trace loading is timed separately.
 * Usage: bench_frag_bench [TRACE_DIR] [seeds]   (defaults traces/openb, 3)
 * Build Release for figures: cmake -B build/rel -DCMAKE_BUILD_TYPE=Release. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/model.h"
#include "sim/frag/frag.h"
#include "sim/frag/trace.h"

static double cpu_s(void) {
  return (double)clock() / CLOCKS_PER_SEC;
}

int main(int argc, char **argv) {
  const char *dir = argc > 1 ? argv[1] : "traces/openb";
  int seeds = argc > 2 ? atoi(argv[2]) : 3;
  if (seeds < 1 || seeds > 100) seeds = 3;
  static const char *const traces[] = {"default", "gpushare100", "multigpu50", "gpuspec33"};
  static const gp_share_policy pols[] = {GP_SHARE_POLICY_RANDOM,     GP_SHARE_POLICY_DOTPRODUCT,
                                         GP_SHARE_POLICY_GPUPACKING, GP_SHARE_POLICY_BESTFIT,
                                         GP_SHARE_POLICY_FGD,        GP_SHARE_POLICY_GPOOL};
  char nodes[1024], pods[1024];
  snprintf(nodes, sizeof nodes, "%s/openb_node_list_gpu_node.csv", dir);
  printf("%-12s %-11s %10s %10s %10s\n", "trace", "policy", "cpu_s/run", "max_s/run", "alloc@130");
  double worst = 0;
  for (size_t ti = 0; ti < sizeof(traces) / sizeof(traces[0]); ti++) {
    snprintf(pods, sizeof pods, "%s/openb_pod_list_%s.csv", dir, traces[ti]);
    gp_frag_trace *t = NULL;
    gp_err err = {0};
    double l0 = cpu_s();
    if (gp_frag_trace_load(nodes, pods, &t, &err) != 0) {
      char line[1200];
      gp_err_format(&err, line, sizeof line);
      fprintf(stderr, "frag_bench: %s\n", line);
      return 1;
    }
    double load = cpu_s() - l0;
    for (size_t pi = 0; pi < sizeof(pols) / sizeof(pols[0]); pi++) {
      double sum = 0, max = 0, alloc = 0;
      for (int s = 0; s < seeds; s++) {
        gp_frag_opts o;
        gp_frag_opts_init(&o);
        o.policy = pols[pi];
        o.seed = 42 + (uint64_t)s;
        gp_frag_result r;
        double c0 = cpu_s();
        if (gp_frag_run(t, &o, &r, &err) != 0) {
          fprintf(stderr, "frag_bench: %s\n", err.message);
          return 1;
        }
        double c = cpu_s() - c0;
        sum += c;
        if (c > max) max = c;
        alloc += r.alloc_pct[r.max_pct] / seeds;
      }
      if (max > worst) worst = max;
      printf("%-12s %-11s %10.3f %10.3f %9.2f%%\n", traces[ti], gp_share_policy_name(pols[pi]),
             sum / seeds, max, alloc);
    }
    printf("%-12s %-11s %10.3f   (loading the node and pod lists)\n", traces[ti], "-", load);
    gp_frag_trace_free(t);
  }
  printf("slowest run: %.3f s of CPU\n", worst);
  return 0;
}
