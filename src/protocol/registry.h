/* SPDX-License-Identifier: Apache-2.0 */
/* Container registries (docs/containers.md#credentials): which registry an image reference
 * is pulled from, and the bounds of what names a registry and carries a credential. The
 * server picks a job's credential by its image's registry and the agent writes it for that
 * registry: both go through gp_proto_image_registry so they agree. */
#ifndef GP_PROTOCOL_REGISTRY_H
#define GP_PROTOCOL_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>

#define GP_PROTO_REGISTRY_MAX 254     /* bytes of host[:port] */
#define GP_PROTO_REGISTRY_USER_MAX 256
#define GP_PROTO_REGISTRY_PASSWORD_MAX 4096
/* base64 of "user:password" */
#define GP_PROTO_REGISTRY_AUTH_MAX (((GP_PROTO_REGISTRY_USER_MAX + GP_PROTO_REGISTRY_PASSWORD_MAX + 1 + 2) / 3) * 4)

/* NULL for a valid registry "host[:port]" (letters, digits, '.', '-', a port 1..65535),
 * else a sentence saying what is wrong with it. */
const char *gp_proto_registry_check(const char *registry);

/* The registry of a valid image reference: its first component when that names a host
 * (has a '.' or a ':', or is "localhost"), else "docker.io", as the engine resolves a
 * short name. False when it does not fit. */
bool gp_proto_image_registry(const char *image, char *buf, size_t size);

/* Whether `auth` is a bounded base64 text (the "auth" of an engine's auth file). */
bool gp_proto_registry_auth_valid(const char *auth);

#endif
