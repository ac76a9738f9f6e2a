/* SPDX-License-Identifier: Apache-2.0 */
/* The node's image inventory (images.h): the engine's answer parsed and bounded, and the
 * engine's commands run with their output read (image_lru.c reads and trims the store). */
#include "agent/images.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/agent_int.h"
#include "protocol/container.h"
#include "util/mem.h"

json_t *gp_agent_images_parse(const char *text, size_t len) {
  json_t *doc = json_loadb(text, len, 0, NULL);
  if (!json_is_array(doc)) {
    json_decref(doc);
    return NULL;
  }
  json_t *out = json_array();
  size_t i;
  json_t *im;
  json_array_foreach(doc, i, im) {
    if (json_array_size(out) >= GP_AGENT_MAX_IMAGES) break;
    const json_t *names = json_object_get(im, "Names");
    json_t *keep = json_array();
    size_t k;
    json_t *nm;
    json_array_foreach(names, k, nm) {
      const char *s = json_string_value(nm);
      if (s && json_array_size(keep) < GP_AGENT_MAX_IMAGE_NAMES && !gp_proto_image_check(s))
        json_array_append_new(keep, json_string(s));
    }
    const json_t *size = json_object_get(im, "Size");
    if (json_array_size(keep) == 0) {
      json_decref(keep);
      continue; /* an untagged layer: no job names it */
    }
    json_t *o = json_object();
    json_object_set_new(o, "names", keep);
    json_object_set_new(o, "size", json_integer(json_is_integer(size) && json_integer_value(size) >= 0
                                                    ? json_integer_value(size) : 0));
    json_array_append_new(out, o);
  }
  json_decref(doc);
  return out;
}

/* Runs argv and reads its stdout (at most GP_AGENT_IMAGES_OUTPUT_MAX bytes, 10 s). */
char *gp__agent_images_capture(char **argv, size_t *ret_len) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) return NULL;
  pid_t pid = fork();
  if (pid < 0) {
    close(p[0]);
    close(p[1]);
    return NULL;
  }
  if (pid == 0) {
    int null = open("/dev/null", O_RDWR);
    dup2(null, 0);
    dup2(p[1], 1);
    dup2(null, 2);
    execv(argv[0], argv);
    _exit(127);
  }
  close(p[1]);
  size_t cap = 65536, len = 0;
  char *buf = gp_xmalloc(cap);
  int64_t deadline = gp__agent_now_ms() + 10000;
  bool ok = true;
  for (;;) {
    int64_t left = deadline - gp__agent_now_ms();
    struct pollfd pf = {.fd = p[0], .events = POLLIN};
    if (left <= 0 || (poll(&pf, 1, (int)left) < 0 && errno != EINTR)) {
      ok = false;
      break;
    }
    if (len + 4096 > cap) {
      if (cap >= GP_AGENT_IMAGES_OUTPUT_MAX) {
        ok = false;
        break;
      }
      cap *= 2;
      buf = gp_xrealloc(buf, cap);
    }
    ssize_t n = read(p[0], buf + len, cap - len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    len += (size_t)n;
  }
  close(p[0]);
  if (!ok) kill(pid, SIGKILL);
  int st;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
  if (!ok || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    free(buf);
    return NULL;
  }
  *ret_len = len;
  return buf;
}
