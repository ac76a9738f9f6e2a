/* SPDX-License-Identifier: Apache-2.0 */
/* Per-GPU telemetry over a job's life (jobmetrics.h). A series is one GPU of one node; its
 * samples are evenly spaced by the job's interval, which starts at the heartbeat and
 * doubles each time a series fills: every series of the job then merges neighbours, so all
 * of them keep one step and a graph can draw them on one time axis. */
#include "server/state/jobmetrics.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/mem.h"

typedef struct sample {
  int64_t t;          /* wall clock s of the first heartbeat it covers */
  float util_pct, mem_mib, power_w; /* NAN: not reported */
} sample;

typedef struct series {
  char *node, *uuid;  /* owned */
  int index;
  int n;
  size_t cap;
  sample *s;
} series;

struct gp_srv_jobmetrics {
  int doublings;      /* the samples are base_interval_s << doublings apart */
  int n;
  series *series;
};

static float figure(const json_t *tel, const char *key) {
  const json_t *v = json_object_get(tel, key);
  if (!json_is_number(v)) return NAN;
  double d = json_number_value(v);
  return isfinite(d) && d >= 0 && d < 1e12 ? (float)d : NAN;
}

/* Merges neighbours: (0,1) (2,3) ... ; an odd last sample stays as it is. */
static float mean2(float a, float b) {
  if (isnan(a)) return b;
  if (isnan(b)) return a;
  return (a + b) / 2;
}

static void halve(series *se) {
  int k = 0;
  for (int i = 0; i < se->n; i += 2, k++) {
    sample m = se->s[i];
    if (i + 1 < se->n) {
      m.util_pct = mean2(m.util_pct, se->s[i + 1].util_pct);
      m.mem_mib = mean2(m.mem_mib, se->s[i + 1].mem_mib);
      m.power_w = mean2(m.power_w, se->s[i + 1].power_w);
    }
    se->s[k] = m;
  }
  se->n = k;
}

static series *series_for(gp_srv_jobmetrics *m, const gp_srv_node *n, int gpu) {
  const char *uuid = n->gpus[gpu].uuid ? n->gpus[gpu].uuid : "";
  for (int i = 0; i < m->n; i++)
    if (m->series[i].index == gpu && strcmp(m->series[i].node, n->name) == 0 &&
        strcmp(m->series[i].uuid, uuid) == 0)
      return &m->series[i];
  if (m->n >= GP_SRV_JOBMETRICS_GPUS) return NULL;
  m->series = gp_xrealloc(m->series, ((size_t)m->n + 1) * sizeof *m->series);
  series *se = &m->series[m->n++];
  *se = (series){.node = gp_xstrdup(n->name), .uuid = gp_xstrdup(uuid), .index = gpu};
  return se;
}

static int64_t due_after(int interval) { return interval * 3 / 4 > 1 ? interval * 3 / 4 : 1; }

static void add_sample(gp_srv_jobmetrics *m, series *se, const json_t *tel, int base, int64_t now) {
  int interval = base << m->doublings;
  /* Heartbeats arrive about one interval apart, some a little early: a sample is due after
   * three quarters of one, so an early heartbeat does not skip a whole interval. */
  if (se->n > 0 && now < se->s[se->n - 1].t + due_after(interval)) return;
  if (se->n >= GP_SRV_JOBMETRICS_SAMPLES) {
    /* Every series takes the coarser step together, so they share one time axis. */
    for (int i = 0; i < m->n; i++) halve(&m->series[i]);
    m->doublings++;
    interval *= 2;
    if (now < se->s[se->n - 1].t + due_after(interval)) return;
  }
  if ((size_t)se->n == se->cap) {
    size_t cap = se->cap ? se->cap * 2 : 16;
    if (cap > GP_SRV_JOBMETRICS_SAMPLES) cap = GP_SRV_JOBMETRICS_SAMPLES;
    se->s = gp_xrealloc(se->s, cap * sizeof *se->s);
    se->cap = cap;
  }
  se->s[se->n++] = (sample){now, figure(tel, "gpu_util_pct"), figure(tel, "fb_used_mib"),
                            figure(tel, "power_w")};
}

