/* SPDX-License-Identifier: Apache-2.0 */
/* Slurm's hostlist form, both ways (hostlist.h). Compression is order-preserving (Slurm's
 * own joins a run only when it counts up, so "n2,n1" stays "n2,n1" and the first name is
 * still the first); expansion counts the names arithmetically before producing any, so a
 * hostile "n[0-999999999999]" costs nothing. */
#include "util/hostlist.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define DIGITS_MAX 18 /* fits an unsigned 64-bit value with room for hi + 1 */

/* A character that may stand in a host name of a hostlist. */
static bool name_char(char c) {
  return (unsigned char)c > ' ' && c != 0x7f && c != ',' && c != '[' && c != ']';
}

/* ---- compression ---- */

typedef struct run {
  const char *name;     /* the run's first name */
  size_t prefix;        /* bytes before the numeric suffix; the whole name without one */
  bool num;             /* has a numeric suffix */
  uint64_t lo, hi;
  int width;            /* digits of lo's suffix: every number of the run prints at it */
} run;

static uint64_t parse_digits(const char *s, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; i++) v = v * 10 + (uint64_t)(s[i] - '0');
  return v;
}

/* Splits a name into its prefix and numeric suffix. */
static run split(const char *name) {
  size_t len = strlen(name), d = len;
  while (d > 0 && name[d - 1] >= '0' && name[d - 1] <= '9') d--;
  run r = {.name = name, .prefix = len};
  if (d < len && len - d <= DIGITS_MAX) {
    r.prefix = d;
    r.num = true;
    r.lo = r.hi = parse_digits(name + d, len - d);
    r.width = (int)(len - d);
  }
  return r;
}

/* Does name continue run r: the same prefix, the next number, printed at r's width? */
static bool continues(const run *r, const run *n) {
  if (!r->num || !n->num || r->prefix != n->prefix || n->lo != r->hi + 1 ||
      strncmp(r->name, n->name, r->prefix) != 0)
    return false;
  char buf[32];
  snprintf(buf, sizeof buf, "%0*llu", r->width, (unsigned long long)n->lo);
  return strcmp(buf, n->name + n->prefix) == 0;
}

typedef struct out {
  char *p;
  size_t size, len;
  bool full;
} out;

static void put(out *o, const char *fmt_s, size_t n) {
  if (o->full || o->len + n >= o->size) {
    o->full = true;
    return;
  }
  memcpy(o->p + o->len, fmt_s, n);
  o->len += n;
  o->p[o->len] = '\0';
}

static void put_num(out *o, uint64_t v, int width) {
  char buf[32];
  int n = snprintf(buf, sizeof buf, "%0*llu", width, (unsigned long long)v);
  put(o, buf, (size_t)n);
}

int gp_hostlist_compress(const char *const *names, size_t n, char *dst, size_t size) {
  if (size == 0) return -1;
  dst[0] = '\0';
  for (size_t i = 0; i < n; i++) {
    if (!names[i] || !names[i][0]) return -1;
    for (const char *c = names[i]; *c; c++)
      if (!name_char(*c)) return -1;
  }
  out o = {.p = dst, .size = size};
  size_t i = 0;
  while (i < n) {
    /* A group: consecutive runs that share a numeric prefix go in one bracket. */
    run first = split(names[i++]);
    while (i < n) {
      run nx = split(names[i]);
      if (!continues(&first, &nx)) break;
      first.hi = nx.lo;
      i++;
    }
    if (o.len) put(&o, ",", 1);
    put(&o, first.name, first.prefix);
    if (!first.num) continue;
    /* The runs after it with the same prefix. */
    run more[64];
    int n_more = 0;
    while (i < n && n_more < (int)(sizeof more / sizeof more[0])) {
      run nx = split(names[i]);
      if (!nx.num || nx.prefix != first.prefix || strncmp(nx.name, first.name, first.prefix) != 0)
        break;
      i++;
      while (i < n) {
        run nn = split(names[i]);
        if (!continues(&nx, &nn)) break;
        nx.hi = nn.lo;
        i++;
      }
      more[n_more++] = nx;
    }
    bool bracket = n_more > 0 || first.lo != first.hi;
    if (bracket) put(&o, "[", 1);
    for (int k = -1; k < n_more; k++) {
      const run *r = k < 0 ? &first : &more[k];
      if (k >= 0) put(&o, ",", 1);
      put_num(&o, r->lo, r->width);
      if (r->hi != r->lo) {
        put(&o, "-", 1);
        put_num(&o, r->hi, r->width);
      }
    }
    if (bracket) put(&o, "]", 1);
  }
  if (o.full) {
    dst[0] = '\0';
    return -1;
  }
  return 0;
}

/* ---- expansion ---- */

/* One element of a bracket group: "lo" or "lo-hi". */
typedef struct elem {
  uint64_t lo, hi;
  int width;     /* lo's digits */
  size_t chars;  /* the most bytes one of its numbers prints as */
} elem;

