/* SPDX-License-Identifier: Apache-2.0 */
/* A fault-injecting store for tests, in the spirit of SQLite's test VFS: it forwards every
 * call to a real backend but fails the N-th write (or commit) on demand with GP_EIO, so a
 * test can check that the server never acknowledges what was not committed and that it
 * recovers from the store's truth. Reads (load) fail only when asked to; a probe is a
 * write. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>

#include "store/store.h"
#include "util/mem.h"

typedef struct fault_store {
  gp_store base;
  gp_store *inner;
  int countdown; /* writes left before the failing one; 0: disarmed */
  bool sticky;   /* keep failing after the first injected failure */
  bool failing;
  int failures;
  char cause[64];
  int load_delay_ms; /* a slow disk: load() waits this long first */
  _Atomic bool fail_load;
} fault_store;

/* Returns GP_EIO when this write is the one to fail. */
static int maybe_fail(fault_store *s, gp_err *err) {
  if (s->failing || (s->countdown > 0 && --s->countdown == 0)) {
    s->failing = s->sticky;
    s->failures++;
    snprintf(s->base.failure, sizeof s->base.failure, "%s", s->cause);
    return gp_err_set(err, GP_EIO, NULL, 0, NULL, "%s: injected store failure (test)", s->cause);
  }
  return 0;
}

/* Hands on the inner backend's failure, cause included. */
static int inner_rc(fault_store *s, int rc) {
  if (rc) snprintf(s->base.failure, sizeof s->base.failure, "%s", s->inner->failure);
  return rc;
}

#define FWD(name, rowtype)                                                        \
  static int f_##name(gp_store *b, rowtype r, gp_err *err) {                       \
    fault_store *s = (fault_store *)b;                                             \
    int rc = maybe_fail(s, err);                                                   \
    return rc ? rc : inner_rc(s, s->inner->ops->name(s->inner, r, err));           \
  }
FWD(put_job, const gp_store_job *)
FWD(add_event, const gp_store_event *)
FWD(put_node, const gp_store_node *)
FWD(put_alloc, const gp_store_alloc *)
FWD(del_allocs, int64_t)
FWD(put_queue, const gp_store_queue *)
FWD(del_queue, const char *)
FWD(del_node, const char *)
FWD(put_order, const gp_store_order *)
FWD(del_order, int64_t)
FWD(open_interval, const gp_store_interval *)
FWD(open_node_interval, const gp_store_node_interval *)
#undef FWD

static int f_close_intervals(gp_store *b, int64_t job_id, int64_t end, gp_err *err) {
  fault_store *s = (fault_store *)b;
  int rc = maybe_fail(s, err);
  return rc ? rc : inner_rc(s, s->inner->ops->close_intervals(s->inner, job_id, end, err));
}

static int f_set_interval_use(gp_store *b, int64_t job_id, const char *node, double used_gpu_s,
                              double energy_j, gp_err *err) {
  fault_store *s = (fault_store *)b;
  int rc = maybe_fail(s, err);
  return rc ? rc
            : inner_rc(s, s->inner->ops->set_interval_use(s->inner, job_id, node, used_gpu_s,
                                                          energy_j, err));
}

static int f_close_node_interval(gp_store *b, const char *node, int64_t end, gp_err *err) {
  fault_store *s = (fault_store *)b;
  int rc = maybe_fail(s, err);
  return rc ? rc : inner_rc(s, s->inner->ops->close_node_interval(s->inner, node, end, err));
}

static int f_del_orders(gp_store *b, const char *node, int64_t up_to, gp_err *err) {
  fault_store *s = (fault_store *)b;
  int rc = maybe_fail(s, err);
  return rc ? rc : inner_rc(s, s->inner->ops->del_orders(s->inner, node, up_to, err));
}

static int f_set_meta(gp_store *b, const char *key, int64_t v, gp_err *err) {
  fault_store *s = (fault_store *)b;
  int rc = maybe_fail(s, err);
  return rc ? rc : inner_rc(s, s->inner->ops->set_meta(s->inner, key, v, err));
}

static int f_put_credential(gp_store *b, const char *node, const char *hash, gp_err *err) {
  fault_store *s = (fault_store *)b;
  int rc = maybe_fail(s, err);
  return rc ? rc : s->inner->ops->put_credential(s->inner, node, hash, err);
}

