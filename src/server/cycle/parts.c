/* SPDX-License-Identifier: Apache-2.0 */
/* The wiring of the server's parts: the state (records.c, lifecycle.c) fires named hooks
 * (hooks.h) and calls no feature; here each feature's handlers are registered on them,
 * in the order they run. This file is the only one that knows every feature, and nothing
 * below it calls it back. The features, by part:
 *   accounting: the ledger's intervals and attempts (ledger.c), prices (prices.c),
 *     budgets (budget.c), the idle policy's measuring and acting (idle.c), fair-share
 *     usage (fairshare.c);
 *   notifications (notify_job.c); services (service.c, service_ctl.c); steps (steps.c);
 *   nodes' reports and heartbeats (node_report.c, heartbeats.c); images: registry
 *     credentials and pre-pulls (registry.c, image_pull.c); reservations
 *     (reservations.c); the console's links (webproxy_links.c); the event streams'
 *     pending changes (events_feed.c). */
#include "server/accounting/budgets.h"
#include "server/accounting/idle.h"
#include "server/cycle/parts.h"

#include <stdio.h>
#include <string.h>

#include "server/accounting/fairshare.h"
#include "server/accounting/ledger.h"
#include "server/accounting/prices.h"
#include "server/state/heartbeats.h"
#include "server/streams/events.h"
#include "server/workloads/image_pull.h"
#include "server/workloads/node_report.h"
#include "server/state/notify_job.h"
#include "server/workloads/registry.h"
#include "server/state/reservations.h"
#include "server/workloads/service.h"
#include "server/workloads/steps.h"
#include "server/workloads/webproxy_links.h"

/* The part of a setting's name after its prefix (the hook matched the prefix). */
static const char *after(const char *name, const char *prefix) { return name + strlen(prefix); }

/* ---- accounting ---- */

static int ledger_run_ended(gp_srv_state *s, const gp_srv_hook_ev *ev, gp_err *err) {
  return gp__srv_ledger_close_job(s, ev->job, ev->now_s, err);
}
static int ledger_node_changed(gp_srv_state *s, const gp_srv_hook_ev *ev, gp_err *err) {
  return gp__srv_ledger_node(s, ev->node, ev->now_s, err);
}
static int ledger_node_interval(gp_srv_state *s, const gp_srv_hook_ev *ev, gp_err *err) {
  (void)s, (void)err;
  ev->node->ledger_state = gp__srv_ledger_node_state(ev->name);
  return 0;
}
static int ledger_loaded(gp_srv_state *s, const gp_srv_hook_ev *ev, gp_err *err) {
  (void)err;
  /* Each interval closes in the transaction that ends its run, so this finds nothing
   * unless the store was written by a gpool that kept no ledger; a failure here is logged
   * and tried again at the next load, the ledger being no reason to refuse service. */
  gp_err lerr = {0};
  if (gp__srv_ledger_repair(s, ev->open_jobs, ev->n_open_jobs, ev->now_s, &lerr))
    fprintf(stderr, "gpool server: ledger: repairing open intervals failed: %s\n", lerr.message);
  return 0;
}
static int ledger_free(gp_srv_state *s, const gp_srv_hook_ev *ev, gp_err *err) {
  (void)ev, (void)err;
  gp__srv_ledger_free(s);
  return 0;
}
static int prices_setting(gp_srv_state *s, const gp_srv_hook_ev *ev, gp_err *err) {
  (void)err;
  gp__srv_prices_loaded(s, ev->doc);
  return 0;
}
static int prices_loaded(gp_srv_state *s, const gp_srv_hook_ev *ev, gp_err *err) {
  (void)ev;
  return gp__srv_prices_init(s, err);
}
static int prices_free(gp_srv_state *s, const gp_srv_hook_ev *ev, gp_err *err) {
  (void)ev, (void)err;
  gp__srv_prices_free(s);
  return 0;
}
static int budgets_tick(gp_srv_state *s, const gp_srv_hook_ev *ev, gp_err *err) {
  return gp__srv_budgets_tick(s, ev->now_s, err);
}
static int budget_setting(gp_srv_state *s, const gp_srv_hook_ev *ev, gp_err *err) {
  (void)err;
  gp__srv_budget_level_loaded(s, after(ev->name, "budget/"), ev->doc);
  return 0;
}
static int budget_queue_doc(gp_srv_state *s, const gp_srv_hook_ev *ev, gp_err *err) {
  (void)err;
  gp__srv_budget_json(s, ev->name, ev->out);
  return 0;
}
static int budgets_free(gp_srv_state *s, const gp_srv_hook_ev *ev, gp_err *err) {
  (void)ev, (void)err;
  gp__srv_budgets_free(s->budgets);
  s->budgets = NULL;
  return 0;
}
static int idle_run_ended(gp_srv_state *s, const gp_srv_hook_ev *ev, gp_err *err) {
  (void)s, (void)err;
  gp__srv_idle_reset(ev->job);
  return 0;
}
static int idle_tick(gp_srv_state *s, const gp_srv_hook_ev *ev, gp_err *err) {
  return gp__srv_idle_tick(s, ev->now_s, err);
}
static int fairshare_setting(gp_srv_state *s, const gp_srv_hook_ev *ev, gp_err *err) {
  (void)err;
  gp__srv_fairshare_loaded(s, after(ev->name, GP_SRV_SETTING_FAIRSHARE), ev->doc);
  return 0;
}
static int fairshare_free(gp_srv_state *s, const gp_srv_hook_ev *ev, gp_err *err) {
  (void)ev, (void)err;
  gp__srv_fairshare_free(s);
  return 0;
}

