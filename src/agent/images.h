/* SPDX-License-Identifier: Apache-2.0 */
/* The images a node holds (docs/containers.md): read from the engine (`podman images
 * --format json`) at most once a minute and after a container task ends, bounded and
 * checked, and reported to the server in the heartbeat. */
#ifndef GP_AGENT_IMAGES_H
#define GP_AGENT_IMAGES_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GP_AGENT_MAX_IMAGES 128       /* reported; more are left out (the largest first) */
#define GP_AGENT_MAX_IMAGE_NAMES 8    /* names (tags) of one image */
#define GP_AGENT_IMAGES_OUTPUT_MAX ((size_t)4 << 20) /* bytes of the engine's answer read */

/* The engine's JSON as [{"names": [...], "size": bytes}] (a new reference, names that are
 * valid references only, images without one left out), or NULL when it is no such list. */
json_t *gp_agent_images_parse(const char *text, size_t len);

/* One image of the store as the LRU cap sees it (image_lru.c). */
typedef struct gp_agent_image_entry {
  char id[80];          /* the engine's image id (hex) */
  int64_t size;         /* bytes */
  int64_t last_used_ms; /* epoch ms: last job start or pre-pull seen, else when it was built */
  bool in_use;          /* a container or a running job uses it: never removed */
} gp_agent_image_entry;

/* The engine's JSON as entries (one per image id, at most max; `names`: its names' hashes,
 * n_names[i] of them), in_use from the engine's count of containers. -1: not such a list. */
int gp_agent_images_entries(const char *text, size_t len, gp_agent_image_entry *v, int max,
                            uint64_t (*names)[GP_AGENT_MAX_IMAGE_NAMES], int *n_names);
/* Which images to remove for the store to fit `cap` bytes: indexes into v, least recently
 * used first (the larger first among equals), never one in use; their count. When the
 * images in use alone pass the cap, it removes every other one and stops there. */
int gp_agent_images_evict_pick(const gp_agent_image_entry *v, int n, int64_t cap, int *out);

#endif
