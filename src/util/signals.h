/* SPDX-License-Identifier: Apache-2.0 */
/* Signal names: the one table of the signals gpool names, used by the agent (a job's
 * checkpoint and stop signals, how a job's process died) and by `gpool submit --signal`.
 * A name is the short form ("TERM"); input may add "SIG" and use any case. Only a subset
 * is offered to jobs at submission: signals a job can catch to checkpoint or stop, and no
 * numbers (they differ across systems). */
#ifndef GP_UTIL_SIGNALS_H
#define GP_UTIL_SIGNALS_H

/* Parses a signal name ("TERM", "SIGUSR1", "usr1") or number ("15", 1 to NSIG-1) into its
 * number; 0 if unknown. */
int gp_signal_parse(const char *name);

/* The short name of a signal ("TERM"); for a signal outside the table, "SIG<n>" in a
 * thread-local buffer that the next call overwrites. */
const char *gp_signal_name(int sig);

/* The short name of a signal a job may ask for at submission ("usr1", "SIGUSR1" -> "USR1");
 * NULL for any other signal name and for numbers. The result is static. */
const char *gp_signal_job_name(const char *name);

#endif
