/* SPDX-License-Identifier: Apache-2.0 */
/* The notification sender (notify.h): `senders` threads, a bounded queue of messages in the
 * order they came, each with the time its next attempt is due. The state thread only
 * appends under the lock; a full queue loses its oldest message (counted), so a dead
 * endpoint can cost at most queue_max messages of memory and never a wait. A thread takes
 * the oldest due message of a user who has none in flight, delivers it outside the lock
 * within the config's deadline, and on failure puts it back due after backoff_s,
 * 2 x backoff_s, ... until `attempts` tries are spent. One message in flight per user and
 * channel (the admins' webhooks count as one user) means a user whose endpoint hangs holds
 * at most one thread: the others keep delivering everyone else's, and that user's mail.
 * Rate limit: a token bucket per (user, channel) of per_user_per_hour tokens, refilled
 * continuously, taken when a message is queued, so that one user's flood is cut before it
 * can push other users' messages out of the queue; the table of buckets is bounded (the
 * least recently used bucket goes when it is full, which can only give its user a fresh
 * bucket). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/state/notify.h"
#include "util/clock.h"
#include "util/mem.h"

#define MAX_BUCKETS 4096
#define MAX_SENDERS 64

typedef struct msg {
  gp_notify_channel ch;
  char *user, *to, *subject, *body;
  int tries;              /* attempts made */
  int64_t due_ms;         /* monotonic */
} msg;

typedef struct bucket {
  char *user;
  gp_notify_channel ch;
  double tokens;
  int64_t at_ms;          /* last refill, and last use (for eviction) */
} bucket;

struct gp_srv_notify {
  const gp_notify_config *cfg;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  msg *q;                 /* q[0] is the oldest */
  int n;
  size_t cap;
  bool stopping;
  int n_threads;
  pthread_t threads[MAX_SENDERS];
  const char *busy[MAX_SENDERS]; /* the user of each thread's message in flight (borrowed from
                                    it), busy_set[i]: one is in flight, on busy_ch[i] */
  bool busy_set[MAX_SENDERS];
  gp_notify_channel busy_ch[MAX_SENDERS];
  gp_srv_notify_stats stats;
  bucket *buckets;        /* under the lock */
  int n_buckets;
  size_t cap_buckets;
};

static void msg_free(msg *m) {
  free(m->user);
  free(m->to);
  free(m->subject);
  free(m->body);
}

/* Under the lock: may `user` queue one more message on `ch` now? */
static bool take_token(gp_srv_notify *n, const char *user, gp_notify_channel ch, int64_t now) {
  if (!user) return true; /* the admins' webhooks */
  double rate = n->cfg->per_user_per_hour;
  bucket *b = NULL;
  for (int i = 0; i < n->n_buckets && !b; i++)
    if (n->buckets[i].ch == ch && strcmp(n->buckets[i].user, user) == 0) b = &n->buckets[i];
  if (!b) {
    if (n->n_buckets == MAX_BUCKETS) {
      int lru = 0;
      for (int i = 1; i < n->n_buckets; i++)
        if (n->buckets[i].at_ms < n->buckets[lru].at_ms) lru = i;
      free(n->buckets[lru].user);
      n->buckets[lru] = n->buckets[--n->n_buckets];
    }
    gp_xgrow((void **)&n->buckets, &n->cap_buckets, (size_t)n->n_buckets + 1, sizeof *n->buckets);
    b = &n->buckets[n->n_buckets++];
    *b = (bucket){gp_xstrdup(user), ch, rate, now};
  }
  b->tokens += rate * (double)(now - b->at_ms) / 3600000.0;
  if (b->tokens > rate) b->tokens = rate;
  b->at_ms = now;
  if (b->tokens < 1) return false;
  b->tokens -= 1;
  return true;
}

static int deliver(gp_srv_notify *n, const msg *m, gp_err *err) {
  const gp_notify_config *c = n->cfg;
  if (m->ch == GP_NOTIFY_WEBHOOK)
    return gp__srv_notify_post(m->to, m->body, m->user ? c->webhooks : GP_NOTIFY_HOOKS_ANY,
                               c->timeout_s, err);
  return gp__srv_notify_mail(c->sendmail, c->mail_from, m->to, m->subject, m->body, c->timeout_s,
                             err);
}

