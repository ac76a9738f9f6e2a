/* SPDX-License-Identifier: Apache-2.0 */
/* Scenario tests of the scheduling rules (DESIGN.md §2), run through the real command a
 * user types: `gpool plan tests/core/scenarios/NAME.yaml -o json`. Each YAML file tells a
 * story in its header comment (the cluster, the jobs, why the expected plan is right); the
 * expected plan sits next to it:
 *
 *   NAME.json  the expected plan, as a pattern: every key written there must match (lists
 *              element by element, with the same length; numbers within 0.001; a "message"
 *              matches when it contains the expected text); keys left out are not checked,
 *              so a scenario states only what its rule decides. "preemptions": [] says
 *              "nothing is preempted".
 *   NAME.err   for a bad snapshot: the exact first line gpool prints on stderr (exit 1).
 *
 * Every scenario also runs twice and must print byte-identical plans (determinism). The
 * expectations were worked out by hand from DESIGN.md, not copied from the core. */
#include <dirent.h>
#include <jansson.h>
#include <stdbool.h>
#include <sys/stat.h>

#include "core/scenarios/list.h"
#include "test.h"

#define SCEN_DIR GP_SOURCE_DIR "/tests/core/scenarios"

typedef struct run_result {
  int status;  /* exit status, or -1 */
  char *out;   /* stdout */
  char *err;   /* stderr */
} run_result;

static char *slurp(FILE *f) {
  size_t cap = 4096, len = 0;
  char *s = malloc(cap);
  REQUIRE(s);
  size_t n;
  while ((n = fread(s + len, 1, cap - len - 1, f)) > 0) {
    len += n;
    if (cap - len < 2) {
      cap *= 2;
      s = realloc(s, cap);
      REQUIRE(s);
    }
  }
  s[len] = '\0';
  return s;
}

static char *read_file(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return NULL;
  char *s = slurp(f);
  fclose(f);
  return s;
}

/* Runs `gpool plan NAME.yaml -o json` inside the scenario directory, so messages name the
 * file as a user would type it. */
static run_result run_plan(const char *name) {
  const char *bin = getenv("GPOOL_BIN");
  REQUIRE(bin && *bin);
  char errpath[] = "/tmp/gp_scenario_XXXXXX";
  int fd = mkstemp(errpath);
  REQUIRE(fd >= 0);
  close(fd);
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "cd '%s' && '%s' plan '%s.yaml' -o json 2>'%s'", SCEN_DIR, bin,
           name, errpath);
  FILE *p = popen(cmd, "r");
  REQUIRE(p);
  run_result r = {0};
  r.out = slurp(p);
  int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  r.err = read_file(errpath);
  unlink(errpath);
  if (!r.err) r.err = strdup("");
  return r;
}

static void run_free(run_result *r) {
  free(r->out);
  free(r->err);
}

/* Pattern match of `want` against `got`; on a mismatch writes where and what into msg. */
static bool match(const json_t *want, const json_t *got, const char *path, const char *key,
                  char *msg, size_t size) {
  if (json_is_object(want)) {
    if (!json_is_object(got)) {
      snprintf(msg, size, "%s: expected an object", path);
      return false;
    }
    const char *k;
    json_t *w;
    json_object_foreach((json_t *)want, k, w) {
      char sub[512];
      snprintf(sub, sizeof sub, "%s%s%s", path, *path ? "." : "", k);
      json_t *g = json_object_get(got, k);
      if (!g) {
        snprintf(msg, size, "%s: missing", sub);
        return false;
      }
      if (!match(w, g, sub, k, msg, size)) return false;
    }
    return true;
  }
  if (json_is_array(want)) {
    if (!json_is_array(got)) {
      snprintf(msg, size, "%s: expected a list", path);
      return false;
    }
    if (json_array_size(want) != json_array_size(got)) {
      char *g = json_dumps(got, JSON_COMPACT | JSON_PRESERVE_ORDER);
      char *w = json_dumps(want, JSON_COMPACT | JSON_PRESERVE_ORDER);
      snprintf(msg, size, "%s: expected %zu entries, got %zu\n    expected: %.1500s\n    got:      %.1500s",
               path, json_array_size(want), json_array_size(got), w, g);
      free(g);
      free(w);
      return false;
    }
    for (size_t i = 0; i < json_array_size(want); i++) {
      char sub[512];
      snprintf(sub, sizeof sub, "%s[%zu]", path, i);
      if (!match(json_array_get(want, i), json_array_get(got, i), sub, key, msg, size))
        return false;
    }
    return true;
  }
  if (json_is_number(want)) {
    if (json_is_number(got) && fabs(json_number_value(want) - json_number_value(got)) < 1e-3)
      return true;
  } else if (json_is_string(want) && json_is_string(got)) {
    const char *w = json_string_value(want), *g = json_string_value(got);
    if (key && !strcmp(key, "message") ? strstr(g, w) != NULL : !strcmp(w, g)) return true;
  } else if (json_equal((json_t *)want, (json_t *)got)) {
    return true;
  }
  char *g = json_dumps(got, JSON_ENCODE_ANY | JSON_COMPACT);
  char *w = json_dumps(want, JSON_ENCODE_ANY | JSON_COMPACT);
  snprintf(msg, size, "%s: expected %s, got %s", path, w ? w : "?", g ? g : "?");
  free(g);
  free(w);
  return false;
}

