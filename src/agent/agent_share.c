/* SPDX-License-Identifier: Apache-2.0 */
/* GPU sharing on the node: how each placement is isolated (and refusing to start a job whose
 * share cannot be enforced: fail closed), the GPU-memory watchdog for shared GPUs without
 * MPS, and MIG re-partitioning. Enforcement modes, reported per job:
 *   exclusive  whole GPUs, nobody else on them;
 *   mig        a MIG instance (hardware isolation);
 *   mps        a fraction on a GPU served by an MPS control daemon: per-client memory limit
 *              and active-thread percentage set in the job's environment;
 *   watchdog   a fraction without MPS: after each telemetry round the agent sums the GPU
 *              memory of the job's processes and stops a job that exceeds its share
 *              (reason limit_exceeded);
 *   none       time-sliced replicas: no isolation, and the record says so. */
#include "agent/agent_int.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "agent/gpu_sim.h"

bool gp__agent_mps_running(const gp_agent *a, char *pipe_dir, size_t size) {
  const char *dir = a->cfg.mps_pipe_dir[0] ? a->cfg.mps_pipe_dir : getenv("CUDA_MPS_PIPE_DIRECTORY");
  if (!dir || !*dir) dir = "/tmp/nvidia-mps";
  snprintf(pipe_dir, size, "%s", dir);
  char path[700];
  snprintf(path, sizeof path, "%s/control", dir);
  struct stat st;
  /* nvidia-cuda-mps-control -d creates its "control" pipe there while it runs. */
  return stat(path, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode));
}

static bool same_mig_uuid(const char *a, const char *b) {
  if (strncmp(a, "MIG-", 4) == 0) a += 4;
  if (strncmp(b, "MIG-", 4) == 0) b += 4;
  return strcmp(a, b) == 0;
}

int gp__agent_share_decide(gp_agent *a, const int *gpus, int n_gpus, int64_t gpu_milli,
                     int64_t gpu_mem_mib, const char *mig_uuid, gp__agent_share_plan *ret, gp_err *err) {
  gp__agent_share_plan sp;
  memset(&sp, 0, sizeof sp);
  if (mig_uuid) {
    for (int g = 0; g < a->n_gpus; g++) {
      if (n_gpus > 0 && g != gpus[0]) continue;
      for (int k = 0; k < a->gpus[g].n_mig; k++)
        if (same_mig_uuid(a->gpus[g].mig[k].uuid, mig_uuid)) {
          snprintf(sp.enforcement, sizeof sp.enforcement, "mig");
          *ret = sp;
          return 0;
        }
    }
    return gp_err_set(err, GP_ENOENT, NULL, 0, "mig_uuid",
                      "MIG instance %s does not exist on %s%d of node %s", mig_uuid,
                      n_gpus > 0 ? "GPU " : "any of the GPUs 0-", n_gpus > 0 ? gpus[0] : a->n_gpus - 1,
                      a->cfg.name);
  }
  bool fractional = gpu_milli < 1000 || gpu_mem_mib > 0;
  snprintf(sp.enforcement, sizeof sp.enforcement, "exclusive");
  size_t mps_len = 0;
  bool mps = false, watchdog = false, timeslice = false;
  char pipe_dir[512];
  for (int i = 0; i < n_gpus; i++) {
    int g = gpus[i];
    const gp_gpu_info *info = &a->gpus[g];
    if (a->gpu_mode[g] == GP_MODE_MIG)
      return gp_err_set(err, GP_ESTATE, NULL, 0, "placements",
                        "GPU %d of node %s is partitioned into MIG instances; the placement names "
                        "no instance", g, a->cfg.name);
    if (a->gpu_mode[g] == GP_MODE_TIMESLICE) {
      timeslice = true;
      continue;
    }
    if (!fractional) continue;
    if (a->gpu_mode[g] == GP_MODE_EXCLUSIVE)
      return gp_err_set(err, GP_ESTATE, NULL, 0, "placements",
                        "GPU %d of node %s is exclusive; it does not take fractional jobs "
                        "(configure it as shared)", g, a->cfg.name);
    int64_t limit = gpu_mem_mib > 0 ? gpu_mem_mib : gpu_milli * info->mem_mib / 1000;
    if (limit <= 0 || limit > info->mem_mib)
      return gp_err_set(err, GP_EINVAL, NULL, 0, "gpu_mem_mib",
                        "share of %lld MiB does not fit GPU %d (%lld MiB)", (long long)limit, g,
                        (long long)info->mem_mib);
    sp.limit_mib = limit;
    if (gp__agent_mps_running(a, pipe_dir, sizeof pipe_dir)) {
      mps = true;
      snprintf(sp.mps_pipe_dir, sizeof sp.mps_pipe_dir, "%s", pipe_dir);
      /* Device ordinals as the job sees them (after CUDA_VISIBLE_DEVICES). */
      mps_len += (size_t)snprintf(sp.mps_mem_limit + mps_len, sizeof sp.mps_mem_limit - mps_len,
                                  "%s%d=%lldM", mps_len ? "," : "", i, (long long)limit);
      int64_t pct = gpu_milli < 1000 ? gpu_milli / 10 : limit * 100 / info->mem_mib;
      sp.mps_thread_pct = (int)(pct < 1 ? 1 : pct > 100 ? 100 : pct);
      continue;
    }
    gp_gpu_sample s;
    gp_err serr = {0};
    if (a->gpu->ops->sample(a->gpu, g, &s, &serr) != 0)
      return gp_err_set(err, GP_EUNSUPP, NULL, 0, "placements",
                        "cannot enforce a %lld MiB share on GPU %d: no MPS control daemon (no "
                        "%s/control) and per-process GPU memory cannot be read (%s)",
                        (long long)limit, g, pipe_dir, serr.message);
    watchdog = true;
  }
  if (mps && watchdog)
    return gp_err_set(err, GP_ESTATE, NULL, 0, "placements",
                      "the placement mixes GPUs with and without MPS");
  if (mps) snprintf(sp.enforcement, sizeof sp.enforcement, "mps");
  else if (watchdog) snprintf(sp.enforcement, sizeof sp.enforcement, "watchdog");
  else if (timeslice) snprintf(sp.enforcement, sizeof sp.enforcement, "none");
  *ret = sp;
  return 0;
}

