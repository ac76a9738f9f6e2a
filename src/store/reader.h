/* SPDX-License-Identifier: Apache-2.0 */
/* A reader's backend (store.h, gp_store_reader): each backend's reader starts with this
 * header, whose table the gp_store_reader_* functions call through (reader.c), so reports,
 * job history and ledger reads work on whichever store a server runs on. */
#ifndef GP_STORE_READER_H
#define GP_STORE_READER_H

#include "store/store.h"

typedef struct gp_store_reader_ops {
  int (*intervals)(gp_store_reader *r, int64_t from, int64_t to, const char *user,
                   int (*cb)(void *ctx, const gp_store_interval *iv), void *ctx, gp_err *err);
  int (*node_intervals)(gp_store_reader *r, int64_t from, int64_t to,
                        int (*cb)(void *ctx, const gp_store_node_interval *iv), void *ctx,
                        gp_err *err);
  int (*job)(gp_store_reader *r, int64_t id, int (*job)(void *ctx, const gp_store_job *row),
             int (*event)(void *ctx, const gp_store_event *row), void *ctx, gp_err *err);
  int (*jobs)(gp_store_reader *r, const gp_store_job_filter *f, int64_t after_ended_at,
              int64_t after_id, int limit,
              int (*cb)(void *ctx, const gp_store_job *row, int64_t ended_at), void *ctx,
              gp_err *err);
  void (*close)(gp_store_reader *r);
  /* The ledger's roll-ups (store.h, gp_store_reader_job_days ...). */
  int (*snapshot)(gp_store_reader *r, bool on, gp_err *err);
  int (*job_days)(gp_store_reader *r, int64_t day_from, int64_t day_to, const char *user,
                  int (*cb)(void *ctx, const gp_store_job_day *d), void *ctx, gp_err *err);
  int (*alloc_days)(gp_store_reader *r, int64_t day_from, int64_t day_to,
                    int (*cb)(void *ctx, const gp_store_alloc_day *d), void *ctx, gp_err *err);
  int (*open_intervals)(gp_store_reader *r, int64_t to, const char *user,
                        int (*cb)(void *ctx, const gp_store_interval *iv), void *ctx,
                        gp_err *err);
  int (*held_days)(gp_store_reader *r, int64_t day_from, int64_t day_to, const char *user,
                   int (*cb)(void *ctx, const gp_store_held_day *d), void *ctx, gp_err *err);
} gp_store_reader_ops;

struct gp_store_reader {
  const gp_store_reader_ops *ops;
};

#endif