/* ---- notifications ---- */

static int notify_job_state(gp_srv_state *s, const gp_srv_hook_ev *ev, gp_err *err) {
  (void)err;
  gp__srv_notify_note(s, ev->job, (gp_job_state)ev->old_state);
  return 0;
}
static int notify_job_tick(gp_srv_state *s, const gp_srv_hook_ev *ev, gp_err *err) {
  (void)err;
  gp__srv_notify_time_check(s, ev->job, ev->now_s);
  return 0;
}
static int notify_setting(gp_srv_state *s, const gp_srv_hook_ev *ev, gp_err *err) {
  (void)err;
  gp__srv_notify_user_loaded(s, after(ev->name, GP_SRV_SETTING_NOTIFY), ev->doc);
  return 0;
}
static int notify_free(gp_srv_state *s, const gp_srv_hook_ev *ev, gp_err *err) {
  (void)ev, (void)err;
  gp__srv_notify_state_free(s);
  return 0;
}

/* ---- services ---- */

static int service_job_state(gp_srv_state *s, const gp_srv_hook_ev *ev, gp_err *err) {
  (void)err;
  if (ev->job->service) gp__srv_service_replica_moved(s, ev->job, ev->old_state, (int)ev->job->state);
  return 0;
}
static int services_tick(gp_srv_state *s, const gp_srv_hook_ev *ev, gp_err *err) {
  return gp__srv_services_tick(s, ev->now_s, err);
}
static int service_setting(gp_srv_state *s, const gp_srv_hook_ev *ev, gp_err *err) {
  (void)err;
  gp__srv_service_loaded(s, after(ev->name, GP_SRV_SETTING_SERVICE), ev->doc);
  return 0;
}
static int services_loaded(gp_srv_state *s, const gp_srv_hook_ev *ev, gp_err *err) {
  (void)ev, (void)err;
  gp__srv_services_rebuild(s);
  return 0;
}
static int services_free(gp_srv_state *s, const gp_srv_hook_ev *ev, gp_err *err) {
  (void)ev, (void)err;
  gp__srv_services_free(s);
  return 0;
}

/* ---- steps ---- */

static int steps_run_ended(gp_srv_state *s, const gp_srv_hook_ev *ev, gp_err *err) {
  (void)err;
  gp__srv_steps_job_ended(s, ev->job, "the job's run ended", ev->now_s);
  return 0;
}
static int steps_tick(gp_srv_state *s, const gp_srv_hook_ev *ev, gp_err *err) {
  return gp__srv_steps_tick(s, ev->now_ms, err);
}

/* ---- nodes' reports and heartbeats ---- */

