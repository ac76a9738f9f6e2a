/* SPDX-License-Identifier: Apache-2.0 */
/* Internals of the protocol module: reading one field of a document with its type and
 * bounds checked, and an error that names the field by its path ("job.placements[0].gpu_ids").
 * Not a public interface. */
#ifndef GP_PROTOCOL_PROTO_INT_H
#define GP_PROTOCOL_PROTO_INT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

/* GP_EINVAL with the field "ctx.key" (or "key" when ctx is NULL) and the message. */
int gp__proto_bad(gp_err *err, const char *ctx, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* A string of at most max - 1 bytes (no NUL inside) copied into buf[max]. Absent or null:
 * buf = "" and 0, or GP_EINVAL when required. */
int gp__proto_str_into(const json_t *o, const char *ctx, const char *key, char *buf, size_t max,
                       bool required, gp_err *err);

/* A string of at most max bytes, borrowed from o (*ret = NULL when absent or null). */
int gp__proto_str_ref(const json_t *o, const char *ctx, const char *key, size_t max,
                      const char **ret, gp_err *err);

/* An integer in [min, max]. Absent or null: *ret = dflt and 0, or GP_EINVAL when required. */
int gp__proto_int(const json_t *o, const char *ctx, const char *key, int64_t min, int64_t max,
                  bool required, int64_t dflt, int64_t *ret, gp_err *err);

/* Sets a string member, or null when s is NULL. */
void gp__proto_set_str(json_t *o, const char *key, const char *s);

#endif