void gp__srv_jobmetrics_take(gp_srv_state *s, const gp_srv_node *n, int idx, const json_t *jobs,
                             int base_interval_s, int64_t now_s) {
  if (!json_is_array(jobs) || idx < 0) return;
  int base = base_interval_s > 0 ? base_interval_s : 1;
  for (size_t i = 0; i < json_array_size(jobs) && i < 10000; i++) {
    const json_t *e = json_array_get(jobs, i), *tv = json_object_get(e, "task");
    gp_srv_job *j = gp__srv_job_get(s, json_string_value(json_object_get(e, "id")));
    if (!j || j->state != GP_JOB_RUNNING) continue;
    /* An entry names its task (each task of the job on the node has one); an agent that
     * names none sends one entry for all of them. */
    int task = json_is_integer(tv) ? (int)json_integer_value(tv) : -1;
    for (int t = 0; t < j->n_alloc; t++) {
      if (j->alloc[t].node != idx) continue; /* only what this node holds of the job */
      if (task >= 0 && t != task) continue;
      for (int g = 0; g < n->n_gpus && g < 32; g++) {
        if (!(j->alloc[t].gpu_mask & (1u << g)) || !n->gpus[g].telemetry) continue;
        if (!j->metrics) j->metrics = gp_xcalloc(1, sizeof *j->metrics);
        series *se = series_for(j->metrics, n, g);
        if (se) add_sample(j->metrics, se, n->gpus[g].telemetry, base, now_s);
      }
    }
  }
}

static void put_figure(gp_buf *out, float v) {
  if (isnan(v)) gp_buf_puts(out, "null");
  else gp_buf_printf(out, "%.6g", (double)v);
}

void gp__srv_jobmetrics_json(const gp_srv_job *j, int base_interval_s, gp_buf *out) {
  const gp_srv_jobmetrics *m = j->metrics;
  int base = base_interval_s > 0 ? base_interval_s : 1;
  gp_buf_printf(out, "{\"job\":\"%s\",\"interval_s\":%d,\"gpus\":[", j->idstr,
                base << (m ? m->doublings : 0));
  for (int i = 0; m && i < m->n; i++) {
    const series *se = &m->series[i];
    json_t *node = json_string(se->node), *uuid = json_string(se->uuid);
    char *node_text = json_dumps(node, JSON_ENCODE_ANY), *uuid_text = json_dumps(uuid, JSON_ENCODE_ANY);
    gp_buf_printf(out, "%s{\"node\":%s,\"uuid\":%s,\"index\":%d,\"samples\":[", i ? "," : "",
                  node_text, uuid_text, se->index);
    free(node_text);
    free(uuid_text);
    json_decref(node);
    json_decref(uuid);
    for (int k = 0; k < se->n; k++) {
      gp_buf_printf(out, "%s[%lld,", k ? "," : "", (long long)se->s[k].t);
      put_figure(out, se->s[k].util_pct);
      gp_buf_puts(out, ",");
      put_figure(out, se->s[k].mem_mib);
      gp_buf_puts(out, ",");
      put_figure(out, se->s[k].power_w);
      gp_buf_puts(out, "]");
    }
    gp_buf_puts(out, "]}");
  }
  gp_buf_puts(out, "]}");
}

size_t gp__srv_jobmetrics_bytes(const gp_srv_jobmetrics *m) {
  if (!m) return 0;
  size_t b = sizeof *m + (size_t)m->n * sizeof *m->series;
  for (int i = 0; i < m->n; i++)
    b += m->series[i].cap * sizeof(sample) + strlen(m->series[i].node) + strlen(m->series[i].uuid) + 2;
  return b;
}

void gp__srv_jobmetrics_free(gp_srv_jobmetrics *m) {
  if (!m) return;
  for (int i = 0; i < m->n; i++) {
    free(m->series[i].node);
    free(m->series[i].uuid);
    free(m->series[i].s);
  }
  free(m->series);
  free(m);
}
