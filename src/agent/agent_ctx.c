/* SPDX-License-Identifier: Apache-2.0 */
/* The bottom of the agent: its clock, its log line, the queue of events for the next
 * heartbeat and atomic JSON files. Every agent file uses these; keeping them out of the run
 * loop (agent.c) means the job, order, HTTP and spot files do not call back into it. */
#include "agent/agent_int.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int64_t gp__agent_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void gp__agent_log(const char *fmt, ...) {
  char when[40];
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  struct tm tm;
  gmtime_r(&ts.tv_sec, &tm);
  size_t n = strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(when + n, sizeof when - n, ".%03dZ", (int)(ts.tv_nsec / 1000000));
  va_list ap;
  va_start(ap, fmt);
  char line[2048];
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  fprintf(stderr, "%s gpool agent: %s\n", when, line);
}

void gp__agent_event(gp_agent *a, json_t *ev) {
  json_array_append_new(a->events, ev);
}

int gp__agent_write_json(const char *path, json_t *doc) {
  char tmp[1024];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  char *text = json_dumps(doc, JSON_COMPACT);
  if (!text) return GP_ENOMEM;
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  int rc = GP_EIO;
  if (fd >= 0) {
    size_t len = strlen(text);
    if (write(fd, text, len) == (ssize_t)len && write(fd, "\n", 1) == 1 && fsync(fd) == 0) rc = 0;
    close(fd);
    if (rc == 0 && rename(tmp, path) != 0) rc = GP_EIO;
  }
  free(text);
  return rc;
}
