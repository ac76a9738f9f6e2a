/* SPDX-License-Identifier: Apache-2.0 */
/* What every libFuzzer harness of tests/fuzz shares: the entry point's declaration and a
 * NUL-terminated copy of the input, since most of gpool's parsers take C strings. A
 * harness aborts (fuzz_check) only when a parser breaks its own contract, e.g. accepts a
 * document it then cannot read back; a refused input is the expected answer to garbage.
 * docs/testing.md says how to build and run them. */
#ifndef GP_TESTS_FUZZ_H
#define GP_TESTS_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A malloc'd copy of the input with a NUL after it (the input may hold NULs itself: the
 * parser then sees the text up to the first one, or all of it when it takes a length). */
static inline char *fuzz_cstr(const uint8_t *data, size_t size) {
  char *s = malloc(size + 1);
  if (!s) abort();
  if (size) memcpy(s, data, size);
  s[size] = '\0';
  return s;
}

/* A broken contract: say which and stop, so libFuzzer keeps the input as a crash. */
#define fuzz_check(cond)                                                                  \
  do {                                                                                    \
    if (!(cond)) {                                                                        \
      fprintf(stderr, "%s:%d: contract broken: %s\n", __FILE__, __LINE__, #cond);          \
      abort();                                                                            \
    }                                                                                     \
  } while (0)

/* Writes the input to one file of this process in $TMPDIR (else /tmp), named with `suffix`,
 * for the parsers that take a path; returns the path. The file is removed at exit. */
static inline char *fuzz_file_path(void) {
  static char path[512];
  return path;
}
static inline void fuzz_file_remove(void) { unlink(fuzz_file_path()); }
static inline const char *fuzz_write_file(const char *suffix, const uint8_t *data, size_t size) {
  char *path = fuzz_file_path();
  if (!path[0]) {
    const char *tmp = getenv("TMPDIR");
    snprintf(path, 512, "%s/gpool-fuzz-%ld-%s", tmp && *tmp ? tmp : "/tmp", (long)getpid(), suffix);
    atexit(fuzz_file_remove);
  }
  FILE *f = fopen(path, "wb");
  fuzz_check(f != NULL);
  fuzz_check(fwrite(data, 1, size, f) == size);
  fuzz_check(fclose(f) == 0);
  return path;
}

#endif
