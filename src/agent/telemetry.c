/* SPDX-License-Identifier: Apache-2.0 */
/* Telemetry sampler and per-job aggregation declared in telemetry.h.
 * Backend calls happen outside the lock (NVML reads take milliseconds) into a scratch area
 * owned by the sampling thread; the results are committed under the lock. */
#include "agent/telemetry.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util/mem.h"

typedef struct job_state {
  gp_telemetry_job job;
  double util_ms;            /* sum of util_pct * ms */
  double sm_busy_ms;         /* SM-busy GPU-milliseconds in whole-GPU units */
  int64_t sampled_ms, idle_ms;
  int peak_util;
  int64_t peak_mem;
  double energy_mj;
  double gpu_energy_mj[GP_GPU_MAX_DEVICES]; /* attributed per GPU, for the view */
  double last_util;
  bool seen;                 /* has at least one round with its utilisation known */
} job_state;

typedef struct finished_job {
  char id[32];
  gp_job_usage usage;
} finished_job;

struct gp_telemetry {
  pthread_mutex_t mu;
  gp_gpu_backend *b;
  char hostname[128];
  char proc_root[128];
  int ring_len;
  int idle_pct;
  int n_gpus;
  gp_gpu_info info[GP_GPU_MAX_DEVICES];
  gp_gpu_sample *ring;       /* n_gpus * ring_len */
  int ring_head[GP_GPU_MAX_DEVICES], ring_n[GP_GPU_MAX_DEVICES];
  bool have_sample[GP_GPU_MAX_DEVICES];
  char sample_error[GP_GPU_MAX_DEVICES][128];
  int64_t last_energy_mj[GP_GPU_MAX_DEVICES];
  bool have_energy[GP_GPU_MAX_DEVICES];
  int last_xid[GP_GPU_MAX_DEVICES];
  int64_t xid_count[GP_GPU_MAX_DEVICES];
  int n_events;
  gp_gpu_event events[GP_TELEMETRY_MAX_EVENTS];
  int n_jobs;
  job_state jobs[GP_TELEMETRY_MAX_JOBS];
  int fin_head, fin_n;
  finished_job finished[GP_TELEMETRY_MAX_JOBS];
  int n_attr;
  gp_telemetry_attr attr[GP_TELEMETRY_MAX_ATTR];
  int64_t rounds, last_round_ns, last_round_ms;
  int64_t (*clock_ms)(void *);
  void *clock_ctx;
  /* Sampling thread's scratch. */
  gp_gpu_sample scratch[GP_GPU_MAX_DEVICES];
  int scratch_rc[GP_GPU_MAX_DEVICES];
  char scratch_err[GP_GPU_MAX_DEVICES][128];
};

/* Bounded string copy between fields of one struct (snprintf's restrict rules forbid it). */
static void copy_str(char *dst, size_t size, const char *src) {
  size_t n = strnlen(src, size - 1);
  memmove(dst, src, n);
  dst[n] = '\0';
}

static int64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int gp_telemetry_new(gp_gpu_backend *b, const gp_telemetry_opts *opts, gp_telemetry **ret,
                     gp_err *err) {
  gp_telemetry *t = gp_xcalloc(1, sizeof *t);
  t->b = b;
  if (opts && opts->hostname && *opts->hostname)
    snprintf(t->hostname, sizeof t->hostname, "%s", opts->hostname);
  else if (gethostname(t->hostname, sizeof t->hostname - 1) != 0)
    snprintf(t->hostname, sizeof t->hostname, "localhost");
  snprintf(t->proc_root, sizeof t->proc_root, "%s",
           opts && opts->proc_root ? opts->proc_root : "/proc");
  t->ring_len = opts && opts->ring > 0 ? (opts->ring > 3600 ? 3600 : opts->ring) : 60;
  t->idle_pct = opts && opts->idle_threshold_pct > 0 ? opts->idle_threshold_pct : 1;
  t->clock_ms = opts ? opts->clock_ms : NULL;
  t->clock_ctx = opts ? opts->clock_ctx : NULL;
  int rc = b->ops->discover(b, t->info, GP_GPU_MAX_DEVICES, &t->n_gpus, err);
  if (rc) {
    free(t);
    return rc;
  }
  t->ring = gp_xcalloc((size_t)(t->n_gpus ? t->n_gpus : 1) * (size_t)t->ring_len,
                       sizeof *t->ring);
  pthread_mutex_init(&t->mu, NULL);
  *ret = t;
  return 0;
}

