/* SPDX-License-Identifier: Apache-2.0 */
/* Job notifications on the state thread (notify_job.h). A job's events reach only its
 * owner: by mail (its --mail-type/--mail-user, else the owner's own settings) and at the
 * owner's webhook; the admins' webhooks of the config hear every job. Events are noted as
 * the state changes and sent only once the batch is committed, so a rolled back batch
 * (whose state is thrown away with its notes) notifies of nothing that did not happen.
 *
 * Which events a message goes for: the job's mail_type if it set one, else the owner's
 * `events` (default end,fail). END covers every end (a failed job's one message says
 * failed); TIME_LIMIT an end at the time limit. The users' settings are few (one per user
 * who ran `gpool notify set`) and are looked up by a scan. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "server/state/notify_job.h"
#include "server/state/server_int.h"
#include "util/mem.h"

typedef struct note {
  int64_t job;
  unsigned kind;          /* one GP_NOTIFY_* event */
} note;

typedef struct user_set {
  char *user, *mail, *webhook;  /* owned; NULL: none */
  unsigned events;
} user_set;

struct gp__srv_notify_state {
  note *notes;
  int n_notes;
  size_t cap_notes;
  user_set *users;
  int n_users;
  size_t cap_users;
  unsigned users_events;  /* the union of every user's events (a cheap first test) */
};

static struct gp__srv_notify_state *st(gp_srv_state *s) {
  if (!s->notify_st) s->notify_st = gp_xcalloc(1, sizeof *s->notify_st);
  return s->notify_st;
}

static user_set *user_find(const gp_srv_state *s, const char *user) {
  if (!s->notify_st) return NULL;
  for (int i = 0; i < s->notify_st->n_users; i++)
    if (strcmp(s->notify_st->users[i].user, user) == 0) return &s->notify_st->users[i];
  return NULL;
}

void gp__srv_notify_state_free(gp_srv_state *s) {
  struct gp__srv_notify_state *n = s->notify_st;
  if (!n) return;
  for (int i = 0; i < n->n_users; i++) {
    free(n->users[i].user);
    free(n->users[i].mail);
    free(n->users[i].webhook);
  }
  free(n->users);
  free(n->notes);
  free(n);
  s->notify_st = NULL;
}

/* Can this server send mail? Its sendmail is configured and installed (asked again each
 * time: a package installed later counts; only submissions and settings that ask for mail
 * pay the look). Without it, asking for mail is refused rather than taken and never sent. */
static int mail_check(const gp_notify_config *c, const char *field, gp_err *err) {
  if (!c->sendmail[0])
    return gp_err_set(err, GP_EINVAL, NULL, 0, field,
                      "this server sends no mail (its config's notify.sendmail is empty)");
  if (access(c->sendmail, X_OK) != 0)
    return gp_err_set(err, GP_EINVAL, NULL, 0, field,
                      "this server cannot send mail: %s is not installed (notify.sendmail)",
                      c->sendmail);
  return 0;
}

/* ---- a job's fields ---- */

int gp__srv_notify_job_read(const json_t *o, gp_srv_job *j, gp_err *err) {
  const json_t *t = json_object_get(o, "mail_type"), *u = json_object_get(o, "mail_user");
  if (t && !json_is_null(t)) {
    if (!json_is_string(t))
      return gp_err_set(err, GP_EINVAL, NULL, 0, "mail_type", "must be a list of events as a string");
    int r = gp_notify_events_parse(json_string_value(t), "mail_type", &j->mail_events, err);
    if (r) return r;
    j->mail_set = true;
  }
  if (u && !json_is_null(u)) {
    gp_notify_config any;
    gp_notify_config_init(&any);
    if (!json_is_string(u)) return gp_err_set(err, GP_EINVAL, NULL, 0, "mail_user", "must be a mail address");
    int r = gp_notify_check_mail(&any, json_string_value(u), "mail_user", err);
    if (r) return r;
    free(j->mail_user);
    j->mail_user = gp_xstrdup(json_string_value(u));
  }
  return 0;
}

