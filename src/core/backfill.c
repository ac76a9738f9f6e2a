/* SPDX-License-Identifier: Apache-2.0 */
/* Backfill reservations. When a job is blocked on resources, it gets a reservation: the
 * earliest time at which enough GPUs (and CPU and host memory) are free for it, computed
 * from the end times of the
 * jobs running now (started_at + time limit, the limit being the job's, else its queue's,
 * else policy.default_time_limit; STOPPING jobs and this step's victims count as ending
 * now), and the concrete GPUs it would get then. Those GPUs are marked reserved until that
 * time: a later job may use them only if it ends by then (placement.c checks its own end,
 * now + its limit; a job without a limit never may). Jobs this plan starts count as ending
 * at now + their limit. A reservation is a promise against
 * being delayed by later jobs, not a start: the job starts when a later step finds it fits.
 *
 * Bounds (docs/internals/scheduler.md): at most one reservation per leaf queue in fair-share
 * order and GP__MAX_RESERVATIONS per step in total. Whole-GPU requests only. GPUs already
 * reserved are treated as never free when a later reservation is computed, so a reservation may be later than strictly necessary,
 * never earlier. A job whose GPUs would never free (no time limits) gets no reservation. */
#include <stdlib.h>
#include <string.h>

#include "core/backfill.h"
#include "core/reservation.h"
#include "core/spot.h"

/* When the running job of record ru ends, as this step sees it (now at the earliest).
 * (Victims chosen in this step end now too: build_cache and slot_times find them on the
 * nodes marked `late`.) */
static gp_time end_of(const gp__core_ctx *c, const gp__core_run *ru) {
  gp_time e = gp__core_run_end(ru);
  return e < c->now ? c->now : e;
}

/* Per node, the running and stopping jobs' release events (end time, whole GPUs, CPU and
 * host memory freed there), made from the running-job records so that reservations do not
 * chase placements through the view again. The memo's kept holds (nodes.c) list most of
 * them per node already, with their earliest and latest end; the others are sorted onto
 * their nodes when the cache is built. A node's events are made, and sorted by (end, job),
 * when a reservation first looks at them. */
typedef struct gp__core_release {
  gp_time end;
  int job;
  uint32_t rel;         /* whole GPUs freed */
  int64_t cpu, mem;
} gp__core_release;

struct gp__core_resv_cache {
  int *start;           /* per node: its running jobs that the kept holds do not list are */
  int *run_at;          /* run_at[start[i]] .. run_at[start[i + 1] - 1] (running positions) */
  gp__core_release **ev;     /* per node: its events, once made (n_ev of them) */
  int *n_ev;
  bool *sorted;         /* per node: its events are made and sorted */
  bool *late;           /* per node: holds a victim of this step (it ends now; one chosen
                           after the build sits in the events at its old end time) */
  gp_time *first;       /* per node: its first event's end; now once it is late */
  gp_time *last;        /* per node: the end of its last event that frees whole GPUs (all
                           of them are free then; now when none does); now once it is late */
  size_t victims_seen;  /* entries of ctx.victims already applied to late, first, last */
};

static bool release_before(const gp__core_release *a, const gp__core_release *b) {
  return a->end < b->end || (a->end == b->end && a->job < b->job);
}

/* The release event of job j on node, whose running record is ru: with one placement, what
 * classification kept; else read from the view. */
static gp__core_release release_of(const gp__core_ctx *c, const gp__core_run *ru, int j, int node) {
  gp__core_release x = {.end = end_of(c, ru), .job = j};
  if (ru->node >= 0) {
    x.rel = ru->whole;
    x.cpu = ru->cpu;
    x.mem = ru->mem;
    return x;
  }
  const gp_job *job = &c->view->jobs[j];
  for (int p = 0; p < job->n_placements; p++) {
    const gp_placement *pl = &job->placements[p];
    if (pl->node != node) continue;
    if (pl->mig_instance < 0 && (pl->gpu_milli <= 0 || pl->gpu_milli >= GP_GPU_MILLI))
      x.rel |= pl->gpu_mask;
    x.cpu += job->req.cpu_milli;
    x.mem += job->req.mem_mib;
  }
  return x;
}

