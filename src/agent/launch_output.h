/* SPDX-License-Identifier: Apache-2.0 */
/* A job's own output files (-o/--output, --error; docs/user-guide.md): a copier process,
 * forked by the launcher's shim, writes everything the job prints both to the agent's log
 * of the job (what `gpool logs` reads) and to the files the user named. It runs as the job's
 * user and opens the files relative to the job's working directory, so it can create or
 * write only what the user could; it is in a process group of its own, so the signals the
 * job's group receives (checkpoint, stop) do not cut its output short.
 *
 * Runs between fork and exec of the agent's children: system calls only (launcher.c). */
#ifndef GP_AGENT_LAUNCH_OUTPUT_H
#define GP_AGENT_LAUNCH_OUTPUT_H

#include <sys/types.h>

#include "agent/launcher.h"

/* Forks the copier when spec names a user file. Returns its pid, with *ret_out and *ret_err
 * the write ends the job takes as stdout and stderr (the caller closes its copies once the
 * job is forked); 0 when spec names no file (nothing was done); -1 with *ret_errno when the
 * copier could not open a file (or could not switch user) or fork failed. log_out and
 * log_err are the agent's own log files; shim_fd is a descriptor the copier must not hold
 * (the launcher's report pipe, whose end tells the agent the job exec'd). */
pid_t gp__agent_launch_output_start(const gp_launch_spec *spec, int log_out, int log_err, int shim_fd,
                              int *ret_out, int *ret_err, int *ret_errno);

/* Waits up to max_ms for the copier to drain and end (a job's leftover background process
 * may hold its output open for longer: then the copier goes on without being waited for). */
void gp__agent_launch_output_wait(pid_t copier, int max_ms);

#endif
