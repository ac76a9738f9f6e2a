/* SPDX-License-Identifier: Apache-2.0 */
/* Server URL lists: what parses, what is refused with the entry named, and redirects that
 * may not downgrade https to http. */
#include <string.h>

#include "test.h"
#include "util/urls.h"

static void lists_parse_with_spaces_and_slashes(void) {
  gp_urls u;
  gp_err err = {0};
  CHECK_EQ_INT(0, gp_urls_parse("http://a:1, http://b:2/ ,https://[::1]:3", "server", &u, &err));
  CHECK_EQ_INT(3, u.n);
  CHECK_EQ_STR("http://a:1", u.url[0]);
  CHECK_EQ_STR("http://b:2", u.url[1]);
  CHECK_EQ_STR("https://[::1]:3", u.url[2]);
  CHECK_EQ_INT(1, gp_urls_find(&u, "http://b:2"));
  CHECK_EQ_INT(-1, gp_urls_find(&u, "http://c:2"));
}

static void bad_entries_are_named(void) {
  gp_urls u;
  gp_err err = {0};
  CHECK_EQ_INT(GP_EINVAL, gp_urls_parse("http://a:1,,http://b", "server", &u, &err));
  CHECK_EQ_STR("server", err.field);
  CHECK_EQ_INT(GP_EINVAL, gp_urls_parse("ftp://a", "server", &u, &err));
  CHECK(strstr(err.message, "ftp://a") != NULL);
  CHECK_EQ_INT(GP_EINVAL, gp_urls_parse("http://a/v1", "server", &u, &err));
  CHECK_EQ_INT(GP_EINVAL, gp_urls_parse("http://user@a", "server", &u, &err));
  CHECK_EQ_INT(GP_EINVAL, gp_urls_parse("http://", "server", &u, &err));
  CHECK_EQ_INT(GP_EINVAL, gp_urls_parse("", "server", &u, &err));
  char many[2048] = "";
  for (int i = 0; i <= GP_URLS_MAX; i++) strcat(many, i ? ",http://h" : "http://h");
  CHECK_EQ_INT(GP_EINVAL, gp_urls_parse(many, "server", &u, &err));
  char huge[600] = "http://";
  memset(huge + 7, 'a', 500);
  huge[507] = '\0';
  CHECK_EQ_INT(GP_EINVAL, gp_urls_parse(huge, "server", &u, &err));
}

static void redirects_keep_https(void) {
  char base[GP_URL_MAX];
  CHECK_EQ_INT(0, gp_urls_redirect_base("http://a:1", "http://b:2/v1/jobs?x=1", base, sizeof base));
  CHECK_EQ_STR("http://b:2", base);
  CHECK_EQ_INT(0, gp_urls_redirect_base("https://a:1", "https://b:2/v1/jobs", base, sizeof base));
  CHECK_EQ_STR("https://b:2", base);
  CHECK_EQ_INT(GP_EINVAL, gp_urls_redirect_base("https://a:1", "http://b:2/v1/jobs", base, sizeof base));
  CHECK_EQ_INT(GP_EINVAL, gp_urls_redirect_base("http://a:1", "/v1/jobs", base, sizeof base));
  CHECK_EQ_INT(GP_EINVAL, gp_urls_redirect_base("http://a:1", NULL, base, sizeof base));
  CHECK_EQ_INT(GP_EINVAL, gp_urls_redirect_base("http://a:1", "http://ev il/x", base, sizeof base));
}

GP_TESTS(lists_parse_with_spaces_and_slashes, bad_entries_are_named, redirects_keep_https)
