/* SPDX-License-Identifier: Apache-2.0 */
/* Replay benchmark: the full Philly trace on the Helios fleet under each preset policy,
 * printing the replay's wall time, the number of gp_sched_step calls and the time spent
 * inside them, so the core's per-call cost can be followed from change to change.
 *
 *   bench_replay_bench [TIME_SCALE [POLICY...]]     (default: 1 and fifo backfill gpool sjf)
 *
 * Run from the repository root (or set GP_TRACES to another copy of traces/). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/replay/replay.h"
#include "util/mem.h"

int main(int argc, char **argv) {
  gp_mem_keep_freed(); /* as the server and the simulator do (gpool main) */
  const char *traces = getenv("GP_TRACES") ? getenv("GP_TRACES") : "traces";
  char trace_path[1024], vc_path[1024];
  snprintf(trace_path, sizeof trace_path, "%s/philly/philly.csv", traces);
  snprintf(vc_path, sizeof vc_path, "%s/philly/philly_vc_nodes.csv", traces);
  double scale = argc > 1 ? atof(argv[1]) : 1;
  if (scale <= 0) {
    fprintf(stderr, "usage: %s [TIME_SCALE [POLICY...]]\n", argv[0]);
    return 2;
  }
  static const char *const all[] = {"fifo", "backfill", "gpool", "sjf"};
  const char *const *names = argc > 2 ? (const char *const *)argv + 2 : all;
  int n = argc > 2 ? argc - 2 : 4;
  gp_err e = {0};
  gp_trace *t = NULL;
  gp_fleet *f = NULL;
  gp_replay_queues *q = NULL;
  if (gp_trace_read_file(trace_path, NULL, &t, &e) || gp_fleet_from_vc_file(vc_path, &f, &e) ||
      gp_replay_queues_from_vc_file(vc_path, 8, t, &q, &e)) {
    char msg[1024];
    gp_err_format(&e, msg, sizeof msg);
    fprintf(stderr, "replay_bench: %s\n", msg);
    return 1;
  }
  printf("philly: %zu jobs, %lld GPUs, time scale %g\n", t->n_jobs, (long long)f->total_gpus, scale);
  printf("%-10s %10s %10s %10s %12s %10s\n", "policy", "wall_s", "calls", "core_s", "us/call",
         "avg_wait_s");
  int rc = 0;
  for (int i = 0; i < n && !rc; i++) {
    gp_replay_preset p;
    if (gp_replay_preset_parse(names[i], &p)) {
      fprintf(stderr, "replay_bench: unknown policy %s\n", names[i]);
      rc = 2;
      break;
    }
    gp_replay_config c;
    gp_replay_config_init(&c);
    gp_replay_preset_policy(p, &c.policy);
    c.policy_name = gp_replay_preset_name(p);
    c.oracle_limits = p == GP_REPLAY_SJF;
    c.partition = gp_replay_preset_partitioned(p);
    c.time_scale = scale;
    c.policy.seed = c.seed; /* as `gpool sim replay` does */
    gp_replay_result *r = NULL;
    if (gp_replay_run(&c, t, f, q, &r, &e)) {
      fprintf(stderr, "replay_bench: %s: %s\n", names[i], e.message);
      rc = 1;
      break;
    }
    printf("%-10s %10.2f %10lld %10.2f %12.1f %10.1f\n", r->policy, r->wall_seconds,
           (long long)r->sched_calls, r->sched_seconds,
           r->sched_calls ? r->sched_seconds / (double)r->sched_calls * 1e6 : 0, r->avg_wait_s);
    gp_replay_result_free(r);
  }
  gp_trace_free(t);
  gp_fleet_free(f);
  gp_replay_queues_free(q);
  return rc;
}
