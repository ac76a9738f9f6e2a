/* SPDX-License-Identifier: Apache-2.0 */
/* Telemetry as a team sees it: two jobs sharing a GPU each get their own figures, a job's
 * usage summary adds up over time and outlives the job, GPU processes are joined to jobs
 * by process tree and cgroup, and a GPU that stops answering is reported, not hidden. */
#include <sys/stat.h>

#include "test.h"
#include "agent/gpu_sim.h"
#include "agent/telemetry.h"

static int64_t now_ms;
static int64_t vclock(void *ctx) {
  (void)ctx;
  return now_ms;
}

typedef struct pool {
  gp_gpu_backend *b;
  gp_telemetry *t;
  gp_telemetry_view *v;
} pool;

static pool open_pool(const char *spec) {
  pool p = {0};
  now_ms = 1000;
  gp_gpu_sim_opts so = {.node_name = "n1", .clock_ms = vclock};
  REQUIRE(gp_gpu_sim_open(spec, &so, &p.b, NULL) == 0);
  gp_telemetry_opts to = {.hostname = "n1", .clock_ms = vclock};
  REQUIRE(gp_telemetry_new(p.b, &to, &p.t, NULL) == 0);
  p.v = malloc(sizeof *p.v);
  return p;
}

static void close_pool(pool *p) {
  free(p->v);
  gp_telemetry_free(p->t);
  p->b->ops->close(p->b);
}

static gp_telemetry_job job(const char *id, const char *queue, const char *user, pid_t leader,
                            int gpu) {
  gp_telemetry_job j;
  memset(&j, 0, sizeof j);
  snprintf(j.id, sizeof j.id, "%s", id);
  snprintf(j.queue, sizeof j.queue, "%s", queue);
  snprintf(j.user, sizeof j.user, "%s", user);
  j.leader = leader;
  j.n_gpus = 1;
  j.gpus[0] = gpu;
  return j;
}

static const gp_telemetry_attr *find_attr(const gp_telemetry_view *v, const char *job, int gpu) {
  for (int i = 0; i < v->n_attr; i++)
    if (!strcmp(v->attr[i].job, job) && v->attr[i].gpu == gpu) return &v->attr[i];
  return NULL;
}

static void two_jobs_on_one_gpu_each_get_their_own_figures(void) {
  pool p = open_pool("2xH100");
  /* Job 12 (35%, 9 GiB) and job 13 (50%, 2 GiB) share GPU 0; pids stand for their procs. */
  gp_telemetry_job jobs[2] = {job("12", "org/vision", "alice", 40001, 0),
                              job("13", "org/nlp", "bob", 40002, 0)};
  REQUIRE(gp_telemetry_set_jobs(p.t, jobs, 2, NULL) == 0);
  gp_gpu_sim_attach(p.b, 0, 40001, NULL, 35, 9216, NULL);
  gp_gpu_sim_attach(p.b, 0, 40002, NULL, 50, 2048, NULL);
  gp_telemetry_sample(p.t);
  gp_telemetry_view_get(p.t, p.v);
  CHECK_EQ_INT(2, p.v->n_gpus);
  CHECK_EQ_STR("n1", p.v->hostname);
  CHECK_EQ_STR("sim", p.v->backend);
  CHECK_EQ_INT(85, p.v->sample[0].gpu_util_pct);
  const gp_telemetry_attr *a = find_attr(p.v, "12", 0), *b = find_attr(p.v, "13", 0);
  REQUIRE(a && b);
  CHECK_EQ_INT(35, a->sm_util_pct);
  CHECK_EQ_INT(9216, a->mem_mib);
  CHECK_EQ_STR("org/vision", a->queue);
  CHECK_EQ_STR("alice", a->user);
  CHECK_EQ_INT(50, b->sm_util_pct);
  CHECK_EQ_INT(2048, b->mem_mib);
  CHECK_EQ_INT(1, b->n_procs);
  CHECK_EQ_INT(2, p.v->n_attr);
  close_pool(&p);
}