void gp__agent_watchdog_check(gp_agent *a, const gp_telemetry_view *v) {
  for (size_t i = 0; i < a->n_jobs; i++) {
    gp__agent_job *j = a->jobs[i];
    if (j->ended || j->limit_exceeded || strcmp(j->enforcement, "watchdog") != 0) continue;
    for (int k = 0; k < j->n_gpus && !j->limit_exceeded; k++) {
      int g = j->gpus[k];
      if (g >= v->n_gpus || !v->have_sample[g]) {
        if (g < GP_GPU_MAX_DEVICES && !a->watchdog_warned[g])
          gp__agent_log("watchdog: cannot read GPU %d (%s): shares on it are not checked until it "
                  "answers again", g, g < v->n_gpus ? v->sample_error[g] : "no such GPU");
        if (g < GP_GPU_MAX_DEVICES) a->watchdog_warned[g] = true;
        continue;
      }
      a->watchdog_warned[g] = false;
      /* The job's processes on this GPU, as telemetry attributed them (leader, its
       * descendants, its cgroup). */
      int64_t used = 0;
      for (int n = 0; n < v->n_attr; n++)
        if (v->attr[n].gpu == g && strncmp(v->attr[n].job, j->id, sizeof v->attr[n].job - 1) == 0)
          used += v->attr[n].mem_mib;
      if (used <= j->limit_mib) continue;
      snprintf(j->message, sizeof j->message,
               "used %lld MiB of GPU memory on GPU %d (%s), over its share of %lld MiB: stopped "
               "by the GPU memory watchdog", (long long)used, g, a->gpus[g].uuid,
               (long long)j->limit_mib);
      j->limit_exceeded = true;
      killpg(j->pid, SIGKILL);
      gp__agent_job_persist(j);
      char path[800];
      snprintf(path, sizeof path, "%s/stderr", j->dir);
      FILE *f = fopen(path, "ae");
      if (f) {
        fprintf(f, "gpool: %s\n", j->message);
        fclose(f);
      }
      gp__agent_log("job %s: %s", j->id, j->message);
    }
  }
}

json_t *gp__agent_mig_json(const gp_gpu_info *g) {
  json_t *list = json_array();
  for (int k = 0; k < g->n_mig && k < GP_GPU_MAX_MIG; k++) {
    json_t *o = json_object();
    json_object_set_new(o, "uuid", json_string(g->mig[k].uuid));
    json_object_set_new(o, "profile", json_string(g->mig[k].profile));
    json_object_set_new(o, "start_slot", json_integer(g->mig[k].start_slot));
    json_object_set_new(o, "gpu_instance_id", json_integer(g->mig[k].gpu_instance_id));
    json_object_set_new(o, "mem_mib", json_integer(g->mig[k].mem_mib));
    json_array_append_new(list, o);
  }
  return list;
}

