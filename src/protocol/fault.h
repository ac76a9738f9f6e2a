/* SPDX-License-Identifier: Apache-2.0 */
/* Fault specs: the text that names simulated GPU faults ("xid:79@gpu3,after=5s"). The
 * admin API checks a spec before it queues an `inject` order, the agent's `--inject` flag and
 * the inject order hand the parsed faults to the simulated backend, so the grammar is defined
 * here, once, for the server and the agent. */
#ifndef GP_PROTOCOL_FAULT_H
#define GP_PROTOCOL_FAULT_H

#include <stdint.h>

#include "util/error.h"

#define GP_PROTO_MAX_FAULTS 64        /* faults in one spec */
#define GP_PROTO_FAULT_SPEC_MAX 2048  /* bytes in one spec */

typedef enum gp_proto_fault_kind {
  GP_PROTO_FAULT_XID = 1,       /* "xid:79": an Xid event (79 also drops the GPU off the bus,
                                   48 adds a double-bit ECC error, 63/64 a remapped row) */
  GP_PROTO_FAULT_ECC_SBE,       /* "ecc_sbe:N": N volatile single-bit ECC errors */
  GP_PROTO_FAULT_ECC_DBE,       /* "ecc_dbe:N": N volatile double-bit ECC errors */
  GP_PROTO_FAULT_REMAP_FAILURE, /* "remap_failure": row remapping failed */
  GP_PROTO_FAULT_THERMAL,       /* "thermal": hardware thermal slowdown, hot GPU */
  GP_PROTO_FAULT_POWER,         /* "power": software power cap throttling */
  GP_PROTO_FAULT_PCIE_REPLAY,   /* "pcie_replay:N": N PCIe replays */
} gp_proto_fault_kind;

typedef struct gp_proto_fault {
  gp_proto_fault_kind kind;
  int gpu;                 /* index, 0 .. GP_PROTO_MAX_GPUS - 1 */
  int64_t value;           /* Xid code or count (1 .. 1000000); 0 when the kind takes none */
  int64_t after_ms;        /* delay from injection (0: now) */
  int64_t for_ms;          /* throttling: how long it lasts (0: until reset) */
} gp_proto_fault;

/* Parses "KIND[:VALUE]@gpuN[,after=DUR][,for=DUR]" terms separated by ';', e.g.
 * "xid:79@gpu3,after=5s;ecc_sbe:20@gpu0". DUR as gp_parse_duration_s, or "500ms"; at most a
 * year. Fills up to `max` faults and *ret_n. GP_EINVAL names the bad term (field "inject");
 * GP_ELIMIT when there are more than `max`. *ret_n is untouched on failure. Whether the node
 * has the GPU is the caller's question: only the server and the agent know its GPUs. */
int gp_proto_fault_parse(const char *spec, gp_proto_fault *out, int max, int *ret_n,
                         gp_err *err);

#endif
