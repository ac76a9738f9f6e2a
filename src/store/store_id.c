/* SPDX-License-Identifier: Apache-2.0 */
/* A new store's identity (store.h, gp_store_make_id), made the same way by every backend. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include "store/store.h"

int gp_store_make_id(char out[GP_STORE_ID_MAX], const char *where, gp_err *err) {
  unsigned char raw[(GP_STORE_ID_MAX - 1) / 2];
  if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw)
    return gp_err_set(err, GP_EIO, where, 0, NULL, "cannot make the store's id: %s", strerror(errno));
  for (size_t i = 0; i < sizeof raw; i++) snprintf(out + 2 * i, 3, "%02x", raw[i]);
  return 0;
}