static void update_bounds(struct gp__core_resv_cache *rc, int node, gp_time end, uint32_t rel) {
  if (end < rc->first[node]) rc->first[node] = end;
  if (rel && end > rc->last[node]) rc->last[node] = end;
}

static void make_events(gp__core_ctx *c, int node);

/* Victim v (chosen by preemption, ctx.victims) ends now: so do its nodes' events. */
static void victim_now(gp__core_ctx *c, int v) {
  const gp_job *job = &c->view->jobs[v];
  for (int p = 0; p < job->n_placements; p++) {
    c->backfill->rcache->late[job->placements[p].node] = true;
    c->backfill->rcache->first[job->placements[p].node] = c->now;
    c->backfill->rcache->last[job->placements[p].node] = c->now;
  }
}

/* Applies the victims chosen since the cache last looked (none before it is built: the
 * build reads the plan's preemptions). */
static void victims_catch_up(gp__core_ctx *c) {
  struct gp__core_resv_cache *rc = c->backfill->rcache;
  const int *v = c->preempt->victims.items;
  for (; rc->victims_seen < c->preempt->victims.n; rc->victims_seen++) victim_now(c, v[rc->victims_seen]);
}

/* Made on the first reservation of a step: per node, the first and last release of the
 * jobs the kept holds list (kept with them), then of the other running jobs, which are
 * sorted onto their nodes (CSR: one pass counts, one fills in running positions;
 * one-placement jobs need not read the view). A node's events are made when a reservation
 * first looks at it: most nodes are passed over on their first and last release alone.
 * Victims chosen before the build end now: their nodes are the only ones to look for them
 * on (and stay `late`, as for victims chosen after). */
static void build_cache(gp__core_ctx *c) {
  if (c->backfill->rcache) return;
  struct gp__core_resv_cache *rc = c->backfill->rcache = gp__core_scalloc(c, 1, sizeof *rc);
  int nn = c->view->n_nodes;
  rc->start = gp__core_scalloc(c, (size_t)nn + 2, sizeof(int));
  rc->late = gp__core_scalloc(c, (size_t)nn + 1, sizeof(bool));
  rc->sorted = gp__core_scalloc(c, (size_t)nn + 1, sizeof(bool));
  rc->ev = gp__core_scalloc(c, (size_t)nn + 1, sizeof *rc->ev);
  rc->n_ev = gp__core_salloc(c, ((size_t)nn + 1) * sizeof *rc->n_ev);
  rc->first = gp__core_salloc(c, ((size_t)nn + 1) * sizeof *rc->first);
  rc->last = gp__core_salloc(c, ((size_t)nn + 1) * sizeof *rc->last);
  const gp_time *lo, *hi;
  if (gp__core_usage_bounds(c, &lo, &hi)) {
    for (int i = 0; i < nn; i++) { /* (every end is now or later) */
      rc->first[i] = lo[i] < c->now ? c->now : lo[i];
      rc->last[i] = hi[i] < c->now ? c->now : hi[i];
    }
  } else {
    for (int i = 0; i < nn; i++) {
      rc->first[i] = GP__NEVER;
      rc->last[i] = c->now;
    }
  }
  const uint8_t *held = c->fleet->held;
  for (int r = 0; r < c->cls->n_running; r++) {
    const gp__core_run *ru = &c->cls->run[r];
    if (held && held[c->cls->running[r]]) continue;
    if (ru->node >= 0) {
      rc->start[ru->node + 1]++;
      update_bounds(rc, ru->node, end_of(c, ru), ru->whole);
      continue;
    }
    const gp_job *job = &c->view->jobs[c->cls->running[r]];
    for (int k = 0; k < job->n_placements; k++) {
      if (!gp__core_first_on_node(job, k)) continue;
      int node = job->placements[k].node;
      rc->start[node + 1]++;
      gp__core_release x = release_of(c, ru, c->cls->running[r], node);
      update_bounds(rc, node, x.end, x.rel);
    }
  }
  for (int i = 0; i < nn; i++) rc->start[i + 1] += rc->start[i];
  rc->run_at = gp__core_salloc(c, ((size_t)rc->start[nn] + 1) * sizeof *rc->run_at);
  /* The starts advance as the positions fill; the pass after puts them back. */
  for (int r = 0; r < c->cls->n_running; r++) {
    const gp__core_run *ru = &c->cls->run[r];
    if (held && held[c->cls->running[r]]) continue;
    if (ru->node >= 0) {
      rc->run_at[rc->start[ru->node]++] = r;
      continue;
    }
    const gp_job *job = &c->view->jobs[c->cls->running[r]];
    for (int k = 0; k < job->n_placements; k++)
      if (gp__core_first_on_node(job, k)) rc->run_at[rc->start[job->placements[k].node]++] = r;
  }
  for (int i = nn; i > 0; i--) rc->start[i] = rc->start[i - 1];
  rc->start[0] = 0;
  rc->victims_seen = c->preempt->victims.n;
  const gp_plan_preemption *pre = c->preempt->preemptions.items;
  if (!c->preempt->preemptions.n) return;
  for (size_t i = 0; i < c->preempt->preemptions.n; i++) victim_now(c, pre[i].job);
  for (int node = 0; node < nn; node++) {
    if (!rc->late[node]) continue;
    make_events(c, node);
    for (int k = 0; k < rc->n_ev[node]; k++)
      if (c->jobs[rc->ev[node][k].job].victim) rc->ev[node][k].end = c->now;
  }
}

