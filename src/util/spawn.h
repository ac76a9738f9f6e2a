/* SPDX-License-Identifier: Apache-2.0 */
/* The settings every helper program gpool starts with posix_spawn shares (a provider, the
 * mail transport): it runs in a process group of its own, so a stop reaches all it starts
 * and a signal to gpool's group does not reach it; with no signal blocked and every
 * disposition at its default, whatever the spawning thread had; and with no descriptor
 * above 2, since other threads open theirs without O_CLOEXEC at times. */
#ifndef GP_UTIL_SPAWN_H
#define GP_UTIL_SPAWN_H

#include <spawn.h>

/* Adds those settings to fa and at, both initialised by the caller, after its own
 * redirections of descriptors 0-2. */
void gp_spawn_isolate(posix_spawn_file_actions_t *fa, posix_spawnattr_t *at);

#endif
