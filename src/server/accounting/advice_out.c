/* SPDX-License-Identifier: Apache-2.0 */
/* Advice as its answer (advice.h, docs/api-reports.md): the period, the parameters it was computed
 * with, and the items with their evidence and savings. Money nobody could price is null,
 * never 0. */
#include <math.h>
#include <stdlib.h>

#include "server/accounting/advice.h"
#include "util/calendar.h"

static json_t *time_json(int64_t t) {
  char text[GP_TIME_TEXT_LEN];
  gp_format_time(t, text);
  return json_string(text);
}

static json_t *str_or_null(const char *s) { return s ? json_string(s) : json_null(); }

/* Figures are rounded to what a reader needs: 1/1000 of a GPU-hour, a cent. */
static json_t *num(double v, double unit) {
  return json_real(isfinite(v) ? round(v / unit) * unit : 0);
}

char *gp__srv_advice_render(const gp_srv_advice *adv, const gp_advice_item *items, int n,
                            bool truncated) {
  const gp_advice_params *p = &adv->p;
  const char *currency = adv->prices ? adv->prices->currency : NULL;
  json_t *o = json_object();
  json_object_set_new(o, "from", time_json(p->from));
  json_object_set_new(o, "to", time_json(p->to));
  json_object_set_new(o, "headroom", json_real(p->headroom));
  json_object_set_new(o, "checkpoint_s", json_integer(p->checkpoint_s));
  json_object_set_new(o, "currency", str_or_null(currency));
  json_t *arr = json_array();
  for (int i = 0; i < n; i++) {
    const gp_advice_item *it = &items[i];
    json_t *e = json_object();
    json_object_set_new(e, "kind", json_string(gp_advice_kind_name(it->kind)));
    json_object_set_new(e, "queue", str_or_null(it->queue));
    json_object_set_new(e, "user", str_or_null(it->user));
    json_object_set_new(e, "name", str_or_null(it->name));
    json_object_set_new(e, "job", it->job ? json_integer(it->job) : json_null());
    json_object_set_new(e, "message", json_string(it->message ? it->message : ""));
    json_object_set_new(e, "suggestion", str_or_null(it->suggestion));
    json_t *ev = json_object();
    for (int k = 0; k < it->n_evidence; k++)
      json_object_set_new(ev, it->evidence[k].key, num(it->evidence[k].value, 0.001));
    json_object_set_new(e, "evidence", ev);
    json_t *sv = json_object();
    json_object_set_new(sv, "gpu_hours", num(it->saving_gpu_h, 0.001));
    json_object_set_new(sv, "cost", it->cost_known && currency ? num(it->saving_cost, 0.01) : json_null());
    json_object_set_new(sv, "currency", str_or_null(it->cost_known ? currency : NULL));
    json_object_set_new(e, "saving", sv);
    json_array_append_new(arr, e);
  }
  json_object_set_new(o, "items", arr);
  json_object_set_new(o, "truncated", json_boolean(truncated));
  char *text = json_dumps(o, JSON_COMPACT);
  json_decref(o);
  return text;
}