static void make_events(gp__core_ctx *c, int node) {
  struct gp__core_resv_cache *rc = c->backfill->rcache;
  if (rc->ev[node]) return;
  int n = rc->start[node + 1] - rc->start[node];
  for (int j = gp__core_usage_first(c, node); j >= 0; j = gp__core_usage_next(c, j)) n++;
  gp__core_release *ev = rc->ev[node] = gp__core_salloc(c, ((size_t)n + 1) * sizeof *ev);
  n = 0;
  for (int j = gp__core_usage_first(c, node); j >= 0; j = gp__core_usage_next(c, j))
    ev[n++] = release_of(c, gp__core_usage_run(c, j), j, node);
  for (int k = rc->start[node]; k < rc->start[node + 1]; k++)
    ev[n++] = release_of(c, &c->cls->run[rc->run_at[k]], c->cls->running[rc->run_at[k]], node);
  rc->n_ev[node] = n;
}

/* Makes and sorts node's events by (end, job) once: a node holds few jobs. */
static void sort_events(gp__core_ctx *c, int node) {
  struct gp__core_resv_cache *rc = c->backfill->rcache;
  if (rc->sorted[node]) return;
  rc->sorted[node] = true;
  make_events(c, node);
  gp__core_release *ev = rc->ev[node];
  for (int k = 1; k < rc->n_ev[node]; k++) {
    gp__core_release x = ev[k];
    int b = k;
    for (; b > 0 && release_before(&x, &ev[b - 1]); b--) ev[b] = ev[b - 1];
    ev[b] = x;
  }
}

/* What a reservation reads besides its request: the nodes' use (ctx.use_gen: starts, MIG
 * plans), this step's victims (they end now) and the reservations made before it (their
 * GPUs are never free). A job whose request has the shape of one that found no time while
 * these stayed the same finds none either: with 100,000 jobs waiting for a full fleet
 * without time limits, each drained job would otherwise look at every node again. */
struct gp__core_resv_fail {
  uint64_t use_gen;
  size_t victims, migs;
  int n_resv;
  bool set;
};

static struct gp__core_resv_fail resv_state(const gp__core_ctx *c) {
  return (struct gp__core_resv_fail){c->fleet->use_gen, c->preempt->victims.n, c->place->migs.n,
                                     c->backfill->n_resv, true};
}

