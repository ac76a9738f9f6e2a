/* SPDX-License-Identifier: Apache-2.0 */
/* The config's `notify:` block and the checks on what users name for notifications: event
 * lists (Slurm's --mail-type values), mail addresses and webhook URLs (notify.h). What
 * gpool cannot produce is refused here by name, never taken and ignored. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "server/state/notify.h"

void gp_notify_config_init(gp_notify_config *c) {
  memset(c, 0, sizeof *c);
  c->sendmail = "/usr/sbin/sendmail";
  c->webhooks = GP_NOTIFY_HOOKS_PUBLIC;
  c->queue_max = 1000;
  c->senders = 4;
  c->timeout_s = 10;
  c->attempts = 4;
  c->backoff_s = 2;
  c->per_user_per_hour = 60;
}

static const struct {
  const char *name;
  unsigned bits;
} event_names[] = {
    {"begin", GP_NOTIFY_BEGIN},           {"end", GP_NOTIFY_END},
    {"fail", GP_NOTIFY_FAIL},             {"requeue", GP_NOTIFY_REQUEUE},
    {"time_limit", GP_NOTIFY_TIME_LIMIT}, {"array_tasks", GP_NOTIFY_ARRAY_TASKS},
    {"time_limit_50", GP_NOTIFY_TIME_LIMIT_50}, {"time_limit_80", GP_NOTIFY_TIME_LIMIT_80},
    {"time_limit_90", GP_NOTIFY_TIME_LIMIT_90}, {"all", GP_NOTIFY_ALL},
    {"none", 0},
};

/* Slurm's values gpool has no event for, and why. */
static const struct {
  const char *name, *why;
} refused[] = {
    {"invalid_depend", "gpool refuses a dependency that can never be met at submission"},
    {"stage_out", "gpool has no burst buffers"},
};

int gp_notify_events_parse(const char *list, const char *field, unsigned *ret, gp_err *err) {
  unsigned bits = 0;
  bool none = false;
  int count = 0;
  const char *p = list ? list : "";
  if (strlen(p) > 256) return gp_err_set(err, GP_EINVAL, NULL, 0, field, "is too long");
  while (*p) {
    size_t len = strcspn(p, ",");
    char word[32];
    if (len == 0 || len >= sizeof word)
      return gp_err_set(err, GP_EINVAL, NULL, 0, field,
                        "'%.64s' is not a list of events (begin, end, fail, requeue, time_limit, "
                        "time_limit_50/80/90, array_tasks, all, none)", list);
    for (size_t i = 0; i < len; i++) word[i] = (char)tolower((unsigned char)p[i]);
    word[len] = '\0';
    bool known = false;
    for (size_t i = 0; i < sizeof event_names / sizeof *event_names && !known; i++)
      if (strcmp(word, event_names[i].name) == 0) {
        known = true;
        bits |= event_names[i].bits;
        none = none || event_names[i].bits == 0;
      }
    for (size_t i = 0; i < sizeof refused / sizeof *refused && !known; i++)
      if (strcmp(word, refused[i].name) == 0)
        return gp_err_set(err, GP_EINVAL, NULL, 0, field, "%.*s is not supported: %s", (int)len,
                          p, refused[i].why);
    if (!known)
      return gp_err_set(err, GP_EINVAL, NULL, 0, field,
                        "'%.*s' is not an event (begin, end, fail, requeue, time_limit, "
                        "time_limit_50/80/90, array_tasks, all, none)", (int)len, p);
    count++;
    p += len;
    if (*p == ',') {
      p++;
      if (!*p) return gp_err_set(err, GP_EINVAL, NULL, 0, field, "ends with a comma");
    }
  }
  if (count == 0) return gp_err_set(err, GP_EINVAL, NULL, 0, field, "names no event (none for none)");
  if (none && count > 1)
    return gp_err_set(err, GP_EINVAL, NULL, 0, field, "none cannot be listed with other events");
  if (bits == GP_NOTIFY_ARRAY_TASKS)
    return gp_err_set(err, GP_EINVAL, NULL, 0, field, "array_tasks needs an event to go with it");
  *ret = bits;
  return 0;
}