static void run_scenario(const char *name) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s.yaml", SCEN_DIR, name);
  struct stat st;
  REQUIRE(stat(path, &st) == 0);
  run_result a = run_plan(name), b = run_plan(name);
  /* Determinism: the same snapshot gives the same bytes. */
  if (a.status != b.status || strcmp(a.out, b.out) || strcmp(a.err, b.err))
    GP_FAIL_("%s: two runs of the same snapshot printed different output", name);

  snprintf(path, sizeof path, "%s/%s.err", SCEN_DIR, name);
  char *want_err = read_file(path);
  if (want_err) {
    /* A bad snapshot: exit 1 and exactly this first line on stderr. */
    want_err[strcspn(want_err, "\n")] = '\0';
    a.err[strcspn(a.err, "\n")] = '\0';
    CHECK_EQ_INT(1, a.status);
    CHECK_EQ_STR(want_err, a.err);
    CHECK_EQ_STR("", a.out);
    free(want_err);
    run_free(&a);
    run_free(&b);
    return;
  }
  if (a.status != 0) GP_FAIL_("%s: gpool plan exited %d: %s", name, a.status, a.err);
  snprintf(path, sizeof path, "%s/%s.json", SCEN_DIR, name);
  json_error_t je;
  json_t *want = json_load_file(path, 0, &je);
  if (!want) GP_FAIL_("%s: %s:%d: %s", name, path, je.line, je.text);
  json_t *got = json_loads(a.out, 0, &je);
  if (!got) GP_FAIL_("%s: output is not JSON (%s): %.2000s", name, je.text, a.out);
  char msg[4096] = "";
  if (want && got && !match(want, got, "", NULL, msg, sizeof msg))
    GP_FAIL_("%s: the plan differs from %s.json\n  %s\n  --- whole plan ---\n%s", name, name,
             msg, a.out);
  json_decref(want);
  json_decref(got);
  run_free(&a);
  run_free(&b);
}

/* Every scenario file in the directory is one of the tests below, and has an expectation. */
#define SCENARIO_STRING(n) #n,
static const char *const scenario_names[] = {GP_SCENARIOS(SCENARIO_STRING) NULL};

static void every_scenario_file_is_run_and_has_an_expectation(void) {
  DIR *dir = opendir(SCEN_DIR);
  REQUIRE(dir);
  struct dirent *e;
  int n = 0;
  while ((e = readdir(dir))) {
    size_t len = strlen(e->d_name);
    if (len < 6 || strcmp(e->d_name + len - 5, ".yaml")) continue;
    n++;
    char name[256];
    snprintf(name, sizeof name, "%.*s", (int)(len - 5), e->d_name);
    bool listed = false;
    for (int i = 0; scenario_names[i]; i++) listed |= !strcmp(scenario_names[i], name);
    if (!listed) GP_FAIL_("%s.yaml is not listed in scenarios/list.h", name);
    char p1[1024], p2[1024];
    struct stat st;
    snprintf(p1, sizeof p1, "%s/%s.json", SCEN_DIR, name);
    snprintf(p2, sizeof p2, "%s/%s.err", SCEN_DIR, name);
    if (stat(p1, &st) != 0 && stat(p2, &st) != 0)
      GP_FAIL_("%s.yaml has neither %s.json nor %s.err", name, name, name);
  }
  closedir(dir);
  CHECK(n > 10);
}

#define SCENARIO_TEST(n) \
  static void n(void) { run_scenario(#n); }
GP_SCENARIOS(SCENARIO_TEST)

#define SCENARIO_ENTRY(n) n,
GP_TESTS(GP_SCENARIOS(SCENARIO_ENTRY) every_scenario_file_is_run_and_has_an_expectation)
