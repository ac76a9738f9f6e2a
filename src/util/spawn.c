/* SPDX-License-Identifier: Apache-2.0 */
/* One definition of how gpool isolates the helper programs it spawns (spawn.h). */
#include "util/spawn.h"

#include <signal.h>

void gp_spawn_isolate(posix_spawn_file_actions_t *fa, posix_spawnattr_t *at) {
  posix_spawn_file_actions_addclosefrom_np(fa, 3);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  sigdelset(&all, SIGKILL);
  sigdelset(&all, SIGSTOP);
  posix_spawnattr_setsigmask(at, &none);
  posix_spawnattr_setsigdefault(at, &all);
  posix_spawnattr_setpgroup(at, 0);
  posix_spawnattr_setflags(at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
}
