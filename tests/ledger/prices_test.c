/* SPDX-License-Identifier: Apache-2.0 */
/* The price catalogue reader: a full catalogue reads back exactly; each kind of bad input
 * (dates, prices, capacities, keys, duplicates, commitments, currency, counts) is refused
 * with an error naming the field path and line; lookups pick the latest applicable entry,
 * the exact model before "*", and a covering commitment first for reserved capacity. */
#include "ledger/prices.h"

#include <stdbool.h>

#include "test.h"
#include "util/mem.h"

static int load(const char *yaml, gp_prices **ret, gp_err *err) {
  gp_doc *d = NULL;
  int rc = gp_doc_load_string("prices.yaml", yaml, strlen(yaml), &d, err);
  if (rc) return rc;
  rc = gp_prices_read(d, gp_doc_get(d->root, "prices"), "prices", ret, err);
  gp_doc_free(d);
  return rc;
}

/* Reads `yaml`, expects failure naming `field` at `line` with a message holding `msg`. */
static void refused(const char *yaml, const char *field, int line, const char *msg) {
  gp_prices *p = NULL;
  gp_err err = {0};
  CHECK(load(yaml, &p, &err) < 0);
  CHECK(p == NULL);
  CHECK_EQ_STR(field, err.field);
  CHECK_EQ_INT(line, err.line);
  CHECK_CONTAINS(err.message, msg);
  CHECK_EQ_STR("prices.yaml", err.file);
}

static const char *full =
    "prices:\n"
    "  currency: EUR\n"
    "  gpu_hour:\n"
    "    - {model: H100-80GB, capacity: on-demand, price: 6.88, from: 2026-01-01}\n"
    "    - {model: H100-80GB, capacity: on-demand, price: 6.00, from: 2026-07-01}\n"
    "    - {model: H100-80GB, capacity: spot, price: 2.41}\n"
    "    - {model: \"*\", capacity: on-prem, price: 1.90}\n"
    "    - {model: a100-80gb, capacity: on-prem, price: 1.10}\n"
    "    - {model: H100-80GB, capacity: reserved, price: 5.00}\n"
    "  commitments:\n"
    "    - {model: H100-80GB, gpus: 16, price: 4.10, from: 2026-01-01, to: 2027-01-01}\n"
    "  energy:\n"
    "    - {price_per_kwh: 0.12, from: 2026-01-01}\n"
    "    - {price_per_kwh: 0.15, from: 2026-06-01}\n";

#define T2026 INT64_C(1767225600) /* 2026-01-01T00:00:00Z */
#define T0701 INT64_C(1782864000) /* 2026-07-01T00:00:00Z */
#define T2027 INT64_C(1798761600) /* 2027-01-01T00:00:00Z */

static void reads_a_full_catalogue(void) {
  gp_prices *p = NULL;
  gp_err err = {0};
  REQUIRE(load(full, &p, &err) == 0);
  CHECK_EQ_STR("EUR", p->currency);
  CHECK_EQ_INT(6, p->n_prices);
  CHECK_EQ_INT(1, p->n_commitments);
  CHECK_EQ_INT(2, p->n_energy);
  CHECK_EQ_INT(T2026, p->prices[0].from);
  CHECK_EQ_INT(T0701, p->prices[1].from);
  CHECK_EQ_INT(0, p->prices[2].from); /* no from: always */
  CHECK_EQ_INT(GP_CAP_SPOT, p->prices[2].capacity);
  CHECK_EQ_STR("*", p->prices[3].model);
  CHECK_EQ_INT(16, p->commitments[0].gpus);
  CHECK_EQ_INT(T2027, p->commitments[0].to);
  gp_prices_free(p);
}

static void rate_takes_latest_exact_then_any(void) {
  gp_prices *p = NULL;
  gp_err err = {0};
  REQUIRE(load(full, &p, &err) == 0);
  double r = -1;
  CHECK(!gp_prices_rate(p, "H100-80GB", GP_CAP_ON_DEMAND, T2026 - 1, &r));
  CHECK(r == -1);
  CHECK(gp_prices_rate(p, "H100-80GB", GP_CAP_ON_DEMAND, T2026, &r) && r == 6.88);
  CHECK(gp_prices_rate(p, "h100-80gb", GP_CAP_ON_DEMAND, T0701 - 1, &r) && r == 6.88);
  CHECK(gp_prices_rate(p, "H100-80GB", GP_CAP_ON_DEMAND, T0701, &r) && r == 6.00);
  CHECK(gp_prices_rate(p, "A100-80GB", GP_CAP_ON_PREM, 5, &r) && r == 1.10);
  CHECK(gp_prices_rate(p, "L40S", GP_CAP_ON_PREM, 5, &r) && r == 1.90);
  CHECK(!gp_prices_rate(p, "L40S", GP_CAP_SPOT, T2026, &r));
  /* Reserved: the commitment's price while it covers, the catalogue's outside. */
  CHECK(gp_prices_rate(p, "H100-80GB", GP_CAP_RESERVED, T2026, &r) && r == 4.10);
  CHECK(gp_prices_rate(p, "H100-80GB", GP_CAP_RESERVED, T2027 - 1, &r) && r == 4.10);
  CHECK(gp_prices_rate(p, "H100-80GB", GP_CAP_RESERVED, T2027, &r) && r == 5.00);
  CHECK(gp_prices_energy_rate(p, T2026, &r) && r == 0.12);
  CHECK(!gp_prices_energy_rate(p, T2026 - 1, &r));
  CHECK(!gp_prices_rate(NULL, "H100-80GB", GP_CAP_SPOT, T2026, &r));
  gp_prices_free(p);
}

