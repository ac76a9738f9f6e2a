/* SPDX-License-Identifier: Apache-2.0 */
/* Aborting allocators and the bump arena declared in mem.h. */
#include "util/mem.h"

#include <malloc.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void oom(size_t size) {
  fprintf(stderr, "gpool: out of memory allocating %zu bytes\n", size);
  abort();
}

void gp_mem_keep_freed(void) {
  /* Blocks up to 256 MiB come from the heap (not a fresh mmap each time), and the heap's
   * top is returned to the kernel only beyond 512 MiB of free space. */
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
}

void *gp_xmalloc(size_t size) {
  void *p = malloc(size ? size : 1);
  if (!p) oom(size);
  return p;
}

void *gp_xcalloc(size_t n, size_t size) {
  void *p = calloc(n ? n : 1, size ? size : 1);
  if (!p) oom(n * size);
  return p;
}

void *gp_xrealloc(void *p, size_t size) {
  void *q = realloc(p, size ? size : 1);
  if (!q) oom(size);
  return q;
}

char *gp_xstrdup(const char *s) {
  if (!s) return NULL;
  return gp_xstrndup(s, strlen(s));
}

char *gp_xstrndup(const char *s, size_t n) {
  char *d = gp_xmalloc(n + 1);
  memcpy(d, s, n);
  d[n] = '\0';
  return d;
}

void gp_xgrow_to(void **items, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return;
  size_t c = *cap ? *cap : 8;
  while (c < need) c *= 2;
  *items = gp_xrealloc(*items, c * elem);
  *cap = c;
}

typedef struct gp_arena_block {
  struct gp_arena_block *next;
  size_t used, size;
  _Alignas(16) unsigned char data[];
} gp_arena_block;

struct gp_arena {
  gp_arena_block *head;
  size_t bytes;
  void **adopted;       /* malloc'ed buffers freed with the arena */
  size_t n_adopted, adopted_cap;
};

gp_arena *gp_arena_new(void) { return gp_xcalloc(1, sizeof(gp_arena)); }

void gp_arena_free(gp_arena *a) {
  if (!a) return;
  for (gp_arena_block *b = a->head, *n; b; b = n) {
    n = b->next;
    free(b);
  }
  for (size_t i = 0; i < a->n_adopted; i++) free(a->adopted[i]);
  free(a->adopted);
  free(a);
}

void *gp_arena_adopt(gp_arena *a, void *p, size_t size) {
  if (!p) return NULL;
  gp_xgrow((void **)&a->adopted, &a->adopted_cap, a->n_adopted + 1, sizeof *a->adopted);
  a->adopted[a->n_adopted++] = p;
  a->bytes += size;
  return p;
}

void *gp_arena_alloc(gp_arena *a, size_t size) {
  size = (size + 15) & ~(size_t)15;
  gp_arena_block *b = a->head;
  if (!b || b->size - b->used < size) {
    size_t bsize = size > 65536 ? size : 65536;
    b = gp_xmalloc(sizeof *b + bsize);
    b->size = bsize;
    b->used = 0;
    b->next = a->head;
    a->head = b;
    a->bytes += sizeof *b + bsize;
  }
  void *p = b->data + b->used;
  b->used += size;
  memset(p, 0, size);
  return p;
}

char *gp_arena_strdup(gp_arena *a, const char *s) {
  if (!s) return NULL;
  size_t n = strlen(s);
  char *d = gp_arena_alloc(a, n + 1);
  memcpy(d, s, n);
  return d;
}

char *gp_arena_printf(gp_arena *a, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  char *d = gp_arena_alloc(a, (size_t)(n < 0 ? 0 : n) + 1);
  va_start(ap, fmt);
  vsnprintf(d, (size_t)n + 1, fmt, ap);
  va_end(ap);
  return d;
}

size_t gp_arena_bytes(const gp_arena *a) { return a->bytes; }
