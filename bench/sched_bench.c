/* SPDX-License-Identifier: Apache-2.0 */
/* Benchmark of the scheduling core (issue 2, §5). A synthetic fleet of 10,000 nodes x 8
 * GPUs (H100 / A100 / H200, two NVLink domains per node, 32 nodes per topology block) and
 * 100,000 pending jobs (mostly 1 GPU, some 2-8 GPUs, some 2-16-node gangs; a third name a
 * GPU model) in a 3-level tree of 50 leaf queues. It prints:
 *   - the time of one full step from an empty cluster and the jobs placed per second;
 *   - p50/p99 of an incremental step (1% of the jobs end and 1,000 arrive, on the busy
 *     cluster the full step left) over 100 steps; starts are applied, victims stop and end
 *     one step later, as a server would do;
 *   - the core's peak working memory per pending job: the memory a step makes resident
 *     beyond what the process held when it began (the view, the memo, free heap pages
 *     excluded), at its high-water mark, divided by the pending jobs; measured in a second
 *     process as "memory, measured in a process of its own" below says, when the build
 *     has no AddressSanitizer.
 * Usage: bench_sched_bench [nodes] [jobs] [steps]   (defaults 10000 100000 100)
 * Build Release for figures: cmake -B build/rel -DCMAKE_BUILD_TYPE=Release. */
#include <fcntl.h>
#include <malloc.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/sched.h"
#include "util/mem.h"

/* ---- memory, measured in a process of its own ----
 * A step's working set is the anonymous memory (heap and stack) it makes resident beyond
 * what was resident when it began. Before each measured step, malloc_trim(0) hands the
 * heap's free pages back to the kernel; the resident anonymous memory is read before
 * and after the step from the "Anonymous:" line of /proc/self/smaps_rollup, which the
 * kernel counts by walking the page tables (code pages that the step faults in are file
 * pages, not counted). Under gp_mem_keep_freed nothing goes back to the kernel during a
 * step (blocks up to 256 MiB come from the heap, whose top is trimmed only beyond 512 MiB
 * free), so the figure after the step is its high-water mark. Transparent huge pages are
 * off in the measuring process (prctl PR_SET_THP_DISABLE), so the count is by base page.
 * This counts pages written, not bytes allocated: what a step allocates and never writes
 * (a calloc served from fresh heap, spare capacity) is left out, while malloc's headers,
 * the unused rest of a page, and memory freed and not reused within the step are in.
 * The trim would make the next step fault its pages in again, so a child forked at
 * start-up runs the same steps for the memory figures and the parent, which never trims,
 * times them. Not under AddressSanitizer, whose allocator keeps freed memory in
 * quarantine. */
#if defined(__SANITIZE_ADDRESS__)
#define MEASURE_MEMORY 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MEASURE_MEMORY 0
#endif
#endif
#ifndef MEASURE_MEMORY
#define MEASURE_MEMORY 1
#endif

typedef struct mem_peaks {
  bool measuring;   /* this process is the child that measures, and times nothing */
  bool ok;          /* the figures below were measured */
  size_t full;      /* bytes made resident by the full step */
  size_t step_max;  /* the most bytes made resident by one incremental (memo) step */
} mem_peaks;

/* Resident anonymous bytes, 0 when /proc cannot tell. Read with read(2) into the stack:
 * stdio would allocate a buffer that the step could then reuse unseen. */
static size_t resident_bytes(void) {
  char text[4096];
  int fd = open("/proc/self/smaps_rollup", O_RDONLY);
  if (fd < 0) return 0;
  ssize_t n = read(fd, text, sizeof text - 1);
  close(fd);
  if (n <= 0) return 0;
  text[n] = '\0';
  const char *anon = strstr(text, "\nAnonymous:");
  return anon ? (size_t)strtoull(anon + 11, NULL, 10) * 1024 : 0;
}

