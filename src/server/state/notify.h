/* SPDX-License-Identifier: Apache-2.0 */
/* Job notifications (docs/notifications.md): e-mail through the system's sendmail and
 * webhooks (JSON with a Slack-compatible `text`), for the events of a job: it began, ended,
 * failed, was requeued, reached its time limit.
 *
 * Three parts. The config (notify_config.c) reads `notify:` and validates what users may
 * name: mail addresses and webhook URLs. The state side (notify_job.c, state thread) notes
 * a job's transitions as gp__srv_job_set_state makes them, and once the batch is committed
 * turns each into messages for the job's owner (their --mail-type/--mail-user, their own
 * settings from `gpool notify set`) and for the admins' webhooks of the config. The sender
 * (notify.c, notify_send.c) is a thread of its own with a bounded queue: handing it a
 * message only copies it under a lock, so the state thread never waits for a mail server
 * or a web endpoint; a full queue drops its oldest message; a failed delivery is tried
 * again with exponential backoff a bounded number of times; each attempt has a deadline;
 * each user's messages per channel are rate limited. Counts per channel go to /metrics. */
#ifndef GP_SERVER_NOTIFY_H
#define GP_SERVER_NOTIFY_H

#include <stdbool.h>
#include <stdint.h>

#include "util/buf.h"
#include "util/doc.h"
#include "util/error.h"
#include "util/mem.h"

/* Events a job can notify of (bits). */
enum {
  GP_NOTIFY_BEGIN = 1 << 0,       /* a run started */
  GP_NOTIFY_END = 1 << 1,         /* it ended, however (Slurm's END) */
  GP_NOTIFY_FAIL = 1 << 2,        /* it ended otherwise than completed or cancelled */
  GP_NOTIFY_REQUEUE = 1 << 3,     /* a run ended and the job waits again */
  GP_NOTIFY_TIME_LIMIT = 1 << 4,  /* it was stopped at its time limit */
  GP_NOTIFY_ARRAY_TASKS = 1 << 5, /* (a modifier) each array element's events, not the array's */
  GP_NOTIFY_ARRAY_DONE = 1 << 6,  /* every element of an array ended (arrays call it) */
  GP_NOTIFY_TIME_LIMIT_50 = 1 << 7, /* a run reached 50% of its time limit */
  GP_NOTIFY_TIME_LIMIT_80 = 1 << 8,
  GP_NOTIFY_TIME_LIMIT_90 = 1 << 9,
};
#define GP_NOTIFY_TIME_LIMIT_PCT (GP_NOTIFY_TIME_LIMIT_50 | GP_NOTIFY_TIME_LIMIT_80 | GP_NOTIFY_TIME_LIMIT_90)
/* Slurm's ALL, as far as gpool has those events. */
#define GP_NOTIFY_ALL (GP_NOTIFY_BEGIN | GP_NOTIFY_END | GP_NOTIFY_FAIL | GP_NOTIFY_REQUEUE)
/* What `gpool notify set` subscribes to when --events is not given. */
#define GP_NOTIFY_DEFAULT_EVENTS (GP_NOTIFY_END | GP_NOTIFY_FAIL)

#define GP_NOTIFY_ADDR_MAX 254  /* bytes of a mail address (RFC 5321's path limit) */
#define GP_NOTIFY_URL_MAX 2048  /* bytes of a webhook URL */

typedef enum { GP_NOTIFY_MAIL = 0, GP_NOTIFY_WEBHOOK = 1, GP_NOTIFY_CHANNELS = 2 } gp_notify_channel;

/* Who may have webhooks, and where they may point. */
typedef enum {
  GP_NOTIFY_HOOKS_OFF = 0,    /* no user webhooks (the config's still go out) */
  GP_NOTIFY_HOOKS_PUBLIC,     /* only to public addresses: never loopback, private,
                                 link-local or other internal ranges (checked at connect
                                 time, after DNS: the default) */
  GP_NOTIFY_HOOKS_ANY,        /* anywhere (a trusted site; tests) */
} gp_notify_hooks;

typedef struct gp_notify_hook {
  const char *url;            /* arena */
  unsigned events;            /* GP_NOTIFY_* */
} gp_notify_hook;

