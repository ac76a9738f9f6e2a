/* SPDX-License-Identifier: Apache-2.0 */
/* Cost of the agent's telemetry on an 8-GPU node running 50 jobs (shared GPUs, ~6 jobs per
 * GPU, each job a leader process plus one GPU worker process found through the process tree):
 *   - one sampling round (all GPUs: backend reads, /proc attribution, per-job aggregation),
 *     reported per GPU;
 *   - rendering /metrics;
 * and the CPU share of both at 1 Hz (target: under 1% of one core). The backend is the
 * simulated one: NVML's own cost (driver calls) is not included and needs a real GPU
 * (scripts/gpu-check.sh). Attribution reads a process tree laid out like /proc under a temp
 * directory, so the file reads it does are real.
 * Usage: bench_telemetry_bench [rounds]   (default 2000) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent/gpu_sim.h"
#include "agent/health.h"
#include "agent/metrics.h"
#include "agent/telemetry.h"
#include "util/buf.h"

#define N_GPUS 8
#define N_JOBS 50

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (!f) {
    perror(path);
    exit(1);
  }
  fputs(text, f);
  fclose(f);
}

static void fake_proc(const char *root, int pid, int ppid) {
  char path[512], text[256];
  snprintf(path, sizeof path, "%s/%d", root, pid);
  mkdir(path, 0755);
  snprintf(path, sizeof path, "%s/%d/stat", root, pid);
  snprintf(text, sizeof text, "%d (python) S %d %d 0 0 0\n", pid, ppid, ppid);
  write_file(path, text);
  snprintf(path, sizeof path, "%s/%d/cgroup", root, pid);
  write_file(path, "0::/user.slice\n");
}

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 2000;
  if (rounds < 10) rounds = 10;
  char root[] = "/tmp/gp_bench_proc_XXXXXX";
  if (!mkdtemp(root)) {
    perror("mkdtemp");
    return 1;
  }
  gp_gpu_backend *b = NULL;
  gp_err err = {0};
  if (gp_gpu_sim_open("8xH100-80GB", &(gp_gpu_sim_opts){.node_name = "bench"}, &b, &err)) {
    fprintf(stderr, "%s\n", err.message);
    return 1;
  }
  gp_telemetry *t = NULL;
  if (gp_telemetry_new(b, &(gp_telemetry_opts){.hostname = "bench", .proc_root = root}, &t, &err)) {
    fprintf(stderr, "%s\n", err.message);
    return 1;
  }
  gp_health *h = gp_health_new(NULL, b);
  static gp_telemetry_job jobs[N_JOBS];
  for (int i = 0; i < N_JOBS; i++) {
    gp_telemetry_job *j = &jobs[i];
    snprintf(j->id, sizeof j->id, "%d", 1000 + i);
    snprintf(j->queue, sizeof j->queue, "org/team%d", i % 7);
    snprintf(j->user, sizeof j->user, "user%d", i % 13);
    j->leader = 100000 + 2 * i;      /* the job's leader */
    j->n_gpus = 1;
    j->gpus[0] = i % N_GPUS;
    fake_proc(root, j->leader, 1);
    fake_proc(root, j->leader + 1, j->leader); /* its GPU worker */
    if (gp_gpu_sim_attach(b, j->gpus[0], j->leader + 1, NULL, 5 + i % 10, 1024 + 64 * i, &err)) {
      fprintf(stderr, "%s\n", err.message);
      return 1;
    }
  }
  if (gp_telemetry_set_jobs(t, jobs, N_JOBS, &err)) {
    fprintf(stderr, "%s\n", err.message);
    return 1;
  }
  /* Warm up, then time sampling rounds. */
  for (int i = 0; i < 10; i++) gp_telemetry_sample(t);
  double t0 = now_s();
  for (int i = 0; i < rounds; i++) gp_telemetry_sample(t);
  double round_s = (now_s() - t0) / rounds;

  /* Backend reads alone (no attribution), per GPU. */
  gp_gpu_sample s;
  t0 = now_s();
  for (int i = 0; i < rounds; i++)
    for (int g = 0; g < N_GPUS; g++) b->ops->sample(b, g, &s, NULL);
  double backend_s = (now_s() - t0) / rounds / N_GPUS;

  /* Health evaluation per round (the agent runs it after each sample). */
  gp_telemetry_view *v = malloc(sizeof *v);
  gp_health_action acts[16];
  int na = 0;
  t0 = now_s();
  for (int i = 0; i < rounds; i++) {
    gp_telemetry_view_get(t, v);
    gp_health_evaluate(h, v, NULL, 0, jobs, N_JOBS, i * 1000, acts, 16, &na);
  }
  double health_s = (now_s() - t0) / rounds;

  gp_buf out;
  gp_buf_init(&out, 0);
  gp_agent_metrics_text(t, h, &out);
  size_t bytes = out.len;
  int series = 0;
  for (size_t i = 0; i < out.len; i++)
    if (out.data[i] == '\n' && i + 1 < out.len && out.data[i + 1] != '#') series++;
  t0 = now_s();
  for (int i = 0; i < rounds; i++) {
    gp_buf_reset(&out);
    gp_agent_metrics_text(t, h, &out);
  }
  double render_s = (now_s() - t0) / rounds;
  gp_buf_done(&out);

  printf("telemetry_bench: %d GPUs, %d jobs (process-tree attribution), %d rounds\n", N_GPUS,
         N_JOBS, rounds);
  printf("  sampling round (all GPUs):        %8.1f us  (%.1f us per GPU)\n", round_s * 1e6,
         round_s * 1e6 / N_GPUS);
  printf("  backend read alone (sim):         %8.2f us per GPU\n", backend_s * 1e6);
  printf("  health evaluation per round:      %8.1f us\n", health_s * 1e6);
  printf("  render /metrics:                  %8.1f us  (%zu bytes, %d series)\n", render_s * 1e6,
         bytes, series);
  double busy = round_s + health_s + render_s; /* even with one scrape every second */
  printf("  CPU at 1 Hz (sample + health + one scrape per second): %.3f%% of one core (target < 1%%)\n",
         busy * 100.0);
  free(v);
  gp_health_free(h);
  gp_telemetry_free(t);
  b->ops->close(b);
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf %s", root);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", root);
  return busy < 0.01 ? 0 : 1;
}
