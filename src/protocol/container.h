/* SPDX-License-Identifier: Apache-2.0 */
/* A job's container (docs/containers.md): the image its tasks run in and how (mounts,
 * working directory, which of the job's variables override the image's, a writable root,
 * the user's home). The server validates a submission with the same checks the agent's
 * start order decoding applies, so a job is refused at submission, not at start. Every
 * string ends up as one argument of the engine's command line: the checks keep them from
 * being read as options (a leading '-') or as several fields (',' and ':' in paths). */
#ifndef GP_PROTOCOL_CONTAINER_H
#define GP_PROTOCOL_CONTAINER_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "util/error.h"

#define GP_PROTO_IMAGE_MAX 256   /* bytes of an image reference */
#define GP_PROTO_MAX_MOUNTS 32
#define GP_PROTO_MOUNT_PATH_MAX 1024
#define GP_PROTO_MAX_CONTAINER_ENV 64

typedef struct gp_proto_mount {
  char *src, *dst;     /* absolute host path, absolute path inside the container */
  bool ro;
} gp_proto_mount;

typedef struct gp_proto_container {
  char *image;         /* "registry/name:tag" or "...@sha256:..." */
  char *workdir;       /* inside the container; NULL: the job's workdir */
  int n_mounts;
  gp_proto_mount mounts[GP_PROTO_MAX_MOUNTS];
  int n_env;           /* the job's variables that override the image's own (pyxis's */
  char **env;          /* --container-env); names */
  bool writable;       /* a writable root filesystem (pyxis's --container-writable) */
  bool mount_home;     /* the user's home mounted at the same path (default true) */
} gp_proto_container;

/* NULL for a valid image reference, else a sentence saying what is wrong with it. */
const char *gp_proto_image_check(const char *ref);

/* A hash of the reference as engines resolve it ("busybox" is
 * "docker.io/library/busybox:latest"; a digest stands for itself), never 0: what the
 * scheduler compares a job's image with the images a node holds (gp_node.images). */
uint64_t gp_proto_image_hash(const char *ref);

/* The reference fully qualified, as engines resolve it: "busybox" is
 * "docker.io/library/busybox:latest". The agent runs images by this name, never by a short
 * one: an engine matches a short name (or an image ID) against any image it holds, from any
 * registry, which would skip the registry's say on who may read it. False when it does not
 * fit in size bytes (GP_PROTO_IMAGE_FULL_MAX always fits a checked reference). */
#define GP_PROTO_IMAGE_FULL_MAX (GP_PROTO_IMAGE_MAX + 32)
bool gp_proto_image_full(const char *ref, char *buf, size_t size);

/* Parses one "SRC:DST[:ro|:rw]" (or "PATH", mounted at the same path) into *ret (owned
 * strings). GP_EINVAL naming `field` with a sentence. */
int gp_proto_mount_parse(const char *text, const char *field, gp_proto_mount *ret, gp_err *err);

/* {"image", "mounts": ["SRC:DST[:ro]"...], "workdir", "env": [...], "writable",
 * "mount_home"}: a new reference. */
json_t *gp_proto_container_encode(const gp_proto_container *c);

/* Decodes and checks the object above; fields named "<ctx>.image" and so on. On failure
 * *ret holds nothing to free. */
int gp_proto_container_decode(const json_t *o, const char *ctx, gp_proto_container *ret,
                              gp_err *err);

void gp_proto_container_done(gp_proto_container *c);

#endif
