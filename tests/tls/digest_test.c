/* SPDX-License-Identifier: Apache-2.0 */
/* The node credential's hash is SHA-256: the published FIPS 180-4 examples come out. */
#include <string.h>

#include "test.h"
#include "tls/digest.h"

static void digests_match_the_published_examples(void) {
  char h[GP_TLS_SHA256_HEX_MAX];
  CHECK_EQ_INT(0, gp_tls_sha256_hex("", 0, h));
  CHECK_EQ_STR("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", h);
  CHECK_EQ_INT(0, gp_tls_sha256_hex("abc", 3, h));
  CHECK_EQ_STR("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", h);
  const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  CHECK_EQ_INT(0, gp_tls_sha256_hex(two, strlen(two), h));
  CHECK_EQ_STR("248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1", h);
}

GP_TESTS(digests_match_the_published_examples)
