/* SPDX-License-Identifier: Apache-2.0 */
/* Signal names both ways, and the narrower set a job may ask for at submission. */
#include <signal.h>

#include "test.h"
#include "util/signals.h"

static void names_and_numbers_parse(void) {
  CHECK_EQ_INT(SIGTERM, gp_signal_parse("TERM"));
  CHECK_EQ_INT(SIGTERM, gp_signal_parse("SIGTERM"));
  CHECK_EQ_INT(SIGTERM, gp_signal_parse("15"));
  CHECK_EQ_INT(SIGUSR1, gp_signal_parse("SIGUSR1"));
  CHECK_EQ_INT(SIGUSR2, gp_signal_parse("usr2"));
  CHECK_EQ_INT(SIGUSR2, gp_signal_parse("sigusr2"));
  CHECK_EQ_INT(SIGKILL, gp_signal_parse("KILL"));
  CHECK_EQ_INT(9, gp_signal_parse("9"));
  CHECK_EQ_INT(0, gp_signal_parse("NOPE"));
  CHECK_EQ_INT(0, gp_signal_parse("SIG"));
  CHECK_EQ_INT(0, gp_signal_parse("SIG15"));
  CHECK_EQ_INT(0, gp_signal_parse("15x"));
  CHECK_EQ_INT(0, gp_signal_parse("0"));
  CHECK_EQ_INT(0, gp_signal_parse("999"));
  CHECK_EQ_INT(0, gp_signal_parse(""));
  CHECK_EQ_INT(0, gp_signal_parse(NULL));
}

static void numbers_name_back(void) {
  CHECK_EQ_STR("INT", gp_signal_name(SIGINT));
  CHECK_EQ_STR("TERM", gp_signal_name(SIGTERM));
  CHECK_EQ_STR("SEGV", gp_signal_name(SIGSEGV));
  CHECK_EQ_STR("SIG40", gp_signal_name(40)); /* a real-time signal: no name */
  for (int s = 1; s < 32; s++) {
    const char *n = gp_signal_name(s);
    if (strncmp(n, "SIG", 3) != 0) CHECK_EQ_INT(s, gp_signal_parse(n));
  }
}

/* Jobs choose among signals they can catch to checkpoint or stop; numbers are refused
 * because they differ across systems. */
static void jobs_ask_for_catchable_signals_by_name(void) {
  CHECK_EQ_STR("USR1", gp_signal_job_name("usr1"));
  CHECK_EQ_STR("USR1", gp_signal_job_name("SIGUSR1"));
  CHECK_EQ_STR("TERM", gp_signal_job_name("TERM"));
  const char *offered[] = {"HUP", "INT", "QUIT", "USR1", "USR2", "TERM",
                           "CONT", "URG", "WINCH", "ALRM", "PWR"};
  for (size_t i = 0; i < sizeof offered / sizeof offered[0]; i++)
    CHECK_EQ_STR(offered[i], gp_signal_job_name(offered[i]));
  CHECK(!gp_signal_job_name("KILL"));
  CHECK(!gp_signal_job_name("STOP"));
  CHECK(!gp_signal_job_name("SEGV"));
  CHECK(!gp_signal_job_name("15"));
  CHECK(!gp_signal_job_name("SIG"));
  CHECK(!gp_signal_job_name(""));
  CHECK(!gp_signal_job_name("NOPE"));
  CHECK(!gp_signal_job_name(NULL));
}

GP_TESTS(names_and_numbers_parse, numbers_name_back, jobs_ask_for_catchable_signals_by_name)