static int node_reports_tick(gp_srv_state *s, const gp_srv_hook_ev *ev, gp_err *err) {
  return gp__srv_node_reports_check(s, ev->now_s, ev->now_ms, err);
}
static int heartbeats_tick(gp_srv_state *s, const gp_srv_hook_ev *ev, gp_err *err) {
  return gp__srv_heartbeats_write(s, ev->now_ms, err);
}
static int heartbeats_setting(gp_srv_state *s, const gp_srv_hook_ev *ev, gp_err *err) {
  (void)err;
  gp__srv_heartbeats_loaded(s, ev->doc);
  return 0;
}
static int heartbeats_loaded(gp_srv_state *s, const gp_srv_hook_ev *ev, gp_err *err) {
  (void)ev, (void)err;
  gp__srv_heartbeats_apply(s, false);
  return 0;
}

static int heartbeats_free(gp_srv_state *s, const gp_srv_hook_ev *ev, gp_err *err) {
  (void)ev, (void)err;
  gp__srv_heartbeats_free(s);
  return 0;
}

/* ---- images, reservations, links, event streams ---- */

static int registry_setting(gp_srv_state *s, const gp_srv_hook_ev *ev, gp_err *err) {
  (void)err;
  gp__srv_registry_loaded(s, ev->name, ev->doc);
  return 0;
}
static int registry_free(gp_srv_state *s, const gp_srv_hook_ev *ev, gp_err *err) {
  (void)ev, (void)err;
  gp__srv_registry_free(s);
  return 0;
}
static int pulls_free(gp_srv_state *s, const gp_srv_hook_ev *ev, gp_err *err) {
  (void)ev, (void)err;
  gp__srv_pulls_free(s);
  return 0;
}
static int resv_setting(gp_srv_state *s, const gp_srv_hook_ev *ev, gp_err *err) {
  (void)err;
  gp__srv_resv_loaded(s, after(ev->name, GP_SRV_SETTING_RESERVATION), ev->doc);
  return 0;
}
static int resv_free(gp_srv_state *s, const gp_srv_hook_ev *ev, gp_err *err) {
  (void)ev, (void)err;
  gp__srv_resv_free(s);
  return 0;
}
static int links_free(gp_srv_state *s, const gp_srv_hook_ev *ev, gp_err *err) {
  (void)ev, (void)err;
  gp__srv_links_free(s);
  return 0;
}
static int events_job_changed(gp_srv_state *s, const gp_srv_hook_ev *ev, gp_err *err) {
  (void)err;
  gp__srv_events_note_job(s, ev->job);
  return 0;
}
static int events_node_changed(gp_srv_state *s, const gp_srv_hook_ev *ev, gp_err *err) {
  (void)err;
  gp__srv_events_note_node(s, ev->node);
  return 0;
}
static int events_feed_free(gp_srv_state *s, const gp_srv_hook_ev *ev, gp_err *err) {
  (void)ev, (void)err;
  gp__srv_events_feed_free(s);
  return 0;
}

