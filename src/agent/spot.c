/* SPDX-License-Identifier: Apache-2.0 */
/* The spot interruption watcher: a thread that polls the instance's metadata service (AWS
 * instance-action, GCP preempted, Azure Scheduled Events; `spot:` in agent.yaml) and hands
 * the loop an "interruption" event the moment a notice appears, so that the server can
 * signal the node's jobs while the notice still leaves them time to checkpoint.
 *
 * It has its own thread because a metadata read may hang for its whole timeout, and the
 * loop must keep heartbeating and reaping jobs meanwhile. Only a well-formed positive answer
 * is a notice: a transport error, a timeout, a 5xx, an oversized or unreadable body is
 * counted and logged, never reported, so a flapping metadata service never "recovers" a
 * healthy job. */
#include <curl/curl.h>
#include <stdatomic.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/agent_int.h"
#include "util/buf.h"
#include "util/mem.h"

#define SPOT_BODY_MAX 65536          /* a metadata answer larger than this is garbage */
#define SPOT_TIMEOUT_MS 2000L        /* per read: a hung service costs one poll, no more */
#define SPOT_CONNECT_TIMEOUT_MS 1000L
#define AWS_TOKEN_TTL_S 21600
#define GCP_NOTICE_S 30              /* GCP gives about 30 s and does not say when */
#define AZURE_DEFAULT_NOTICE_S 30    /* a Preempt event without NotBefore */

struct gp__agent_spot {
  gp_agent *agent;                   /* for its lock and its pending notices */
  gp_agent_spot cfg;
  pthread_t thread;
  bool started;
  pthread_mutex_t lock;              /* with `wake`: the thread's sleep between polls */
  pthread_cond_t wake;
  atomic_bool stop;                  /* also read by a read in progress, to give up at once */
  char token[256];                   /* AWS IMDSv2 session token; "" when none */
  int64_t token_until_s;
  bool noticed;                      /* a notice was reported and not withdrawn since */
};

/* ---- parsing (pure) ---- */

/* "2026-12-01T10:00:00Z" -> epoch seconds; false for anything else. */
static bool parse_rfc3339(const char *s, int64_t *ret) {
  struct tm tm;
  memset(&tm, 0, sizeof tm);
  const char *end = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
  if (!end) return false;
  if (*end == '.') /* fractions of a second */
    for (end++; *end >= '0' && *end <= '9'; end++) {}
  if (strcmp(end, "Z") != 0) return false;
  *ret = (int64_t)timegm(&tm);
  return true;
}

/* "Mon, 19 Sep 2016 18:29:47 GMT" -> epoch seconds; false for anything else. */
static bool parse_rfc1123(const char *s, int64_t *ret) {
  struct tm tm;
  memset(&tm, 0, sizeof tm);
  const char *end = strptime(s, "%a, %d %b %Y %H:%M:%S GMT", &tm);
  if (!end || *end) return false;
  *ret = (int64_t)timegm(&tm);
  return true;
}

/* A deadline more than an hour past or a week ahead is no notice anyone sent. */
static bool deadline_sane(int64_t deadline, int64_t now_s) {
  return deadline >= now_s - 3600 && deadline <= now_s + 7 * 86400;
}

static int refuse(char *why, size_t size, const char *msg) {
  snprintf(why, size, "%s", msg);
  return GP__AGENT_SPOT_ERROR;
}

