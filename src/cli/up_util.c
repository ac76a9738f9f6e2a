/* SPDX-License-Identifier: Apache-2.0 */
/* Files and processes of a `gpool up` pool (up_util.h). */
#include "cli/up_util.h"

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int gp_cli_up_mkdir_p(const char *dir) {
  char tmp[3100];
  snprintf(tmp, sizeof tmp, "%s", dir);
  for (char *p = tmp + 1; *p; p++) {
    if (*p != '/') continue;
    *p = '\0';
    if (mkdir(tmp, 0700) && errno != EEXIST) return -1;
    *p = '/';
  }
  return mkdir(tmp, 0700) && errno != EEXIST ? -1 : 0;
}

int gp_cli_up_random_token(char *out, size_t cap) {
  unsigned char raw[24];
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = read(fd, raw, sizeof raw);
  close(fd);
  if (n != (ssize_t)sizeof raw || cap < 2 * sizeof raw + 1) return -1;
  for (size_t i = 0; i < sizeof raw; i++) snprintf(out + 2 * i, 3, "%02x", raw[i]);
  return 0;
}

int gp_cli_up_write_file(const char *path, const char *text, mode_t mode) {
  char tmp[3200];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return -1;
  size_t len = strlen(text);
  int ok = write(fd, text, len) == (ssize_t)len && fsync(fd) == 0;
  close(fd);
  if (!ok || rename(tmp, path)) {
    unlink(tmp);
    return -1;
  }
  return 0;
}

/* The invoking user's name for the admin token; one that would not survive a quoted YAML
 * scalar unchanged (quotes, backslashes, control bytes) falls back to "admin". */
const char *gp_cli_up_user_name(void) {
  struct passwd *pw = getpwuid(getuid());
  const char *env = getenv("USER");
  const char *name = pw ? pw->pw_name : env && *env ? env : "admin";
  if (strlen(name) > 64) return "admin";
  for (const char *p = name; *p; p++)
    if (*p == '"' || *p == '\\' || *p == ',' || (unsigned char)*p < 0x20) return "admin";
  return name;
}

/* The start time of a live process in clock ticks since boot (field 22 of
 * /proc/PID/stat); 0 when there is no such process or it has exited (a zombie). */
unsigned long long gp_cli_up_proc_start(pid_t pid) {
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = '\0';
  /* The command name (field 2) may hold spaces and parentheses: count from its last ')'. */
  char *p = strrchr(buf, ')');
  if (!p || p[1] != ' ' || p[2] == 'Z' || p[2] == 'X') return 0;
  int field = 2;
  for (p++; *p && field < 22; p++)
    if (*p == ' ') field++;
  unsigned long long ticks = 0;
  return sscanf(p, "%llu", &ticks) == 1 ? ticks : 0;
}

/* Whether process pid runs `gpool ROLE ...` with `arg` among its arguments (NULL: any). */
bool gp_cli_up_runs_as(pid_t pid, const char *role, const char *arg) {
  char path[64], buf[8192];
  snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return false;
  buf[n] = '\0';
  const char *a1 = buf + strlen(buf) + 1;
  if (a1 >= buf + n || strcmp(a1, role) != 0) return false;
  if (!arg) return true;
  for (const char *a = a1; a < buf + n; a += strlen(a) + 1)
    if (!strcmp(a, arg)) return true;
  return false;
}

/* The last 2 KiB of a log file, on stderr, after the failure that it explains. */
void gp_cli_up_print_log_tail(const char *log) {
  FILE *f = fopen(log, "r");
  if (!f) return;
  char buf[2048];
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, size > (long)sizeof buf - 1 ? size - (long)sizeof buf + 1 : 0, SEEK_SET);
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = '\0';
  fclose(f);
  fprintf(stderr, "--- last lines of %s ---\n%s", log, buf);
}

int gp_cli_up_read_url(const char *path, char *out, size_t cap) {
  char line[256] = "";
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  int ok = fgets(line, sizeof line, f) != NULL;
  fclose(f);
  line[strcspn(line, "\r\n")] = '\0';
  const char *colon = strrchr(line, ':');
  int port = colon ? atoi(colon + 1) : 0;
  if (!ok || strncmp(line, "http", 4) || port <= 0 || port > 65535 || strlen(line) >= cap) return 0;
  snprintf(out, cap, "%s", line);
  return port;
}
