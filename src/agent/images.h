/* SPDX-License-Identifier: Apache-2.0 */
/* The images a node holds (docs/containers.md): read from the engine (`podman images
 * --format json`) at most once a minute and after a container task ends, bounded and
 * checked, and reported to the server in the heartbeat. */
#ifndef GP_AGENT_IMAGES_H
#define GP_AGENT_IMAGES_H

#include <jansson.h>
#include <stddef.h>

#define GP_AGENT_MAX_IMAGES 128       /* reported; more are left out (the largest first) */
#define GP_AGENT_MAX_IMAGE_NAMES 8    /* names (tags) of one image */
#define GP_AGENT_IMAGES_OUTPUT_MAX ((size_t)4 << 20) /* bytes of the engine's answer read */

/* The engine's JSON as [{"names": [...], "size": bytes}] (a new reference, names that are
 * valid references only, images without one left out), or NULL when it is no such list. */
json_t *gp_agent_images_parse(const char *text, size_t len);

#endif