void gp__srv_notify_job_json(json_t *o, const gp_srv_job *j) {
  char ev[128];
  gp_notify_events_format(j->mail_events, ev, sizeof ev);
  json_object_set_new(o, "mail_type", j->mail_set ? json_string(ev) : json_null());
  json_object_set_new(o, "mail_user", j->mail_user ? json_string(j->mail_user) : json_null());
}

int gp__srv_notify_job_admit(const gp_srv_state *s, const gp_srv_job *j, gp_err *err) {
  const gp_notify_config *c = &s->cfg->notify;
  bool wants_mail = (j->mail_set && j->mail_events) || j->mail_user;
  if (!wants_mail) return 0;
  const char *field = j->mail_user ? "mail_user" : "mail_type";
  int r = mail_check(c, field, err);
  if (r) return r;
  const user_set *u = user_find(s, j->user);
  const char *to = j->mail_user ? j->mail_user : u ? u->mail : NULL;
  if (!to)
    return gp_err_set(err, GP_EINVAL, NULL, 0, "mail_type",
                      "no address to mail: give --mail-user or set yours with "
                      "`gpool notify set --mail ADDRESS`");
  return gp_notify_check_mail(c, to, field, err);
}

/* ---- events ---- */

void gp__srv_notify_note(gp_srv_state *s, gp_srv_job *j, gp_job_state old) {
  if (!s->notify || old == j->state) return;
  gp_job_state now = j->state;
  unsigned kind = 0;
  bool ran = old == GP_JOB_RUNNING || old == GP_JOB_STOPPING;
  if (gp_job_state_is_final(now) && !gp_job_state_is_final(old))
    kind = now == GP_JOB_COMPLETED || now == GP_JOB_CANCELLED ? GP_NOTIFY_END : GP_NOTIFY_FAIL;
  else if (now == GP_JOB_RUNNING && !ran)
    kind = GP_NOTIFY_BEGIN;
  else if ((now == GP_JOB_PENDING || now == GP_JOB_HELD) && ran)
    kind = GP_NOTIFY_REQUEUE;
  if (kind == GP_NOTIFY_BEGIN) j->time_noted = 0;
  if (kind) gp__srv_notify_event(s, j, kind);
}

void gp__srv_notify_time_check(gp_srv_state *s, gp_srv_job *j, int64_t now) {
  if (!s->notify || j->time_limit <= 0 || j->started_at <= 0) return;
  unsigned asked = j->mail_set ? j->mail_events : 0;
  for (int i = 0; i < s->cfg->notify.n_hooks; i++) asked |= s->cfg->notify.hooks[i].events;
  /* Every running job is looked at each tick: most leave here, without a user lookup. */
  if (!(asked & GP_NOTIFY_TIME_LIMIT_PCT) &&
      !(s->notify_st && (s->notify_st->users_events & GP_NOTIFY_TIME_LIMIT_PCT)))
    return;
  const user_set *u = user_find(s, j->user);
  if (u) asked |= u->events;
  static const struct {
    unsigned kind;
    int pct;
  } shares[] = {{GP_NOTIFY_TIME_LIMIT_50, 50}, {GP_NOTIFY_TIME_LIMIT_80, 80}, {GP_NOTIFY_TIME_LIMIT_90, 90}};
  int64_t ran = now - j->started_at;
  for (size_t i = 0; i < sizeof shares / sizeof *shares; i++) {
    int64_t at = j->time_limit * shares[i].pct / 100;
    if (!(asked & shares[i].kind) || (j->time_noted & shares[i].kind) || ran < at || ran >= at + 60)
      continue;
    j->time_noted |= shares[i].kind;
    gp__srv_notify_event(s, j, shares[i].kind);
  }
}

void gp__srv_notify_event(gp_srv_state *s, const gp_srv_job *j, unsigned kind) {
  if (!s->notify) return;
  /* Nobody to tell (the common case): nothing is noted. */
  if (!j->mail_set && !j->mail_user && s->cfg->notify.n_hooks == 0 && !user_find(s, j->user))
    return;
  struct gp__srv_notify_state *n = st(s);
  gp_xgrow((void **)&n->notes, &n->cap_notes, (size_t)n->n_notes + 1, sizeof *n->notes);
  n->notes[n->n_notes++] = (note){j->id, kind};
}

