/* SPDX-License-Identifier: Apache-2.0 */
/* A node as the server holds it in memory (gp_srv_node): its GPUs (gp_srv_gpu), the orders
 * waiting for its agent (gp_srv_order), its parked heartbeat and its entry in the
 * scheduler's view. Part of the server's state (state.h, which includes this); its
 * functions are declared there and in the feature headers.
 *
 * Internal to src/server (gp__srv_ names). */
#ifndef GP_SERVER_NODE_H
#define GP_SERVER_NODE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/model.h"
#include "tls/digest.h"

typedef struct gp_srv_gpu {
  char *uuid;
  gp_gpu_health health;
  char *reason;         /* why drained/failed */
  bool admin_drained;   /* drained by an admin (kept across agent reports) */
  gp_share_mode mode;
  int replicas;
  int64_t mem_mib;
  int nvlink_domain;
  int n_mig;
  gp_mig_instance mig[GP_MAX_MIG_INSTANCES]; /* strings owned */
  json_t *telemetry;    /* last sample, or NULL */
  int64_t idle_since;   /* wall clock s since telemetry showed < GP_SRV_IDLE_PCT, 0: busy */
} gp_srv_gpu;

typedef struct gp_srv_order {
  int64_t id;
  char *doc;            /* JSON as sent */
  int64_t job_id;       /* start/stop orders: the job, else 0 */
  bool is_start;
} gp_srv_order;

struct gp_srv_req;

typedef struct gp_srv_node {
  char *name;
  char *model;
  int64_t gpu_mem_mib;
  int n_gpus;
  gp_srv_gpu gpus[GP_MAX_NODE_GPUS];
  int64_t cpu_milli, mem_mib;
  int n_labels;
  gp_label *labels;     /* strings owned */
  gp_capacity capacity;
  json_t *nvlink_domains; /* as the agent reported (owned), or NULL */
  char *agent_url;
  char *gpu_backend;    /* "nvml" or "sim", as the agent reported (owned), or NULL */
  const char *agent_token;   /* token the agent last used (borrowed from the config) */
  char credential_hash[GP_TLS_SHA256_HEX_MAX]; /* SHA-256 of the node's agent credential (hex); "": none */
  gp_node_state admin_state; /* UP, DRAIN or CORDON (admin's choice) */
  char *reason;
  bool alive;           /* registered and heartbeating */
  json_t *conditions;   /* node conditions the agent reports (e.g. thermal_throttling), or NULL */
  json_t *images;       /* the container images it holds (images.c; memory only), or NULL */
  uint64_t *image_hashes; /* their names' gp_proto_image_hash, ascending, unique */
  int n_image_hashes;
  json_t *models;       /* the model names in its models_dir (models.c; memory only), or NULL */
  uint64_t *model_hashes; /* their gp_proto_model_hash, ascending, unique */
  int n_model_hashes;
  uint64_t *pref_hashes; /* image_hashes and model_hashes in one ascending set (the view's
                            gp_node.images; the two hash spaces never meet) */
  int n_pref_hashes;
  int64_t last_heartbeat;    /* wall clock seconds */
  int64_t registered_at;     /* wall clock s this server process first heard of it by a
                                registration; 0: loaded from the store */
  int64_t last_seen_ms;      /* monotonic */
  /* Orders not yet acknowledged, oldest first. */
  int n_orders;
  size_t cap_orders;
  gp_srv_order *orders;
  int64_t acked_gen;
  /* A parked heartbeat long poll, answered when orders arrive or at its deadline
   * (waiters.c). */
  struct gp_srv_req *waiter;
  int64_t waiter_gen;
  int64_t waiter_deadline_ms;
  bool waiter_woken;    /* listed in gp_srv_waiters.woken */
  /* Its entry in the kept view (view.c). */
  int index;            /* position in gp_srv_state.nodes */
  bool view_stale;      /* listed in gp_srv_view.stale_nodes */
  gp_gpu view_gpus[GP_MAX_NODE_GPUS];
  int ledger_state;     /* the state of its open node_ledger interval (ledger.c), -1: none */
  /* Set when a provider made the node (docs/providers.md), kept in the store, shown by the
   * API; an agent's registration never sets them. NULL / < 0: none. */
  bool events_noted;         /* listed in the event feed's record (events_feed.c) */
  uint64_t events_sig;       /* hash of what its last event carried, 0: none yet */
  char *provider_template;   /* the node template's name (owned) */
  char *provider_instance;   /* the provider's instance id (owned) */
  double provider_price;     /* per GPU-hour, as the provider reported it */
  /* The jobs its agent said it holds in its last heartbeat (node_report.c): ids, sorted,
   * running or ended with the end not yet received; report_valid once a heartbeat of this
   * agent's life carried a readable list. */
  int64_t *report_ids;
  int n_report;
  size_t cap_report;
  bool report_valid;
  uint64_t report_seq;       /* heartbeats with a list since the server started */
} gp_srv_node;

#endif
