/* SPDX-License-Identifier: Apache-2.0 */
/* Scratch memory of a step (scratch.c): what a stage allocates lives until the step ends
 * and is never freed one by one. Below every stage: any core file may include it. */
#ifndef GP_CORE_SCRATCH_H
#define GP_CORE_SCRATCH_H

#include <stdbool.h>
#include <stddef.h>

typedef struct gp__core_ctx gp__core_ctx;

typedef struct gp__core_scratch {
  char *block;
  size_t cap, used;
  void **aside;         /* freed when the step ends: outgrown blocks (or, under ASan, all) */
  size_t n_aside, aside_cap;
} gp__core_scratch;

/* Memory until the step ends, from the step's scratch (gp__core_ctx.scratch). */
void *gp__core_salloc(gp__core_ctx *c, size_t bytes);
void *gp__core_scalloc(gp__core_ctx *c, size_t n, size_t size);
/* Ends a step's use of s: what it handed out is gone; keep: the block stays for reuse. */
void gp__core_scratch_end(gp__core_scratch *s, bool keep);

#endif
