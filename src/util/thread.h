/* SPDX-License-Identifier: Apache-2.0 */
/* Threads nobody joins: a session's, a link relay's, a forwarded connection's; each ends
 * on its own and cleans up after itself. */
#ifndef GP_UTIL_THREAD_H
#define GP_UTIL_THREAD_H

/* Starts fn(arg) on a detached thread. Returns 0, or pthread_create's error (nothing runs:
 * `arg` is still the caller's). */
int gp_thread_start_detached(void *(*fn)(void *arg), void *arg);

#endif
