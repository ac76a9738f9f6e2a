/* SPDX-License-Identifier: Apache-2.0 */
/* The launcher starts a job's process so that it outlives the agent, and lets any later
 * agent (the same one, or one restarted after a crash) learn how it ended.
 *
 * Shape of a launched job:
 *   agent ──fork──> shim (new session, ignores job signals, holds no agent fds)
 *                     └──fork──> job (own process group = its pid; user, cwd, env, logs)
 * The shim waits for the job and writes "<exit_code> <signal>\n" to <dir>/exit (atomically,
 * via rename), then exits. The agent signals the job's process group (killpg(pid)), never the
 * shim. A restarted agent is no longer the shim's parent, so it learns the outcome from the
 * exit file; pid reuse is guarded by the start time from /proc/<pid>/stat.
 *
 * Everything the children need (argv, envp, paths, credentials) is prepared before fork:
 * the agent is multi-threaded, so between fork and exec the children only make system calls. */
#ifndef GP_AGENT_LAUNCHER_H
#define GP_AGENT_LAUNCHER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/error.h"

#define GP_LAUNCH_MAX_GROUPS 64

typedef struct gp_launch_spec {
  const char *dir;            /* the job's directory (exists; exit file goes here) */
  char *const *argv;          /* command, argv[0] looked up in the job's PATH */
  char *const *envp;          /* full environment of the job */
  const char *workdir;        /* chdir target; NULL: stay in `dir` */
  const char *stdout_path;    /* appended to; created 0640 */
  const char *stderr_path;
  /* The user's own files (-o/--error, already expanded), relative to workdir, opened as the
   * user by a copier that also feeds the two logs above (launch_output.h); NULL: none.
   * Without user_stderr, stderr goes to user_stdout's file. */
  const char *user_stdout;
  const char *user_stderr;
  bool user_append;           /* --open-mode=append; else truncated */
  bool switch_user;           /* run as uid/gid/groups (the agent must be root) */
  uid_t uid;
  gid_t gid;
  int n_groups;
  gid_t groups[GP_LAUNCH_MAX_GROUPS];
  const char *cgroup_procs;   /* "<cgroup>/cgroup.procs" to join before exec, or NULL */
} gp_launch_spec;

typedef struct gp_launch_result {
  pid_t pid;                  /* the job (leader of its process group) */
  pid_t shim_pid;             /* the waiting shim: a child of this process */
  uint64_t start_ticks;       /* the job's start time, field 22 of /proc/<pid>/stat */
  uint64_t shim_start_ticks;
} gp_launch_result;

/* Starts the job. Returns 0 once the job has exec'd its command; GP_EIO with a sentence in
 * err when it could not (no such command, workdir missing, cannot switch user, cgroup join
 * failed): then the job has already ended with exit code 127 and the exit file says so.
 * A failure before fork (cannot open logs) returns before anything ran. */
int gp_launch(const gp_launch_spec *spec, gp_launch_result *ret, gp_err *err);

/* Reads <dir>/exit. Returns 0 with the exit code (-1 when killed by a signal) and the
 * signal (0 when it exited), GP_ENOENT when the job has not ended (or the shim died before
 * writing it), GP_EPARSE when the file is damaged. */
int gp_launch_read_exit(const char *dir, int *ret_exit_code, int *ret_signal);

/* The start time of `pid` in clock ticks since boot (field 22 of /proc/<pid>/stat), or
 * GP_ENOENT when there is no such process. */
int gp_proc_start_ticks(pid_t pid, uint64_t *ret_ticks);

/* True when `pid` exists and is the same process (same start time) and not a zombie. */
bool gp_proc_alive(pid_t pid, uint64_t start_ticks);

/* The process group id and parent of `pid` from /proc (GP_ENOENT when gone). */
int gp_proc_pgrp_ppid(pid_t pid, pid_t *ret_pgrp, pid_t *ret_ppid);

#endif