void gp_telemetry_free(gp_telemetry *t) {
  if (!t) return;
  pthread_mutex_destroy(&t->mu);
  free(t->ring);
  free(t);
}

int gp_telemetry_rediscover(gp_telemetry *t, gp_err *err) {
  gp_gpu_info info[GP_GPU_MAX_DEVICES];
  int n = 0;
  int rc = t->b->ops->discover(t->b, info, GP_GPU_MAX_DEVICES, &n, err);
  if (rc) return rc;
  pthread_mutex_lock(&t->mu);
  if (n != t->n_gpus) {
    /* The GPU count changed (a GPU vanished): start the rings afresh. */
    free(t->ring);
    t->ring = gp_xcalloc((size_t)(n ? n : 1) * (size_t)t->ring_len, sizeof *t->ring);
    memset(t->ring_n, 0, sizeof t->ring_n);
    memset(t->ring_head, 0, sizeof t->ring_head);
    memset(t->have_sample, 0, sizeof t->have_sample);
  }
  memcpy(t->info, info, sizeof info);
  t->n_gpus = n;
  pthread_mutex_unlock(&t->mu);
  return 0;
}

static void usage_of(const job_state *s, gp_job_usage *u) {
  memset(u, 0, sizeof *u);
  u->avg_sm_util_pct = s->sampled_ms ? s->util_ms / (double)s->sampled_ms : s->last_util;
  u->peak_sm_util_pct = s->peak_util;
  u->peak_mem_mib = s->peak_mem;
  u->energy_j = s->energy_mj / 1000.0;
  u->idle_s = s->idle_ms / 1000;
  u->sampled_s = s->sampled_ms / 1000;
  u->util_known = s->seen;
  u->sm_busy_gpu_s = s->sm_busy_ms / 1000.0;
}

int gp_telemetry_set_jobs(gp_telemetry *t, const gp_telemetry_job *jobs, int n, gp_err *err) {
  if (n < 0 || n > GP_TELEMETRY_MAX_JOBS)
    return gp_err_set(err, GP_ELIMIT, NULL, 0, "jobs", "more than %d jobs on one node",
                      GP_TELEMETRY_MAX_JOBS);
  job_state *next = gp_xcalloc((size_t)(n ? n : 1), sizeof *next);
  pthread_mutex_lock(&t->mu);
  for (int i = 0; i < n; i++) {
    next[i].job = jobs[i];
    /* The strings are fixed arrays: make sure each is terminated whatever the caller did. */
    gp_telemetry_job *nj = &next[i].job;
    nj->id[sizeof nj->id - 1] = nj->queue[sizeof nj->queue - 1] = nj->user[sizeof nj->user - 1] = '\0';
    nj->cgroup[sizeof nj->cgroup - 1] = nj->mig_uuid[sizeof nj->mig_uuid - 1] = '\0';
    if (next[i].job.n_gpus < 0) next[i].job.n_gpus = 0;
    if (next[i].job.n_gpus > GP_GPU_MAX_DEVICES) next[i].job.n_gpus = GP_GPU_MAX_DEVICES;
    for (int k = 0; k < t->n_jobs; k++) {
      if (strcmp(t->jobs[k].job.id, nj->id) != 0) continue;
      gp_telemetry_job keep = next[i].job;
      next[i] = t->jobs[k];
      next[i].job = keep;
      break;
    }
  }
  /* Jobs that left: keep their final usage. */
  for (int k = 0; k < t->n_jobs; k++) {
    bool still = false;
    for (int i = 0; i < n && !still; i++) still = !strcmp(t->jobs[k].job.id, next[i].job.id);
    if (still) continue;
    int slot;
    if (t->fin_n < GP_TELEMETRY_MAX_JOBS) {
      slot = (t->fin_head + t->fin_n++) % GP_TELEMETRY_MAX_JOBS;
    } else {
      slot = t->fin_head;
      t->fin_head = (t->fin_head + 1) % GP_TELEMETRY_MAX_JOBS;
    }
    copy_str(t->finished[slot].id, sizeof t->finished[slot].id, t->jobs[k].job.id);
    usage_of(&t->jobs[k], &t->finished[slot].usage);
  }
  memcpy(t->jobs, next, sizeof *next * (size_t)n);
  t->n_jobs = n;
  /* Drop attribution rows of jobs that left, so their series vanish at once. */
  int k = 0;
  for (int a = 0; a < t->n_attr; a++) {
    bool still = false;
    for (int i = 0; i < n && !still; i++) still = !strcmp(t->attr[a].job, next[i].job.id);
    if (still) t->attr[k++] = t->attr[a];
  }
  t->n_attr = k;
  pthread_mutex_unlock(&t->mu);
  free(next);
  return 0;
}

