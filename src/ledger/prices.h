/* SPDX-License-Identifier: Apache-2.0 */
/* A price catalogue: what a GPU-hour of each model costs on each capacity type from a given
 * date, reserved capacity bought as commitments (paid whether used or not), and the price of
 * the energy on-prem GPUs draw. Read from a gp_doc, so the server's YAML config, a JSON admin
 * body and the simulator's `--prices FILE` share one reader and one set of errors (the
 * format is in docs/config.md). Immutable once read; shared between threads by reference
 * count. Pure: no I/O, no clock. */
#ifndef GP_LEDGER_PRICES_H
#define GP_LEDGER_PRICES_H

#include <stdbool.h>
#include <stdint.h>

#include "core/model.h"
#include "util/doc.h"
#include "util/error.h"

#define GP_PRICES_MAX_ENTRIES 10000   /* per list (gpu_hour, commitments, energy) */
#define GP_PRICES_MODEL_MAX 64        /* bytes of a model name */
#define GP_PRICES_MAX_GPUS 1000000    /* GPUs of one commitment */

typedef struct gp_price { const char *model; gp_capacity capacity; int64_t from;
                          double per_gpu_hour; } gp_price;      /* model "*": any model */
typedef struct gp_commitment { const char *model; int gpus; double per_gpu_hour;
                               int64_t from, to; } gp_commitment;
typedef struct gp_energy_price { int64_t from; double per_kwh; } gp_energy_price;
typedef struct gp_prices {
  const char *currency;                 /* e.g. "USD" */
  int n_prices; gp_price *prices;
  int n_commitments; gp_commitment *commitments;
  int n_energy; gp_energy_price *energy;
  struct gp_arena *arena;               /* owns everything above */
  int refs;                             /* references held; gp_prices_ref / gp_prices_free */
} gp_prices;

/* Reads the `prices` map (format in docs/config.md); errors name the file, line and key
 * ("prices.gpu_hour[2].from: ..."). `path` is the map's own field path ("prices"). On
 * success *ret holds one reference; on failure *ret is untouched and *err says why. */
int gp_prices_read(const gp_doc *d, const gp_doc_node *map, const char *path,
                   gp_prices **ret, gp_err *err);
/* Takes one more reference (atomic); returns p. Accepts NULL. */
gp_prices *gp_prices_ref(gp_prices *p);
/* Drops one reference (atomic); frees at zero. Accepts NULL. */
void gp_prices_free(gp_prices *p);
/* Price per GPU-hour of a model on a capacity type at time `at`: the entry with the latest
 * `from` <= at, an exact model (case-insensitive) before "*"; reserved capacity takes a
 * covering commitment's price first. False when none applies (*ret untouched). */
bool gp_prices_rate(const gp_prices *p, const char *model, gp_capacity c, int64_t at,
                    double *ret);
/* Energy price per kWh at `at`: the entry with the latest `from` <= at. False when none. */
bool gp_prices_energy_rate(const gp_prices *p, int64_t at, double *ret);

#endif