static bool resv_failed_before(const gp__core_ctx *c, int shape) {
  const gp__core_backfill *b = c->backfill;
  if (shape < 0 || (size_t)shape >= b->failed_cap || !b->failed[shape].set) return false;
  struct gp__core_resv_fail now = resv_state(c), *f = &b->failed[shape];
  return f->use_gen == now.use_gen && f->victims == now.victims && f->migs == now.migs &&
         f->n_resv == now.n_resv;
}

static void resv_fail(gp__core_ctx *c, int shape) {
  gp__core_backfill *b = c->backfill;
  if (shape < 0) return;
  if ((size_t)shape >= b->failed_cap) {
    size_t old = b->failed_cap;
    gp_xgrow((void **)&b->failed, &b->failed_cap, (size_t)shape + 1, sizeof *b->failed);
    memset(b->failed + old, 0, (b->failed_cap - old) * sizeof *b->failed);
  }
  b->failed[shape] = resv_state(c);
}

/* (The cache is the step's scratch memory: it goes with the step.) */
void gp__core_backfill_done(gp__core_ctx *c) {
  free(c->backfill->failed);
  c->backfill->rcache = NULL;
  free(c->backfill->leaf_has_resv);
  free(c->backfill->reservations.items);
}

/* A lower bound of when the node could first give r a task slot: its first event's end,
 * or the last one that frees whole GPUs when r needs every GPU the node has; now when a
 * victim or a job this plan starts adds events the sorted list does not show. */
static gp_time first_release(const gp__core_ctx *c, const gp__core_req *r, int node) {
  if (c->place->started_head && c->place->started_head[node] >= 0) return c->now;
  return r->gpus >= c->nodes[node].n_whole_ok ? c->backfill->rcache->last[node] : c->backfill->rcache->first[node];
}

/* GPUs of node that r could use at some time: healthy, right mode, enough memory, not
 * promised to another reservation. */
static uint32_t usable(const gp__core_ctx *c, const gp__core_req *r, int node) {
  const gp__core_node *s = &c->nodes[node];
  const gp_node *n = &c->view->nodes[node];
  uint32_t m = s->whole_ok & ~s->resv;
  if (r->min_gpu_mem > 0) {
    uint32_t ok = 0;
    for (int g = 0; g < n->n_gpus; g++) {
      int64_t mem = n->gpus && n->gpus[g].mem_mib > 0 ? n->gpus[g].mem_mib : n->gpu_mem_mib;
      if (mem >= r->min_gpu_mem) ok |= (uint32_t)1 << g;
    }
    m &= ok;
  }
  return m;
}

#define MAX_ON_NODE 64

/* Times at which node gains its 1st, 2nd, ... task slot for r; returns the slot count.
 * masks[k]: the GPUs available once slot k is reached. */
/* horizon: events after it cannot matter any more (the caller already holds enough earlier
 * slots), so they are not even looked at. */