/* Reads the element at *p (up to ',' or ']' before end). */
static int read_elem(const char **p, const char *end, elem *e, gp_err *err) {
  const char *s = *p, *q = s;
  while (q < end && *q >= '0' && *q <= '9') q++;
  size_t nlo = (size_t)(q - s);
  if (nlo == 0 || nlo > DIGITS_MAX)
    return gp_err_set(err, GP_EINVAL, NULL, 0, "hostlist",
                      "a bracket must hold numbers or ranges of at most %d digits", DIGITS_MAX);
  e->lo = e->hi = parse_digits(s, nlo);
  e->width = (int)nlo;
  e->chars = nlo;
  if (q < end && *q == '-') {
    const char *h = ++q;
    while (q < end && *q >= '0' && *q <= '9') q++;
    size_t nhi = (size_t)(q - h);
    if (nhi == 0 || nhi > DIGITS_MAX)
      return gp_err_set(err, GP_EINVAL, NULL, 0, "hostlist",
                        "a range needs an upper bound of at most %d digits", DIGITS_MAX);
    e->hi = parse_digits(h, nhi);
    if (e->hi < e->lo)
      return gp_err_set(err, GP_EINVAL, NULL, 0, "hostlist", "range %.*s counts down",
                        (int)(q - s), s);
    if (nhi > e->chars) e->chars = nhi;
  }
  if (q < end && *q != ',')
    return gp_err_set(err, GP_EINVAL, NULL, 0, "hostlist", "unexpected '%c' in a bracket", *q);
  *p = q;
  return 0;
}

/* Checks the item [s, end) (one comma-separated entry of the list) and adds its number of
 * names to *count, saturating at cap. */
static int check_item(const char *s, const char *end, uint64_t cap, uint64_t *count, gp_err *err) {
  if (s == end) return gp_err_set(err, GP_EINVAL, NULL, 0, "hostlist", "an empty host name");
  uint64_t names = 1;
  size_t chars = 0;
  for (const char *p = s; p < end;) {
    if (*p == ']') return gp_err_set(err, GP_EINVAL, NULL, 0, "hostlist", "a ']' without its '['");
    if (*p != '[') {
      if (!name_char(*p))
        return gp_err_set(err, GP_EINVAL, NULL, 0, "hostlist",
                          "a host name cannot hold a space or control character");
      chars++;
      p++;
      continue;
    }
    const char *close = memchr(p, ']', (size_t)(end - p));
    if (!close) return gp_err_set(err, GP_EINVAL, NULL, 0, "hostlist", "a '[' without its ']'");
    uint64_t group = 0;
    size_t widest = 0;
    for (const char *q = p + 1;;) {
      elem e;
      int rc = read_elem(&q, close, &e, err);
      if (rc) return rc;
      uint64_t span = e.hi - e.lo + 1;
      group = span > cap - group ? cap : group + span;
      if (e.chars > widest) widest = e.chars;
      if (q == close) break;
      q++; /* the ',' */
    }
    names = group != 0 && names > cap / group ? cap : names * group;
    chars += widest;
    p = close + 1;
  }
  if (chars >= GP_HOSTLIST_NAME_MAX)
    return gp_err_set(err, GP_EINVAL, NULL, 0, "hostlist", "a host name of more than %d bytes",
                      GP_HOSTLIST_NAME_MAX - 1);
  *count = names > cap - *count ? cap : *count + names;
  return 0;
}

typedef struct emitter {
  int (*fn)(void *ctx, const char *name);
  void *ctx;
  char name[GP_HOSTLIST_NAME_MAX];
} emitter;

/* Emits the names of the checked item [s, end) after the len bytes already in em->name. */
static int emit_item(emitter *em, const char *s, const char *end, size_t len) {
  const char *open = memchr(s, '[', (size_t)(end - s));
  const char *lit_end = open ? open : end;
  memcpy(em->name + len, s, (size_t)(lit_end - s));
  len += (size_t)(lit_end - s);
  em->name[len] = '\0';
  if (!open) return em->fn(em->ctx, em->name);
  const char *close = memchr(open, ']', (size_t)(end - open));
  for (const char *q = open + 1;;) {
    elem e;
    read_elem(&q, close, &e, NULL); /* checked: cannot fail */
    for (uint64_t v = e.lo;; v++) {
      int n = snprintf(em->name + len, sizeof em->name - len, "%0*llu", e.width, (unsigned long long)v);
      int rc = emit_item(em, close + 1, end, len + (size_t)n);
      if (rc) return rc;
      if (v == e.hi) break;
    }
    if (q == close) break;
    q++;
  }
  return 0;
}

/* The end of the item starting at s: the next ',' outside brackets, or the string's end. */
static const char *item_end(const char *s) {
  bool in = false;
  for (; *s; s++) {
    if (*s == '[') in = true;
    else if (*s == ']') in = false;
    else if (*s == ',' && !in) break;
  }
  return s;
}

int gp_hostlist_expand(const char *list, size_t max, int (*fn)(void *ctx, const char *name),
                       void *ctx, size_t *ret_count, gp_err *err) {
  if (!list || !*list) return gp_err_set(err, GP_EINVAL, NULL, 0, "hostlist", "an empty host list");
  uint64_t cap = (uint64_t)max + 1, count = 0;
  for (const char *s = list;;) {
    const char *e = item_end(s);
    int rc = check_item(s, e, cap, &count, err);
    if (rc) return rc;
    if (!*e) break;
    s = e + 1;
  }
  if (count > max)
    return gp_err_set(err, GP_ELIMIT, NULL, 0, "hostlist",
                      "the host list names more than %zu hosts", max);
  if (ret_count) *ret_count = (size_t)count;
  if (!fn) return 0;
  emitter *em = &(emitter){.fn = fn, .ctx = ctx};
  for (const char *s = list;;) {
    const char *e = item_end(s);
    int rc = emit_item(em, s, e, 0);
    if (rc) return rc;
    if (!*e) break;
    s = e + 1;
  }
  return 0;
}
