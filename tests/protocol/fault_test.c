/* SPDX-License-Identifier: Apache-2.0 */
/* Fault specs (protocol/fault.h): what the admin API accepts before it queues an inject
 * order, and what the agent hands to the simulated backend. */
#include "protocol/fault.h"

#include "protocol/limits.h"
#include "test.h"

static void fault_specs_are_parsed_strictly(void) {
  gp_proto_fault f[8];
  int n = 0;
  gp_err e = {0};
  CHECK_EQ_INT(0, gp_proto_fault_parse("xid:79@gpu3,after=5s", f, 8, &n, &e));
  CHECK_EQ_INT(1, n);
  CHECK_EQ_INT(GP_PROTO_FAULT_XID, f[0].kind);
  CHECK_EQ_INT(79, f[0].value);
  CHECK_EQ_INT(3, f[0].gpu);
  CHECK_EQ_INT(5000, f[0].after_ms);
  CHECK_EQ_INT(0, gp_proto_fault_parse("power@2,for=500ms;thermal@gpu0", f, 8, &n, &e));
  CHECK_EQ_INT(2, n);
  CHECK_EQ_INT(500, f[0].for_ms);
  static const char *bad[] = {"xid@gpu3",       "xid:0@gpu1",    "boom:1@gpu0",
                              "xid:79",         "xid:79@gpuX",   "xid:79@gpu1,after=soon",
                              "thermal:3@gpu0", "xid:79@gpu1,x=1", ";;"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    memset(&e, 0, sizeof e);
    int rc = gp_proto_fault_parse(bad[i], f, 8, &n, &e);
    if (rc != GP_EINVAL) fprintf(stderr, "accepted: %s\n", bad[i]);
    CHECK_EQ_INT(GP_EINVAL, rc);
    CHECK(e.message[0] != '\0');
  }
}

static void bounds_hold(void) {
  gp_proto_fault f[GP_PROTO_MAX_FAULTS];
  int n = 0;
  gp_err e = {0};
  CHECK_EQ_INT(0, gp_proto_fault_parse("xid:1000000@gpu31", f, 1, &n, &e));
  CHECK_EQ_INT(GP_EINVAL, gp_proto_fault_parse("xid:1000001@gpu0", f, 1, &n, &e));
  CHECK_EQ_INT(GP_EINVAL, gp_proto_fault_parse("xid:79@gpu32", f, 1, &n, &e));
  CHECK_EQ_STR("inject", e.field);
  CHECK_EQ_INT(GP_ELIMIT, gp_proto_fault_parse("power@0;power@1", f, 1, &n, &e));
  char big[GP_PROTO_FAULT_SPEC_MAX + 2];
  memset(big, ' ', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  memcpy(big, "power@0", 7);
  CHECK_EQ_INT(GP_EINVAL, gp_proto_fault_parse(big, f, GP_PROTO_MAX_FAULTS, &n, &e));
  CHECK_CONTAINS(e.message, "longer than 2048 bytes");
  /* the caller's spec is left as it was */
  char spec[] = "thermal@gpu1,for=2s; ecc_sbe:3@gpu2";
  CHECK_EQ_INT(0, gp_proto_fault_parse(spec, f, GP_PROTO_MAX_FAULTS, &n, &e));
  CHECK_EQ_STR("thermal@gpu1,for=2s; ecc_sbe:3@gpu2", spec);
  CHECK_EQ_INT(2, n);
  CHECK_EQ_INT(GP_PROTO_FAULT_ECC_SBE, f[1].kind);
  CHECK_EQ_INT(3, f[1].value);
}

GP_TESTS(fault_specs_are_parsed_strictly, bounds_hold)
