/* SPDX-License-Identifier: Apache-2.0 */
/* Detached threads (thread.h). */
#include "util/thread.h"

#include <pthread.h>

int gp_thread_start_detached(void *(*fn)(void *arg), void *arg) {
  pthread_t t;
  pthread_attr_t at;
  pthread_attr_init(&at);
  pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
  int rc = pthread_create(&t, &at, fn, arg);
  pthread_attr_destroy(&at);
  return rc;
}
