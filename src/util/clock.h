/* SPDX-License-Identifier: Apache-2.0 */
/* The monotonic clock in milliseconds, and waiting on a condition variable until a moment of
 * it: threads that sleep until their next deadline (the server's state thread, its lease and
 * event-stream threads) compute deadlines on this clock, which no wall-clock step moves. */
#ifndef GP_UTIL_CLOCK_H
#define GP_UTIL_CLOCK_H

#include <pthread.h>
#include <stdint.h>

/* CLOCK_MONOTONIC in milliseconds. */
int64_t gp_mono_ms(void);

/* Makes a condition variable whose timed waits read the monotonic clock. */
void gp_cond_init_monotonic(pthread_cond_t *cond);

/* pthread_cond_timedwait until gp_mono_ms() reads `deadline_ms` (the mutex held). The
 * condition variable must have been made with CLOCK_MONOTONIC (pthread_condattr_setclock).
 * Returns as pthread_cond_timedwait does: 0 when signalled, ETIMEDOUT at the deadline. */
int gp_cond_wait_until_ms(pthread_cond_t *cond, pthread_mutex_t *mutex, int64_t deadline_ms);

#endif