/* Reads "/proc/<pid>/stat" and returns the parent pid, or -1. The command name may hold
 * spaces and parentheses, so parse from the last ')'. */
static pid_t parent_of(const char *proc_root, pid_t pid) {
  char path[192], buf[512];
  snprintf(path, sizeof path, "%s/%d/stat", proc_root, (int)pid);
  FILE *f = fopen(path, "re");
  if (!f) return -1;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  char *rp = strrchr(buf, ')');
  if (!rp) return -1;
  char state;
  int ppid;
  if (sscanf(rp + 1, " %c %d", &state, &ppid) != 2) return -1;
  return (pid_t)ppid;
}

static bool cgroup_within(const char *path, const char *cg) {
  size_t n = strlen(cg);
  if (!n || strncmp(path, cg, n) != 0) return false;
  return path[n] == '\0' || path[n] == '/' || cg[n - 1] == '/';
}

int gp_telemetry_match_pid(const char *proc_root, pid_t pid, const gp_telemetry_job *jobs,
                           int n_jobs) {
  if (!proc_root) proc_root = "/proc";
  /* The process itself or an ancestor is a job's leader. Bounded walk: pid 1 ends it. */
  pid_t p = pid;
  for (int hop = 0; hop < 64 && p > 1; hop++) {
    for (int i = 0; i < n_jobs; i++)
      if (jobs[i].leader > 0 && jobs[i].leader == p) return i;
    p = parent_of(proc_root, p);
  }
  /* Daemonised helpers (re-parented to init) still sit in the job's cgroup. */
  bool any_cgroup = false;
  for (int i = 0; i < n_jobs && !any_cgroup; i++) any_cgroup = jobs[i].cgroup[0] != '\0';
  if (!any_cgroup) return -1;
  char path[192], line[1024];
  snprintf(path, sizeof path, "%s/%d/cgroup", proc_root, (int)pid);
  FILE *f = fopen(path, "re");
  if (!f) return -1;
  int found = -1;
  while (found < 0 && fgets(line, sizeof line, f)) {
    /* "0::/gpool/job-12" (v2) or "4:memory:/gpool/job-12" (v1). */
    char *c1 = strchr(line, ':');
    char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (!c2) continue;
    char *cg = c2 + 1;
    cg[strcspn(cg, "\n")] = '\0';
    for (int i = 0; i < n_jobs && found < 0; i++)
      if (cgroup_within(cg, jobs[i].cgroup)) found = i;
  }
  fclose(f);
  return found;
}

typedef struct pair_acc {
  int job, gpu;
  int n_procs;
  int util;                  /* sum of known per-process utils */
  bool util_known;
  int64_t mem;
  char mig[96];
} pair_acc;

static pair_acc *pair_get(pair_acc *pairs, int *n, int max, int job, int gpu) {
  for (int i = 0; i < *n; i++)
    if (pairs[i].job == job && pairs[i].gpu == gpu) return &pairs[i];
  if (*n == max) return NULL;
  pair_acc *p = &pairs[(*n)++];
  memset(p, 0, sizeof *p);
  p->job = job;
  p->gpu = gpu;
  return p;
}

/* One sampling round's working state: what the backend and /proc said (gathered outside
 * the lock) and the per-pair and per-job figures computed from it under the lock. */
