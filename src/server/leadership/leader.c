/* SPDX-License-Identifier: Apache-2.0 */
/* The lease thread (leader.h). It is the only user of the lease's connection; everything
 * it learns is published under one mutex. A renewal's validity is counted from the moment
 * it was sent, not answered: the database started the lease's new term no earlier. */
#include "server/leadership/leader.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/clock.h"
#include "util/mem.h"

struct gp_srv_leader {
  const gp_server_ha *ha;
  char *self, *id;
  gp_lease *lease;
  void (*wake)(void *ctx);
  void *wake_ctx;
  pthread_t thread;
  bool running;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  bool stopping;
  bool tick_now;          /* the state thread learnt something: ask the database now */
  /* Under lock. */
  int64_t held_epoch;     /* 0: not held */
  int64_t valid_until_ms; /* the held epoch may be written under until then */
  int64_t fenced_epoch;   /* the store refused this epoch: never use it again */
  gp_srv_leader_info info;
  char last_err[sizeof(((gp_err *)0)->message)];
  int64_t conflict_logged_ms; /* when the id conflict was last logged; 0: none now */
};

/* How often a lasting id conflict is logged again. */
#define CONFLICT_LOG_MS 30000


int gp__srv_leader_new(const gp_server_ha *ha, const char *self_url, void (*wake)(void *ctx),
                       void *ctx, gp_srv_leader **ret, gp_err *err) {
  *ret = NULL;
  const char *adv = ha->advertise[0] ? ha->advertise : self_url;
  const char *id = ha->id[0] ? ha->id : adv;
  gp_lease_cfg lc = {.url = ha->url, .holder = id, .advertise = adv, .ttl_ms = ha->lease_ms,
                     .timeout_ms = ha->renew_ms};
  gp_lease *lease = NULL;
  int r = gp_lease_open(&lc, &lease, err);
  if (r) return r;
  gp_srv_leader *l = gp_xcalloc(1, sizeof *l);
  l->ha = ha;
  l->self = gp_xstrdup(adv);
  l->id = gp_xstrdup(id);
  l->lease = lease;
  l->wake = wake;
  l->wake_ctx = ctx;
  pthread_mutex_init(&l->lock, NULL);
  gp_cond_init_monotonic(&l->cond);
  *ret = l;
  return 0;
}

/* Says an id conflict when it starts, every CONFLICT_LOG_MS while it lasts, and when it
 * ends: two servers with one id otherwise look healthy while neither can lead for long. */
static void log_conflict(gp_srv_leader *l, const gp_lease_state *st, int64_t now) {
  if (st->conflict[0]) {
    if (l->conflict_logged_ms && now - l->conflict_logged_ms < CONFLICT_LOG_MS) return;
    fprintf(stderr, "gpool server: ha: ERROR: %s\n", st->conflict);
    l->conflict_logged_ms = now;
  } else if (l->conflict_logged_ms && st->claimed) {
    fprintf(stderr, "gpool server: ha: ha.id '%s' is this server's again (the other server stopped)\n", l->id);
    l->conflict_logged_ms = 0;
  }
}

/* One tick; returns whether the epoch this server may write under changed, and sets
 * *next_ms to when the next one is due: renew_ms from this one, or, for a follower, right
 * after the lease it saw expires, so a dead leader's lease is taken the moment it can be.
 * *st gets what the tick saw (r: its result). */
static bool tick(gp_srv_leader *l, int64_t *next_ms, gp_lease_state *st, int *r_out) {
  gp_err err = {0};
  int64_t sent = gp_mono_ms();
  int r = gp_lease_tick(l->lease, st, &err);
  if (r_out) *r_out = r;
  *next_ms = sent + l->ha->renew_ms;
  if (!r && !st->leader && st->holder[0] && st->expires_in_ms + 20 < l->ha->renew_ms)
    *next_ms = sent + st->expires_in_ms + 20;
  pthread_mutex_lock(&l->lock);
  int64_t before = l->held_epoch;
  if (r) {
    /* Held or not, nothing new is known: a held lease runs out on its own clock. */
    l->info.ok = false;
    if (strcmp(l->last_err, err.message) != 0)
      fprintf(stderr, "gpool server: ha: %s\n", err.message);
    snprintf(l->last_err, sizeof l->last_err, "%s", err.message);
  } else {
    l->last_err[0] = '\0';
    log_conflict(l, st, sent);
    l->info.ok = true;
    l->info.epoch = st->epoch;
    snprintf(l->info.holder, sizeof l->info.holder, "%s", st->holder);
    snprintf(l->info.leader_url, sizeof l->info.leader_url, "%s", st->leader_url);
    l->info.expires_in_ms = st->expires_in_ms;
    l->info.mine = st->mine;
    snprintf(l->info.conflict, sizeof l->info.conflict, "%s", st->conflict);
    l->info.n_servers = st->n_servers;
    memcpy(l->info.servers, st->servers, sizeof st->servers);
    if (st->leader && st->epoch != l->fenced_epoch) {
      /* The database started this term no earlier than the renewal was sent: the lease
       * runs to at least sent_ms + lease_ms there. Acting stops renew_ms before that. */
      l->held_epoch = st->epoch;
      l->valid_until_ms = st->sent_ms + l->ha->lease_ms - l->ha->renew_ms;
    } else {
      l->held_epoch = 0;
      l->valid_until_ms = 0;
    }
  }
  bool changed = l->held_epoch != before;
  pthread_mutex_unlock(&l->lock);
  return changed;
}

