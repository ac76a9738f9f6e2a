/* SPDX-License-Identifier: Apache-2.0 */
/* The store's readers (store.h, gp_store_reader_*): opened by the store's backend, each
 * call passed on to the reader's own backend (reader.h). */
#include "store/reader.h"

#include <stddef.h>

int gp_store_reader_open(gp_store *s, gp_store_reader **ret, gp_err *err) {
  if (!s->ops->open_reader)
    return gp_err_set(err, GP_EINVAL, NULL, 0, NULL, "the %s store has no reader", s->ops->name);
  return s->ops->open_reader(s, ret, err);
}

void gp_store_reader_close(gp_store_reader *r) {
  if (r) r->ops->close(r);
}

int gp_store_reader_intervals(gp_store_reader *r, int64_t from, int64_t to, const char *user,
                              int (*cb)(void *ctx, const gp_store_interval *iv), void *ctx,
                              gp_err *err) {
  return r->ops->intervals(r, from, to, user, cb, ctx, err);
}

int gp_store_reader_node_intervals(gp_store_reader *r, int64_t from, int64_t to,
                                   int (*cb)(void *ctx, const gp_store_node_interval *iv),
                                   void *ctx, gp_err *err) {
  return r->ops->node_intervals(r, from, to, cb, ctx, err);
}

int gp_store_reader_job(gp_store_reader *r, int64_t id,
                        int (*job)(void *ctx, const gp_store_job *row),
                        int (*event)(void *ctx, const gp_store_event *row), void *ctx,
                        gp_err *err) {
  return r->ops->job(r, id, job, event, ctx, err);
}

int gp_store_reader_jobs(gp_store_reader *r, const gp_store_job_filter *f, int64_t after_ended_at,
                         int64_t after_id, int limit,
                         int (*cb)(void *ctx, const gp_store_job *row, int64_t ended_at),
                         void *ctx, gp_err *err) {
  return r->ops->jobs(r, f, after_ended_at, after_id, limit, cb, ctx, err);
}

int gp_store_reader_snapshot(gp_store_reader *r, bool on, gp_err *err) {
  return r->ops->snapshot(r, on, err);
}

int gp_store_reader_job_days(gp_store_reader *r, int64_t day_from, int64_t day_to,
                             const char *user,
                             int (*cb)(void *ctx, const gp_store_job_day *d), void *ctx,
                             gp_err *err) {
  return r->ops->job_days(r, day_from, day_to, user, cb, ctx, err);
}

int gp_store_reader_alloc_days(gp_store_reader *r, int64_t day_from, int64_t day_to,
                               int (*cb)(void *ctx, const gp_store_alloc_day *d), void *ctx,
                               gp_err *err) {
  return r->ops->alloc_days(r, day_from, day_to, cb, ctx, err);
}

int gp_store_reader_open_intervals(gp_store_reader *r, int64_t to, const char *user,
                                   int (*cb)(void *ctx, const gp_store_interval *iv),
                                   void *ctx, gp_err *err) {
  return r->ops->open_intervals(r, to, user, cb, ctx, err);
}

int gp_store_reader_held_days(gp_store_reader *r, int64_t day_from, int64_t day_to,
                              const char *user,
                              int (*cb)(void *ctx, const gp_store_held_day *d), void *ctx,
                              gp_err *err) {
  return r->ops->held_days(r, day_from, day_to, user, cb, ctx, err);
}
