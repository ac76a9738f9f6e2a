/* SPDX-License-Identifier: Apache-2.0 */
/* Detached threads (src/util/thread.c): the function runs with its argument, on a thread
 * of its own. */
#include <pthread.h>
#include <time.h>

#include "test.h"
#include "util/thread.h"

typedef struct ran {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  int value;
  pthread_t self;
} ran;

static void *mark(void *arg) {
  ran *r = arg;
  pthread_mutex_lock(&r->lock);
  r->value = 42;
  r->self = pthread_self();
  pthread_cond_signal(&r->cond);
  pthread_mutex_unlock(&r->lock);
  return NULL;
}

static void a_detached_thread_runs_its_function(void) {
  ran r = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};
  CHECK_EQ_INT(0, gp_thread_start_detached(mark, &r));
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += 5;
  pthread_mutex_lock(&r.lock);
  while (r.value == 0 && pthread_cond_timedwait(&r.cond, &r.lock, &until) == 0) {
  }
  int value = r.value;
  pthread_t self = r.self;
  pthread_mutex_unlock(&r.lock);
  CHECK_EQ_INT(42, value);
  CHECK(!pthread_equal(self, pthread_self()));
}

GP_TESTS(a_detached_thread_runs_its_function)