/* Under the lock: has `user` (NULL: the admins) a message in flight on `ch`? */
static bool in_flight(const gp_srv_notify *n, const char *user, gp_notify_channel ch) {
  for (int i = 0; i < n->n_threads; i++)
    if (n->busy_set[i] && n->busy_ch[i] == ch &&
        (n->busy[i] == user || (n->busy[i] && user && !strcmp(n->busy[i], user))))
      return true;
  return false;
}

typedef struct sender_arg {
  gp_srv_notify *n;
  int index;
} sender_arg;

static void *sender_main(void *arg) {
  gp_srv_notify *n = ((sender_arg *)arg)->n;
  int self = ((sender_arg *)arg)->index;
  free(arg);
  pthread_mutex_lock(&n->lock);
  while (!n->stopping) {
    int64_t now = gp_mono_ms(), next = INT64_MAX;
    int pick = -1;
    for (int i = 0; i < n->n && pick < 0; i++) {
      if (n->q[i].due_ms > now) {
        if (n->q[i].due_ms < next) next = n->q[i].due_ms;
      } else if (!in_flight(n, n->q[i].user, n->q[i].ch)) {
        pick = i;
      }
    }
    if (pick < 0) {
      if (next == INT64_MAX) pthread_cond_wait(&n->cond, &n->lock);
      else gp_cond_wait_until_ms(&n->cond, &n->lock, next);
      continue;
    }
    msg m = n->q[pick];
    memmove(&n->q[pick], &n->q[pick + 1], (size_t)(n->n - pick - 1) * sizeof *n->q);
    n->n--;
    n->stats.queued = n->n;
    n->busy[self] = m.user;
    n->busy_ch[self] = m.ch;
    n->busy_set[self] = true;
    pthread_mutex_unlock(&n->lock);
    bool first = m.tries == 0;
    gp_err err = {0};
    int rc = deliver(n, &m, &err);
    m.tries++;
    pthread_mutex_lock(&n->lock);
    n->busy_set[self] = false;
    n->busy[self] = NULL;
    pthread_cond_broadcast(&n->cond); /* the user's next message may go now */
    if (!first) n->stats.retries[m.ch]++;
    if (rc == 0) {
      n->stats.sent[m.ch]++;
      msg_free(&m);
      continue;
    }
    if (m.tries >= n->cfg->attempts || n->stopping) {
      n->stats.failed[m.ch]++;
      fprintf(stderr, "gpool server: notify: gave up on a %s for %s after %d attempts: %s\n",
              m.ch == GP_NOTIFY_MAIL ? "mail" : "webhook", m.user ? m.user : "the admins",
              m.tries, err.message);
      msg_free(&m);
      continue;
    }
    /* Back in the queue at its place in time (it is older than what came meanwhile);
     * a full queue loses its oldest message, possibly this one. */
    int64_t wait = (int64_t)n->cfg->backoff_s * 1000 << (m.tries - 1 < 20 ? m.tries - 1 : 20);
    m.due_ms = gp_mono_ms() + wait;
    if (n->n >= n->cfg->queue_max) {
      n->stats.dropped[m.ch]++;
      msg_free(&m);
      continue;
    }
    gp_xgrow((void **)&n->q, &n->cap, (size_t)n->n + 1, sizeof *n->q);
    memmove(&n->q[1], &n->q[0], (size_t)n->n * sizeof *n->q);
    n->q[0] = m;
    n->n++;
    n->stats.queued = n->n;
  }
  pthread_mutex_unlock(&n->lock);
  return NULL;
}

gp_srv_notify *gp__srv_notify_new(const gp_notify_config *cfg) {
  gp_srv_notify *n = gp_xcalloc(1, sizeof *n);
  n->cfg = cfg;
  pthread_mutex_init(&n->lock, NULL);
  gp_cond_init_monotonic(&n->cond);
  int want = cfg->senders < 1 ? 1 : cfg->senders > MAX_SENDERS ? MAX_SENDERS : cfg->senders;
  for (int i = 0; i < want; i++) {
    sender_arg *a = gp_xmalloc(sizeof *a);
    *a = (sender_arg){n, i};
    if (pthread_create(&n->threads[i], NULL, sender_main, a) != 0) {
      free(a);
      break;
    }
    n->n_threads++;
  }
  if (n->n_threads == 0) {
    pthread_mutex_destroy(&n->lock);
    pthread_cond_destroy(&n->cond);
    free(n);
    return NULL;
  }
  return n;
}