typedef struct sample_round {
  int n_gpus;
  gp_gpu_event ev[GP_TELEMETRY_MAX_EVENTS];
  int n_ev;
  gp_telemetry_job *jobs;    /* a copy of the job table; owned */
  int n_jobs;
  pair_acc *pairs;           /* (job, GPU) pairs; owned */
  int n_pairs;
  int unattributed[GP_GPU_MAX_DEVICES]; /* processes on the GPU that belong to no job */
  int jobs_on[GP_GPU_MAX_DEVICES];      /* jobs on the GPU */
  int64_t dt;                           /* ms since the previous round */
  double energy_delta[GP_GPU_MAX_DEVICES];
  double util_sum_on[GP_GPU_MAX_DEVICES];
  int pair_util[GP_TELEMETRY_MAX_ATTR];
  double job_util_sum[GP_TELEMETRY_MAX_JOBS];
  int job_util_n[GP_TELEMETRY_MAX_JOBS];
  double job_busy[GP_TELEMETRY_MAX_JOBS]; /* busy fraction summed over its GPUs, whole-GPU units */
  int64_t job_mem[GP_TELEMETRY_MAX_JOBS];
} sample_round;

/* Samples every GPU into the scratch area and drains pending events. Only this thread
 * changes n_gpus, so reading it without the lock is safe. */
static void read_backend(gp_telemetry *t, sample_round *r) {
  r->n_gpus = t->n_gpus;
  for (int g = 0; g < r->n_gpus; g++) {
    gp_err e = {0};
    t->scratch_rc[g] = t->b->ops->sample(t->b, g, &t->scratch[g], &e);
    snprintf(t->scratch_err[g], sizeof t->scratch_err[g], "%.120s",
             e.message[0] ? e.message : gp_strerror(t->scratch_rc[g]));
  }
  if (t->b->ops->poll_events(t->b, r->ev, GP_TELEMETRY_MAX_EVENTS, 0, &r->n_ev) != 0) r->n_ev = 0;
}

/* Attributes the GPUs' processes to jobs (reads /proc; still outside the lock): one pair
 * per job and GPU it holds, with that job's processes, memory and known utilisation. Only
 * this thread changes the job table, so copying it without the lock is safe. */
static void attribute_processes(gp_telemetry *t, sample_round *r) {
  static const int max_pairs = GP_TELEMETRY_MAX_ATTR;
  r->pairs = gp_xcalloc((size_t)max_pairs, sizeof *r->pairs);
  r->jobs = gp_xcalloc((size_t)(t->n_jobs ? t->n_jobs : 1), sizeof *r->jobs);
  r->n_jobs = t->n_jobs;
  for (int i = 0; i < r->n_jobs; i++) r->jobs[i] = t->jobs[i].job;
  for (int i = 0; i < r->n_jobs; i++)
    for (int k = 0; k < r->jobs[i].n_gpus; k++)
      if (r->jobs[i].gpus[k] >= 0 && r->jobs[i].gpus[k] < r->n_gpus) {
        pair_acc *p = pair_get(r->pairs, &r->n_pairs, max_pairs, i, r->jobs[i].gpus[k]);
        if (p) snprintf(p->mig, sizeof p->mig, "%s", r->jobs[i].mig_uuid);
      }
  for (int g = 0; g < r->n_gpus; g++) {
    if (t->scratch_rc[g]) continue;
    const gp_gpu_sample *s = &t->scratch[g];
    for (int k = 0; k < s->n_procs && k < GP_GPU_MAX_PROCS; k++) {
      int j = gp_telemetry_match_pid(t->proc_root, s->procs[k].pid, r->jobs, r->n_jobs);
      if (j < 0) {
        r->unattributed[g]++;
        continue;
      }
      pair_acc *p = pair_get(r->pairs, &r->n_pairs, max_pairs, j, g);
      if (!p) continue;
      p->n_procs++;
      p->mem += s->procs[k].used_mib;
      if (s->procs[k].sm_util_pct >= 0) {
        p->util += s->procs[k].sm_util_pct;
        p->util_known = true;
      }
      if (s->procs[k].mig_uuid[0]) snprintf(p->mig, sizeof p->mig, "%s", s->procs[k].mig_uuid);
    }
  }
  /* Jobs per GPU: a GPU held by exactly one job (and no stranger) lends that job the
   * device figure when the driver has no per-process utilisation. */
  for (int i = 0; i < r->n_pairs; i++) r->jobs_on[r->pairs[i].gpu]++;
}