static int parse_aws(long status, const char *body, size_t len, int64_t now_s,
                     gp__agent_spot_notice *ret, char *why, size_t size) {
  if (status == 404) return GP__AGENT_SPOT_NONE;
  if (status != 200) {
    snprintf(why, size, "instance-action answered HTTP %ld", status);
    return GP__AGENT_SPOT_ERROR;
  }
  json_t *doc = json_loadb(body, len, 0, NULL);
  const char *action = json_string_value(json_object_get(doc, "action"));
  const char *t = json_string_value(json_object_get(doc, "time"));
  int rc = GP__AGENT_SPOT_NOTICE;
  int64_t deadline = 0;
  if (!json_is_object(doc)) rc = refuse(why, size, "instance-action is not a JSON object");
  else if (!action || (strcmp(action, "terminate") != 0 && strcmp(action, "stop") != 0 &&
                       strcmp(action, "hibernate") != 0))
    rc = refuse(why, size, "instance-action has no action terminate, stop or hibernate");
  else if (!t || !parse_rfc3339(t, &deadline) || !deadline_sane(deadline, now_s))
    rc = refuse(why, size, "instance-action has no valid time (e.g. 2026-12-01T10:00:00Z)");
  if (rc == GP__AGENT_SPOT_NOTICE) {
    ret->deadline = deadline;
    snprintf(ret->detail, sizeof ret->detail, "aws instance-action %s at %s", action, t);
  }
  json_decref(doc);
  return rc;
}

static int parse_gcp(long status, const char *body, size_t len, int64_t now_s,
                     gp__agent_spot_notice *ret, char *why, size_t size) {
  if (status != 200) {
    snprintf(why, size, "preempted answered HTTP %ld", status);
    return GP__AGENT_SPOT_ERROR;
  }
  while (len > 0 && (body[len - 1] == '\n' || body[len - 1] == '\r' || body[len - 1] == ' ')) len--;
  if (len == 5 && memcmp(body, "FALSE", 5) == 0) return GP__AGENT_SPOT_NONE;
  if (len == 4 && memcmp(body, "TRUE", 4) == 0) {
    ret->deadline = now_s + GCP_NOTICE_S;
    snprintf(ret->detail, sizeof ret->detail, "gcp preempted TRUE");
    return GP__AGENT_SPOT_NOTICE;
  }
  snprintf(why, size, "preempted answered neither TRUE nor FALSE (%zu bytes)", len);
  return GP__AGENT_SPOT_ERROR;
}

static int parse_azure(long status, const char *body, size_t len, int64_t now_s,
                       gp__agent_spot_notice *ret, char *why, size_t size) {
  if (status != 200) {
    snprintf(why, size, "scheduledevents answered HTTP %ld", status);
    return GP__AGENT_SPOT_ERROR;
  }
  json_t *doc = json_loadb(body, len, 0, NULL);
  const json_t *events = json_object_get(doc, "Events");
  int rc = GP__AGENT_SPOT_NONE;
  if (!json_is_object(doc) || !json_is_array(events)) {
    rc = refuse(why, size, "scheduledevents is not an object with an Events list");
  } else {
    for (size_t i = 0; i < json_array_size(events) && rc == GP__AGENT_SPOT_NONE; i++) {
      const json_t *e = json_array_get(events, i);
      const char *type = json_string_value(json_object_get(e, "EventType"));
      if (!json_is_object(e) || !type) {
        rc = refuse(why, size, "scheduledevents has an event without an EventType");
        break;
      }
      if (strcmp(type, "Preempt") != 0) continue; /* reboots, redeploys: not a reclaim */
      const char *nb = json_string_value(json_object_get(e, "NotBefore"));
      int64_t deadline = now_s + AZURE_DEFAULT_NOTICE_S;
      if (nb && *nb && (!parse_rfc1123(nb, &deadline) || !deadline_sane(deadline, now_s))) {
        rc = refuse(why, size, "a Preempt event has an unreadable NotBefore");
        break;
      }
      ret->deadline = deadline;
      snprintf(ret->detail, sizeof ret->detail, "azure Preempt not before %s",
               nb && *nb ? nb : "(not given)");
      rc = GP__AGENT_SPOT_NOTICE;
    }
  }
  json_decref(doc);
  return rc;
}

