/* SPDX-License-Identifier: Apache-2.0 */
/* Snapshots are untrusted input: thousands of damaged variants of real snapshot files
 * (bytes flipped, lines cut, values swapped for other values) must each be read or
 * refused with a message naming a line — never a crash, a leak or undefined behaviour
 * (this test runs under ASan and UBSan). Deterministic: a fixed seed. */
#include "snapshot/snapshot.h"
#include "test.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next_rand(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

static char *read_all(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  REQUIRE(s);
  *len = fread(s, 1, (size_t)n, f);
  s[*len] = '\0';
  fclose(f);
  return s;
}

/* Tokens that stress the readers when pasted over a value. */
static const char *const tokens[] = {
    "-1", "0", "99999999999999999999", "1e308", "nan", "~", "[]", "{}", "[[[", "\"\"",
    "-0.5", "32", "33", "2147483648", "mig:7g.80gb,7g.80gb", "timeslice:0", "1.5", "'x'",
    "null", "true", "n1", "j1", "[0, 0]", "{node: n1}", "[{node: zz, gpu_ids: [99]}]"};

static void mutate(char *s, size_t len) {
  int edits = 1 + (int)(next_rand() % 4);
  for (int e = 0; e < edits && len > 0; e++) {
    size_t at = next_rand() % len;
    switch (next_rand() % 4) {
    case 0: s[at] = (char)(next_rand() & 0x7f); break;           /* flip a byte */
    case 1: s[at] = '\0'; break;                                  /* cut the file */
    case 2: {                                                     /* paste a token */
      const char *t = tokens[next_rand() % (sizeof tokens / sizeof tokens[0])];
      size_t n = strlen(t);
      if (at + n < len) memcpy(s + at, t, n);
      break;
    }
    default: {                                                    /* swap two lines' starts */
      size_t other = next_rand() % len;
      char c = s[at];
      s[at] = s[other];
      s[other] = c;
    }
    }
  }
}

static void damaged_snapshots_never_crash(void) {
  static const char *const files[] = {
      "examples/cluster.yaml", "tests/core/scenarios/dependencies.yaml",
      "tests/core/scenarios/mig_instances.yaml", "tests/core/scenarios/pool_owner_reclaims.yaml",
      "tests/core/scenarios/fractions_bestfit.yaml", "tests/core/scenarios/block_preference.yaml"};
  int read_ok = 0, refused = 0;
  for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", GP_SOURCE_DIR, files[f]);
    size_t len = 0;
    char *orig = read_all(path, &len);
    REQUIRE(orig);
    char *buf = malloc(len + 1);
    REQUIRE(buf);
    for (int i = 0; i < 500; i++) {
      memcpy(buf, orig, len + 1);
      mutate(buf, len);
      gp_doc *d = NULL;
      gp_err e = {0};
      gp_snapshot *s = NULL;
      if (gp_doc_load_string("fuzz.yaml", buf, strlen(buf), &d, &e) == 0 &&
          gp_snapshot_read(d, &s, &e) == 0) {
        read_ok++;
        gp_snapshot_free(s);
      } else {
        refused++;
        CHECK(e.message[0] != '\0');
      }
      gp_doc_free(d);
    }
    free(buf);
    free(orig);
  }
  /* Both outcomes happen: the mutations are neither all fatal nor all harmless. */
  CHECK(read_ok > 0);
  CHECK(refused > 0);
}

GP_TESTS(damaged_snapshots_never_crash)