void gp__srv_notify_free(gp_srv_notify *n) {
  if (!n) return;
  pthread_mutex_lock(&n->lock);
  n->stopping = true;
  pthread_cond_broadcast(&n->cond);
  pthread_mutex_unlock(&n->lock);
  for (int i = 0; i < n->n_threads; i++) pthread_join(n->threads[i], NULL);
  for (int i = 0; i < n->n; i++) msg_free(&n->q[i]);
  free(n->q);
  for (int i = 0; i < n->n_buckets; i++) free(n->buckets[i].user);
  free(n->buckets);
  pthread_mutex_destroy(&n->lock);
  pthread_cond_destroy(&n->cond);
  free(n);
}

void gp__srv_notify_send(gp_srv_notify *n, gp_notify_channel ch, const char *user,
                         const char *to, const char *subject, const char *body) {
  if (!n) return;
  int64_t now = gp_mono_ms();
  pthread_mutex_lock(&n->lock);
  if (!take_token(n, user, ch, now)) {
    n->stats.limited[ch]++;
    pthread_mutex_unlock(&n->lock);
    return;
  }
  msg m = {ch, gp_xstrdup(user), gp_xstrdup(to), gp_xstrdup(subject), gp_xstrdup(body), 0, now};
  if (n->n >= n->cfg->queue_max) {
    n->stats.dropped[n->q[0].ch]++;
    msg_free(&n->q[0]);
    memmove(&n->q[0], &n->q[1], (size_t)(n->n - 1) * sizeof *n->q);
    n->n--;
  }
  gp_xgrow((void **)&n->q, &n->cap, (size_t)n->n + 1, sizeof *n->q);
  n->q[n->n++] = m;
  n->stats.queued = n->n;
  pthread_cond_signal(&n->cond);
  pthread_mutex_unlock(&n->lock);
}

void gp__srv_notify_stats_get(gp_srv_notify *n, gp_srv_notify_stats *ret) {
  pthread_mutex_lock(&n->lock);
  *ret = n->stats;
  pthread_mutex_unlock(&n->lock);
}

void gp__srv_notify_metrics(gp_srv_notify *n, gp_buf *out) {
  if (!n) return;
  gp_srv_notify_stats st;
  gp__srv_notify_stats_get(n, &st);
  static const char *const ch[] = {"mail", "webhook"};
  static const struct {
    const char *name, *help;
    size_t off;
  } counters[] = {
      {"sent", "Notifications delivered", offsetof(gp_srv_notify_stats, sent)},
      {"failed", "Notifications given up after their last attempt",
       offsetof(gp_srv_notify_stats, failed)},
      {"dropped", "Notifications pushed out of the full queue",
       offsetof(gp_srv_notify_stats, dropped)},
      {"limited", "Notifications over their user's rate limit",
       offsetof(gp_srv_notify_stats, limited)},
      {"retries", "Notification attempts after a failed one",
       offsetof(gp_srv_notify_stats, retries)},
  };
  for (size_t i = 0; i < sizeof counters / sizeof *counters; i++) {
    const uint64_t *v = (const uint64_t *)((const char *)&st + counters[i].off);
    gp_buf_printf(out, "# HELP gpool_notify_%s_total %s.\n# TYPE gpool_notify_%s_total counter\n",
                  counters[i].name, counters[i].help, counters[i].name);
    for (int c = 0; c < GP_NOTIFY_CHANNELS; c++)
      gp_buf_printf(out, "gpool_notify_%s_total{channel=\"%s\"} %llu\n", counters[i].name, ch[c],
                    (unsigned long long)v[c]);
  }
  gp_buf_printf(out, "# HELP gpool_notify_queued Notifications waiting to be sent.\n"
                     "# TYPE gpool_notify_queued gauge\ngpool_notify_queued %d\n",
                st.queued);
}