static int slot_times(gp__core_ctx *c, const gp__core_req *r, int node, gp_time *times,
                      uint32_t *masks, int max_slots, gp_time horizon) {
  uint32_t use = usable(c, r, node);
  if (gp__core_popc(use) < r->gpus) return 0;
  /* Nodes come from the request's index groups (model and pool are right); the other
   * static filters: capacity type and labels. */
  const gp_node *nd = &c->view->nodes[node];
  const gp_request *req = &c->view->jobs[r->job].req;
  if (nd->capacity == GP_CAP_SPOT && !req->allow_spot) return 0;
  if (!gp__core_spot_node_ok(c, r, node)) return 0;
  if (req->n_node_selector && !gp__core_node_has_labels(nd, req->n_node_selector, req->node_selector))
    return 0;
  /* Release events on this node: running/stopping jobs (cached, see build_cache), and jobs
   * this plan starts. */
  sort_events(c, node);
  const struct gp__core_resv_cache *rc = c->backfill->rcache;
  gp_time ends[MAX_ON_NODE];
  uint32_t rel[MAX_ON_NODE];
  int64_t rcpu[MAX_ON_NODE], rmem[MAX_ON_NODE];
  int ids[MAX_ON_NODE], nv = 0;
  bool sorted = true;
  bool late = rc->late[node];
  /* --exclusive (an exclusive request, or a node an exclusive job holds): a slot only once
   * every job on the node has ended, so only when every release event was looked at. */
  bool whole_node = req->exclusive || c->nodes[node].excl > 0, seen_all = rc->n_ev[node] <= MAX_ON_NODE;
  for (int k = 0; k < rc->n_ev[node] && nv < MAX_ON_NODE; k++) {
    const gp__core_release *e = &rc->ev[node][k];
    bool victim = late && c->jobs[e->job].victim; /* chosen since the build: ends now */
    if (!victim && e->end > horizon) {
      seen_all = false;
      if (!late) break; /* sorted by end: the rest are later still */
      continue;
    }
    ids[nv] = e->job;
    ends[nv] = victim ? c->now : e->end;
    if (nv && ends[nv] < ends[nv - 1]) sorted = false;
    rel[nv] = e->rel;
    rcpu[nv] = e->cpu;
    rmem[nv] = e->mem;
    nv++;
  }
  const gp_plan_start *starts = c->place->starts.items;
  for (int e = c->place->started_head ? c->place->started_head[node] : -1; e >= 0 && nv < MAX_ON_NODE;
       e = c->place->started_next[e]) {
    const gp_plan_start *st = &starts[c->place->started_start[e]];
    const gp__core_job *ji = &c->jobs[st->job];
    ends[nv] = ji->limit > 0 && c->now < GP__NEVER - ji->limit ? c->now + ji->limit : GP__NEVER;
    if (ends[nv] > horizon) {
      seen_all = false;
      continue;
    }
    rel[nv] = 0;
    rcpu[nv] = rmem[nv] = 0;
    for (int p = 0; p < st->n_placements; p++) {
      if (st->placements[p].node != node) continue;
      if (st->placements[p].mig_instance < 0 && st->placements[p].gpu_milli >= GP_GPU_MILLI)
        rel[nv] |= st->placements[p].gpu_mask;
      rcpu[nv] += c->view->jobs[st->job].req.cpu_milli;
      rmem[nv] += c->view->jobs[st->job].req.mem_mib;
    }
    ids[nv++] = st->job;
    sorted = false;
  }
  /* Insertion sort by (end, job index). */
  for (int a = 1; a < nv && !sorted; a++)
    for (int b = a; b > 0 && (ends[b] < ends[b - 1] || (ends[b] == ends[b - 1] && ids[b] < ids[b - 1])); b--) {
#define SWAP(T, x) do { T t_ = x[b]; x[b] = x[b - 1]; x[b - 1] = t_; } while (0)
      SWAP(gp_time, ends);
      SWAP(uint32_t, rel);
      SWAP(int64_t, rcpu);
      SWAP(int64_t, rmem);
      SWAP(int, ids);
#undef SWAP
    }
  if (whole_node && (!seen_all || nv >= MAX_ON_NODE)) return 0;
  uint32_t avail = c->nodes[node].free & use;
  int64_t cpu = c->nodes[node].cpu_free, mem = c->nodes[node].mem_free;
  int n = 0;
  gp_time t = c->now;
  /* An advance reservation that keeps the job off the node: no slot there before it ends
   * (later than need be for a job that would end before it begins: never earlier). */
  gp_time fenced = gp__core_ares_free_from(c, r->job, node);
  for (int k = 0;; k++) {
    while (n < max_slots && (!whole_node || k >= nv) && gp__core_popc(avail) >= (n + 1) * r->gpus &&
           cpu >= (n + 1) * r->cpu && mem >= (n + 1) * r->mem) {
      times[n] = t < fenced ? fenced : t;
      masks[n] = avail;
      n++;
    }
    if (k >= nv || n >= max_slots) break;
    if (ends[k] == GP__NEVER) break;
    t = ends[k];
    avail |= rel[k] & use;
    cpu += rcpu[k];
    mem += rmem[k];
  }
  return n;
}