int gp__agent_spot_parse(gp_agent_spot_provider provider, long status, const char *body,
                         size_t len, int64_t now_s, gp__agent_spot_notice *ret, char *why,
                         size_t why_size) {
  memset(ret, 0, sizeof *ret);
  why[0] = '\0';
  if (len > SPOT_BODY_MAX) {
    snprintf(why, why_size, "an answer of %zu bytes (more than %d)", len, SPOT_BODY_MAX);
    return GP__AGENT_SPOT_ERROR;
  }
  switch (provider) {
  case GP_SPOT_AWS: return parse_aws(status, body, len, now_s, ret, why, why_size);
  case GP_SPOT_GCP: return parse_gcp(status, body, len, now_s, ret, why, why_size);
  case GP_SPOT_AZURE: return parse_azure(status, body, len, now_s, ret, why, why_size);
  default: snprintf(why, why_size, "no provider"); return GP__AGENT_SPOT_ERROR;
  }
}

/* ---- reading the metadata service ---- */

static size_t on_body(char *data, size_t size, size_t n, void *ctx) {
  gp_buf *b = ctx;
  gp_buf_append(b, data, size * n);
  return gp_buf_truncated(b) ? 0 : size * n; /* 0 aborts an oversized answer */
}

static const char *default_base(gp_agent_spot_provider p) {
  return p == GP_SPOT_GCP ? "http://metadata.google.internal" : "http://169.254.169.254";
}

/* A read in progress gives up when the agent stops, rather than holding it up to 2 s. */
static int on_progress(void *ctx, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un) {
  (void)dt, (void)dn, (void)ut, (void)un;
  return atomic_load(&((struct gp__agent_spot *)ctx)->stop) ? 1 : 0;
}

/* One HTTP call; the status (0 on a transport error, with `why`) and the body in `b`. */
static long call(struct gp__agent_spot *sp, const char *method, const char *url,
                 struct curl_slist *headers, gp_buf *b, char *why, size_t size) {
  CURL *e = curl_easy_init();
  if (!e) {
    snprintf(why, size, "cannot make an HTTP handle");
    return 0;
  }
  curl_easy_setopt(e, CURLOPT_URL, url);
  curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
  if (strcmp(method, "PUT") == 0) {
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, "");
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, 0L);
  }
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, b);
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, SPOT_TIMEOUT_MS);
  curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, SPOT_CONNECT_TIMEOUT_MS);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_NOPROXY, "*"); /* the metadata service is never behind a proxy */
  curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(e, CURLOPT_XFERINFODATA, sp);
  curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
  CURLcode cc = curl_easy_perform(e);
  long status = 0;
  if (cc == CURLE_OK) curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
  else if (cc == CURLE_WRITE_ERROR && gp_buf_truncated(b))
    snprintf(why, size, "an answer larger than %d bytes", SPOT_BODY_MAX);
  else snprintf(why, size, "%s", curl_easy_strerror(cc));
  curl_easy_cleanup(e);
  return status;
}

/* IMDSv2: a session token when the service offers one; none (IMDSv1) otherwise. */
static void aws_token(struct gp__agent_spot *sp, const char *base) {
  int64_t now = gp__agent_now_ms() / 1000;
  if (sp->token[0] && now < sp->token_until_s) return;
  sp->token[0] = '\0';
  char url[400], why[256];
  snprintf(url, sizeof url, "%s/latest/api/token", base);
  char ttl[96];
  snprintf(ttl, sizeof ttl, "X-aws-ec2-metadata-token-ttl-seconds: %d", AWS_TOKEN_TTL_S);
  struct curl_slist *h = curl_slist_append(NULL, ttl);
  gp_buf b;
  gp_buf_init(&b, sizeof sp->token - 1);
  long status = call(sp, "PUT", url, h, &b, why, sizeof why);
  curl_slist_free_all(h);
  bool ok = status == 200 && b.len > 0 && b.len < sizeof sp->token;
  for (size_t i = 0; ok && i < b.len; i++) ok = b.data[i] > ' ' && b.data[i] < 0x7f;
  if (ok) {
    memcpy(sp->token, b.data, b.len);
    sp->token[b.len] = '\0';
    sp->token_until_s = now + AWS_TOKEN_TTL_S / 2;
  }
  gp_buf_done(&b);
}

