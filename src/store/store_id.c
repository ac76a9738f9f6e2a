/* SPDX-License-Identifier: Apache-2.0 */
/* What every backend does the same way: a new store's identity (store.h, gp_store_make_id)
 * and the error of a load a callback stopped (gp_store_load_stopped). */
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

int gp_store_load_stopped(gp_err *err, int code, const char *where, const char *sql) {
  if (err && err->message[0]) { /* the callback's own, which names the row */
    char why[sizeof err->message], field[sizeof err->field];
    snprintf(why, sizeof why, "%s", err->message);
    snprintf(field, sizeof field, "%s", err->field);
    return gp_err_set(err, code, where, 0, field[0] ? field : NULL, "loading the store failed: %s", why);
  }
  return gp_err_set(err, code, where, 0, NULL, "loading the store failed while reading: %s", sql);
}
