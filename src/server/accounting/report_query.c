/* SPDX-License-Identifier: Apache-2.0 */
/* A report's request, checked (report.h): the kind and the query parameters by, from, to,
 * step, share_idle and format. Every value is a user's: each is bounded and matched
 * against its list, and a refusal names the parameter. */
#include <stdio.h>
#include <string.h>

#include "server/accounting/report.h"
#include "util/units.h"

typedef struct named {
  const char *name;
  int value;
} named;

static const named kinds[] = {{"usage", GP_SRV_REPORT_USAGE},
                              {"cost", GP_SRV_REPORT_COST},
                              {"idle", GP_SRV_REPORT_IDLE},
                              {"efficiency", GP_SRV_REPORT_EFFICIENCY},
                              {NULL, 0}};
static const named groups[] = {{"queue", GP_LG_QUEUE}, {"user", GP_LG_USER},
                               {"model", GP_LG_MODEL}, {"capacity", GP_LG_CAPACITY},
                               {"node", GP_LG_NODE},   {"job", GP_LG_JOB},
                               {"service", GP_LG_SERVICE},
                               {NULL, 0}};
static const named steps[] = {{"none", GP_LS_NONE},
                              {"day", GP_LS_DAY},
                              {"week", GP_LS_WEEK},
                              {"month", GP_LS_MONTH},
                              {NULL, 0}};
static const named share_idles[] = {{"none", GP_LSI_NONE},
                                    {"deserved", GP_LSI_DESERVED},
                                    {"usage", GP_LSI_USAGE},
                                    {NULL, 0}};
static const named formats[] = {{"json", 0}, {"csv", 1}, {NULL, 0}};

/* Looks `word` (len bytes) up; returns the index or -1. */
static int lookup(const named *t, const char *word, size_t len) {
  for (int i = 0; t[i].name; i++)
    if (strlen(t[i].name) == len && strncmp(t[i].name, word, len) == 0) return i;
  return -1;
}

static int one_of(const named *t, const char *field, const char *v, int *ret, gp_err *err) {
  int i = lookup(t, v, strlen(v));
  if (i < 0) {
    char list[128] = "";
    for (int k = 0; t[k].name; k++)
      snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", k ? ", " : "", t[k].name);
    return gp_err_set(err, GP_EINVAL, NULL, 0, field, "unknown %s \"%.64s\": one of %s", field,
                      v, list);
  }
  *ret = t[i].value;
  return 0;
}

const char *gp__srv_report_kind_name(gp_srv_report_kind k) {
  for (int i = 0; kinds[i].name; i++)
    if (kinds[i].value == (int)k) return kinds[i].name;
  return "?";
}

static int parse_by(const char *v, unsigned *ret, gp_err *err) {
  unsigned bits = 0;
  for (const char *p = v; *p;) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    int i = lookup(groups, p, len);
    if (i < 0)
      return gp_err_set(err, GP_EINVAL, NULL, 0, "by",
                        "unknown grouping \"%.*s\": a comma list of queue, user, model, "
                        "capacity, node, job, service",
                        (int)(len < 64 ? len : 64), p);
    bits |= (unsigned)groups[i].value;
    p = comma ? comma + 1 : p + len;
  }
  *ret = bits;
  return 0;
}

static int parse_time(const char *field, const char *v, int64_t *ret, gp_err *err) {
  if (!gp_parse_time(v, ret))
    return gp_err_set(err, GP_EINVAL, NULL, 0, field,
                      "%s \"%.64s\" is not a time: use RFC 3339 (2026-01-31T12:00:00Z), a "
                      "date (2026-01-31, 00:00 UTC) or Unix seconds",
                      field, v);
  return 0;
}

/* job=ID: one job's figures (its cost and energy for the console's job page). */
static int parse_job(const char *v, int64_t *ret, gp_err *err) {
  int64_t id = 0;
  if (gp_parse_int64(v, &id) || id < 1)
    return gp_err_set(err, GP_EINVAL, NULL, 0, "job", "job must be a job id (1, 2, ...), not \"%.64s\"", v);
  *ret = id;
  return 0;
}

int gp__srv_report_query_parse(const char *kind, const json_t *query, bool admin, int64_t now,
                               gp_srv_report_query *ret, gp_err *err) {
  gp_srv_report_query q = {.step = GP_LS_NONE, .share_idle = GP_LSI_NONE};
  int v, rc;
  if ((rc = one_of(kinds, "kind", kind, &v, err))) return rc;
  q.kind = (gp_srv_report_kind)v;
  const char *key;
  json_t *val;
  bool has_from = false, has_to = false;
  json_object_foreach((json_t *)query, key, val) {
    const char *s = json_string_value(val);
    if (!s) s = "";
    if (strcmp(key, "by") == 0) rc = parse_by(s, &q.group, err);
    else if (strcmp(key, "from") == 0) rc = parse_time("from", s, &q.from, err), has_from = true;
    else if (strcmp(key, "to") == 0) rc = parse_time("to", s, &q.to, err), has_to = true;
    else if (strcmp(key, "step") == 0) rc = one_of(steps, "step", s, &v, err), q.step = (gp_ledger_step)v;
    else if (strcmp(key, "share_idle") == 0)
      rc = one_of(share_idles, "share_idle", s, &v, err), q.share_idle = (gp_ledger_share_idle)v;
    else if (strcmp(key, "format") == 0) rc = one_of(formats, "format", s, &v, err), q.csv = v == 1;
    else if (strcmp(key, "job") == 0) rc = parse_job(s, &q.job, err);
    else
      rc = gp_err_set(err, GP_EINVAL, NULL, 0, key,
                      "unknown parameter \"%.64s\": a report takes by, from, to, step, "
                      "share_idle, format and job",
                      key);
    if (rc) return rc;
  }
  if (!has_to) q.to = now;
  if (!has_from) q.from = gp_month_start(q.to > 0 ? q.to - 1 : 0);
  if (q.from >= q.to) {
    char f[GP_TIME_TEXT_LEN], t[GP_TIME_TEXT_LEN];
    gp_format_time(q.from, f);
    gp_format_time(q.to, t);
    return gp_err_set(err, GP_EINVAL, NULL, 0, has_from ? "from" : "to",
                      "from (%s) must come before to (%s)", f, t);
  }
  if (q.to - q.from > GP_SRV_REPORT_MAX_SPAN_S)
    return gp_err_set(err, GP_EINVAL, NULL, 0, "to",
                      "a report covers at most 3 years (%lld days); ask for shorter periods",
                      (long long)(GP_SRV_REPORT_MAX_SPAN_S / 86400));
  if (!admin && q.kind == GP_SRV_REPORT_IDLE)
    return gp_err_set(err, GP_EPERM, NULL, 0, "kind",
                      "idle capacity is the whole fleet's: only admins may read the idle report");
  if (!admin && q.share_idle != GP_LSI_NONE)
    return gp_err_set(err, GP_EPERM, NULL, 0, "share_idle",
                      "sharing idle cost reads every queue's use: only admins may ask for it");
  *ret = q;
  return 0;
}