/* Commits each GPU's sample (or its error) to the history ring and works out the energy
 * each GPU used since the previous round. Caller holds the lock. */
static void commit_samples(gp_telemetry *t, sample_round *r) {
  for (int g = 0; g < r->n_gpus && g < t->n_gpus; g++) {
    if (t->scratch_rc[g]) {
      t->have_sample[g] = false;
      copy_str(t->sample_error[g], sizeof t->sample_error[g], t->scratch_err[g]);
      continue;
    }
    const gp_gpu_sample *s = &t->scratch[g];
    /* The round's energy integrates power (averaged over the last second by the driver on
     * Ampere and newer), as DCGM's job statistics do: a backend may read the energy counter
     * only every few seconds (it is slow). The counter's delta serves where power is not
     * read. */
    if (s->power_w >= 0)
      r->energy_delta[g] = s->power_w * (double)r->dt;
    else if (s->energy_mj >= 0 && t->have_energy[g] && s->energy_mj >= t->last_energy_mj[g])
      r->energy_delta[g] = (double)(s->energy_mj - t->last_energy_mj[g]);
    if (s->energy_mj >= 0) {
      t->last_energy_mj[g] = s->energy_mj;
      t->have_energy[g] = true;
    }
    t->have_sample[g] = true;
    t->sample_error[g][0] = '\0';
    t->ring[(size_t)g * (size_t)t->ring_len + (size_t)((t->ring_head[g] + t->ring_n[g]) % t->ring_len)] = *s;
    if (t->ring_n[g] < t->ring_len) t->ring_n[g]++;
    else t->ring_head[g] = (t->ring_head[g] + 1) % t->ring_len;
  }
}

/* Counts Xids per GPU and keeps the newest events for gp_telemetry_take_events. Caller
 * holds the lock. */
static void commit_events(gp_telemetry *t, const sample_round *r) {
  for (int i = 0; i < r->n_ev; i++) {
    const gp_gpu_event *ev = &r->ev[i];
    if (ev->gpu >= 0 && ev->gpu < GP_GPU_MAX_DEVICES && ev->xid > 0) {
      t->last_xid[ev->gpu] = ev->xid;
      t->xid_count[ev->gpu]++;
    }
    if (t->n_events == GP_TELEMETRY_MAX_EVENTS) {
      memmove(t->events, t->events + 1, sizeof t->events[0] * (GP_TELEMETRY_MAX_EVENTS - 1));
      t->n_events--;
    }
    t->events[t->n_events++] = *ev;
  }
}

/* Each pair's utilisation: its processes' own figure; else the device figure when the job
 * is alone on the GPU; else 0 when it has no process there; else unknown (-1). Caller
 * holds the lock. */
static void pair_utilisation(gp_telemetry *t, sample_round *r) {
  for (int i = 0; i < r->n_pairs; i++) {
    pair_acc *p = &r->pairs[i];
    int u = -1;
    if (p->util_known) u = p->util > 100 ? 100 : p->util;
    else if (r->jobs_on[p->gpu] == 1 && !r->unattributed[p->gpu] && t->have_sample[p->gpu] &&
             t->scratch[p->gpu].gpu_util_pct >= 0)
      u = t->scratch[p->gpu].gpu_util_pct;
    else if (p->n_procs == 0 && t->have_sample[p->gpu])
      u = 0; /* allocated, no process on the GPU: certainly not using it */
    r->pair_util[i] = u;
    if (u > 0) r->util_sum_on[p->gpu] += u;
  }
}

/* The part of GPU `gpu` a MIG instance is (its compute slices over the GPU's 7, the count on
 * every MIG-capable part, src/core/mig.h), read from its profile name ("3g.40gb"); 1 for a
 * pair on the whole GPU or an instance the discovery did not list. */
