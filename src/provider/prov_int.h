/* SPDX-License-Identifier: Apache-2.0 */
/* Internals of the provider module: the request writer, the answer checker and the child
 * process runner, each in its own file, joined by gp_provider_run (run.c). */
#ifndef GP_PROVIDER_PROV_INT_H
#define GP_PROVIDER_PROV_INT_H

#include "provider/provider.h"
#include "util/buf.h"

/* The request's JSON (docs/providers.md), as a malloc'ed string; NULL with *e set when the
 * request is not one gpool may send. */
char *gp__prov_request_json(const gp_provider_request *req, gp_provider_error *e);

/* Checks a finished call's stdout against the protocol for `req`: exit status 0 with a
 * valid answer fills *res's instances and returns 0; anything else returns GP_EIO with
 * *e naming the class and the reason. */
int gp__prov_answer_read(const gp_provider_request *req, const char *out, size_t len,
                         int exit_status, gp_provider_result *res, gp_provider_error *e);

/* What came back from one child process. */
typedef struct gp__prov_child {
  gp_buf out, err;           /* stdout (bounded by GP_PROVIDER_MAX_STDOUT + 1) and stderr */
  bool out_too_long;         /* stdout passed GP_PROVIDER_MAX_STDOUT: stopped there */
  bool timed_out;            /* still running at the deadline: stopped */
  bool exited;               /* reaped; exit_status is valid */
  int exit_status;           /* 0..255, or 128 + signal */
  int signal;                /* killed by this signal, else 0 */
  char spawn_error[256];     /* non-empty: the executable could not be started */
} gp__prov_child;

/* Starts `path verb` in its own process group with exactly `envp`, writes `input` to its
 * stdin and closes it, and collects stdout and stderr until it exits, stdout passes the
 * bound, or `deadline_ms` (Unix ms) comes; a child still running then gets SIGTERM, and
 * SIGKILL a moment later, with its whole process group. Always reaps the child. Returns
 * 0, or GP_EIO when it could not be started (c->spawn_error says why). */
int gp__prov_spawn(const char *path, const char *verb, char *const *envp, const char *input,
                   int64_t deadline_ms, gp__prov_child *c);
void gp__prov_child_done(gp__prov_child *c);

/* Copies `s` (n bytes) into dst (size bytes, NUL-terminated, cut to fit on a character
 * boundary), replacing control characters (and newline unless keep_newline) with '?'. */
void gp__prov_clean(char *dst, size_t size, const char *s, size_t n, bool keep_newline);

int gp__prov_error(gp_provider_error *e, gp_provider_class cls, int ret, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