static void usage_summary_adds_up_and_outlives_the_job(void) {
  pool p = open_pool("H100");
  gp_telemetry_job j = job("7", "q", "u", 50001, 0);
  gp_telemetry_set_jobs(p.t, &j, 1, NULL);
  /* 10 s idle (no process yet), then 10 s at 80% with 9 GiB, then 10 s at 40%. */
  gp_telemetry_sample(p.t);
  now_ms += 10000;
  gp_telemetry_sample(p.t);
  gp_gpu_sim_attach(p.b, 0, 50001, NULL, 80, 9216, NULL);
  now_ms += 10000;
  gp_telemetry_sample(p.t);
  gp_gpu_sim_attach(p.b, 0, 50001, NULL, 40, 4096, NULL);
  now_ms += 10000;
  gp_telemetry_sample(p.t);
  gp_job_usage u;
  REQUIRE(gp_telemetry_job_usage(p.t, "7", &u) == 0);
  CHECK_EQ_INT(30, u.sampled_s);
  CHECK(u.util_known);
  CHECK_EQ_INT(10, u.idle_s);
  CHECK_NEAR((0 + 80 + 40) / 3.0, u.avg_sm_util_pct, 0.01);
  /* SM-busy GPU-seconds: 10 s x 0.8 + 10 s x 0.4. */
  CHECK_NEAR(12, u.sm_busy_gpu_s, 1e-9);
  CHECK_EQ_INT(80, u.peak_sm_util_pct);
  CHECK_EQ_INT(9216, u.peak_mem_mib);
  /* Energy: 10 s idle at 70 W, 10 s at 574 W (70 + 630 * 0.8), 10 s at 322 W. */
  CHECK_NEAR(700 + 5740 + 3220, u.energy_j, 1.0);
  /* The job ends: its series vanish, its summary stays. */
  gp_gpu_sim_detach(p.b, 50001);
  gp_telemetry_set_jobs(p.t, NULL, 0, NULL);
  gp_telemetry_view_get(p.t, p.v);
  CHECK_EQ_INT(0, p.v->n_attr);
  gp_job_usage after;
  REQUIRE(gp_telemetry_job_usage(p.t, "7", &after) == 0);
  CHECK_EQ_INT(u.peak_mem_mib, after.peak_mem_mib);
  CHECK_NEAR(u.energy_j, after.energy_j, 0.001);
  CHECK_EQ_INT(GP_ENOENT, gp_telemetry_job_usage(p.t, "8", &after));
  close_pool(&p);
}

/* Jobs a (60% of the GPU, 1 GiB) and b (20%, mem_b MiB) share GPU 0 for one 1 s round;
 * their usage after it. */
static void share_one_round(pool *p, int64_t mem_b, gp_job_usage *ua, gp_job_usage *ub) {
  gp_telemetry_job jobs[2] = {job("a", "q", "u", 60001, 0), job("b", "q", "u", 60002, 0)};
  gp_telemetry_set_jobs(p->t, jobs, 2, NULL);
  gp_gpu_sim_attach(p->b, 0, 60001, NULL, 60, 1024, NULL);
  gp_gpu_sim_attach(p->b, 0, 60002, NULL, 20, mem_b, NULL);
  gp_telemetry_sample(p->t);
  now_ms += 1000;
  gp_telemetry_sample(p->t);
  gp_telemetry_job_usage(p->t, "a", ua);
  gp_telemetry_job_usage(p->t, "b", ub);
}

/* A job on two GPUs: its SM-busy GPU-seconds add up over both (whole-GPU units), while its
 * average utilisation is the mean. */
static void busy_gpu_seconds_sum_over_the_jobs_gpus(void) {
  pool p = open_pool("2xH100");
  gp_telemetry_job j = job("9", "q", "u", 60001, 0);
  j.n_gpus = 2;
  j.gpus[1] = 1;
  gp_telemetry_set_jobs(p.t, &j, 1, NULL);
  gp_gpu_sim_attach(p.b, 0, 60001, NULL, 50, 1024, NULL);
  gp_gpu_sim_attach(p.b, 1, 60001, NULL, 30, 1024, NULL);
  gp_telemetry_sample(p.t);
  now_ms += 20000;
  gp_telemetry_sample(p.t);
  gp_job_usage u;
  REQUIRE(gp_telemetry_job_usage(p.t, "9", &u) == 0);
  CHECK_NEAR(40, u.avg_sm_util_pct, 0.01);
  CHECK_NEAR(20 * 0.5 + 20 * 0.3, u.sm_busy_gpu_s, 1e-9);
  close_pool(&p);
}