static double mig_share(const gp_telemetry *t, int gpu, const char *mig_uuid) {
  if (!mig_uuid[0] || gpu < 0 || gpu >= t->n_gpus) return 1;
  const gp_gpu_info *info = &t->info[gpu];
  for (int m = 0; m < info->n_mig && m < GP_GPU_MAX_MIG; m++) {
    if (strcmp(info->mig[m].uuid, mig_uuid) != 0) continue;
    int slices = atoi(info->mig[m].profile);
    return slices >= 1 && slices <= 7 ? slices / 7.0 : 1;
  }
  return 1;
}

/* Splits each GPU's energy among its pairs, gathers each job's figures for the round and
 * rebuilds the attribution table of the view. The job table cannot have changed since the
 * round began: only this thread calls set_jobs. Caller holds the lock. */
static void account_pairs(gp_telemetry *t, sample_round *r) {
  t->n_attr = 0;
  for (int i = 0; i < r->n_pairs; i++) {
    pair_acc *p = &r->pairs[i];
    job_state *js = &t->jobs[p->job];
    /* Energy: the GPU's delta split by utilisation share, evenly when nobody computes. */
    double share = 0;
    if (r->util_sum_on[p->gpu] > 0)
      share = r->pair_util[i] > 0 ? r->pair_util[i] / r->util_sum_on[p->gpu] : 0;
    else share = 1.0 / r->jobs_on[p->gpu];
    double e = r->energy_delta[p->gpu] * share;
    js->energy_mj += e;
    js->gpu_energy_mj[p->gpu] += e;
    if (r->pair_util[i] >= 0) {
      r->job_util_sum[p->job] += r->pair_util[i];
      r->job_util_n[p->job]++;
      r->job_busy[p->job] += r->pair_util[i] / 100.0 * mig_share(t, p->gpu, p->mig);
    }
    r->job_mem[p->job] += p->mem;
    gp_telemetry_attr *a = &t->attr[t->n_attr++];
    memset(a, 0, sizeof *a);
    a->gpu = p->gpu;
    copy_str(a->job, sizeof a->job, js->job.id);
    copy_str(a->queue, sizeof a->queue, js->job.queue);
    copy_str(a->user, sizeof a->user, js->job.user);
    snprintf(a->mig_uuid, sizeof a->mig_uuid, "%s", p->mig);
    a->n_procs = p->n_procs;
    a->sm_util_pct = r->pair_util[i];
    a->mem_mib = p->mem;
    a->energy_j = js->gpu_energy_mj[p->gpu] / 1000.0;
  }
}

/* Adds the round to each job's usage: mean utilisation over its GPUs, idle time, peaks.
 * Caller holds the lock. */
static void account_jobs(gp_telemetry *t, const sample_round *r) {
  for (int j = 0; j < r->n_jobs && j < t->n_jobs; j++) {
    job_state *js = &t->jobs[j];
    if (r->job_util_n[j]) {
      double u = r->job_util_sum[j] / r->job_util_n[j];
      js->last_util = u;
      if (js->seen) {
        js->util_ms += u * (double)r->dt;
        js->sm_busy_ms += r->job_busy[j] * (double)r->dt;
        js->sampled_ms += r->dt;
        if (u < t->idle_pct) js->idle_ms += r->dt;
      }
      if ((int)(u + 0.5) > js->peak_util) js->peak_util = (int)(u + 0.5);
      js->seen = true;
    }
    if (r->job_mem[j] > js->peak_mem) js->peak_mem = r->job_mem[j];
  }
}

int gp_telemetry_sample(gp_telemetry *t) {
  int64_t t0 = mono_ns();
  sample_round r = {0};
  /* Driver calls and /proc reads take milliseconds: they run without the lock. */
  read_backend(t, &r);
  attribute_processes(t, &r);
  pthread_mutex_lock(&t->mu);
  int64_t now_ms = t->clock_ms ? t->clock_ms(t->clock_ctx) : t0 / 1000000;
  r.dt = t->rounds ? now_ms - t->last_round_ms : 0;
  if (r.dt < 0) r.dt = 0;
  commit_samples(t, &r);
  commit_events(t, &r);
  pair_utilisation(t, &r);
  account_pairs(t, &r);
  account_jobs(t, &r);
  t->rounds++;
  t->last_round_ms = now_ms;
  t->last_round_ns = mono_ns() - t0;
  pthread_mutex_unlock(&t->mu);
  free(r.pairs);
  free(r.jobs);
  return 0;
}