/* One poll: GP__AGENT_SPOT_NOTICE, _NONE or _ERROR (with `why`). */
static int poll_once(struct gp__agent_spot *sp, gp__agent_spot_notice *notice, char *why,
                     size_t size) {
  const char *base = sp->cfg.url[0] ? sp->cfg.url : default_base(sp->cfg.provider);
  char url[400], hdr[320];
  struct curl_slist *h = NULL;
  switch (sp->cfg.provider) {
  case GP_SPOT_AWS:
    aws_token(sp, base);
    snprintf(url, sizeof url, "%s/latest/meta-data/spot/instance-action", base);
    if (sp->token[0]) {
      snprintf(hdr, sizeof hdr, "X-aws-ec2-metadata-token: %s", sp->token);
      h = curl_slist_append(h, hdr);
    }
    break;
  case GP_SPOT_GCP:
    snprintf(url, sizeof url, "%s/computeMetadata/v1/instance/preempted", base);
    h = curl_slist_append(h, "Metadata-Flavor: Google");
    break;
  default:
    snprintf(url, sizeof url, "%s/metadata/scheduledevents?api-version=2020-07-01", base);
    h = curl_slist_append(h, "Metadata: true");
    break;
  }
  gp_buf b;
  gp_buf_init(&b, SPOT_BODY_MAX);
  long status = call(sp, "GET", url, h, &b, why, size);
  curl_slist_free_all(h);
  int rc = GP__AGENT_SPOT_ERROR;
  if (status == 401 && sp->cfg.provider == GP_SPOT_AWS) {
    sp->token[0] = '\0'; /* the token expired early: a new one at the next poll */
    snprintf(why, size, "instance-action answered HTTP 401 (token refused)");
  } else if (status > 0) {
    rc = gp__agent_spot_parse(sp->cfg.provider, status, b.data ? b.data : "", b.len,
                              gp__agent_now_ms() / 1000, notice, why, size);
  }
  gp_buf_done(&b);
  return rc;
}

/* A notice becomes an "interruption" event for the loop. */
static void report(struct gp__agent_spot *sp, const gp__agent_spot_notice *n) {
  gp_agent *a = sp->agent;
  int64_t now_ms = gp__agent_now_ms();
  gp_proto_event ev = {.kind = GP_PROTO_EV_INTERRUPTION, .at = now_ms / 1000, .at_ms = now_ms,
                       .deadline = n->deadline, .has_message = true};
  snprintf(ev.source, sizeof ev.source, "%s", gp_agent_spot_provider_name(sp->cfg.provider));
  snprintf(ev.message, sizeof ev.message, "%s", n->detail);
  json_t *doc = gp_proto_event_encode(&ev);
  pthread_mutex_lock(&a->stats_lock);
  json_array_append_new(a->spot_events, doc);
  a->spot_counts.notices++;
  pthread_mutex_unlock(&a->stats_lock);
  gp__agent_log("spot interruption notice: %s (deadline in %lld s)", n->detail,
                (long long)(n->deadline - now_ms / 1000));
}

static void *watch(void *arg) {
  struct gp__agent_spot *sp = arg;
  gp_agent *a = sp->agent;
  bool error_logged = false;
  for (;;) {
    gp__agent_spot_notice notice;
    char why[300] = "";
    int rc = poll_once(sp, &notice, why, sizeof why);
    pthread_mutex_lock(&a->stats_lock);
    a->spot_counts.polls++;
    if (rc == GP__AGENT_SPOT_ERROR) a->spot_counts.errors++;
    pthread_mutex_unlock(&a->stats_lock);
    if (rc == GP__AGENT_SPOT_ERROR) {
      /* Logged once per run of errors: a dead service every 2 s would flood the log. */
      if (!error_logged) gp__agent_log("spot metadata read failed (not a notice): %s", why);
      error_logged = true;
    } else {
      if (error_logged) gp__agent_log("spot metadata readable again");
      error_logged = false;
    }
    /* Once per notice: the service keeps answering it until the node goes (and GCP's
     * deadline, counted from the read, moves with every read). */
    if (rc == GP__AGENT_SPOT_NOTICE && !sp->noticed) {
      report(sp, &notice);
      sp->noticed = true;
    } else if (rc == GP__AGENT_SPOT_NONE) {
      sp->noticed = false; /* withdrawn: a later notice is news again */
    }
    pthread_mutex_lock(&sp->lock);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += sp->cfg.interval_s;
    while (!atomic_load(&sp->stop) &&
           pthread_cond_timedwait(&sp->wake, &sp->lock, &until) != ETIMEDOUT) {}
    pthread_mutex_unlock(&sp->lock);
    if (atomic_load(&sp->stop)) break;
  }
  return NULL;
}