/* Starts measuring a step: returns the resident bytes once the heap's free pages are gone. */
static size_t probe_start(mem_peaks *m) {
  if (!m->measuring) return 0;
  malloc_trim(0);
  size_t r = resident_bytes();
  if (!r) m->ok = false;
  return r;
}

/* The bytes the step made resident since probe_start. */
static size_t probe_peak(const mem_peaks *m, size_t start) {
  if (!m->measuring) return 0;
  size_t r = resident_bytes();
  return r > start ? r - start : 0;
}

/* ---- a small deterministic RNG ---- */
static uint64_t rng = 0x9e3779b97f4a7c15ULL;
static uint64_t next_u64(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}
static int pick(int n) { return (int)(next_u64() % (uint64_t)n); }

/* Step times are CPU time of this thread (CLOCK_THREAD_CPUTIME_ID): the step is
 * single-threaded and pure, and CPU time is not inflated when a shared machine deschedules
 * the benchmark. Wall time is printed alongside for the full step. */
static double cpu_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double wall_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static const char *models[] = {"H100-80GB", "A100-80GB", "H200-141GB"};
static const char *model_lists[3][1] = {{"H100-80GB"}, {"A100-80GB"}, {"H200-141GB"}};
static const char *classes[] = {"training", "training", "training", "batch", "interactive"};

typedef struct bench {
  gp_policy pol;
  gp_node *nodes;
  gp_gpu *gpus;
  gp_label *labels;
  char (*node_names)[16];
  char (*block_names)[16];
  gp_queue queues[50];
  char queue_names[50][32];
  gp_job *jobs;
  uint64_t *revs;       /* per job slot, for the memo */
  char (*ids)[16];
  int n_jobs, cap_jobs;
  int next_id;
  gp_view view;
} bench;

static void make_fleet(bench *b, int n_nodes) {
  b->nodes = calloc((size_t)n_nodes, sizeof *b->nodes);
  b->gpus = calloc((size_t)n_nodes * 8, sizeof *b->gpus);
  b->labels = calloc((size_t)n_nodes, sizeof *b->labels);
  b->node_names = calloc((size_t)n_nodes, sizeof *b->node_names);
  b->block_names = calloc((size_t)n_nodes / 32 + 1, sizeof *b->block_names);
  for (int i = 0; i <= n_nodes / 32; i++) snprintf(b->block_names[i], 16, "b%d", i);
  for (int i = 0; i < n_nodes; i++) {
    gp_node *n = &b->nodes[i];
    snprintf(b->node_names[i], 16, "n%05d", i);
    n->name = b->node_names[i];
    int m = i % 10 < 5 ? 0 : i % 10 < 8 ? 1 : 2; /* 50% H100, 30% A100, 20% H200 */
    n->model = models[m];
    n->gpu_mem_mib = m == 2 ? 144384 : 81920;
    n->n_gpus = 8;
    n->gpus = &b->gpus[i * 8];
    for (int g = 0; g < 8; g++) b->gpus[i * 8 + g] = (gp_gpu){.nvlink_domain = g / 4};
    n->cpu_milli = 96000;
    n->mem_mib = 1024 * 1024;
    b->labels[i] = (gp_label){"topology.block", b->block_names[i / 32]};
    n->labels = &b->labels[i];
    n->n_labels = 1;
  }
  b->view.nodes = b->nodes;
  b->view.n_nodes = n_nodes;
}

/* 5 orgs x 2 teams x 5 projects; deserved split evenly over 80% of the fleet, weights
 * 1..3, every seventh project limited. */
static void make_queues(bench *b, int n_nodes) {
  int k = 0;
  for (int o = 0; o < 5; o++)
    for (int t = 0; t < 2; t++)
      for (int p = 0; p < 5; p++, k++) {
        snprintf(b->queue_names[k], 32, "org%d/team%d/proj%d", o, t, p);
        b->queues[k] = (gp_queue){.name = b->queue_names[k],
                                  .deserved_gpus = n_nodes * 8 * 0.8 / 50,
                                  .limit_gpus = k % 7 == 6 ? n_nodes * 8 * 0.05 : GP_NO_LIMIT,
                                  .weight = 1 + k % 3};
      }
  b->view.queues = b->queues;
  b->view.n_queues = 50;
}

