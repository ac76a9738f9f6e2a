/* SPDX-License-Identifier: Apache-2.0 */
/* Error codes and the error-detail struct every gpool module uses.
 * Functions return 0 or a negative GP_E* code; details for a human (which file, which
 * line, which field) go into a gp_err the caller passes in (it may be NULL). */
#ifndef GP_UTIL_ERROR_H
#define GP_UTIL_ERROR_H

enum {
  GP_OK = 0,
  GP_EINVAL = -1,    /* invalid input: see gp_err for the field */
  GP_ENOMEM = -2,    /* allocation failed */
  GP_ENOENT = -3,    /* no such object */
  GP_EEXIST = -4,    /* object already exists */
  GP_EIO = -5,       /* file, socket or database I/O failed */
  GP_ELIMIT = -6,    /* a configured bound was exceeded */
  GP_EPERM = -7,     /* not allowed for this caller */
  GP_ESTATE = -8,    /* not allowed in the object's current state */
  GP_EPARSE = -9,    /* syntax error in a document */
  GP_ETIMEOUT = -10, /* a deadline passed */
  GP_EUNSUPP = -11,  /* not supported here (no driver, no cgroup v2, ...) */
};

/* Human-readable details of the last failure. Zero-initialise before use. */
typedef struct gp_err {
  int code;          /* the GP_E* code returned */
  int line;          /* 1-based line in `file` where known, else 0 */
  char file[256];    /* input file name, or "" */
  char field[128];   /* offending key or field path, e.g. "jobs[2].gpus", or "" */
  char message[512]; /* one sentence */
} gp_err;

/* Names an error code ("invalid argument"); never NULL. */
const char *gp_strerror(int code);

/* Fills *err (when not NULL) and returns `code`, so callers can `return gp_err_set(...)`.
 * `file` and `field` may be NULL. */
int gp_err_set(gp_err *err, int code, const char *file, int line, const char *field,
               const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* Formats an error as "file:line: field: message" (parts present only) into buf. */
void gp_err_format(const gp_err *err, char *buf, unsigned long size);

#endif