void gp_notify_events_format(unsigned events, char *buf, size_t size) {
  size_t off = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < sizeof event_names / sizeof *event_names; i++) {
    unsigned b = event_names[i].bits;
    if (!b || (b & (b - 1)) || !(events & b)) continue; /* single events only */
    int n = snprintf(buf + off, size - off, "%s%s", off ? "," : "", event_names[i].name);
    if (n < 0 || (size_t)n >= size - off) break;
    off += (size_t)n;
  }
  if (!off) snprintf(buf, size, "none");
}

int gp_notify_check_mail(const gp_notify_config *cfg, const char *addr, const char *field,
                         gp_err *err) {
  size_t len = addr ? strlen(addr) : 0;
  const char *at = addr ? strrchr(addr, '@') : NULL;
  bool ok = len > 2 && len <= GP_NOTIFY_ADDR_MAX && at && at > addr && at[1] &&
            addr[0] != '-' && addr[0] != '.';
  for (const char *p = addr; ok && p < at; p++)
    ok = isalnum((unsigned char)*p) || strchr("._%+-", *p);
  for (const char *p = at ? at + 1 : NULL; ok && *p; p++)
    ok = isalnum((unsigned char)*p) || ((*p == '.' || *p == '-') && p[1] && p[-1] != '.' &&
                                        p[-1] != '@');
  if (ok) ok = strchr(at + 1, '.') != NULL && at[1] != '-';
  if (!ok)
    return gp_err_set(err, GP_EINVAL, NULL, 0, field,
                      "'%.64s' is not a mail address gpool sends to (name@domain.tld; letters, "
                      "digits and ._%%+- only)", addr ? addr : "");
  if (cfg->n_mail_domains == 0) return 0;
  for (int i = 0; i < cfg->n_mail_domains; i++)
    if (strcasecmp(at + 1, cfg->mail_domains[i]) == 0) return 0;
  return gp_err_set(err, GP_EINVAL, NULL, 0, field,
                    "mail goes only to the domains the server's config lists (notify.mail_domains)");
}

int gp_notify_check_url(const char *url, const char *field, gp_err *err) {
  size_t len = url ? strlen(url) : 0;
  bool ok = len > 0 && len <= GP_NOTIFY_URL_MAX &&
            (strncmp(url, "http://", 7) == 0 || strncmp(url, "https://", 8) == 0);
  for (size_t i = 0; ok && i < len; i++) ok = url[i] > 0x20 && url[i] < 0x7f;
  const char *host = ok ? strstr(url, "//") + 2 : NULL;
  if (ok) ok = *host && *host != '/' && *host != '?' && *host != '#';
  if (!ok)
    return gp_err_set(err, GP_EINVAL, NULL, 0, field,
                      "must be an http:// or https:// URL of at most %d bytes, without spaces",
                      GP_NOTIFY_URL_MAX);
  return 0;
}

/* An optional integer key of the notify block, within lo..hi. */
static int read_int(const gp_doc *d, const gp_doc_node *m, const char *path, const char *key,
                    int lo, int hi, int *ret, gp_err *err) {
  const gp_doc_node *n = gp_doc_get(m, key);
  if (!n) return 0;
  char f[160];
  return gp_doc_int_range(d, n, gp_doc_path(f, sizeof f, path, key), lo, hi, ret, err);
}

static int read_hooks(const gp_doc *d, const gp_doc_node *n, const char *f, gp_arena *a,
                      gp_notify_config *c, gp_err *err) {
  int r = gp_doc_expect(d, n, f, GP_DOC_SEQ, err);
  if (r) return r;
  if (n->n > 16) return gp_err_set(err, GP_EINVAL, d->name, n->line, f, "lists at most 16 webhooks");
  gp_notify_hook *hooks = gp_arena_alloc(a, sizeof *hooks * (size_t)(n->n ? n->n : 1));
  for (int i = 0; i < n->n; i++) {
    char fi[200], fk[220];
    snprintf(fi, sizeof fi, "%s[%d]", f, i);
    static const char *const keys[] = {"url", "events", NULL};
    const gp_doc_node *h = n->items[i];
    if ((r = gp_doc_expect(d, h, fi, GP_DOC_MAP, err)) || (r = gp_doc_check_keys(d, h, fi, keys, err)))
      return r;
    const char *v;
    const gp_doc_node *u = gp_doc_get(h, "url");
    snprintf(fk, sizeof fk, "%s.url", fi);
    if (!u) return gp_err_set(err, GP_EINVAL, d->name, h->line, fk, "missing");
    if ((r = gp_doc_str(d, u, fk, &v, err))) return r;
    if ((r = gp_notify_check_url(v, fk, err))) {
      err->line = u->line;
      return r;
    }
    hooks[i].url = gp_arena_strdup(a, v);
    hooks[i].events = GP_NOTIFY_DEFAULT_EVENTS;
    const gp_doc_node *e = gp_doc_get(h, "events");
    snprintf(fk, sizeof fk, "%s.events", fi);
    if (e) {
      if ((r = gp_doc_str(d, e, fk, &v, err))) return r;
      if ((r = gp_notify_events_parse(v, fk, &hooks[i].events, err))) {
        err->line = e->line;
        return r;
      }
    }
  }
  c->hooks = hooks;
  c->n_hooks = n->n;
  return 0;
}