/* Every change to a job gives its slot a new rev (gp_view.job_revs), from one counter:
 * the memo's contract. */
static uint64_t last_rev;
static void touch(bench *b, int j) { b->revs[j] = ++last_rev; }

static void add_job(bench *b, gp_time submitted) {
  if (b->n_jobs == b->cap_jobs) {
    fprintf(stderr, "job table full\n");
    exit(1);
  }
  int j = b->n_jobs++;
  gp_job *job = &b->jobs[j];
  memset(job, 0, sizeof *job);
  snprintf(b->ids[j], 16, "j%08d", b->next_id++);
  job->id = b->ids[j];
  job->queue = b->queue_names[pick(50)];
  job->user = "u";
  job->priority_class = classes[pick(5)];
  int r = pick(100);
  job->req.tasks = 1;
  if (r < 85) {
    job->req.gpus_per_task = 1;
  } else if (r < 97) {
    static const int sizes[] = {2, 4, 8};
    job->req.gpus_per_task = sizes[pick(3)];
  } else {
    job->req.gpus_per_task = 8;
    job->req.tasks = 2 + pick(15);
  }
  job->req.cpu_milli = 4000 * job->req.gpus_per_task;
  job->req.mem_mib = 32768 * job->req.gpus_per_task;
  if (pick(3) == 0) {
    job->req.gpu_models = model_lists[pick(3)];
    job->req.n_gpu_models = 1;
  }
  job->time_limit = 3600 * (1 + pick(24));
  job->submitted_at = submitted;
  job->state = GP_JOB_PENDING;
  touch(b, j);
}

static void remove_job(bench *b, int j) {
  free((void *)b->jobs[j].placements);
  b->jobs[j] = b->jobs[b->n_jobs - 1];
  memcpy(b->ids[j], b->ids[b->n_jobs - 1], 16);
  b->jobs[j].id = b->ids[j];
  touch(b, j);
  b->n_jobs--;
}

/* Applies a plan: starts become RUNNING with their placements, victims STOPPING. */
static int apply(bench *b, const gp_plan *p, gp_time now) {
  for (int i = 0; i < p->n_starts; i++) {
    gp_job *job = &b->jobs[p->starts[i].job];
    gp_placement *pl = malloc((size_t)p->starts[i].n_placements * sizeof *pl);
    memcpy(pl, p->starts[i].placements, (size_t)p->starts[i].n_placements * sizeof *pl);
    job->placements = pl;
    job->n_placements = p->starts[i].n_placements;
    job->state = GP_JOB_RUNNING;
    job->started_at = now;
    touch(b, p->starts[i].job);
  }
  for (int i = 0; i < p->n_preemptions; i++) {
    b->jobs[p->preemptions[i].job].state = GP_JOB_STOPPING;
    touch(b, p->preemptions[i].job);
  }
  /* Ended jobs (impossible requests) leave the view. */
  int n = 0;
  for (int i = p->n_ended - 1; i >= 0; i--) {
    b->jobs[p->ended[i].job].state = GP_JOB_FAILED;
    n++;
  }
  for (int j = b->n_jobs - 1; j >= 0; j--)
    if (b->jobs[j].state == GP_JOB_FAILED) remove_job(b, j);
  return n;
}

/* FNV-1a over what a plan decided (starts with their GPUs, victims, reservations, pending
 * reasons, ended jobs), so a change meant to be faster can show it decides the same. */