typedef struct slot {
  gp_time t;
  int node, k;
} slot;

static bool slot_after(const slot *a, const slot *b) {
  if (a->t != b->t) return a->t > b->t;
  if (a->node != b->node) return a->node > b->node;
  return a->k > b->k;
}

/* Max-heap of the N earliest slots. */
static void heap_push(slot *h, int *n, int cap, slot s) {
  if (*n == cap) {
    if (!slot_after(&h[0], &s)) return;
    h[0] = s;
  } else {
    h[(*n)++] = s;
    for (int i = *n - 1; i > 0 && slot_after(&h[i], &h[(i - 1) / 2]); i = (i - 1) / 2) {
      slot t = h[i];
      h[i] = h[(i - 1) / 2];
      h[(i - 1) / 2] = t;
    }
    return;
  }
  for (int i = 0;;) {
    int l = 2 * i + 1, m = i;
    if (l < *n && slot_after(&h[l], &h[m])) m = l;
    if (l + 1 < *n && slot_after(&h[l + 1], &h[m])) m = l + 1;
    if (m == i) break;
    slot t = h[i];
    h[i] = h[m];
    h[m] = t;
    i = m;
  }
}

static void reserved(gp__core_ctx *c, const gp__core_req *r, const gp__core_job *J, gp_time at, bool fair);

/* Reserves `tasks` tasks' GPUs on each chosen node from time `at` (the slots' masks). */
static void reserve_on(gp__core_ctx *c, const gp__core_req *r, int node, int tasks, gp_time at) {
  gp_time times[GP_MAX_NODE_GPUS + 1];
  uint32_t masks[GP_MAX_NODE_GPUS + 1];
  slot_times(c, r, node, times, masks, tasks, GP__NEVER);
  uint32_t gpus = gp__core_choose_gpus(c, node, masks[tasks - 1], tasks * r->gpus);
  gp__core_node *s = &c->nodes[node];
  /* An exclusive job's node is promised whole: a later job whose GPUs would still be
   * held at `at` may not start there. */
  if (c->view->jobs[r->job].req.exclusive) gpus |= masks[tasks - 1];
  s->resv |= gpus;
  for (uint32_t m = gpus; m; m &= m - 1) c->fleet->gpu_resv_until[s->gpu_base + __builtin_ctz(m)] = at;
}

typedef struct node_slots {
  int node, k;          /* slots of the node by `at` */
  gp_time t[GP_MAX_NODE_GPUS];
} node_slots;

static int cmp_time(const void *x, const void *y) {
  gp_time a = *(const gp_time *)x, b = *(const gp_time *)y;
  return (a > b) - (a < b);
}

/* Each node's slots by time t. */
static void counts_by(const node_slots *ns, int n, gp_time t, int *cnt) {
  for (int b = 0; b < n; b++) {
    cnt[b] = 0;
    while (cnt[b] < ns[b].k && ns[b].t[cnt[b]] <= t) cnt[b]++;
  }
}

/* An exact node count (r->nodes, gp__core_exact_nodes): the earliest time at which that many
 * distinct nodes hold the gang, one task at least on each (gp__core_nodes_hold, the rule
 * feasibility uses); the nodes with the most slots then (lowest index on a tie) take it,
 * one task each first, then as many as each holds. Returns the time, GP__NEVER when none. */
