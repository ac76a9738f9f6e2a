/* SPDX-License-Identifier: Apache-2.0 */
/* The signal table behind signals.h. */
#include "util/signals.h"

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

/* `job`: offered to jobs at submission (gpool submit --signal, sbatch's --signal). */
static const struct {
  const char *name;
  int sig;
  bool job;
} signals[] = {
    {"HUP", SIGHUP, true},      {"INT", SIGINT, true},       {"QUIT", SIGQUIT, true},
    {"KILL", SIGKILL, false},   {"USR1", SIGUSR1, true},     {"USR2", SIGUSR2, true},
    {"TERM", SIGTERM, true},    {"ALRM", SIGALRM, true},     {"CONT", SIGCONT, true},
    {"STOP", SIGSTOP, false},   {"XCPU", SIGXCPU, false},    {"PWR", SIGPWR, true},
    {"ABRT", SIGABRT, false},   {"SEGV", SIGSEGV, false},    {"PIPE", SIGPIPE, false},
    {"BUS", SIGBUS, false},     {"FPE", SIGFPE, false},      {"ILL", SIGILL, false},
    {"TRAP", SIGTRAP, false},   {"URG", SIGURG, true},       {"WINCH", SIGWINCH, true},
    {"XFSZ", SIGXFSZ, false},   {"VTALRM", SIGVTALRM, false}, {"PROF", SIGPROF, false},
    {"TSTP", SIGTSTP, false},   {"TTIN", SIGTTIN, false},    {"TTOU", SIGTTOU, false},
    {"SYS", SIGSYS, false},
};
#define N_SIGNALS (sizeof signals / sizeof signals[0])

/* The table's entry for a name with or without "SIG", in any case; -1 when none. */
static int find_name(const char *name) {
  if (strncasecmp(name, "SIG", 3) == 0) name += 3;
  for (size_t i = 0; i < N_SIGNALS; i++)
    if (strcasecmp(name, signals[i].name) == 0) return (int)i;
  return -1;
}

int gp_signal_parse(const char *name) {
  if (!name || !*name) return 0;
  if (name[0] >= '0' && name[0] <= '9') {
    char *end = NULL;
    long v = strtol(name, &end, 10);
    return (*end == '\0' && v > 0 && v < NSIG) ? (int)v : 0;
  }
  int i = find_name(name);
  return i < 0 ? 0 : signals[i].sig;
}

const char *gp_signal_name(int sig) {
  for (size_t i = 0; i < N_SIGNALS; i++)
    if (signals[i].sig == sig) return signals[i].name;
  static _Thread_local char buf[16];
  snprintf(buf, sizeof buf, "SIG%d", sig);
  return buf;
}

const char *gp_signal_job_name(const char *name) {
  if (!name) return NULL;
  int i = find_name(name);
  return i >= 0 && signals[i].job ? signals[i].name : NULL;
}
