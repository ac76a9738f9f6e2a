/* SPDX-License-Identifier: Apache-2.0 */
/* A plan as people and scripts read it: JSON with a fixed key order (byte-identical for
 * identical plans, so plans can be diffed and tested) and a table for a terminal. Both
 * name jobs, nodes and queues by name, using the view the plan was made from. The format
 * is documented in docs/plan-format.md ("Output").
 *
 * Lists are in a canonical order that does not depend on how the core iterates: starts,
 * reservations, pending and ended jobs in the view's job order; preemptions in the order of
 * the job they make room for, then the victim's; queues in tree order (parents before
 * children, siblings by name). */
#ifndef GP_SNAPSHOT_PLAN_WRITE_H
#define GP_SNAPSHOT_PLAN_WRITE_H

#include "core/model.h"
#include "core/plan.h"
#include "util/buf.h"

/* Appends the plan as pretty-printed JSON (2-space indent, trailing newline) to out:
 * {now, starts, preemptions, reservations, pending, ended, queues, mig}. */
void gp_plan_write_json(const gp_plan *plan, const gp_view *view, gp_buf *out);

/* Appends the plan as aligned text tables, one section per kind of decision. */
void gp_plan_write_table(const gp_plan *plan, const gp_view *view, gp_buf *out);

#endif