int gp__agent_spot_start(gp_agent *a, gp_err *err) {
  if (a->cfg.spot.provider == GP_SPOT_NONE) return 0;
  struct gp__agent_spot *sp = gp_xcalloc(1, sizeof *sp);
  sp->agent = a;
  sp->cfg = a->cfg.spot;
  atomic_init(&sp->stop, false);
  if (sp->cfg.interval_s < 1) sp->cfg.interval_s = 2;
  pthread_mutex_init(&sp->lock, NULL);
  pthread_cond_init(&sp->wake, NULL);
  a->spot = sp;
  int rc = pthread_create(&sp->thread, NULL, watch, sp);
  if (rc != 0)
    return gp_err_set(err, GP_EIO, NULL, 0, "spot", "cannot start the spot watcher: %s",
                      strerror(rc));
  sp->started = true;
  gp__agent_log("watching %s for spot interruption notices every %d s",
                sp->cfg.url[0] ? sp->cfg.url : default_base(sp->cfg.provider), sp->cfg.interval_s);
  return 0;
}

void gp__agent_spot_stop(gp_agent *a) {
  struct gp__agent_spot *sp = a->spot;
  if (!sp) return;
  if (sp->started) {
    pthread_mutex_lock(&sp->lock);
    atomic_store(&sp->stop, true);
    pthread_cond_signal(&sp->wake);
    pthread_mutex_unlock(&sp->lock);
    pthread_join(sp->thread, NULL);
  }
  pthread_cond_destroy(&sp->wake);
  pthread_mutex_destroy(&sp->lock);
  free(sp);
  a->spot = NULL;
}

void gp__agent_spot_take(gp_agent *a) {
  if (!a->spot) return;
  pthread_mutex_lock(&a->stats_lock);
  json_t *list = a->spot_events;
  a->spot_events = json_array();
  pthread_mutex_unlock(&a->stats_lock);
  size_t i;
  json_t *ev;
  json_array_foreach(list, i, ev) gp__agent_event(a, json_incref(ev));
  json_decref(list);
}

void gp__agent_spot_metrics(gp_agent *a, gp_buf *out) {
  if (!a->spot) return;
  pthread_mutex_lock(&a->stats_lock);
  gp__agent_spot_counts c = a->spot_counts;
  pthread_mutex_unlock(&a->stats_lock);
  const char *p = gp_agent_spot_provider_name(a->cfg.spot.provider);
  gp_buf_printf(out, "# HELP gpool_agent_spot_polls_total Reads of the metadata service for a "
                     "spot interruption notice.\n# TYPE gpool_agent_spot_polls_total counter\n"
                     "gpool_agent_spot_polls_total{provider=\"%s\"} %llu\n",
                p, (unsigned long long)c.polls);
  gp_buf_printf(out, "# HELP gpool_agent_spot_errors_total Metadata reads that failed or were "
                     "unreadable (never taken as a notice).\n"
                     "# TYPE gpool_agent_spot_errors_total counter\n"
                     "gpool_agent_spot_errors_total{provider=\"%s\"} %llu\n",
                p, (unsigned long long)c.errors);
  gp_buf_printf(out, "# HELP gpool_agent_spot_notices_total Spot interruption notices reported "
                     "to the server.\n# TYPE gpool_agent_spot_notices_total counter\n"
                     "gpool_agent_spot_notices_total{provider=\"%s\"} %llu\n",
                p, (unsigned long long)c.notices);
}