static gp_time reserve_exact(gp__core_ctx *c, gp__core_req *r, int max_slots) {
  int cap_n = 64, n = 0;
  node_slots *ns = gp_xmalloc((size_t)cap_n * sizeof *ns);
  gp_time times[GP_MAX_NODE_GPUS + 1];
  uint32_t masks[GP_MAX_NODE_GPUS + 1];
  int stride = c->fleet->n_models + 1;
  int nm = r->n_models < 0 ? c->fleet->n_models : r->n_models;
  for (int si = 0; si < r->n_slots; si++)
    for (int mk = 0; mk < nm; mk++) {
      int g = r->slots[si] * stride + (r->n_models < 0 ? mk : r->models[mk]);
      for (int pos = c->fleet->ix.group_start[g]; pos < c->fleet->ix.group_start[g + 1]; pos++) {
        int i = c->fleet->ix.members[pos];
        if (c->nodes[i].n_whole_ok < r->gpus) continue;
        int k = slot_times(c, r, i, times, masks, max_slots, GP__NEVER);
        while (k > 0 && times[k - 1] == GP__NEVER) k--;
        if (k <= 0) continue;
        if (n == cap_n) ns = gp_xrealloc(ns, (size_t)(cap_n *= 2) * sizeof *ns);
        ns[n].node = i;
        ns[n].k = k;
        memcpy(ns[n].t, times, (size_t)k * sizeof *times);
        n++;
      }
    }
  /* The candidate times are the slots' own, and more time only adds slots: the earliest
   * one at which the rule holds, by bisection. */
  size_t n_all = 0;
  for (int a = 0; a < n; a++) n_all += (size_t)ns[a].k;
  gp_time *all = gp_xmalloc((n_all + 1) * sizeof *all);
  n_all = 0;
  for (int a = 0; a < n; a++)
    for (int s = 0; s < ns[a].k; s++) all[n_all++] = ns[a].t[s];
  qsort(all, n_all, sizeof *all, cmp_time);
  int *cnt = gp_xmalloc((size_t)(n + 1) * sizeof *cnt);
  gp_time at = GP__NEVER;
  size_t lo = 0, hi = n_all; /* the answer is all[lo..hi), hi: none */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    counts_by(ns, n, all[mid], cnt);
    if (gp__core_nodes_hold(cnt, n, r->nodes, r->tasks)) hi = mid;
    else lo = mid + 1;
  }
  if (hi < n_all) at = all[hi];
  free(all);
  if (at != GP__NEVER) {
    counts_by(ns, n, at, cnt);
    /* The r->nodes nodes with the most slots by `at`, one task each, then fill. */
    int *pick = gp_xmalloc((size_t)r->nodes * sizeof *pick), *take = gp_xcalloc((size_t)r->nodes, sizeof *take);
    for (int p = 0; p < r->nodes; p++) {
      int best = -1;
      for (int b = 0; b < n; b++)
        if (cnt[b] > 0 && (best < 0 || cnt[b] > cnt[best])) best = b;
      pick[p] = best;
      take[p] = 1;
      cnt[best] = -cnt[best]; /* taken: its count kept, negated */
    }
    int left = r->tasks - r->nodes;
    for (int p = 0; p < r->nodes && left > 0; p++) {
      int more = -cnt[pick[p]] - 1;
      if (more > left) more = left;
      take[p] += more;
      left -= more;
    }
    for (int p = 0; p < r->nodes; p++) reserve_on(c, r, ns[pick[p]].node, take[p], at);
    free(pick);
    free(take);
  }
  free(cnt);
  free(ns);
  return at;
}

