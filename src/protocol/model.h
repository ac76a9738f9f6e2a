/* SPDX-License-Identifier: Apache-2.0 */
/* Models a node holds (docs/services.md#placement): the names of the immediate
 * subdirectories of the agent's `models_dir` (a shared model cache), reported in the
 * heartbeat as `models`, and a job's `model`. Both sides read these rules, and the
 * scheduler compares the names' hashes next to the image hashes (gp_node.images). */
#ifndef GP_PROTOCOL_MODEL_H
#define GP_PROTOCOL_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#define GP_PROTO_MODEL_NAME_MAX 128 /* bytes in a model's name, with its NUL */
#define GP_PROTO_MODELS_MAX 256     /* names one node reports at most */

/* Is this a model name: 1..127 bytes of [A-Za-z0-9._-], starting with a letter or digit
 * (so never ".", ".." nor a hidden directory such as a cache's ".locks")? */
bool gp_proto_model_name_valid(const char *name);
/* Its hash for the scheduler's preference set: the hash of "model:" + name, which no image
 * reference's hash (gp_proto_image_hash hashes full references, "host/path:tag") shares
 * by construction, as a model name holds no '/'. Never 0. */
uint64_t gp_proto_model_hash(const char *name);

#endif