static bool wants(unsigned events, unsigned kind, gp_job_state state) {
  if (events & kind) return true;
  if (kind == GP_NOTIFY_ARRAY_DONE) return events & GP_NOTIFY_END;
  if (kind == GP_NOTIFY_FAIL && (events & GP_NOTIFY_END)) return true;
  return state == GP_JOB_TIMEOUT && (kind & (GP_NOTIFY_END | GP_NOTIFY_FAIL)) &&
         (events & GP_NOTIFY_TIME_LIMIT);
}

static const char *kind_name(unsigned kind) {
  if (kind & GP_NOTIFY_TIME_LIMIT_PCT)
    return kind == GP_NOTIFY_TIME_LIMIT_50 ? "time_limit_50" : kind == GP_NOTIFY_TIME_LIMIT_80
                                                                 ? "time_limit_80" : "time_limit_90";
  return kind == GP_NOTIFY_BEGIN ? "begin" : kind == GP_NOTIFY_END ? "end"
         : kind == GP_NOTIFY_FAIL ? "fail" : kind == GP_NOTIFY_ARRAY_DONE ? "array_done" : "requeue";
}

static const char *kind_verb(unsigned kind) {
  if (kind & GP_NOTIFY_TIME_LIMIT_PCT)
    return kind == GP_NOTIFY_TIME_LIMIT_50 ? "reached 50% of its time limit"
           : kind == GP_NOTIFY_TIME_LIMIT_80 ? "reached 80% of its time limit"
                                             : "reached 90% of its time limit";
  return kind == GP_NOTIFY_BEGIN ? "began" : kind == GP_NOTIFY_END ? "ended"
         : kind == GP_NOTIFY_FAIL ? "failed" : kind == GP_NOTIFY_ARRAY_DONE ? "finished every element"
                                             : "was requeued";
}

/* A name as a line of text holds it: control characters become '?', at most 120 bytes. */
static void clean_name(char *dst, size_t size, const char *s) {
  size_t o = 0;
  for (size_t i = 0; s && s[i] && o + 1 < size && i < 120; i++)
    dst[o++] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
  dst[o] = '\0';
}

/* Slack reads &, < and > as markup (<!channel> pings a whole channel): escaped. */
static void slack_escape(gp_buf *b, const char *s) {
  for (; *s; s++) {
    if (*s == '&') gp_buf_puts(b, "&amp;");
    else if (*s == '<') gp_buf_puts(b, "&lt;");
    else if (*s == '>') gp_buf_puts(b, "&gt;");
    else gp_buf_append(b, s, 1);
  }
}

