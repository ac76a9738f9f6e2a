/* SPDX-License-Identifier: Apache-2.0 */
/* Picks the store's backend from what a server config names (store.h, gp_store_open): a
 * postgresql:// or postgres:// URL is PostgreSQL, anything else a SQLite file. */
#include <string.h>

#include "store/store.h"

int gp_store_open(const char *url_or_path, gp_store **ret, gp_err *err) {
  if (!url_or_path || !*url_or_path)
    return gp_err_set(err, GP_EINVAL, NULL, 0, "store", "no store given (a file or a URL)");
  if (strncmp(url_or_path, "postgresql://", 13) == 0 || strncmp(url_or_path, "postgres://", 11) == 0)
    return gp_store_pg_open(url_or_path, ret, err);
  return gp_store_sqlite_open(url_or_path, ret, err);
}