static void shared_energy_is_split_by_utilisation(void) {
  pool p = open_pool("H100");
  gp_job_usage ua, ub;
  share_one_round(&p, 1024, &ua, &ub);
  /* 1 s at 70 + 630 * 0.8 = 574 W, split 3:1. */
  CHECK_NEAR(574 * 0.75, ua.energy_j, 0.5);
  CHECK_NEAR(574 * 0.25, ub.energy_j, 0.5);
  close_pool(&p);
}

static void under_mps_a_jobs_utilisation_is_unknown_not_idle(void) {
  /* The driver counts MPS clients' kernels against the server: per-process utilisation is
   * unknown. The jobs keep their memory and an even split of the energy, and their usage
   * says the utilisation was never measured instead of calling them idle. */
  pool p = open_pool("H100");
  REQUIRE(gp_gpu_sim_set_mps(p.b, 0, true) == 0);
  gp_job_usage ua, ub;
  share_one_round(&p, 2048, &ua, &ub);
  CHECK(!ua.util_known && !ub.util_known);
  CHECK_EQ_INT(0, ua.idle_s);
  CHECK_EQ_INT(1024, ua.peak_mem_mib);
  CHECK_EQ_INT(2048, ub.peak_mem_mib);
  CHECK_NEAR(574 * 0.5, ua.energy_j, 0.5);
  gp_telemetry_view_get(p.t, p.v);
  REQUIRE(p.v->n_attr == 2);
  CHECK_EQ_INT(-1, p.v->attr[0].sm_util_pct);
  CHECK_EQ_INT(-1, p.v->attr[1].sm_util_pct);
  /* Without MPS the same load is measured per process. */
  REQUIRE(gp_gpu_sim_set_mps(p.b, 0, false) == 0);
  now_ms += 1000;
  gp_telemetry_sample(p.t);
  gp_telemetry_job_usage(p.t, "a", &ua);
  CHECK(ua.util_known);
  CHECK_EQ_INT(60, ua.peak_sm_util_pct);
  close_pool(&p);
}

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  REQUIRE(f);
  fputs(text, f);
  fclose(f);
}

static void fake_proc(const char *root, int pid, int ppid, const char *comm, const char *cgroup) {
  char path[512], text[512];
  snprintf(path, sizeof path, "%s/%d", root, pid);
  mkdir(path, 0755);
  snprintf(path, sizeof path, "%s/%d/stat", root, pid);
  snprintf(text, sizeof text, "%d (%s) S %d %d 0 0\n", pid, comm, ppid, ppid);
  write_file(path, text);
  snprintf(path, sizeof path, "%s/%d/cgroup", root, pid);
  write_file(path, cgroup);
}

static void processes_join_jobs_by_process_tree_and_cgroup(void) {
  char root[] = "/tmp/gp_proc_XXXXXX";
  REQUIRE(mkdtemp(root));
  /* Job 1: leader 100 -> python 101 -> worker 102 (a comm with spaces and parens). */
  fake_proc(root, 100, 1, "bash", "0::/user.slice\n");
  fake_proc(root, 101, 100, "python", "0::/user.slice\n");
  fake_proc(root, 102, 101, "pt worker (2)", "0::/user.slice\n");
  /* Job 2 runs in cgroup /gpool/job-2; its helper 201 was re-parented to init. */
  fake_proc(root, 200, 1, "sh", "0::/gpool/job-2\n");
  fake_proc(root, 201, 1, "daemon", "12:memory:/gpool/job-2/helper\n0::/gpool/job-2/helper\n");
  /* A stranger with a look-alike cgroup name. */
  fake_proc(root, 300, 1, "x", "0::/gpool/job-20\n");
  gp_telemetry_job jobs[2] = {job("1", "q", "u", 100, 0), job("2", "q", "u", 200, 0)};
  snprintf(jobs[1].cgroup, sizeof jobs[1].cgroup, "/gpool/job-2");
  CHECK_EQ_INT(0, gp_telemetry_match_pid(root, 102, jobs, 2));
  CHECK_EQ_INT(0, gp_telemetry_match_pid(root, 100, jobs, 2));
  CHECK_EQ_INT(1, gp_telemetry_match_pid(root, 201, jobs, 2));
  CHECK_EQ_INT(-1, gp_telemetry_match_pid(root, 300, jobs, 2));
  CHECK_EQ_INT(-1, gp_telemetry_match_pid(root, 999, jobs, 2)); /* gone */
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf %s", root);
  CHECK_EQ_INT(0, system(cmd));
}