static void reference_counts(void) {
  gp_prices *p = NULL;
  gp_err err = {0};
  REQUIRE(load(full, &p, &err) == 0);
  CHECK(gp_prices_ref(p) == p);
  CHECK_EQ_INT(2, p->refs);
  gp_prices_free(p);
  CHECK_EQ_STR("EUR", p->currency); /* still held by the second reference */
  gp_prices_free(p);
  CHECK(gp_prices_ref(NULL) == NULL);
  gp_prices_free(NULL);
}

static void currency_defaults_and_bounds(void) {
  gp_prices *p = NULL;
  gp_err err = {0};
  REQUIRE(load("prices:\n  gpu_hour: []\n", &p, &err) == 0);
  CHECK_EQ_STR("USD", p->currency);
  CHECK_EQ_INT(0, p->n_prices);
  gp_prices_free(p);
  p = NULL;
  REQUIRE(load("prices:\n  currency:\n", &p, &err) == 0);
  CHECK_EQ_STR("USD", p->currency);
  gp_prices_free(p);
  refused("prices:\n  currency: \"\"\n", "prices.currency", 2, "3-8 letters");
  refused("prices:\n  currency: US\n", "prices.currency", 2, "3-8 letters");
  refused("prices:\n  currency: DOLLARSXX\n", "prices.currency", 2, "3-8 letters");
  refused("prices:\n  currency: U$D\n", "prices.currency", 2, "3-8 letters");
}

static void bad_dates_are_refused(void) {
  static const char *bad[] = {"2026-02-29", "2025-13-01", "2025-00-10", "2025-04-31",
                              "1969-12-31", "2026-1-01", "2026/01/01", "20260101",
                              "2026-01-01T00:00:00Z", "tomorrow", "2026-01-0x"};
  for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char yaml[256];
    snprintf(yaml, sizeof yaml,
             "prices:\n  gpu_hour:\n    - {model: H100, capacity: spot, price: 1}\n"
             "    - {model: H100, capacity: spot, price: 2, from: \"%s\"}\n", bad[i]);
    refused(yaml, "prices.gpu_hour[1].from", 4, "YYYY-MM-DD");
  }
  gp_prices *p = NULL;
  gp_err err = {0};
  REQUIRE(load("prices:\n  gpu_hour:\n    - {model: H100, capacity: spot, price: 1, "
               "from: 2024-02-29}\n", &p, &err) == 0);
  CHECK_EQ_INT(INT64_C(1709164800), p->prices[0].from); /* a leap day */
  gp_prices_free(p);
}

static void bad_prices_are_refused(void) {
  refused("prices:\n  gpu_hour:\n    - {model: H100, capacity: spot, price: -1}\n",
          "prices.gpu_hour[0].price", 3, "finite");
  refused("prices:\n  gpu_hour:\n    - {model: H100, capacity: spot, price: .nan}\n",
          "prices.gpu_hour[0].price", 3, "");
  refused("prices:\n  gpu_hour:\n    - {model: H100, capacity: spot, price: inf}\n",
          "prices.gpu_hour[0].price", 3, "");
  refused("prices:\n  gpu_hour:\n    - {model: H100, capacity: spot, price: cheap}\n",
          "prices.gpu_hour[0].price", 3, "");
  refused("prices:\n  gpu_hour:\n    - {model: H100, capacity: spot}\n",
          "prices.gpu_hour[0].price", 3, "missing");
  refused("prices:\n  energy:\n    - {price_per_kwh: -0.1}\n",
          "prices.energy[0].price_per_kwh", 3, "finite");
}