int gp_notify_config_read(const gp_doc *d, const gp_doc_node *m, const char *path, gp_arena *a,
                          gp_notify_config *c, gp_err *err) {
  static const char *const keys[] = {"sendmail", "mail_from", "mail_domains", "webhooks", "hooks",
                                     "queue_max", "senders", "timeout_s", "attempts", "backoff_s",
                                     "per_user_per_hour", NULL};
  int r = gp_doc_expect(d, m, path, GP_DOC_MAP, err);
  if (r || (r = gp_doc_check_keys(d, m, path, keys, err))) return r;
  char f[160];
  const gp_doc_node *n;
  const char *v;
  if ((n = gp_doc_get(m, "sendmail"))) {
    gp_doc_path(f, sizeof f, path, "sendmail");
    if ((r = gp_doc_str(d, n, f, &v, err))) return r;
    if (*v && v[0] != '/')
      return gp_err_set(err, GP_EINVAL, d->name, n->line, f, "must be an absolute path, or \"\" for no mail");
    c->sendmail = gp_arena_strdup(a, v);
  }
  if ((n = gp_doc_get(m, "mail_from"))) {
    gp_doc_path(f, sizeof f, path, "mail_from");
    if ((r = gp_doc_str(d, n, f, &v, err))) return r;
    gp_notify_config none;
    gp_notify_config_init(&none);
    if ((r = gp_notify_check_mail(&none, v, f, err))) {
      err->line = n->line;
      return r;
    }
    c->mail_from = gp_arena_strdup(a, v);
  }
  if ((n = gp_doc_get(m, "mail_domains"))) {
    gp_doc_path(f, sizeof f, path, "mail_domains");
    if ((r = gp_doc_expect(d, n, f, GP_DOC_SEQ, err))) return r;
    const char **doms = gp_arena_alloc(a, sizeof *doms * (size_t)(n->n ? n->n : 1));
    for (int i = 0; i < n->n; i++) {
      char fi[200];
      snprintf(fi, sizeof fi, "%s[%d]", f, i);
      if ((r = gp_doc_str(d, n->items[i], fi, &v, err))) return r;
      doms[i] = gp_arena_strdup(a, v);
    }
    c->mail_domains = doms;
    c->n_mail_domains = n->n;
  }
  if ((n = gp_doc_get(m, "webhooks"))) {
    static const char *const modes[] = {"off", "public", "any"};
    int mode;
    gp_doc_path(f, sizeof f, path, "webhooks");
    if ((r = gp_doc_enum(d, n, f, modes, 3, &mode, err))) return r;
    c->webhooks = (gp_notify_hooks)mode;
  }
  if ((n = gp_doc_get(m, "hooks"))) {
    gp_doc_path(f, sizeof f, path, "hooks");
    if ((r = read_hooks(d, n, f, a, c, err))) return r;
  }
  if ((r = read_int(d, m, path, "queue_max", 1, 1000000, &c->queue_max, err)) ||
      (r = read_int(d, m, path, "senders", 1, 64, &c->senders, err)) ||
      (r = read_int(d, m, path, "timeout_s", 1, 300, &c->timeout_s, err)) ||
      (r = read_int(d, m, path, "attempts", 1, 20, &c->attempts, err)) ||
      (r = read_int(d, m, path, "backoff_s", 0, 3600, &c->backoff_s, err)) ||
      (r = read_int(d, m, path, "per_user_per_hour", 1, 100000, &c->per_user_per_hour, err)))
    return r;
  return 0;
}
