/* SPDX-License-Identifier: Apache-2.0 */
/* Job arrays (array.c, array_ops.c): Slurm's `--array 0-99:2%8`. An array is one job
 * record (the array's job, id J) carrying a compact gp_srv_array; its elements J_I become
 * real jobs only when they may start (the scheduler's step makes them, respecting the %
 * limit), so memory grows with the elements started, not the ones declared. Element I at
 * position p of the index list has the id J + 1 + p, reserved at submission: "J_I" resolves
 * without any map, and a restart rebuilds the counts from the elements' final states.
 *
 * Internal to src/server (gp__srv_ names). */
#ifndef GP_SERVER_ARRAY_H
#define GP_SERVER_ARRAY_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "util/error.h"

#define GP_SRV_ARRAY_MAX 1000000   /* elements in one array */
#define GP_SRV_ARRAY_MAX_INDEX 100000000
#define GP_SRV_ARRAY_MAX_RANGES 1000
#define GP_SRV_ARRAY_WINDOW 64     /* elements made jobs and not yet started, per array */

struct gp_srv_state;
struct gp_srv_job;

typedef struct gp_srv_array_range {
  int64_t lo, hi, step;            /* hi is the last index of the range (lo + k * step) */
} gp_srv_array_range;

/* A small list of positions. */
typedef struct gp_srv_posv {
  int64_t *v;
  int n;
  size_t cap;
} gp_srv_posv;

typedef struct gp_srv_array {
  int n_ranges;
  gp_srv_array_range *ranges;      /* ascending, not overlapping */
  int64_t count;                   /* elements in all */
  int limit;                       /* at most this many elements not ended at once; 0: none */
  int64_t next;                    /* positions below it were made jobs, but for held and owed */
  gp_srv_posv extra;               /* positions >= next made jobs out of order (a cancel) */
  gp_srv_posv held;                /* positions not made jobs, held one by one */
  gp_srv_posv owed;                /* positions < next not made jobs: released after a hold */
  bool held_all;                   /* the whole array is held: no element is made */
  bool cancelled;                  /* the whole array was cancelled: no element is made */
  int n_after_corr;
  char **after_corr;               /* aftercorr: element I waits for element I of these */
  /* Memory only: counts over the elements made jobs (rebuilt on load). */
  int64_t n_live, n_waiting;       /* not ended; of them, pending or held */
  int64_t n_done, n_bad, n_cancel; /* ended; of them, not completed; of them, cancelled */
  int max_exit;
} gp_srv_array;

/* Parses Slurm's "0-99:2%8" / "1,3,5-7" into *ret (owned). GP_EINVAL with a sentence. */
int gp__srv_array_parse(const char *spec, gp_srv_array **ret, gp_err *err);
void gp__srv_array_free(gp_srv_array *a);
/* The array's stored form ({"spec", "limit", "next", ...}) and back. */
json_t *gp__srv_array_doc(const gp_srv_array *a);
int gp__srv_array_from_doc(const json_t *o, gp_srv_array **ret, gp_err *err);
/* The API's summary: the stored form plus the counts and the pending indexes ("3-99:2"). */
json_t *gp__srv_array_api(const struct gp_srv_state *s, const struct gp_srv_job *j);
/* A job's array fields: `array` (the stored form, or the API's summary) on an array's
 * job; `array_job_id`, `array_index` (and `array_id`, "12_7", for the API) on an element. */
void gp__srv_array_fields(json_t *o, const struct gp_srv_state *s, const struct gp_srv_job *j, bool for_store);
/* Index at position p, and the position of index i (-1: not in the array). */
int64_t gp__srv_array_index(const gp_srv_array *a, int64_t p);
int64_t gp__srv_array_pos(const gp_srv_array *a, int64_t index);
/* Writes the array's spec ("0-99:2%8") into buf. */
void gp__srv_array_spec(const gp_srv_array *a, char *buf, size_t n);
bool gp__srv_array_made(const gp_srv_array *a, int64_t p);

/* ---- with the state (array_ops.c) ---- */
/* Makes the elements that may start now into jobs (the % limit, the window, aftercorr), and
 * ends arrays whose elements all ended. Before each scheduling step. */
int gp__srv_arrays_step(struct gp_srv_state *s, int64_t now, gp_err *err);
/* An element changed state (old -> st), or was inserted (old < 0): the array's counts. */
void gp__srv_array_element_moved(struct gp_srv_state *s, struct gp_srv_job *j, int old, int st);
/* After loading: counts rebuilt from the elements' states, the id sequence past the array. */
void gp__srv_arrays_rebuild(struct gp_srv_state *s);
/* A job inserted: an array's job joins the arrays the step looks at, and the id sequence
 * moves past its elements' ids. */
void gp__srv_array_listed(struct gp_srv_state *s, struct gp_srv_job *p);
/* lookup.c: "J_I": the element's id (made or not), or 0 when there is no such element; its array's
 * job and position go to *ret_parent and *ret_pos when not NULL. */
int64_t gp__srv_array_elem_id(const struct gp_srv_state *s, const char *id, struct gp_srv_job **ret_parent,
                              int64_t *ret_pos);
/* A dependency naming an element ("12_7") is rewritten to its number, which the core knows
 * it by; other ids stay. */
void gp__srv_array_id_by_number(const struct gp_srv_state *s, char **id);
/* The array a reserved element id belongs to and its position, or NULL. */
struct gp_srv_job *gp__srv_array_of_id(const struct gp_srv_state *s, int64_t id, int64_t *ret_pos);
/* A stand-in for an element not made a job yet, in the view for a dependency on it. */
struct gp_srv_job *gp__srv_array_ghost(struct gp_srv_state *s, int64_t id);
/* Cancel, hold or release of the whole array (by its job), or of an element not made a job
 * yet (a cancel makes it a job and ends it). 0, or the store's error. */
int gp__srv_array_cancel(struct gp_srv_state *s, struct gp_srv_job *parent, const char *by, int64_t now,
                         gp_err *err);
int gp__srv_array_hold(struct gp_srv_state *s, struct gp_srv_job *parent, bool hold, const char *by,
                       bool admin, int64_t now, gp_err *err);
int gp__srv_array_elem_action(struct gp_srv_state *s, struct gp_srv_job *parent, int64_t pos,
                              const char *action, int64_t now, gp_err *err);
/* The state of element at pos that is not a job (pending, held or cancelled). */
const char *gp__srv_array_elem_state(const struct gp_srv_job *parent, int64_t pos);

#endif
