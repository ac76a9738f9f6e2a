/* SPDX-License-Identifier: Apache-2.0 */
/* Secrets compare equal exactly when they are: a prefix, a longer string or one differing
 * byte is not the secret. */
#include "test.h"
#include "util/secret.h"

static void secrets_compare(void) {
  CHECK(gp_secret_equal("abc", "abc"));
  CHECK(!gp_secret_equal("abc", "abd"));
  CHECK(!gp_secret_equal("abc", "abcd"));
  CHECK(!gp_secret_equal("abcd", "abc"));
  CHECK(!gp_secret_equal("", "a"));
  CHECK(!gp_secret_equal("a", ""));
  CHECK(gp_secret_equal("", ""));
}

GP_TESTS(secrets_compare)
