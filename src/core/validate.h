/* SPDX-License-Identifier: Apache-2.0 */
/* Validation (validate.c), the first stage: policy and view consistency, the queue tree,
 * the priority classes in force. A job's own fields are checked when classification
 * reads it. */
#ifndef GP_CORE_VALIDATE_H
#define GP_CORE_VALIDATE_H

#include "core/ctx.h"

/* Validates policy and view and builds the queue tree. */
int gp__core_validate(gp__core_ctx *c);
/* One job's consistency, from the classification pass: 0 or an error. */
int gp__core_validate_job(gp__core_ctx *c, int j);

#endif
