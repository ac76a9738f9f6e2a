/* SPDX-License-Identifier: Apache-2.0 */
/* Field paths for error messages ("jobs[3].queue") without stdio, which the core may not
 * include. Internal to src/core. */
#ifndef GP_CORE_FIELD_H
#define GP_CORE_FIELD_H

#include <stddef.h>
#include <string.h>

/* Writes prefix + "[" + index + "]" + suffix into buf (always NUL-terminated). */
static inline const char *gp__core_field(char *buf, size_t size, const char *prefix, int index,
                                    const char *suffix) {
  char num[16];
  int k = 0;
  unsigned v = index < 0 ? 0u : (unsigned)index;
  do {
    num[k++] = (char)('0' + v % 10);
    v /= 10;
  } while (v && k < 15);
  size_t o = 0;
  for (const char *p = prefix; *p && o + 1 < size; p++) buf[o++] = *p;
  if (o + 1 < size) buf[o++] = '[';
  while (k > 0 && o + 1 < size) buf[o++] = num[--k];
  if (o + 1 < size) buf[o++] = ']';
  for (const char *p = suffix; *p && o + 1 < size; p++) buf[o++] = *p;
  buf[o] = '\0';
  return buf;
}

#endif