/* Completes a layout's start slots: all given (checked against the model), or none (-1:
 * the model's placement search chooses them). */
static int place_slots(const gp_gpu_info *g, const char *const *profiles, int *slots, int n,
                       gp_err *err) {
  const gp_gpu_model *m = gp_gpu_model_find(g->model);
  if (!m || m->n_mig == 0)
    return gp_err_set(err, GP_EUNSUPP, NULL, 0, "gpu", "GPU %d (%s) does not support MIG",
                      g->index, g->model);
  bool any_missing = false;
  for (int k = 0; k < n; k++) any_missing |= slots[k] < 0;
  if (any_missing) return gp_gpu_model_place_mig(m, profiles, n, slots, err);
  return gp_gpu_model_check_mig(m, profiles, slots, n, err);
}

int gp__agent_mig_apply(gp_agent *a, int gpu, const char *const *profiles, const int *slots_in, int n,
                  gp_err *err) {
  for (size_t i = 0; i < a->n_jobs; i++) {
    const gp__agent_job *j = a->jobs[i];
    if (j->ended) continue;
    for (int k = 0; k < j->n_gpus; k++)
      if (j->gpus[k] == gpu)
        return gp_err_set(err, GP_ESTATE, NULL, 0, "gpu",
                          "GPU %d runs job %s: re-partitioning needs an idle GPU", gpu, j->id);
  }
  int slots[GP_GPU_MAX_MIG];
  for (int k = 0; k < n; k++) slots[k] = slots_in ? slots_in[k] : -1;
  int rc = place_slots(&a->gpus[gpu], profiles, slots, n, err);
  if (rc) return rc;
  rc = a->gpu->ops->set_mig_layout(a->gpu, gpu, profiles, slots, n, err);
  /* Whatever happened, report what the GPU has now: a driver may fail half-way. */
  gp_gpu_info all[GP_GPU_MAX_DEVICES];
  int found = 0;
  gp_err derr = {0};
  if (a->gpu->ops->discover(a->gpu, all, GP_GPU_MAX_DEVICES, &found, &derr) == 0 && gpu < found) {
    a->gpus[gpu] = all[gpu];
    if (all[gpu].n_mig > 0) {
      a->gpu_mode[gpu] = GP_MODE_MIG;
      a->gpu_replicas[gpu] = 1;
    }
  }
  return rc;
}

int gp__agent_mig_apply_config(gp_agent *a) {
  for (int g = 0; g < a->n_gpus; g++) {
    const gp_gpu_mode *m = gp_agent_config_gpu_mode(&a->cfg, g);
    if (m->mode != GP_MODE_MIG) continue;
    char layout[256];
    snprintf(layout, sizeof layout, "%s", m->mig_layout);
    const char *profiles[GP_GPU_MAX_MIG + 1];
    int n = 0;
    char *save = NULL;
    for (char *t = strtok_r(layout, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
      if (n == GP_GPU_MAX_MIG) {
        gp__agent_log("GPU %d: MIG layout '%s' has more than %d instances", g, m->mig_layout,
                GP_GPU_MAX_MIG);
        return GP_EINVAL;
      }
      profiles[n++] = t;
    }
    /* Already partitioned like this (e.g. after an agent restart)? */
    bool same = a->gpus[g].n_mig == n;
    bool taken[GP_GPU_MAX_MIG] = {0};
    for (int k = 0; k < n && same; k++) {
      bool hit = false;
      for (int q = 0; q < a->gpus[g].n_mig && !hit; q++)
        if (!taken[q] && strcmp(a->gpus[g].mig[q].profile, profiles[k]) == 0) taken[q] = hit = true;
      same = hit;
    }
    if (same) {
      a->gpu_mode[g] = GP_MODE_MIG;
      continue;
    }
    gp_err err = {0};
    int rc = gp__agent_mig_apply(a, g, profiles, NULL, n, &err);
    if (rc == GP_ESTATE) {
      gp__agent_log("GPU %d: keeping its current MIG layout: %s", g, err.message);
      continue;
    }
    if (rc) {
      gp__agent_log("GPU %d: cannot apply MIG layout '%s': %s", g, m->mig_layout, err.message);
      return rc;
    }
    gp__agent_log("GPU %d: MIG layout %s applied", g, m->mig_layout);
  }
  return 0;
}