void gp__core_reserve(gp__core_ctx *c, gp__core_req *r) {
  const gp__core_job *J = &c->jobs[r->job];
  if (J->kind != GP__R_WHOLE || c->backfill->n_resv >= GP__MAX_RESERVATIONS) return;
  bool fair = c->pol->order == GP_ORDER_FAIRSHARE;
  if (fair && J->leaf >= 0) {
    if (!c->backfill->leaf_has_resv) c->backfill->leaf_has_resv = gp_xcalloc((size_t)c->tree.n + 1, sizeof(bool));
    if (c->backfill->leaf_has_resv[J->leaf]) return;
  }
  if (resv_failed_before(c, J->shape)) return;
  gp__core_req_need(c, r);
  if (r->gpus <= 0) return;
  build_cache(c);
  victims_catch_up(c);
  int cap = r->tasks;
  slot *h = gp_xmalloc((size_t)cap * sizeof *h);
  int n = 0;
  gp_time times[GP_MAX_NODE_GPUS + 1];
  uint32_t masks[GP_MAX_NODE_GPUS + 1];
  int max_slots = r->tasks < GP_MAX_NODE_GPUS ? r->tasks : GP_MAX_NODE_GPUS;
  if (r->per_node > 0 && r->per_node < max_slots) max_slots = r->per_node; /* --ntasks-per-node */
  if (r->nodes > 0) {
    /* Exactly r->nodes nodes: each leaves one task at least to the others. */
    if (r->tasks - r->nodes + 1 < max_slots) max_slots = r->tasks - r->nodes + 1;
    free(h);
    gp_time at = reserve_exact(c, r, max_slots);
    if (at == GP__NEVER) {
      resv_fail(c, J->shape);
      return;
    }
    reserved(c, r, J, at, fair);
    return;
  }
  /* Candidates: the up nodes of the request's pools and models, i.e. its index groups.
   * The heap keeps the earliest (time, node, slot) triples, so the visiting order does not
   * change the result. */
  int stride = c->fleet->n_models + 1;
  int nm = r->n_models < 0 ? c->fleet->n_models : r->n_models;
  for (int si = 0; si < r->n_slots; si++) {
    for (int mk = 0; mk < nm; mk++) {
      int g = r->slots[si] * stride + (r->n_models < 0 ? mk : r->models[mk]);
      for (int pos = c->fleet->ix.group_start[g]; pos < c->fleet->ix.group_start[g + 1]; pos++) {
        int i = c->fleet->ix.members[pos];
        const gp__core_node *nd = &c->nodes[i];
        if (nd->n_whole_ok < r->gpus) continue;
        /* With the heap full, a node whose every slot comes after the worst slot kept
         * cannot change the answer (slot_after is strict on time). (The index's level,
         * its free GPUs, bounds what is free and unreserved.) */
        if (n == cap && first_release(c, r, i) > h[0].t &&
            (c->fleet->ix.node_level[i] < r->gpus || gp__core_popc(nd->free & nd->whole_ok & ~nd->resv) < r->gpus))
          continue;
        int k = slot_times(c, r, i, times, masks, max_slots, n == cap ? h[0].t : GP__NEVER);
        for (int s = 0; s < k; s++) heap_push(h, &n, cap, (slot){times[s], i, s});
      }
    }
  }
  if (n < r->tasks || h[0].t == GP__NEVER) {
    free(h);
    resv_fail(c, J->shape);
    return;
  }
  gp_time at = h[0].t;
  /* Per node, the highest slot chosen says how many tasks go there. */
  for (int a = 0; a < n; a++) {
    bool highest = true;
    for (int b = 0; b < n && highest; b++)
      if (h[b].node == h[a].node && h[b].k > h[a].k) highest = false;
    if (highest) reserve_on(c, r, h[a].node, h[a].k + 1, at);
  }
  free(h);
  reserved(c, r, J, at, fair);
}

/* The reservation made (its GPUs marked): the plan's record and the job's reason. */
static void reserved(gp__core_ctx *c, const gp__core_req *r, const gp__core_job *J, gp_time at, bool fair) {
  gp_plan_reservation *rv = gp__core_vec_push(&c->backfill->reservations, sizeof *rv);
  rv->job = r->job;
  rv->at = at;
  c->backfill->n_resv++;
  if (fair && J->leaf >= 0) c->backfill->leaf_has_resv[J->leaf] = true;
  if (c->decisions_only) return; /* (no reasons in the plan: the sentence would go unread) */
  gp__core_job_mut(c, r->job)->msg = gp_arena_printf(
      c->arena, "Not enough free GPUs right now; GPUs are reserved for it from t=%lld.",
      (long long)at);
}
