/* SPDX-License-Identifier: Apache-2.0 */
/* Slurm's hostlist form: compression as Slurm writes it (order kept, zero-padded runs joined
 * only at one width, mixed prefixes), expansion of what Slurm accepts (several ranges,
 * several brackets), each round trip, and the bounds: a list over the limit or malformed is
 * refused before any name is produced. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"
#include "util/hostlist.h"

typedef struct names {
  char buf[8192];
  size_t len, n;
} names;

/* Collects expanded names as "a,b,c" (the test's buffer is checked, never truncated). */
static int collect(void *ctx, const char *name) {
  names *ns = ctx;
  size_t need = strlen(name) + 1;
  CHECK(ns->len + need < sizeof ns->buf);
  ns->len += (size_t)snprintf(ns->buf + ns->len, sizeof ns->buf - ns->len, "%s%s", ns->n ? "," : "", name);
  ns->n++;
  return 0;
}

static const char *expand(const char *list, names *ns) {
  memset(ns, 0, sizeof *ns);
  gp_err err = {0};
  size_t count = 0;
  CHECK_EQ_INT(0, gp_hostlist_expand(list, 100000, collect, ns, &count, &err));
  CHECK_EQ_INT((int)ns->n, (int)count);
  return ns->buf;
}

/* Compresses the comma-separated names in csv and checks the result and its expansion. */
static void round_trip(const char *csv, const char *want) {
  char copy[4096], out[4096];
  const char *list[256];
  size_t n = 0;
  snprintf(copy, sizeof copy, "%s", csv);
  for (char *s = strtok(copy, ","); s; s = strtok(NULL, ",")) list[n++] = s;
  CHECK_EQ_INT(0, gp_hostlist_compress(list, n, out, sizeof out));
  CHECK_EQ_STR(want, out);
  names ns;
  CHECK_EQ_STR(csv, expand(out, &ns));
}

static void compresses_as_slurm(void) {
  round_trip("n01,n02,n03,n04", "n[01-04]");
  round_trip("gpu-a1,gpu-a2,gpu-b3", "gpu-a[1-2],gpu-b3");
  round_trip("n1", "n1");
  round_trip("login", "login");
  round_trip("n1,n3,n4,n7", "n[1,3-4,7]");
  round_trip("n9,n10,n11", "n[9-11]");         /* unpadded: one run across the width change */
  round_trip("n08,n09,n10", "n[08-10]");       /* padded at width 2 */
  round_trip("n9,n010", "n[9,010]");           /* different widths stay apart */
  round_trip("n099,n100,n101", "n[099-101]");
  round_trip("n2,n1", "n[2,1]");               /* order kept: the first is task 0's node */
  round_trip("a1,b1,a2", "a1,b1,a2");
  round_trip("node1-ib,node2-ib", "node1-ib,node2-ib"); /* no numeric suffix to join */
  round_trip("n0,n1,x,y5", "n[0-1],x,y5");
  round_trip("12,13", "[12-13]");
  round_trip("n1,n1", "n[1,1]");
  round_trip("rack1-n07,rack1-n08,rack2-n01", "rack1-n[07-08],rack2-n01");
}

static void compress_refuses_what_a_list_cannot_hold(void) {
  char out[64];
  const char *comma[] = {"a,b"}, *bracket[] = {"n[1]"}, *space[] = {"a b"}, *empty[] = {""};
  CHECK_EQ_INT(-1, gp_hostlist_compress(comma, 1, out, sizeof out));
  CHECK_EQ_STR("", out);
  CHECK_EQ_INT(-1, gp_hostlist_compress(bracket, 1, out, sizeof out));
  CHECK_EQ_INT(-1, gp_hostlist_compress(space, 1, out, sizeof out));
  CHECK_EQ_INT(-1, gp_hostlist_compress(empty, 1, out, sizeof out));
  const char *many[] = {"alpha", "beta", "gamma"};
  CHECK_EQ_INT(-1, gp_hostlist_compress(many, 3, out, 10)); /* too small: nothing, not a part */
  CHECK_EQ_STR("", out);
  CHECK_EQ_INT(0, gp_hostlist_compress(many, 3, out, sizeof out));
  CHECK_EQ_STR("alpha,beta,gamma", out);
  /* 1024 nodes, as a gang may have: long runs and many groups. */
  static char store[1024][16];
  const char *big[1024];
  for (int i = 0; i < 1024; i++) {
    snprintf(store[i], sizeof store[i], i % 2 ? "b%04d" : "a%d", i);
    big[i] = store[i];
  }
  static char wide[65536];
  CHECK_EQ_INT(0, gp_hostlist_compress(big, 1024, wide, sizeof wide));
  gp_err err = {0};
  size_t count = 0;
  CHECK_EQ_INT(0, gp_hostlist_expand(wide, 100000, NULL, NULL, &count, &err));
  CHECK_EQ_INT(1024, (int)count);
}

