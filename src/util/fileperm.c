/* SPDX-License-Identifier: Apache-2.0 */
/* The checks of fileperm.h: one stat, the mode bits that matter for each kind of file. */
#include "util/fileperm.h"

#include <string.h>
#include <sys/stat.h>

int gp_fileperm_check(const char *path, gp_fileperm_kind kind, const char *field, gp_err *err) {
  struct stat st;
  if (stat(path, &st) != 0) return 0;
  unsigned mode = (unsigned)st.st_mode & 07777;
  if (kind == GP_FILEPERM_SECRET && (mode & 077))
    return gp_err_set(err, GP_EPERM, path, 0, field,
                      "mode %04o lets other users %s it, and it holds tokens; chmod 600 %s", mode,
                      (mode & 044) ? "read" : "write", path);
  if (kind == GP_FILEPERM_CONFIG && (mode & 002))
    return gp_err_set(err, GP_EPERM, path, 0, field,
                      "mode %04o lets any user change it; chmod o-w %s", mode, path);
  return 0;
}

bool gp_fileperm_open_to_others(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && (st.st_mode & 007) != 0;
}