static void fmt_time(char *buf, size_t size, int64_t t) {
  if (!t) {
    snprintf(buf, size, "-");
    return;
  }
  time_t tt = (time_t)t;
  struct tm tm;
  gmtime_r(&tt, &tm);
  strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* One line saying what happened: "job 12 (train) of bob in queue default ended:
 * completed, exit code 0, run time 00:01:05". */
static void summary(const gp_srv_job *j, unsigned kind, char *buf, size_t size) {
  char name[128], tail[160] = "";
  clean_name(name, sizeof name, j->name && *j->name ? j->name : "-");
  if (kind & GP_NOTIFY_TIME_LIMIT_PCT) {
    int64_t lim = j->time_limit;
    snprintf(tail, sizeof tail, " (%02lld:%02lld:%02lld)", (long long)(lim / 3600),
             (long long)(lim / 60 % 60), (long long)(lim % 60));
  }
  if (kind == GP_NOTIFY_END || kind == GP_NOTIFY_FAIL) { /* an array's run is its elements' */
    int64_t run = j->started_at && j->ended_at >= j->started_at ? j->ended_at - j->started_at : 0;
    char code[32] = "";
    if (j->has_exit_code) snprintf(code, sizeof code, ", exit code %d", j->exit_code);
    snprintf(tail, sizeof tail, ": %s%s, run time %02lld:%02lld:%02lld", gp_job_state_name(j->state),
             code, (long long)(run / 3600), (long long)(run / 60 % 60), (long long)(run % 60));
  }
  snprintf(buf, size, "gpool job %s (%s) of %s in queue %s %s%s", j->idstr, name, j->user,
           j->queue, kind_verb(kind), tail);
}

static json_t *payload(const gp_srv_job *j, unsigned kind, const char *line) {
  json_t *job = json_pack("{s:s, s:s, s:s, s:s, s:s, s:i}", "id", j->idstr, "name",
                          j->name ? j->name : "", "user", j->user, "queue", j->queue, "state",
                          gp_job_state_name(j->state), "restarts", j->restarts);
  json_object_set_new(job, "exit_code", j->has_exit_code ? json_integer(j->exit_code) : json_null());
  json_object_set_new(job, "end_reason", j->end_reason ? json_string(j->end_reason) : json_null());
  json_object_set_new(job, "submitted_at", json_integer(j->submitted_at));
  json_object_set_new(job, "started_at", j->started_at ? json_integer(j->started_at) : json_null());
  json_object_set_new(job, "ended_at", j->ended_at ? json_integer(j->ended_at) : json_null());
  gp_buf text;
  gp_buf_init(&text, 0);
  slack_escape(&text, line);
  json_t *o = json_pack("{s:s, s:o, s:s}", "event", kind_name(kind), "job", job, "text", text.data);
  gp_buf_done(&text);
  return o;
}

static char *mail_text(const gp_srv_job *j, const char *line) {
  gp_buf b;
  gp_buf_init(&b, 0);
  char name[128], sub[32], start[32], end[32];
  clean_name(name, sizeof name, j->name ? j->name : "");
  fmt_time(sub, sizeof sub, j->submitted_at);
  fmt_time(start, sizeof start, j->started_at);
  fmt_time(end, sizeof end, j->ended_at);
  gp_buf_printf(&b, "%s.\n\nJob:       %s\nName:      %s\nUser:      %s\nQueue:     %s\n"
                    "State:     %s\n", line, j->idstr, name, j->user, j->queue,
                gp_job_state_name(j->state));
  if (j->has_exit_code) gp_buf_printf(&b, "Exit code: %d\n", j->exit_code);
  if (j->end_reason) {
    char why[200];
    clean_name(why, sizeof why, j->end_reason);
    gp_buf_printf(&b, "Reason:    %s\n", why);
  }
  gp_buf_printf(&b, "Submitted: %s\nStarted:   %s\nEnded:     %s\nRestarts:  %d\n\n"
                    "`gpool show %s` tells more.\n", sub, start, end, j->restarts, j->idstr);
  return gp_buf_steal(&b);
}

static void send_one(gp_srv_state *s, const gp_srv_job *j, unsigned kind) {
  const gp_notify_config *c = &s->cfg->notify;
  const user_set *u = user_find(s, j->user);
  unsigned own = u ? u->events : GP_NOTIFY_DEFAULT_EVENTS;
  unsigned mail_events = j->mail_set ? j->mail_events : own;
  const char *to = j->mail_user ? j->mail_user : u ? u->mail : NULL;
  bool mail = c->sendmail[0] && to && (j->mail_set || j->mail_user || (u && u->mail)) &&
              wants(mail_events, kind, j->state);
  bool hook = u && u->webhook && c->webhooks != GP_NOTIFY_HOOKS_OFF && wants(own, kind, j->state);
  bool admins = false;
  for (int i = 0; i < c->n_hooks && !admins; i++) admins = wants(c->hooks[i].events, kind, j->state);
  if (!mail && !hook && !admins) return;
  char line[512];
  summary(j, kind, line, sizeof line);
  if (mail) {
    char *text = mail_text(j, line);
    gp__srv_notify_send(s->notify, GP_NOTIFY_MAIL, j->user, to, line, text);
    free(text);
  }
  if (!hook && !admins) return;
  json_t *o = payload(j, kind, line);
  char *body = json_dumps(o, JSON_COMPACT);
  json_decref(o);
  if (hook) gp__srv_notify_send(s->notify, GP_NOTIFY_WEBHOOK, j->user, u->webhook, NULL, body);
  for (int i = 0; i < c->n_hooks; i++)
    if (wants(c->hooks[i].events, kind, j->state))
      gp__srv_notify_send(s->notify, GP_NOTIFY_WEBHOOK, NULL, c->hooks[i].url, NULL, body);
  free(body);
}

void gp__srv_notify_flush(gp_srv_state *s) {
  struct gp__srv_notify_state *n = s->notify_st;
  if (!n || !n->n_notes) return;
  for (int i = 0; i < n->n_notes; i++) {
    const gp_srv_job *j = n->notes[i].job > 0 && (size_t)n->notes[i].job < s->cap_jobs
                              ? s->jobs[n->notes[i].job] : NULL;
    if (j && s->notify) send_one(s, j, n->notes[i].kind);
  }
  n->n_notes = 0;
}

/* ---- the users' settings ---- */

/* Reads a settings object (a PUT body over the current settings, or the stored copy) into
 * *out; errors name the field. */
static int settings_read(const gp_notify_config *c, const json_t *o, user_set *out, bool stored,
                         gp_err *err) {
  static const char *const keys[] = {"mail", "webhook", "events", NULL};
  const char *k;
  const json_t *v;
  json_object_foreach((json_t *)o, k, v) {
    bool known = false;
    for (int i = 0; keys[i] && !known; i++) known = strcmp(k, keys[i]) == 0;
    if (!known) return gp_err_set(err, GP_EINVAL, NULL, 0, NULL, "%.64s: unknown field", k);
  }
  int r;
  if ((v = json_object_get(o, "mail"))) {
    const char *m = json_string_value(v);
    if (!json_is_null(v) && !json_is_string(v))
      return gp_err_set(err, GP_EINVAL, NULL, 0, "mail", "must be a mail address or null");
    if (m && *m && !stored) {
      if ((r = mail_check(c, "mail", err)) || (r = gp_notify_check_mail(c, m, "mail", err))) return r;
    }
    free(out->mail);
    out->mail = m && *m ? gp_xstrdup(m) : NULL;
  }
  if ((v = json_object_get(o, "webhook"))) {
    const char *w = json_string_value(v);
    if (!json_is_null(v) && !json_is_string(v))
      return gp_err_set(err, GP_EINVAL, NULL, 0, "webhook", "must be a URL or null");
    if (w && *w && !stored) {
      if (c->webhooks == GP_NOTIFY_HOOKS_OFF)
        return gp_err_set(err, GP_EINVAL, NULL, 0, "webhook",
                          "this server takes no users' webhooks (its config's notify.webhooks is off)");
      if ((r = gp_notify_check_url(w, "webhook", err))) return r;
    }
    free(out->webhook);
    out->webhook = w && *w ? gp_xstrdup(w) : NULL;
  }
  if ((v = json_object_get(o, "events"))) {
    if (!json_is_string(v)) return gp_err_set(err, GP_EINVAL, NULL, 0, "events", "must be a list of events");
    if ((r = gp_notify_events_parse(json_string_value(v), "events", &out->events, err))) return r;
  }
  return 0;
}

static void user_set_done(user_set *u) {
  free(u->user);
  free(u->mail);
  free(u->webhook);
}

static void user_put_one(gp_srv_state *s, user_set *u);

static void users_changed(struct gp__srv_notify_state *n) {
  n->users_events = 0;
  for (int i = 0; i < n->n_users; i++) n->users_events |= n->users[i].events;
}

/* Puts (or with nothing set, removes) the settings of u->user; takes u's strings. */
static void user_put(gp_srv_state *s, user_set *u) {
  user_put_one(s, u);
  users_changed(st(s));
}

static void user_put_one(gp_srv_state *s, user_set *u) {
  struct gp__srv_notify_state *n = st(s);
  user_set *old = user_find(s, u->user);
  bool empty = !u->mail && !u->webhook && u->events == GP_NOTIFY_DEFAULT_EVENTS;
  if (old) {
    user_set_done(old);
    if (empty) {
      *old = n->users[--n->n_users];
      user_set_done(u);
      return;
    }
    *old = *u;
    return;
  }
  if (empty) {
    user_set_done(u);
    return;
  }
  gp_xgrow((void **)&n->users, &n->cap_users, (size_t)n->n_users + 1, sizeof *n->users);
  n->users[n->n_users++] = *u;
}

void gp__srv_notify_user_loaded(gp_srv_state *s, const char *user, const char *doc) {
  json_t *o = json_loads(doc, 0, NULL);
  user_set u = {gp_xstrdup(user), NULL, NULL, GP_NOTIFY_DEFAULT_EVENTS};
  gp_err e = {0};
  if (!json_is_object(o) || settings_read(&s->cfg->notify, o, &u, true, &e)) {
    fprintf(stderr, "gpool server: notify: the stored settings of %s are not valid; ignored\n", user);
    user_set_done(&u);
  } else {
    user_put(s, &u);
  }
  json_decref(o);
}

static json_t *settings_json(const gp_srv_state *s, const char *user) {
  const user_set *u = user_find(s, user);
  char ev[128];
  gp_notify_events_format(u ? u->events : GP_NOTIFY_DEFAULT_EVENTS, ev, sizeof ev);
  static const char *const modes[] = {"off", "public", "any"};
  return json_pack("{s:s, s:o, s:o, s:s, s:b, s:s}", "user", user, "mail",
                   u && u->mail ? json_string(u->mail) : json_null(), "webhook",
                   u && u->webhook ? json_string(u->webhook) : json_null(), "events", ev,
                   "mail_enabled", mail_check(&s->cfg->notify, "mail", &(gp_err){0}) == 0, "webhooks",
                   modes[s->cfg->notify.webhooks]);
}

int gp__srv_notify_route(gp_srv_state *s, gp_srv_req *r, gp_err *err) {
  bool get = strcmp(r->method, "GET") == 0, put = strcmp(r->method, "PUT") == 0,
       del = strcmp(r->method, "DELETE") == 0;
  if (!get && !put && !del) {
    gp__srv_reply_error(r, 405, "method_not_allowed", NULL, "use GET, PUT or DELETE on /v1/notify");
    return 0;
  }
  if (r->role == GP_ROLE_VIEWER && !get) {
    gp__srv_reply_error(r, 403, "permission_denied", NULL, "viewers have no jobs to be notified of");
    return 0;
  }
  if (get) {
    gp__srv_reply_json(r, 200, settings_json(s, r->user));
    return 0;
  }
  const user_set *cur = user_find(s, r->user);
  user_set u = {gp_xstrdup(r->user), NULL, NULL, GP_NOTIFY_DEFAULT_EVENTS};
  if (put) {
    if (!json_is_object(r->json)) {
      user_set_done(&u);
      gp__srv_reply_error(r, 400, "invalid_argument", NULL,
                          "the body must be an object of mail, webhook and events");
      return 0;
    }
    if (cur) {
      u.mail = gp_xstrdup(cur->mail);
      u.webhook = gp_xstrdup(cur->webhook);
      u.events = cur->events;
    }
    gp_err verr = {0};
    if (settings_read(&s->cfg->notify, r->json, &u, false, &verr)) {
      user_set_done(&u);
      gp__srv_reply_err(r, GP_EINVAL, &verr);
      return 0;
    }
  }
  char name[GP_SRV_SETTING_NAME_MAX];
  snprintf(name, sizeof name, "%s%s", GP_SRV_SETTING_NOTIFY, r->user);
  char ev[128];
  gp_notify_events_format(u.events, ev, sizeof ev);
  json_t *doc = json_pack("{s:o, s:o, s:s}", "mail", u.mail ? json_string(u.mail) : json_null(),
                          "webhook", u.webhook ? json_string(u.webhook) : json_null(), "events", ev);
  char *text = json_dumps(doc, JSON_COMPACT);
  json_decref(doc);
  bool empty = !u.mail && !u.webhook && u.events == GP_NOTIFY_DEFAULT_EVENTS;
  int rc = gp_store_put_setting(s->store, name, empty ? NULL : text, err);
  free(text);
  if (rc) {
    user_set_done(&u);
    return rc;
  }
  user_put(s, &u);
  gp__srv_reply_json(r, 200, settings_json(s, r->user));
  return 0;
}