int gp_telemetry_take_events(gp_telemetry *t, gp_gpu_event *out, int max, int *ret_n) {
  pthread_mutex_lock(&t->mu);
  int n = t->n_events < max ? t->n_events : max;
  memcpy(out, t->events, sizeof *out * (size_t)n);
  memmove(t->events, t->events + n, sizeof *out * (size_t)(t->n_events - n));
  t->n_events -= n;
  pthread_mutex_unlock(&t->mu);
  *ret_n = n;
  return 0;
}

int gp_telemetry_job_usage(gp_telemetry *t, const char *job_id, gp_job_usage *ret) {
  int rc = GP_ENOENT;
  pthread_mutex_lock(&t->mu);
  for (int i = 0; i < t->n_jobs && rc; i++)
    if (!strcmp(t->jobs[i].job.id, job_id)) {
      usage_of(&t->jobs[i], ret);
      rc = 0;
    }
  /* Newest finished entry wins (a requeued job may have run here twice). */
  for (int k = t->fin_n - 1; k >= 0 && rc; k--) {
    const finished_job *f = &t->finished[(t->fin_head + k) % GP_TELEMETRY_MAX_JOBS];
    if (!strcmp(f->id, job_id)) {
      *ret = f->usage;
      rc = 0;
    }
  }
  pthread_mutex_unlock(&t->mu);
  return rc;
}

int gp_telemetry_history(gp_telemetry *t, int gpu, gp_gpu_sample *out, int max, int *ret_n) {
  pthread_mutex_lock(&t->mu);
  if (gpu < 0 || gpu >= t->n_gpus) {
    pthread_mutex_unlock(&t->mu);
    return GP_ENOENT;
  }
  int n = t->ring_n[gpu] < max ? t->ring_n[gpu] : max;
  int skip = t->ring_n[gpu] - n;
  for (int i = 0; i < n; i++)
    out[i] = t->ring[(size_t)gpu * (size_t)t->ring_len +
                     (size_t)((t->ring_head[gpu] + skip + i) % t->ring_len)];
  pthread_mutex_unlock(&t->mu);
  *ret_n = n;
  return 0;
}

void gp_telemetry_view_get(gp_telemetry *t, gp_telemetry_view *v) {
  pthread_mutex_lock(&t->mu);
  snprintf(v->hostname, sizeof v->hostname, "%s", t->hostname);
  snprintf(v->backend, sizeof v->backend, "%s", t->b->ops->name);
  v->n_gpus = t->n_gpus;
  memcpy(v->info, t->info, sizeof v->info);
  memcpy(v->have_sample, t->have_sample, sizeof v->have_sample);
  memcpy(v->sample_error, t->sample_error, sizeof v->sample_error);
  for (int g = 0; g < t->n_gpus; g++) {
    /* The view holds the current reading only: a GPU whose last read failed shows none,
     * never its last good figures (the ring keeps those for history). */
    if (t->ring_n[g] && t->have_sample[g])
      v->sample[g] = t->ring[(size_t)g * (size_t)t->ring_len +
                             (size_t)((t->ring_head[g] + t->ring_n[g] - 1) % t->ring_len)];
    else
      memset(&v->sample[g], 0, sizeof v->sample[g]);
    if (!t->ring_n[g]) v->have_sample[g] = false;
  }
  memcpy(v->last_xid, t->last_xid, sizeof v->last_xid);
  memcpy(v->xid_count, t->xid_count, sizeof v->xid_count);
  v->n_attr = t->n_attr;
  memcpy(v->attr, t->attr, sizeof v->attr[0] * (size_t)t->n_attr);
  v->rounds = t->rounds;
  v->last_round_ns = t->last_round_ns;
  pthread_mutex_unlock(&t->mu);
}
