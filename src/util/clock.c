/* SPDX-License-Identifier: Apache-2.0 */
/* The monotonic clock and deadline waits (clock.h). */
#include "util/clock.h"

#include <time.h>

int64_t gp_mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int gp_cond_wait_until_ms(pthread_cond_t *cond, pthread_mutex_t *mutex, int64_t deadline_ms) {
  struct timespec ts = {.tv_sec = deadline_ms / 1000, .tv_nsec = (deadline_ms % 1000) * 1000000};
  return pthread_cond_timedwait(cond, mutex, &ts);
}

void gp_cond_init_monotonic(pthread_cond_t *cond) {
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(cond, &ca);
  pthread_condattr_destroy(&ca);
}
