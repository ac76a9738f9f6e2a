/* SPDX-License-Identifier: Apache-2.0 */
/* SHA-256 gives the published digests (FIPS 180-4 examples, and lengths around the block
 * padding edges checked against sha256sum), and the secret comparison tells equal from not. */
#include <stdio.h>
#include <stdlib.h>

#include "test.h"
#include "util/sha256.h"

static void digests_match_the_published_examples(void) {
  char h[GP_SHA256_HEX_MAX];
  gp_sha256_hex("", 0, h);
  CHECK_EQ_STR("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", h);
  gp_sha256_hex("abc", 3, h);
  CHECK_EQ_STR("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", h);
  const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  gp_sha256_hex(two, strlen(two), h);
  CHECK_EQ_STR("248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1", h);
}

/* The lengths around the padding edges (one block or two for the tail) against the system's
 * sha256sum, when it has one. */
static void every_padding_length_matches_sha256sum(void) {
  char data[201];
  for (int i = 0; i < 200; i++) data[i] = (char)('a' + i % 26);
  static const int lens[] = {1, 54, 55, 56, 57, 63, 64, 65, 119, 120, 127, 128, 129, 200};
  for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++) {
    int len = lens[k];
    char cmd[400], want[80] = "", got[GP_SHA256_HEX_MAX];
    snprintf(cmd, sizeof cmd, "printf '%%s' '%.*s' | sha256sum 2>/dev/null", len, data);
    FILE *p = popen(cmd, "r");
    if (!p) return;
    int ok = fscanf(p, "%64s", want) == 1;
    pclose(p);
    if (!ok) return; /* no sha256sum here */
    gp_sha256_hex(data, (size_t)len, got);
    CHECK_EQ_STR(want, got);
  }
}

static void secrets_compare(void) {
  CHECK(gp_secret_equal("abc", "abc"));
  CHECK(!gp_secret_equal("abc", "abd"));
  CHECK(!gp_secret_equal("abc", "abcd"));
  CHECK(!gp_secret_equal("", "a"));
  CHECK(gp_secret_equal("", ""));
}

GP_TESTS(digests_match_the_published_examples, every_padding_length_matches_sha256sum,
         secrets_compare)