static void expands_what_slurm_accepts(void) {
  names ns;
  CHECK_EQ_STR("n1,n2,n3,m01,m02", expand("n[1-3],m[01-02]", &ns));
  CHECK_EQ_STR("r1-n1,r1-n2,r2-n1,r2-n2", expand("r[1-2]-n[1-2]", &ns));
  CHECK_EQ_STR("tux1-ib,tux2-ib", expand("tux[1-2]-ib", &ns));
  CHECK_EQ_STR("n7,n9,n10,n11", expand("n[7,9-11]", &ns));
  CHECK_EQ_STR("host", expand("host", &ns));
  CHECK_EQ_STR("n1,n2,host,m5", expand("n[1-2],host,m5", &ns));
}

static int stop_at_two(void *ctx, const char *name) {
  int *calls = ctx;
  (void)name;
  return ++*calls == 2 ? 5 : 0;
}

static void expansion_is_bounded_and_checked(void) {
  gp_err err = {0};
  size_t count = 7;
  int calls = 0;
  CHECK_EQ_INT(GP_ELIMIT, gp_hostlist_expand("n[1-100001]", 100000, stop_at_two, &calls, &count, &err));
  CHECK_EQ_INT(0, calls); /* refused before any name */
  CHECK_CONTAINS(err.message, "more than 100000");
  CHECK_EQ_INT(7, (int)count);
  /* Huge products and sums saturate instead of wrapping around. */
  CHECK_EQ_INT(GP_ELIMIT, gp_hostlist_expand("n[0-999999999999999999]", 100000, NULL, NULL, NULL, &err));
  CHECK_EQ_INT(GP_ELIMIT, gp_hostlist_expand("a[0-99999]b[0-99999]c[0-99999]d[0-99999]", 100000, NULL, NULL, NULL, &err));
  CHECK_EQ_INT(GP_ELIMIT, gp_hostlist_expand("n[1-60000],m[1-60000]", 100000, NULL, NULL, NULL, &err));
  CHECK_EQ_INT(0, gp_hostlist_expand("n[1-100000]", 100000, NULL, NULL, &count, &err));
  CHECK_EQ_INT(100000, (int)count);
  const char *bad[] = {"",        "n[",     "n]",      "n[]",      "n[3-1]",  "n[a]",
                       "n[1-]",   "n[-2]",  "n[1,]",   "n[1[2]]",  "a,,b",    "a b",
                       "n[1-2",   "n[1-2]]", "n[0000000000000000001]", ","};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    memset(&err, 0, sizeof err);
    int rc = gp_hostlist_expand(bad[i], 100000, NULL, NULL, NULL, &err);
    if (rc != GP_EINVAL) fprintf(stderr, "list '%s' gave %d\n", bad[i], rc);
    CHECK_EQ_INT(GP_EINVAL, rc);
    CHECK_EQ_STR("hostlist", err.field);
  }
  /* A name longer than GP_HOSTLIST_NAME_MAX is refused, not cut. */
  static char longname[GP_HOSTLIST_NAME_MAX + 8];
  memset(longname, 'x', GP_HOSTLIST_NAME_MAX + 2);
  CHECK_EQ_INT(GP_EINVAL, gp_hostlist_expand(longname, 10, NULL, NULL, NULL, &err));
  /* A callback's non-zero return stops the walk and comes back. */
  CHECK_EQ_INT(5, gp_hostlist_expand("n[1-3]", 10, stop_at_two, &calls, NULL, &err));
  CHECK_EQ_INT(2, calls);
}

GP_TESTS(compresses_as_slurm, compress_refuses_what_a_list_cannot_hold, expands_what_slurm_accepts,
         expansion_is_bounded_and_checked)