#define DIGEST_INIT 1469598103934665603ULL
static uint64_t digest = DIGEST_INIT;
static void mix_into(uint64_t *d, uint64_t v) {
  for (int i = 0; i < 8; i++) {
    *d ^= (v >> (8 * i)) & 0xff;
    *d *= 1099511628211ULL;
  }
}
static void digest_plan_into(uint64_t *d, const gp_plan *p) {
  mix_into(d, (uint64_t)p->n_starts);
  for (int i = 0; i < p->n_starts; i++) {
    mix_into(d, (uint64_t)p->starts[i].job);
    for (int t = 0; t < p->starts[i].n_placements; t++) {
      const gp_placement *pl = &p->starts[i].placements[t];
      mix_into(d, (uint64_t)pl->node);
      mix_into(d, (uint64_t)pl->gpu_mask << 16 ^ (uint64_t)pl->gpu_milli);
    }
  }
  mix_into(d, (uint64_t)p->n_preemptions);
  for (int i = 0; i < p->n_preemptions; i++)
    mix_into(d, (uint64_t)p->preemptions[i].job << 32 ^ (uint64_t)p->preemptions[i].for_job);
  mix_into(d, (uint64_t)p->n_reservations);
  for (int i = 0; i < p->n_reservations; i++)
    mix_into(d, (uint64_t)p->reservations[i].job << 40 ^ (uint64_t)p->reservations[i].at);
  mix_into(d, (uint64_t)p->n_pending);
  for (int i = 0; i < p->n_pending; i++) mix_into(d, (uint64_t)p->pending[i].job << 8 ^ p->pending[i].reason);
  mix_into(d, (uint64_t)p->n_ended);
}
static void digest_plan(const gp_plan *p) { digest_plan_into(&digest, p); }
static uint64_t plan_digest(const gp_plan *p) {
  uint64_t d = DIGEST_INIT;
  digest_plan_into(&d, p);
  return d;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The p-th percentile of sorted times by nearest rank: the smallest time that at least a
 * fraction p of the steps do not exceed (p99 of 100 steps is the 99th, not the slowest). */
static double percentile(const double *sorted, int n, double p) {
  int rank = (int)ceil(p * n - 1e-9);
  return sorted[rank < 1 ? 0 : rank > n ? n - 1 : rank - 1];
}

/* Sorts the step times in place; returns their mean. */
static double summarize(double *times, int steps) {
  qsort(times, (size_t)steps, sizeof *times, cmp_double);
  double sum = 0;
  for (int s = 0; s < steps; s++) sum += times[s];
  return sum / steps;
}

/* One pass over the benchmark. The parent's pass times the steps and prints, with the
 * memory figures that the child's pass (mem->measuring) left in *mem. Both build the same fleet and
 * jobs from the same seed, so they see the same views and make the same plans; the child
 * skips the memo-less twin of each step, which neither changes the view nor the memo. */
static int bench_run(int n_nodes, int n_jobs, int steps, mem_peaks *mem) {
  bool timing = !mem->measuring;
  static bench B;
  bench *b = &B;
  gp_policy_init(&b->pol);
  if (getenv("BENCH_NO_PREEMPT")) b->pol.preemption = b->pol.reclaim = false;
  if (getenv("BENCH_NO_BACKFILL")) b->pol.backfill = false;
  make_fleet(b, n_nodes);
  make_queues(b, n_nodes);
  b->cap_jobs = n_jobs + steps * 1000 + 1000;
  b->jobs = calloc((size_t)b->cap_jobs, sizeof *b->jobs);
  b->revs = calloc((size_t)b->cap_jobs, sizeof *b->revs);
  b->ids = calloc((size_t)b->cap_jobs, sizeof *b->ids);
  for (int i = 0; i < n_jobs; i++) add_job(b, i / 100);
  b->view.jobs = b->jobs;
  b->view.job_revs = b->revs;
  b->view.n_jobs = b->n_jobs;

  if (timing)
    printf("fleet: %d nodes x 8 GPUs (%d GPUs), %d leaf queues in 3 levels, %d pending jobs\n",
           n_nodes, n_nodes * 8, 50, n_jobs);
  gp_time now = 100000;
  gp_err err = {0};
  gp_plan *plan = NULL;
  size_t probe = probe_start(mem);
  double w0 = wall_s(), t0 = cpu_s();
  if (gp_sched_step(&b->pol, &b->view, now, &plan, &err)) {
    fprintf(stderr, "step failed: %s: %s\n", err.field, err.message);
    return 1;
  }
  double full = cpu_s() - t0, full_wall = wall_s() - w0;
  if (mem->measuring) mem->full = probe_peak(mem, probe);
  int placed = plan->n_starts;
  if (timing) {
    printf("full step from an empty cluster: %.1f ms CPU (%.1f ms wall), %d jobs placed (%.0f "
           "jobs/s), %d pending, %d preemptions, %d reservations\n",
           full * 1e3, full_wall * 1e3, placed, placed / full, plan->n_pending, plan->n_preemptions,
           plan->n_reservations);
    if (mem->ok)
      printf("memory: core peak working set %.1f MiB = %.0f bytes per pending job (view itself: "
             "%zu bytes per gp_job), plan arena %.1f MiB\n",
             mem->full / 1048576.0, (double)mem->full / n_jobs, sizeof(gp_job),
             gp_arena_bytes(plan->arena) / 1048576.0);
    else
      printf("memory: not measured (%s)\n",
             MEASURE_MEMORY ? "/proc/self/smaps_rollup unreadable" : "AddressSanitizer build");
  }
  digest_plan(plan);
  apply(b, plan, now);
  gp_plan_free(plan);

  /* Each incremental step runs twice on the same view: gp_sched_step, and
   * gp_sched_step_memo with what it kept from the steps before. Their plans must agree;
   * the memo's is applied. The order alternates, so neither always runs on a warm cache. */
  b->view.rev = 1; /* nodes, queues and policy never change here */
  gp_sched_memo *memo = gp_sched_memo_new();
  {
    gp_plan *warm = NULL; /* the memo learns the view as the full step left it */
    if (gp_sched_step_memo(memo, &b->pol, &b->view, now, 0, &warm, &err)) {
      fprintf(stderr, "step failed: %s: %s\n", err.field, err.message);
      return 1;
    }
    gp_plan_free(warm);
  }
  double *times = calloc((size_t)steps, sizeof(double));
  double *times_plain = calloc((size_t)steps, sizeof(double));
  long total_starts = 0, total_pending = 0, total_preempt = 0;
  for (int s = 0; s < steps; s++) {
    now += 60;
    /* Stopping victims are gone; 1% of the jobs end (running ones); 1,000 arrive. */
    for (int j = b->n_jobs - 1; j >= 0; j--)
      if (b->jobs[j].state == GP_JOB_STOPPING) remove_job(b, j);
    int to_end = b->n_jobs / 100;
    for (int k = 0; k < to_end * 20 && to_end > 0; k++) {
      int j = pick(b->n_jobs);
      if (b->jobs[j].state != GP_JOB_RUNNING) continue;
      remove_job(b, j);
      to_end--;
    }
    for (int k = 0; k < 1000; k++) add_job(b, now);
    b->view.n_jobs = b->n_jobs;
    gp_plan *plain = NULL;
    for (int k = 0; k < 2; k++) {
      bool with_memo = (k == 0) == (s % 2 == 0);
      if (!with_memo && !timing) continue;
      probe = probe_start(mem);
      t0 = cpu_s();
      int rc = with_memo ? gp_sched_step_memo(memo, &b->pol, &b->view, now, 0, &plan, &err)
                         : gp_sched_step(&b->pol, &b->view, now, &plain, &err);
      if (rc) {
        fprintf(stderr, "step failed: %s: %s\n", err.field, err.message);
        return 1;
      }
      (with_memo ? times : times_plain)[s] = cpu_s() - t0;
      size_t peak = probe_peak(mem, probe);
      if (peak > mem->step_max) mem->step_max = peak;
    }
    if (timing && plan_digest(plan) != plan_digest(plain)) {
      fprintf(stderr, "step %d: the memo's plan differs from gp_sched_step's\n", s);
      return 1;
    }
    gp_plan_free(plain);
    total_starts += plan->n_starts;
    total_pending += plan->n_pending;
    total_preempt += plan->n_preemptions;
    digest_plan(plan);
    apply(b, plan, now);
    gp_plan_free(plan);
  }
  if (timing) {
    double mean = summarize(times, steps), mean_plain = summarize(times_plain, steps);
    double p50 = percentile(times, steps, 0.5), p99 = percentile(times, steps, 0.99);
    double p50_plain = percentile(times_plain, steps, 0.5), p99_plain = percentile(times_plain, steps, 0.99);
    printf("incremental step (1%% end, 1000 arrive) over %d steps, CPU time: p50 %.2f ms, p99 %.2f ms, max "
           "%.2f ms, min %.2f ms, mean %.2f ms; per step on average %ld starts, %ld pending, %ld preemptions\n",
           steps, p50 * 1e3, p99 * 1e3, times[steps - 1] * 1e3, times[0] * 1e3, mean * 1e3,
           total_starts / steps, total_pending / steps, total_preempt / steps);
    printf("  the same steps without the memo (gp_sched_step): p50 %.2f ms, p99 %.2f ms, max %.2f ms, "
           "mean %.2f ms; memo/plain: p50 %.2f, p99 %.2f, mean %.2f\n",
           p50_plain * 1e3, p99_plain * 1e3, times_plain[steps - 1] * 1e3, mean_plain * 1e3,
           p50 / p50_plain, p99 / p99_plain, mean / mean_plain);
    if (mem->ok)
      printf("memory: incremental step peak working set %.1f MiB (%.0f bytes per pending job), "
             "memo %.1f MiB (%.0f bytes per job in the view)\n",
             mem->step_max / 1048576.0, (double)mem->step_max / (double)(total_pending / steps),
             gp_sched_memo_bytes(memo) / 1048576.0, (double)gp_sched_memo_bytes(memo) / b->n_jobs);
    printf("plans digest %016llx (equal digests: the same decisions)\n", (unsigned long long)digest);
  }
  gp_sched_memo_free(memo);
  free(times_plain);
  free(times);
  for (int j = 0; j < b->n_jobs; j++) free((void *)b->jobs[j].placements);
  free(b->jobs);
  free(b->revs);
  free(b->ids);
  free(b->nodes);
  free(b->gpus);
  free(b->labels);
  free(b->node_names);
  free(b->block_names);
  return 0;
}

/* Runs the measuring pass in a child and returns its figures (ok false when it could
 * not measure). The parent waits for it, so the two never share the CPUs. */
static mem_peaks measure_in_child(int n_nodes, int n_jobs, int steps) {
  mem_peaks got = {0};
  int fd[2];
  if (!MEASURE_MEMORY || pipe(fd) != 0) return got;
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    close(fd[0]);
    mem_peaks m = {.measuring = true, .ok = prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0) == 0};
    if (bench_run(n_nodes, n_jobs, steps, &m) != 0) m.ok = false;
    if (write(fd[1], &m, sizeof m) != (ssize_t)sizeof m) _exit(1);
    _exit(0);
  }
  close(fd[1]);
  if (pid > 0 && read(fd[0], &got, sizeof got) != (ssize_t)sizeof got) got.ok = false;
  close(fd[0]);
  if (pid > 0) waitpid(pid, NULL, 0);
  got.measuring = false;
  return got;
}

int main(int argc, char **argv) {
  gp_mem_keep_freed(); /* as the server and the simulator do (gpool main) */
  int n_nodes = argc > 1 ? atoi(argv[1]) : 10000;
  int n_jobs = argc > 2 ? atoi(argv[2]) : 100000;
  int steps = argc > 3 ? atoi(argv[3]) : 100;
  if (n_nodes < 32 || n_jobs < 100 || steps < 1) {
    fprintf(stderr, "usage: %s [nodes>=32] [jobs>=100] [steps>=1]\n", argv[0]);
    return 2;
  }
  mem_peaks mem = measure_in_child(n_nodes, n_jobs, steps);
  return bench_run(n_nodes, n_jobs, steps, &mem);
}