/* The config's `notify:` block (docs/config.md, "Notifications"). */
typedef struct gp_notify_config {
  const char *sendmail;       /* the sendmail program; "" : no mail ("/usr/sbin/sendmail") */
  const char *mail_from;      /* the From: address; NULL: sendmail's default */
  int n_mail_domains;         /* > 0: users may name addresses only in these domains */
  const char **mail_domains;
  gp_notify_hooks webhooks;   /* public */
  int n_hooks;                /* the admins' webhooks: every job's events */
  const gp_notify_hook *hooks;
  int queue_max;              /* messages waiting at most; past it the oldest go (1000) */
  int senders;                /* delivery threads; one message in flight per user and channel (4) */
  int timeout_s;              /* one attempt's deadline (10) */
  int attempts;               /* tries of one message (4) */
  int backoff_s;              /* the first retry's wait, doubled each time (2) */
  int per_user_per_hour;      /* messages of one user per channel per hour (60) */
} gp_notify_config;

void gp_notify_config_init(gp_notify_config *c);
/* Reads the `notify` map m (path names it in errors) over the defaults; strings in `a`. */
int gp_notify_config_read(const gp_doc *d, const gp_doc_node *m, const char *path, gp_arena *a,
                          gp_notify_config *c, gp_err *err);

/* Parses an event list: names separated by commas (begin, end, fail, requeue, time_limit,
 * time_limit_50/80/90, array_tasks, all, none; Slurm's upper-case names too). Slurm's
 * values that gpool cannot produce (INVALID_DEPEND, STAGE_OUT) are refused, naming them.
 * "none" alone gives 0. */
int gp_notify_events_parse(const char *list, const char *field, unsigned *ret, gp_err *err);
/* The names of the events in `events`, comma-separated, into buf. */
void gp_notify_events_format(unsigned events, char *buf, size_t size);
/* A mail address gpool may send to: local@domain, letters, digits and ._%+- only, at most
 * GP_NOTIFY_ADDR_MAX bytes, in cfg's mail_domains when it lists any. */
int gp_notify_check_mail(const gp_notify_config *cfg, const char *addr, const char *field,
                         gp_err *err);
/* A webhook URL: http or https, printable ASCII without spaces, at most GP_NOTIFY_URL_MAX. */
int gp_notify_check_url(const char *url, const char *field, gp_err *err);

/* ---- the sender (notify.c) ---- */
typedef struct gp_srv_notify gp_srv_notify;

/* A sender with its threads; NULL when none can start. `cfg` is borrowed and
 * outlives it. */
gp_srv_notify *gp__srv_notify_new(const gp_notify_config *cfg);
/* Stops the thread (a delivery in flight ends at its deadline) and frees what waits.
 * Accepts NULL. */
void gp__srv_notify_free(gp_srv_notify *n);
/* Queues one message (all strings copied): to a mail address (subject and text body) or to
 * a webhook URL (body: the JSON). `user` is whose job it is (rate limited), NULL for the
 * admins' webhooks. Never blocks on delivery. */
void gp__srv_notify_send(gp_srv_notify *n, gp_notify_channel ch, const char *user,
                         const char *to, const char *subject, const char *body);
typedef struct gp_srv_notify_stats {
  uint64_t sent[GP_NOTIFY_CHANNELS];    /* delivered */
  uint64_t failed[GP_NOTIFY_CHANNELS];  /* given up after the last attempt */
  uint64_t dropped[GP_NOTIFY_CHANNELS]; /* pushed out of a full queue */
  uint64_t limited[GP_NOTIFY_CHANNELS]; /* over the user's rate */
  uint64_t retries[GP_NOTIFY_CHANNELS]; /* attempts after a first that failed */
  int queued;
} gp_srv_notify_stats;
void gp__srv_notify_stats_get(gp_srv_notify *n, gp_srv_notify_stats *ret);
/* Appends the sender's figures to a /metrics text (nothing for NULL). */
void gp__srv_notify_metrics(gp_srv_notify *n, gp_buf *out);

/* ---- one delivery (notify_send.c; the sender's thread) ---- */
/* Posts `json` to `url` within timeout_s; 0 on a 2xx answer, else GP_EIO with *err saying
 * why. `hooks` decides which addresses it may connect to. */
int gp__srv_notify_post(const char *url, const char *json, gp_notify_hooks hooks, int timeout_s,
                        gp_err *err);
/* Hands a message to `sendmail -oi -t` (no shell) within timeout_s; 0 when it exits 0. The
 * headers are built here from checked values (the caller has checked `to`; subject bytes
 * outside printable ASCII become '?'). */
int gp__srv_notify_mail(const char *sendmail, const char *from, const char *to,
                        const char *subject, const char *text, int timeout_s, gp_err *err);

#endif