static void bad_entries_are_refused(void) {
  refused("prices:\n  gpu_hour:\n    - {model: H100, capacity: preemptible, price: 1}\n",
          "prices.gpu_hour[0].capacity", 3, "unknown capacity");
  refused("prices:\n  gpu_hour:\n    - {model: H100, capacity: spot, price: 1, colour: red}\n",
          "prices.gpu_hour[0].colour", 3, "unknown key");
  refused("prices:\n  tax: 0.2\n", "prices.tax", 2, "unknown key");
  refused("prices:\n  gpu_hour:\n    - {capacity: spot, price: 1}\n",
          "prices.gpu_hour[0].model", 3, "missing");
  refused("prices:\n  gpu_hour:\n    - {model: \"\", capacity: spot, price: 1}\n",
          "prices.gpu_hour[0].model", 3, "printable");
  refused("prices:\n  gpu_hour:\n    - {model: \"H100\\tX\", capacity: spot, price: 1}\n",
          "prices.gpu_hour[0].model", 3, "printable");
  refused("prices:\n  gpu_hour:\n    - {model: "
          "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA, capacity: spot, "
          "price: 1}\n", "prices.gpu_hour[0].model", 3, "printable");
  refused("prices:\n  gpu_hour: {model: H100}\n", "prices.gpu_hour", 2, "list");
  refused("prices:\n  gpu_hour:\n    - [H100, spot]\n", "prices.gpu_hour[0]", 3, "");
  refused("prices: [1, 2]\n", "prices", 1, "");
  refused("prices:\n  gpu_hour:\n"
          "    - {model: H100, capacity: spot, price: 1, from: 2026-01-01}\n"
          "    - {model: A100, capacity: spot, price: 1, from: 2026-01-01}\n"
          "    - {model: h100, capacity: spot, price: 2, from: 2026-01-01}\n",
          "prices.gpu_hour[2]", 5, "gpu_hour[0]");
  refused("prices:\n  energy:\n    - {price_per_kwh: 0.1}\n    - {price_per_kwh: 0.2}\n",
          "prices.energy[1]", 4, "energy[0]");
}

static void bad_commitments_are_refused(void) {
  refused("prices:\n  commitments:\n"
          "    - {model: H100, gpus: 8, price: 4, from: 2026-02-01, to: 2026-02-01}\n",
          "prices.commitments[0].to", 3, "after from");
  refused("prices:\n  commitments:\n"
          "    - {model: H100, gpus: 0, price: 4, from: 2026-01-01, to: 2026-02-01}\n",
          "prices.commitments[0].gpus", 3, "between 1");
  refused("prices:\n  commitments:\n"
          "    - {model: H100, gpus: 8, price: 4, from: 2026-01-01}\n",
          "prices.commitments[0].to", 3, "missing");
  refused("prices:\n  commitments:\n"
          "    - {model: \"*\", gpus: 8, price: 4, from: 2026-01-01, to: 2026-02-01}\n",
          "prices.commitments[0].model", 3, "one model");
  refused("prices:\n  commitments:\n"
          "    - {model: H100, gpus: 8, price: 4, from: 2026-01-01, to: 2026-03-01}\n"
          "    - {model: H100, gpus: 4, price: 3, from: 2026-02-01, to: 2026-04-01}\n",
          "prices.commitments[1]", 4, "overlaps commitments[0]");
  /* Back to back is not an overlap. */
  gp_prices *p = NULL;
  gp_err err = {0};
  REQUIRE(load("prices:\n  commitments:\n"
               "    - {model: H100, gpus: 8, price: 4, from: 2026-01-01, to: 2026-03-01}\n"
               "    - {model: H100, gpus: 4, price: 3, from: 2026-03-01, to: 2026-04-01}\n",
               &p, &err) == 0);
  gp_prices_free(p);
}

static void counts_are_bounded(void) {
  size_t cap = (size_t)(GP_PRICES_MAX_ENTRIES + 2) * 64 + 64, n = 0;
  char *yaml = gp_xmalloc(cap);
  n += (size_t)snprintf(yaml + n, cap - n, "prices:\n  energy:\n");
  for (int i = 0; i <= GP_PRICES_MAX_ENTRIES; i++)
    n += (size_t)snprintf(yaml + n, cap - n, "    - {price_per_kwh: %d}\n", i);
  refused(yaml, "prices.energy", 3, "more than 10000");
  free(yaml);
}

/* The shipped example reads, and holds the seed documents' H100 list price. */
static void example_catalogue_reads(void) {
  gp_doc *d = NULL;
  gp_prices *p = NULL;
  gp_err err = {0};
  REQUIRE(gp_doc_load_file(GP_SOURCE_DIR "/examples/prices.yaml", &d, &err) == 0);
  CHECK_EQ_INT(0, gp_prices_read(d, gp_doc_get(d->root, "prices"), "prices", &p, &err));
  REQUIRE(p);
  double r = 0;
  CHECK(gp_prices_rate(p, "H100-80GB", GP_CAP_ON_DEMAND, T2026, &r) && r == 6.88);
  CHECK(gp_prices_rate(p, "H100-80GB", GP_CAP_RESERVED, T2026, &r) && r == 4.10);
  CHECK(gp_prices_rate(p, "MI300X", GP_CAP_ON_PREM, T2026, &r) && r == 1.90);
  CHECK_EQ_STR("USD", p->currency);
  gp_prices_free(p);
  gp_doc_free(d);
}

GP_TESTS(example_catalogue_reads, reads_a_full_catalogue, rate_takes_latest_exact_then_any, reference_counts,
         currency_defaults_and_bounds, bad_dates_are_refused, bad_prices_are_refused,
         bad_entries_are_refused, bad_commitments_are_refused, counts_are_bounded)