gp_srv_state *gp__srv_state_make(const gp_server_config *cfg, gp_store *store) {
  gp_srv_state *s = gp__srv_state_new(cfg, store);
  gp_srv_hooks *h = &s->hooks;
  gp__srv_ledger_set_off(s, gp__srv_ledger_off_env());
  /* A job's state changed: services count their replicas, then notifications are noted. */
  gp__srv_hook_add(h, GP_SRV_HOOK_JOB_STATE, NULL, service_job_state);
  gp__srv_hook_add(h, GP_SRV_HOOK_JOB_STATE, NULL, notify_job_state);
  /* A run ended: its ledger intervals close first (an error rolls the batch back). */
  gp__srv_hook_add(h, GP_SRV_HOOK_RUN_ENDED, NULL, ledger_run_ended);
  gp__srv_hook_add(h, GP_SRV_HOOK_RUN_ENDED, NULL, steps_run_ended);
  gp__srv_hook_add(h, GP_SRV_HOOK_RUN_ENDED, NULL, idle_run_ended);
  gp__srv_hook_add(h, GP_SRV_HOOK_NODE_STATE, NULL, ledger_node_changed);
  /* Every change of a record is noted for the event streams (when one is open). */
  gp__srv_hook_add(h, GP_SRV_HOOK_JOB_CHANGED, NULL, events_job_changed);
  gp__srv_hook_add(h, GP_SRV_HOOK_NODE_CHANGED, NULL, events_node_changed);
  gp__srv_hook_add(h, GP_SRV_HOOK_NODE_INTERVAL, NULL, ledger_node_interval);
  gp__srv_hook_add(h, GP_SRV_HOOK_JOB_TICK, NULL, notify_job_tick);
  gp__srv_hook_add(h, GP_SRV_HOOK_TICK, NULL, node_reports_tick);
  gp__srv_hook_add(h, GP_SRV_HOOK_TICK, NULL, steps_tick);
  gp__srv_hook_add(h, GP_SRV_HOOK_TICK, NULL, heartbeats_tick);
  gp__srv_hook_add(h, GP_SRV_HOOK_TICK, NULL, idle_tick);
  gp__srv_hook_add(h, GP_SRV_HOOK_TICK, NULL, budgets_tick);
  gp__srv_hook_add(h, GP_SRV_HOOK_TICK, NULL, services_tick);
  gp__srv_hook_add(h, GP_SRV_HOOK_QUEUE_DOC, NULL, budget_queue_doc);
  gp__srv_hook_add(h, GP_SRV_HOOK_SETTING, GP_SRV_SETTING_PRICES, prices_setting);
  gp__srv_hook_add(h, GP_SRV_HOOK_SETTING, GP_SRV_SETTING_NOTIFY, notify_setting);
  gp__srv_hook_add(h, GP_SRV_HOOK_SETTING, "budget/", budget_setting);
  gp__srv_hook_add(h, GP_SRV_HOOK_SETTING, GP_SRV_SETTING_FAIRSHARE, fairshare_setting);
  gp__srv_hook_add(h, GP_SRV_HOOK_SETTING, GP_SRV_SETTING_REGISTRY, registry_setting);
  gp__srv_hook_add(h, GP_SRV_HOOK_SETTING, GP_SRV_SETTING_REGISTRY_POOL, registry_setting);
  gp__srv_hook_add(h, GP_SRV_HOOK_SETTING, GP_SRV_SETTING_RESERVATION, resv_setting);
  gp__srv_hook_add(h, GP_SRV_HOOK_SETTING, GP_SRV_SETTING_SERVICE, service_setting);
  gp__srv_hook_add(h, GP_SRV_HOOK_SETTING, GP_SRV_SETTING_HEARTBEATS, heartbeats_setting);
  /* Loaded: prices first (the ledger's repair prices what it closes). */
  gp__srv_hook_add(h, GP_SRV_HOOK_LOADED, NULL, prices_loaded);
  gp__srv_hook_add(h, GP_SRV_HOOK_LOADED, NULL, ledger_loaded);
  gp__srv_hook_add(h, GP_SRV_HOOK_LOADED, NULL, heartbeats_loaded);
  gp__srv_hook_add(h, GP_SRV_HOOK_LOADED, NULL, services_loaded);
  gp__srv_hook_add(h, GP_SRV_HOOK_FREE, NULL, events_feed_free);
  gp__srv_hook_add(h, GP_SRV_HOOK_FREE, NULL, notify_free);
  gp__srv_hook_add(h, GP_SRV_HOOK_FREE, NULL, registry_free);
  gp__srv_hook_add(h, GP_SRV_HOOK_FREE, NULL, services_free);
  gp__srv_hook_add(h, GP_SRV_HOOK_FREE, NULL, pulls_free);
  gp__srv_hook_add(h, GP_SRV_HOOK_FREE, NULL, links_free);
  gp__srv_hook_add(h, GP_SRV_HOOK_FREE, NULL, ledger_free);
  gp__srv_hook_add(h, GP_SRV_HOOK_FREE, NULL, fairshare_free);
  gp__srv_hook_add(h, GP_SRV_HOOK_FREE, NULL, resv_free);
  gp__srv_hook_add(h, GP_SRV_HOOK_FREE, NULL, budgets_free);
  gp__srv_hook_add(h, GP_SRV_HOOK_FREE, NULL, prices_free);
  gp__srv_hook_add(h, GP_SRV_HOOK_FREE, NULL, heartbeats_free);
  return s;
}