static int f_put_setting(gp_store *b, const char *name, const char *doc, gp_err *err) {
  fault_store *s = (fault_store *)b;
  int rc = maybe_fail(s, err);
  return rc ? rc : inner_rc(s, s->inner->ops->put_setting(s->inner, name, doc, err));
}

static int f_begin(gp_store *b, gp_err *err) {
  fault_store *s = (fault_store *)b;
  return inner_rc(s, s->inner->ops->begin(s->inner, err));
}

/* A failed commit leaves the inner transaction open; the caller's rollback ends it, as
 * with a real backend whose COMMIT failed. */
static int f_commit(gp_store *b, gp_err *err) {
  fault_store *s = (fault_store *)b;
  int rc = maybe_fail(s, err);
  return rc ? rc : inner_rc(s, s->inner->ops->commit(s->inner, err));
}

static void f_rollback(gp_store *b) {
  fault_store *s = (fault_store *)b;
  s->inner->ops->rollback(s->inner);
}

static int f_load(gp_store *b, const gp_store_load_cb *cb, gp_err *err) {
  fault_store *s = (fault_store *)b;
  if (s->load_delay_ms > 0) {
    struct timespec ts = {s->load_delay_ms / 1000, (long)(s->load_delay_ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
  }
  if (atomic_load(&s->fail_load)) {
    snprintf(s->base.failure, sizeof s->base.failure, "%s", s->cause);
    return gp_err_set(err, GP_EIO, NULL, 0, NULL, "%s: injected load failure (test)", s->cause);
  }
  return inner_rc(s, s->inner->ops->load(s->inner, cb, err));
}

/* A probe is a write: it fails while writes fail. */
static int f_probe(gp_store *b, gp_err *err) {
  fault_store *s = (fault_store *)b;
  int rc = maybe_fail(s, err);
  return rc ? rc : inner_rc(s, s->inner->ops->probe(s->inner, err));
}

static void f_close(gp_store *b) {
  fault_store *s = (fault_store *)b;
  gp_store_close(s->inner);
  free(s);
}

/* Reads are not faulted: the wrapper injects write failures. */
static int f_open_reader(gp_store *b, gp_store_reader **ret, gp_err *err) {
  return gp_store_reader_open(((fault_store *)b)->inner, ret, err);
}

static const gp_store_ops fault_ops = {
    "fault", f_begin, f_commit, f_rollback, f_put_job, f_add_event, f_put_node, f_put_alloc,
    f_del_allocs, f_put_queue, f_del_queue, f_put_order, f_del_orders, f_del_order, f_set_meta,
    f_load, f_close, f_probe, f_put_credential, f_open_reader, f_open_interval,
    f_close_intervals, f_set_interval_use, f_open_node_interval, f_close_node_interval, f_put_setting,
    f_del_node,
};

int gp_store_fault_open(gp_store *inner, gp_store **ret) {
  fault_store *s = gp_xcalloc(1, sizeof *s);
  s->base.ops = &fault_ops;
  s->inner = inner;
  snprintf(s->cause, sizeof s->cause, "I/O error");
  memcpy(s->base.id, inner->id, sizeof s->base.id);
  *ret = &s->base;
  return 0;
}

void gp_store_fault_arm(gp_store *b, int nth_write, bool sticky) {
  fault_store *s = (fault_store *)b;
  if (b->ops != &fault_ops) return;
  s->countdown = nth_write > 0 ? nth_write : 0;
  s->sticky = sticky;
  s->failing = false;
}

void gp_store_fault_cause(gp_store *b, const char *cause) {
  if (b->ops != &fault_ops) return;
  snprintf(((fault_store *)b)->cause, sizeof ((fault_store *)b)->cause, "%s", cause);
}

void gp_store_fault_fail_load(gp_store *b, bool fail) {
  if (b->ops == &fault_ops) atomic_store(&((fault_store *)b)->fail_load, fail);
}

void gp_store_fault_slow_load(gp_store *b, int delay_ms) {
  if (b->ops == &fault_ops) ((fault_store *)b)->load_delay_ms = delay_ms;
}

int gp_store_fault_failures(const gp_store *b) {
  return b->ops == &fault_ops ? ((const fault_store *)b)->failures : 0;
}
