/* SPDX-License-Identifier: Apache-2.0 */
/* gpool's test runner: each test is a function, runs in its own process with a timeout
 * (a crash or hang fails that test only), and a failed check prints the file, line, the
 * expression and both values, so a failure reads without a debugger.
 *
 *   static void fair_share_splits_by_weight(void) { CHECK_EQ_INT(2, got); }
 *   GP_TESTS(fair_share_splits_by_weight, other_test)
 *
 * Run one test by name: ./core_fairshare_test fair_share_splits_by_weight */
#ifndef GP_TEST_H
#define GP_TEST_H

#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct gp_test_case {
  const char *name;
  void (*fn)(void);
} gp_test_case;

static int gp_test_failures_ = 0;

#define GP_FAIL_(...)                                                  \
  do {                                                                 \
    fprintf(stderr, "  FAIL %s:%d: ", __FILE__, __LINE__);             \
    fprintf(stderr, __VA_ARGS__);                                      \
    fputc('\n', stderr);                                               \
    gp_test_failures_++;                                               \
  } while (0)

/* CHECK continues after a failure; REQUIRE stops the test (use it before dereferencing). */
#define CHECK(cond) \
  do { if (!(cond)) GP_FAIL_("expected %s", #cond); } while (0)
#define REQUIRE(cond) \
  do { if (!(cond)) { GP_FAIL_("required %s", #cond); exit(1); } } while (0)
#define CHECK_EQ_INT(expected, actual)                                            \
  do {                                                                            \
    long long e_ = (long long)(expected), a_ = (long long)(actual);              \
    if (e_ != a_) GP_FAIL_("%s == %s: expected %lld, got %lld", #actual, #expected, e_, a_); \
  } while (0)
#define CHECK_EQ_STR(expected, actual)                                            \
  do {                                                                            \
    const char *e_ = (expected), *a_ = (actual);                                  \
    if (!e_ || !a_ || strcmp(e_, a_) != 0)                                        \
      GP_FAIL_("%s: expected \"%s\", got \"%s\"", #actual, e_ ? e_ : "(null)", a_ ? a_ : "(null)"); \
  } while (0)
#define CHECK_NEAR(expected, actual, eps)                                         \
  do {                                                                            \
    double e_ = (expected), a_ = (actual);                                        \
    if (!(fabs(e_ - a_) <= (eps)))                                                \
      GP_FAIL_("%s: expected %.6g (+-%g), got %.6g", #actual, e_, (double)(eps), a_); \
  } while (0)
#define CHECK_CONTAINS(haystack, needle)                                          \
  do {                                                                            \
    const char *h_ = (haystack), *n_ = (needle);                                  \
    if (!h_ || !strstr(h_, n_))                                                   \
      GP_FAIL_("%s: expected to contain \"%s\", got \"%s\"", #haystack, n_, h_ ? h_ : "(null)"); \
  } while (0)

static int gp_test_run_one_(const gp_test_case *t, unsigned timeout_s) {
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    alarm(timeout_s);
    t->fn();
    fflush(NULL);
    _exit(gp_test_failures_ ? 1 : 0);
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) < 0) return 1;
  if (WIFSIGNALED(status)) {
    fprintf(stderr, "  FAIL %s: killed by signal %d%s\n", t->name, WTERMSIG(status),
            WTERMSIG(status) == SIGALRM ? " (timeout)" : "");
    return 1;
  }
  return WEXITSTATUS(status) != 0;
}

static int gp_test_main_(const char *file, const gp_test_case *tests, size_t n, int argc,
                         char **argv) {
  unsigned timeout_s = getenv("GP_TEST_TIMEOUT") ? (unsigned)atoi(getenv("GP_TEST_TIMEOUT")) : 120;
  int failed = 0, ran = 0;
  for (size_t i = 0; i < n; i++) {
    if (argc > 1 && strcmp(argv[1], tests[i].name) != 0) continue;
    ran++;
    int bad = gp_test_run_one_(&tests[i], timeout_s);
    printf("%s %s\n", bad ? "not ok" : "ok    ", tests[i].name);
    failed += bad;
  }
  printf("%s: %d/%d passed\n", file, ran - failed, ran);
  return failed ? 1 : (ran ? 0 : 1);
}

#define GP_TEST_ENTRY_(fn) {#fn, fn},
#define GP_TESTS(...)                                                             \
  int main(int argc, char **argv) {                                               \
    static const gp_test_case tests_[] = {GP_TEST_FOREACH_(GP_TEST_ENTRY_, __VA_ARGS__)}; \
    return gp_test_main_(__FILE__, tests_, sizeof tests_ / sizeof tests_[0], argc, argv); \
  }

/* A bounded FOREACH (up to 64 tests per file) so GP_TESTS takes a plain list. */
#define GP_TEST_FOREACH_(m, ...) GP_TF_N_(__VA_ARGS__, GP_TF_SEQ_)(m, __VA_ARGS__)
#define GP_TF_N_(...) GP_TF_PICK_(__VA_ARGS__)
#define GP_TF_PICK_(_1,_2,_3,_4,_5,_6,_7,_8,_9,_10,_11,_12,_13,_14,_15,_16,_17,_18,_19,_20,\
  _21,_22,_23,_24,_25,_26,_27,_28,_29,_30,_31,_32,_33,_34,_35,_36,_37,_38,_39,_40,_41,_42,\
  _43,_44,_45,_46,_47,_48,_49,_50,_51,_52,_53,_54,_55,_56,_57,_58,_59,_60,_61,_62,_63,_64,N,...) N
#define GP_TF_SEQ_ GP_TF64_,GP_TF63_,GP_TF62_,GP_TF61_,GP_TF60_,GP_TF59_,GP_TF58_,GP_TF57_,\
  GP_TF56_,GP_TF55_,GP_TF54_,GP_TF53_,GP_TF52_,GP_TF51_,GP_TF50_,GP_TF49_,GP_TF48_,GP_TF47_,\
  GP_TF46_,GP_TF45_,GP_TF44_,GP_TF43_,GP_TF42_,GP_TF41_,GP_TF40_,GP_TF39_,GP_TF38_,GP_TF37_,\
  GP_TF36_,GP_TF35_,GP_TF34_,GP_TF33_,GP_TF32_,GP_TF31_,GP_TF30_,GP_TF29_,GP_TF28_,GP_TF27_,\
  GP_TF26_,GP_TF25_,GP_TF24_,GP_TF23_,GP_TF22_,GP_TF21_,GP_TF20_,GP_TF19_,GP_TF18_,GP_TF17_,\
  GP_TF16_,GP_TF15_,GP_TF14_,GP_TF13_,GP_TF12_,GP_TF11_,GP_TF10_,GP_TF9_,GP_TF8_,GP_TF7_,\
  GP_TF6_,GP_TF5_,GP_TF4_,GP_TF3_,GP_TF2_,GP_TF1_
#define GP_TF1_(m, a) m(a)
#define GP_TF2_(m, a, ...) m(a) GP_TF1_(m, __VA_ARGS__)
#define GP_TF3_(m, a, ...) m(a) GP_TF2_(m, __VA_ARGS__)
#define GP_TF4_(m, a, ...) m(a) GP_TF3_(m, __VA_ARGS__)
#define GP_TF5_(m, a, ...) m(a) GP_TF4_(m, __VA_ARGS__)
#define GP_TF6_(m, a, ...) m(a) GP_TF5_(m, __VA_ARGS__)
#define GP_TF7_(m, a, ...) m(a) GP_TF6_(m, __VA_ARGS__)
#define GP_TF8_(m, a, ...) m(a) GP_TF7_(m, __VA_ARGS__)
#define GP_TF9_(m, a, ...) m(a) GP_TF8_(m, __VA_ARGS__)
#define GP_TF10_(m, a, ...) m(a) GP_TF9_(m, __VA_ARGS__)
#define GP_TF11_(m, a, ...) m(a) GP_TF10_(m, __VA_ARGS__)
#define GP_TF12_(m, a, ...) m(a) GP_TF11_(m, __VA_ARGS__)
#define GP_TF13_(m, a, ...) m(a) GP_TF12_(m, __VA_ARGS__)
#define GP_TF14_(m, a, ...) m(a) GP_TF13_(m, __VA_ARGS__)
#define GP_TF15_(m, a, ...) m(a) GP_TF14_(m, __VA_ARGS__)
#define GP_TF16_(m, a, ...) m(a) GP_TF15_(m, __VA_ARGS__)
#define GP_TF17_(m, a, ...) m(a) GP_TF16_(m, __VA_ARGS__)
#define GP_TF18_(m, a, ...) m(a) GP_TF17_(m, __VA_ARGS__)
#define GP_TF19_(m, a, ...) m(a) GP_TF18_(m, __VA_ARGS__)
#define GP_TF20_(m, a, ...) m(a) GP_TF19_(m, __VA_ARGS__)
#define GP_TF21_(m, a, ...) m(a) GP_TF20_(m, __VA_ARGS__)
#define GP_TF22_(m, a, ...) m(a) GP_TF21_(m, __VA_ARGS__)
#define GP_TF23_(m, a, ...) m(a) GP_TF22_(m, __VA_ARGS__)
#define GP_TF24_(m, a, ...) m(a) GP_TF23_(m, __VA_ARGS__)
#define GP_TF25_(m, a, ...) m(a) GP_TF24_(m, __VA_ARGS__)
#define GP_TF26_(m, a, ...) m(a) GP_TF25_(m, __VA_ARGS__)
#define GP_TF27_(m, a, ...) m(a) GP_TF26_(m, __VA_ARGS__)
#define GP_TF28_(m, a, ...) m(a) GP_TF27_(m, __VA_ARGS__)
#define GP_TF29_(m, a, ...) m(a) GP_TF28_(m, __VA_ARGS__)
#define GP_TF30_(m, a, ...) m(a) GP_TF29_(m, __VA_ARGS__)
#define GP_TF31_(m, a, ...) m(a) GP_TF30_(m, __VA_ARGS__)
#define GP_TF32_(m, a, ...) m(a) GP_TF31_(m, __VA_ARGS__)
#define GP_TF33_(m, a, ...) m(a) GP_TF32_(m, __VA_ARGS__)
#define GP_TF34_(m, a, ...) m(a) GP_TF33_(m, __VA_ARGS__)
#define GP_TF35_(m, a, ...) m(a) GP_TF34_(m, __VA_ARGS__)
#define GP_TF36_(m, a, ...) m(a) GP_TF35_(m, __VA_ARGS__)
#define GP_TF37_(m, a, ...) m(a) GP_TF36_(m, __VA_ARGS__)
#define GP_TF38_(m, a, ...) m(a) GP_TF37_(m, __VA_ARGS__)
#define GP_TF39_(m, a, ...) m(a) GP_TF38_(m, __VA_ARGS__)
#define GP_TF40_(m, a, ...) m(a) GP_TF39_(m, __VA_ARGS__)
#define GP_TF41_(m, a, ...) m(a) GP_TF40_(m, __VA_ARGS__)
#define GP_TF42_(m, a, ...) m(a) GP_TF41_(m, __VA_ARGS__)
#define GP_TF43_(m, a, ...) m(a) GP_TF42_(m, __VA_ARGS__)
#define GP_TF44_(m, a, ...) m(a) GP_TF43_(m, __VA_ARGS__)
#define GP_TF45_(m, a, ...) m(a) GP_TF44_(m, __VA_ARGS__)
#define GP_TF46_(m, a, ...) m(a) GP_TF45_(m, __VA_ARGS__)
#define GP_TF47_(m, a, ...) m(a) GP_TF46_(m, __VA_ARGS__)
#define GP_TF48_(m, a, ...) m(a) GP_TF47_(m, __VA_ARGS__)
#define GP_TF49_(m, a, ...) m(a) GP_TF48_(m, __VA_ARGS__)
#define GP_TF50_(m, a, ...) m(a) GP_TF49_(m, __VA_ARGS__)
#define GP_TF51_(m, a, ...) m(a) GP_TF50_(m, __VA_ARGS__)
#define GP_TF52_(m, a, ...) m(a) GP_TF51_(m, __VA_ARGS__)
#define GP_TF53_(m, a, ...) m(a) GP_TF52_(m, __VA_ARGS__)
#define GP_TF54_(m, a, ...) m(a) GP_TF53_(m, __VA_ARGS__)
#define GP_TF55_(m, a, ...) m(a) GP_TF54_(m, __VA_ARGS__)
#define GP_TF56_(m, a, ...) m(a) GP_TF55_(m, __VA_ARGS__)
#define GP_TF57_(m, a, ...) m(a) GP_TF56_(m, __VA_ARGS__)
#define GP_TF58_(m, a, ...) m(a) GP_TF57_(m, __VA_ARGS__)
#define GP_TF59_(m, a, ...) m(a) GP_TF58_(m, __VA_ARGS__)
#define GP_TF60_(m, a, ...) m(a) GP_TF59_(m, __VA_ARGS__)
#define GP_TF61_(m, a, ...) m(a) GP_TF60_(m, __VA_ARGS__)
#define GP_TF62_(m, a, ...) m(a) GP_TF61_(m, __VA_ARGS__)
#define GP_TF63_(m, a, ...) m(a) GP_TF62_(m, __VA_ARGS__)
#define GP_TF64_(m, a, ...) m(a) GP_TF63_(m, __VA_ARGS__)

#endif