static void *lease_main(void *arg) {
  gp_srv_leader *l = arg;
  pthread_mutex_lock(&l->lock);
  while (!l->stopping) {
    pthread_mutex_unlock(&l->lock);
    int64_t next;
    gp_lease_state st;
    if (tick(l, &next, &st, NULL) && l->wake) l->wake(l->wake_ctx);
    pthread_mutex_lock(&l->lock);
    while (!l->stopping && !l->tick_now && gp_mono_ms() < next) gp_cond_wait_until_ms(&l->cond, &l->lock, next);
    l->tick_now = false;
  }
  pthread_mutex_unlock(&l->lock);
  return NULL;
}

int gp__srv_leader_start(gp_srv_leader *l, gp_err *err) {
  int64_t next, t0 = gp_mono_ms();
  gp_lease_state st;
  int r;
  /* At once: GET /v1/leader and redirects know the leader from the start. An id kept by
   * another process is decided before serving: refreshed since this one started, it is a
   * live server's (refused); unrefreshed for its lease length, a dead one's (claimed). */
  for (;;) {
    tick(l, &next, &st, &r);
    if (r || st.claimed || st.conflict[0] || gp_mono_ms() - t0 > 2 * (int64_t)l->ha->lease_ms) break;
    struct timespec pause = {0, 200 * 1000 * 1000};
    nanosleep(&pause, NULL);
  }
  if (!r && st.conflict[0]) return gp_err_set(err, GP_ESTATE, NULL, 0, "ha.id", "%s", st.conflict);
  if (pthread_create(&l->thread, NULL, lease_main, l) != 0)
    return gp_err_set(err, GP_EIO, NULL, 0, "ha", "cannot start the lease thread");
  l->running = true;
  return 0;
}

void gp__srv_leader_free(gp_srv_leader *l) {
  if (!l) return;
  pthread_mutex_lock(&l->lock);
  l->stopping = true;
  pthread_cond_signal(&l->cond);
  pthread_mutex_unlock(&l->lock);
  if (l->running) pthread_join(l->thread, NULL);
  gp_err err = {0};
  if (gp_lease_release(l->lease, &err))
    fprintf(stderr, "gpool server: ha: releasing the lease failed: %s\n", err.message);
  gp_lease_close(l->lease);
  pthread_mutex_destroy(&l->lock);
  pthread_cond_destroy(&l->cond);
  free(l->self);
  free(l->id);
  free(l);
}

int64_t gp__srv_leader_epoch(gp_srv_leader *l, int64_t now_ms) {
  pthread_mutex_lock(&l->lock);
  int64_t e = l->held_epoch > 0 && now_ms < l->valid_until_ms ? l->held_epoch : 0;
  pthread_mutex_unlock(&l->lock);
  return e;
}

int64_t gp__srv_leader_valid_until(gp_srv_leader *l) {
  pthread_mutex_lock(&l->lock);
  int64_t t = l->held_epoch > 0 ? l->valid_until_ms : INT64_MAX;
  pthread_mutex_unlock(&l->lock);
  return t;
}

void gp__srv_leader_fenced(gp_srv_leader *l, int64_t epoch) {
  pthread_mutex_lock(&l->lock);
  l->fenced_epoch = epoch;
  if (l->held_epoch == epoch) {
    l->held_epoch = 0;
    l->valid_until_ms = 0;
  }
  l->tick_now = true; /* who leads now, for redirects */
  pthread_cond_signal(&l->cond);
  pthread_mutex_unlock(&l->lock);
}

void gp__srv_leader_info_get(gp_srv_leader *l, gp_srv_leader_info *out) {
  pthread_mutex_lock(&l->lock);
  *out = l->info;
  pthread_mutex_unlock(&l->lock);
}

const char *gp__srv_leader_self(const gp_srv_leader *l) { return l->self; }
const char *gp__srv_leader_id(const gp_srv_leader *l) { return l->id; }
