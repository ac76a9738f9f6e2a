/* SPDX-License-Identifier: Apache-2.0 */
/* Allocation that aborts on out-of-memory (daemons cannot do anything useful without
 * memory), a bump arena for data that dies together (plans, parsed documents), and
 * strdup/strndup twins. */
#ifndef GP_UTIL_MEM_H
#define GP_UTIL_MEM_H

#include <stddef.h>

void *gp_xmalloc(size_t size);
void *gp_xcalloc(size_t n, size_t size);
void *gp_xrealloc(void *p, size_t size);
char *gp_xstrdup(const char *s);               /* NULL stays NULL */
char *gp_xstrndup(const char *s, size_t n);

/* Grows *items (of *cap elements of `elem` bytes) so that index `need - 1` is valid.
 * (Inline: most calls find the room there, in loops over every job.) */
void gp_xgrow_to(void **items, size_t *cap, size_t need, size_t elem);
static inline void gp_xgrow(void **items, size_t *cap, size_t need, size_t elem) {
  if (need > *cap) gp_xgrow_to(items, cap, need, elem);
}

/* Keeps freed memory in the process instead of returning it to the kernel after each
 * scheduling step: a step allocates tens of MiB of scratch on a big cluster, and glibc's
 * defaults would hand it back and take page faults on every step to get it again. Call
 * once at start-up of a long-running process (server, simulator, benchmarks). */
void gp_mem_keep_freed(void);

/* An arena: many small allocations freed at once. Owned by whoever made it. */
typedef struct gp_arena gp_arena;
gp_arena *gp_arena_new(void);
void gp_arena_free(gp_arena *a);                 /* accepts NULL */
void *gp_arena_alloc(gp_arena *a, size_t size);  /* zeroed, 16-byte aligned */
/* Makes a gp_xmalloc'ed buffer of `size` bytes the arena's: freed with it. Returns p. */
void *gp_arena_adopt(gp_arena *a, void *p, size_t size);
char *gp_arena_strdup(gp_arena *a, const char *s);
char *gp_arena_printf(gp_arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
size_t gp_arena_bytes(const gp_arena *a);        /* total bytes reserved, for benchmarks */

#endif
