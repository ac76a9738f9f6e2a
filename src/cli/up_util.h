/* SPDX-License-Identifier: Apache-2.0 */
/* Files and processes of a `gpool up` pool (up.c): its private files (made atomically,
 * mode given), its tokens, and the checks that tell a pool's own process from another
 * that got the same pid. */
#ifndef GP_CLI_UP_UTIL_H
#define GP_CLI_UP_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* mkdir -p with mode 0700; 0 or -1 (errno). */
int gp_cli_up_mkdir_p(const char *dir);
/* 48 hex characters from /dev/urandom into out; 0 or -1. */
int gp_cli_up_random_token(char *out, size_t cap);
/* Writes text to path through a temporary file and rename, fsync'd, with `mode`; 0 or -1. */
int gp_cli_up_write_file(const char *path, const char *text, mode_t mode);
/* The invoking user's name for the admin token ("admin" when it would not quote safely). */
const char *gp_cli_up_user_name(void);
/* A live process's start time in clock ticks since boot; 0 when none (or a zombie). */
unsigned long long gp_cli_up_proc_start(pid_t pid);
/* Whether process pid runs `gpool ROLE ...` with `arg` among its arguments (NULL: any). */
bool gp_cli_up_runs_as(pid_t pid, const char *role, const char *arg);
/* The URL a server wrote to `path` (server.url, agent.url) into out; its port, or 0 while
 * the file is missing or holds no http(s) URL with a port. */
int gp_cli_up_read_url(const char *path, char *out, size_t cap);
/* The last 2 KiB of a log file, on stderr. */
void gp_cli_up_print_log_tail(const char *log);

#endif
