/* SPDX-License-Identifier: Apache-2.0 */
/* The models a node holds (docs/agent.md#models): the names of the immediate
 * subdirectories of the agent's `models_dir` (a model cache, e.g. one shared Hugging Face
 * cache), read at most once a minute, bounded and checked (protocol/model.h), and reported
 * to the server in the heartbeat as `models`, for placement to prefer a node that already
 * holds a service's model. */
#ifndef GP_AGENT_MODELS_H
#define GP_AGENT_MODELS_H

#include <jansson.h>

#define GP_AGENT_MODELS_SCAN_MAX 4096 /* directory entries looked at, at most */

/* The valid names of dir's subdirectories (symbolic links to directories count), sorted,
 * at most GP_PROTO_MODELS_MAX of them (the first in byte order): a new reference, an empty
 * list when dir cannot be read. */
json_t *gp_agent_models_scan(const char *dir);

#endif
