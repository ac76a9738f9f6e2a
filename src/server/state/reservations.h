/* SPDX-License-Identifier: Apache-2.0 */
/* Advance reservations and maintenance windows on the server (reservations.c: the records,
 * the store, the scheduler's view, what nodes show; reservations_api.c: /v1/reservations).
 * Each reservation is kept in the store as the setting "reservation/<name>" (a JSON
 * document), so it survives a restart and a failover on SQLite and PostgreSQL alike; the
 * scheduler core applies it (src/core/reservation.c, docs/scheduling.md). */
#ifndef GP_SERVER_RESERVATIONS_H
#define GP_SERVER_RESERVATIONS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "server/state/state.h"

#define GP_SRV_SETTING_RESERVATION "reservation/" /* + name */
#define GP_SRV_RESV_MAX_NODES 1024                 /* nodes one reservation may name */
#define GP_SRV_RESV_MAX_USERS 256
#define GP_SRV_RESV_NAME_MAX 64
#define GP_SRV_RESV_MAX_DURATION_S (366 * 86400)

typedef struct gp__srv_resv {
  char *name;
  int64_t start, end;
  int n_nodes;
  char **nodes;
  char *queue;          /* NULL: none */
  int n_users;
  char **users;
  bool maint;
  int gpus;             /* asked as --gpus N (the nodes were picked then); 0: by nodes */
  char *model;          /* with gpus: the model asked, or NULL */
  char *created_by;
  int64_t created_at;
} gp__srv_resv;

struct gp__srv_resvs {
  gp__srv_resv *r;
  int n;
  size_t cap;
  /* The view's entries (rebuilt every step; the view's rev changes when they do). */
  gp_reservation *view;
  int *view_nodes;
  const char **view_users;
  char *view_key;       /* what the last view held, as text, to tell a change */
};

void gp__srv_resv_free(gp_srv_state *s);
struct gp__srv_resvs *gp__srv_resvs_of(gp_srv_state *s);
/* A stored reservation (load_setting); one that does not read is skipped with a line on
 * stderr. */
void gp__srv_resv_loaded(gp_srv_state *s, const char *name, const char *doc);
/* Writes r to the store (the caller's transaction); with del, removes it. */
int gp__srv_resv_persist(gp_srv_state *s, const gp__srv_resv *r, bool del, gp_err *err);
void gp__srv_resv_clear(gp__srv_resv *r);
/* Drops the reservations that ended (memory and store), then puts the others in the view
 * gp__srv_view_sync made (its rev changes when they differ from the last step's). */
int gp__srv_resv_view(gp_srv_state *s, int64_t now, gp_err *err);
/* The reservation holding node `name` now, else the next one to; NULL when none. */
const gp__srv_resv *gp__srv_resv_of_node(const gp_srv_state *s, const char *name, int64_t now);
/* The JSON of a reservation (API). */
json_t *gp__srv_resv_json(const gp__srv_resv *r, int64_t now);

#endif