static void real_child_processes_are_attributed_to_their_job(void) {
  /* A real process tree: this test is the "agent", a child is the job leader, and its own
   * child is the process that uses the GPU. */
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  pid_t leader = fork();
  REQUIRE(leader >= 0);
  if (leader == 0) {
    pid_t worker = fork();
    if (worker == 0) {
      pause();
      _exit(0);
    }
    if (write(fds[1], &worker, sizeof worker) != sizeof worker) _exit(1);
    pause();
    _exit(0);
  }
  pid_t worker = 0;
  REQUIRE(read(fds[0], &worker, sizeof worker) == sizeof worker);
  pool p = open_pool("A10");
  gp_telemetry_job j = job("99", "q", "carol", leader, 0);
  gp_telemetry_set_jobs(p.t, &j, 1, NULL);
  gp_gpu_sim_attach(p.b, 0, worker, NULL, 25, 3000, NULL);
  gp_gpu_sim_attach(p.b, 0, getpid(), NULL, 5, 100, NULL); /* not the job's */
  gp_telemetry_sample(p.t);
  gp_telemetry_view_get(p.t, p.v);
  const gp_telemetry_attr *a = find_attr(p.v, "99", 0);
  REQUIRE(a);
  CHECK_EQ_INT(25, a->sm_util_pct);
  CHECK_EQ_INT(3000, a->mem_mib);
  CHECK_EQ_INT(1, a->n_procs);
  close_pool(&p);
  kill(worker, SIGKILL);
  kill(leader, SIGKILL);
  waitpid(leader, NULL, 0);
}

static void a_gpu_that_stops_answering_is_reported_with_its_event(void) {
  pool p = open_pool("2xH100");
  gp_telemetry_sample(p.t);
  REQUIRE(gp_gpu_sim_inject_spec(p.b, "xid:79@gpu1", NULL) == 0);
  gp_telemetry_sample(p.t);
  gp_telemetry_view_get(p.t, p.v);
  CHECK(p.v->have_sample[0]);
  CHECK(!p.v->have_sample[1]);
  CHECK_CONTAINS(p.v->sample_error[1], "fallen off the bus");
  CHECK_EQ_INT(79, p.v->last_xid[1]);
  CHECK_EQ_INT(1, p.v->xid_count[1]);
  gp_gpu_event ev[8];
  int n = 0;
  gp_telemetry_take_events(p.t, ev, 8, &n);
  REQUIRE(n == 1);
  CHECK_EQ_INT(79, ev[0].xid);
  gp_telemetry_take_events(p.t, ev, 8, &n);
  CHECK_EQ_INT(0, n);
  gp_gpu_sample hist[4];
  CHECK_EQ_INT(0, gp_telemetry_history(p.t, 0, hist, 4, &n));
  CHECK_EQ_INT(2, n);
  CHECK_EQ_INT(GP_ENOENT, gp_telemetry_history(p.t, 5, hist, 4, &n));
  close_pool(&p);
}

static void job_table_is_bounded(void) {
  pool p = open_pool("T4");
  gp_telemetry_job *many = calloc(GP_TELEMETRY_MAX_JOBS + 1, sizeof *many);
  gp_err e = {0};
  CHECK_EQ_INT(GP_ELIMIT, gp_telemetry_set_jobs(p.t, many, GP_TELEMETRY_MAX_JOBS + 1, &e));
  free(many);
  close_pool(&p);
}

GP_TESTS(two_jobs_on_one_gpu_each_get_their_own_figures, usage_summary_adds_up_and_outlives_the_job,
         busy_gpu_seconds_sum_over_the_jobs_gpus,
         shared_energy_is_split_by_utilisation,
         under_mps_a_jobs_utilisation_is_unknown_not_idle, processes_join_jobs_by_process_tree_and_cgroup,
         real_child_processes_are_attributed_to_their_job,
         a_gpu_that_stops_answering_is_reported_with_its_event, job_table_is_bounded)
