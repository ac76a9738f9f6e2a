/* SPDX-License-Identifier: Apache-2.0 */
/* `gpool plan` snapshots (docs/plan-format.md), YAML or JSON, read as the command reads
 * them: gp_doc, then gp_snapshot_read. snapshot.h promises that a snapshot that reads is
 * consistent enough for the core, so each one that reads is planned (gp_sched_step must
 * not refuse it) and the plan written both ways, as `gpool plan` prints it. */
#include "core/sched.h"
#include "fuzz.h"
#include "snapshot/plan_write.h"
#include "snapshot/snapshot.h"
#include "util/buf.h"
#include "util/doc.h"

static void plan(const gp_snapshot *snap) {
  gp_plan *p = NULL;
  gp_err err = {0};
  int rc = gp_sched_step(&snap->policy, &snap->view, snap->now, &p, &err);
  if (rc) fprintf(stderr, "the core refused a snapshot that read: %s: %s\n", err.field,
                  err.message);
  fuzz_check(rc == 0);
  gp_buf out;
  gp_buf_init(&out, 0);
  gp_plan_write_json(p, &snap->view, &out);
  gp_plan_write_table(p, &snap->view, &out);
  gp_buf_done(&out);
  gp_plan_free(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  gp_doc *d = NULL;
  gp_err err = {0};
  if (gp_doc_load_string("fuzz.yaml", (const char *)data, size, &d, &err) != 0) {
    fuzz_check(err.message[0] != '\0');
    return 0;
  }
  gp_snapshot *snap = NULL;
  if (gp_snapshot_read(d, &snap, &err) == 0) {
    plan(snap);
    gp_snapshot_free(snap);
  } else {
    fuzz_check(snap == NULL && err.message[0] != '\0');
  }
  gp_doc_free(d);
  return 0;
}
