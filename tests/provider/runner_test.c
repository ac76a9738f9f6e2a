/* SPDX-License-Identifier: Apache-2.0 */
/* The provider runner against real child processes: small sh scripts written to a
 * temporary directory play good and hostile providers. Every call must end with a result
 * or an error naming its reason, within the deadline, and leave no child process (the
 * provider's whole process group is gone, its pid reaped). */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "provider/provider.h"
#include "test.h"

static char dir[256];
static char script[300];

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void read_text(const char *path, char *buf, size_t size) {
  buf[0] = '\0';
  FILE *f = fopen(path, "r");
  if (!f) return;
  size_t n = fread(buf, 1, size - 1, f);
  buf[n] = '\0';
  fclose(f);
}

/* Writes the provider script (a sh body) into a fresh temporary directory; the body can
 * use $D for that directory. */
static void provider(const char *body) {
  snprintf(dir, sizeof dir, "/tmp/gp_prov_XXXXXX");
  REQUIRE(mkdtemp(dir));
  snprintf(script, sizeof script, "%s/provider.sh", dir);
  FILE *f = fopen(script, "w");
  REQUIRE(f);
  fprintf(f, "#!/bin/sh\nD=%s\n%s\n", dir, body);
  fclose(f);
  chmod(script, 0755);
}

static const char *const env_extra[] = {"CLOUD_REGION=eu-west-1"};
static const char *const label_keys[] = {"zone"};
static const char *const label_values[] = {"a"};

static gp_provider_template tmpl(void) {
  gp_provider_template t = {.name = "a100-spot", .provider = script, .model = "A100",
                            .capacity = "spot", .gpus = 8, .gpu_mem_mib = 81920,
                            .price_per_gpu_hour = 1.25, .max_nodes = 4, .n_labels = 1,
                            .label_keys = label_keys, .label_values = label_values,
                            .n_env = 1, .env = env_extra};
  return t;
}

/* Runs one call and checks that it left no child behind. */
static int call(gp_provider_verb verb, int count, int timeout_ms, gp_provider_result *res,
                gp_provider_error *e) {
  gp_provider_template t = tmpl();
  static const char *const ids[] = {"i-1", "i-2"};
  gp_provider_request req = {.verb = verb, .tmpl = &t, .count = count, .n_instances = 2,
                             .instances = ids, .idempotency_key = "scale-42",
                             .deadline_ms = now_ms() + timeout_ms};
  int r = gp_provider_run(&req, res, e);
  CHECK(waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD);
  return r;
}

/* Live (not zombie) processes in process group `pgid`, from /proc. Killed grandchildren
 * are orphans that this machine's init may reap late, so zombies do not count. */
static int live_in_group(int pgid) {
  int live = 0;
  DIR *d = opendir("/proc");
  if (!d) return -1;
  struct dirent *de;
  while ((de = readdir(d))) {
    if (de->d_name[0] < '0' || de->d_name[0] > '9') continue;
    char path[300], text[1024];
    snprintf(path, sizeof path, "/proc/%s/stat", de->d_name);
    read_text(path, text, sizeof text);
    const char *p = strrchr(text, ')');
    char state;
    int ppid, pgrp;
    if (p && sscanf(p + 1, " %c %d %d", &state, &ppid, &pgrp) == 3 && pgrp == pgid &&
        state != 'Z' && state != 'X')
      live++;
  }
  closedir(d);
  return live;
}

/* The process group the script recorded (its $$ in $D/pid) has no live process left;
 * SIGKILL takes a moment to land, so this waits up to 1 s. */
static void check_group_gone(void) {
  char path[320], text[32];
  snprintf(path, sizeof path, "%s/pid", dir);
  read_text(path, text, sizeof text);
  int pid = atoi(text);
  REQUIRE(pid > 1);
  for (int i = 0; i < 100 && live_in_group(pid) != 0; i++) {
    struct timespec ts = {0, 10 * 1000000};
    nanosleep(&ts, NULL);
  }
  CHECK_EQ_INT(0, live_in_group(pid));
}

static void expect_broken(int r, const gp_provider_error *e, const char *why) {
  CHECK_EQ_INT(GP_EIO, r);
  CHECK_EQ_STR("broken", gp_provider_class_name(e->cls));
  CHECK_CONTAINS(e->message, why);
}

static void test_create_answers_instances(void) {
  provider("cat > $D/request.json; echo \"$1\" > $D/verb; env > $D/env\n"
           "echo '{\"instances\": [{\"id\": \"i-0abc\", \"node\": \"gpu-1\", \"capacity\": \"spot\","
           " \"price\": 1.1}, {\"id\": \"i-0abd\", \"node\": \"gpu-2\"}]}'");
  setenv("GPOOL_SECRET_FOR_TEST", "leak", 1);
  gp_provider_result res;
  gp_provider_error e;
  int r = call(GP_PROVIDER_CREATE, 2, 5000, &res, &e);
  CHECK_EQ_INT(0, r);
  CHECK_EQ_INT(2, res.n);
  CHECK_EQ_STR("i-0abc", res.instances[0].id);
  CHECK_EQ_STR("gpu-1", res.instances[0].node);
  CHECK_EQ_STR("spot", res.instances[0].capacity);
  CHECK_NEAR(1.1, res.instances[0].price_per_gpu_hour, 1e-9);
  CHECK_EQ_STR("gpu-2", res.instances[1].node);
  CHECK(res.instances[1].price_per_gpu_hour < 0);
  CHECK_EQ_INT(0, res.exit_status);
  gp_provider_result_done(&res);
  char path[320], text[8192];
  snprintf(path, sizeof path, "%s/verb", dir);
  read_text(path, text, sizeof text);
  CHECK_EQ_STR("create\n", text);
  snprintf(path, sizeof path, "%s/request.json", dir);
  read_text(path, text, sizeof text);
  CHECK_CONTAINS(text, "\"count\":2");
  CHECK_CONTAINS(text, "\"idempotency_key\":\"scale-42\"");
  CHECK_CONTAINS(text, "\"name\":\"a100-spot\"");
  CHECK_CONTAINS(text, "\"labels\":{\"zone\":\"a\"}");
  CHECK_CONTAINS(text, "\"deadline\":");
  /* A clean environment: the template's env, never the server's. */
  snprintf(path, sizeof path, "%s/env", dir);
  read_text(path, text, sizeof text);
  CHECK_CONTAINS(text, "CLOUD_REGION=eu-west-1");
  CHECK_CONTAINS(text, "GPOOL_TEMPLATE=a100-spot");
  CHECK(!strstr(text, "GPOOL_SECRET_FOR_TEST"));
}

static void test_delete_and_list(void) {
  provider("cat > $D/request.json\n"
           "case \"$1\" in delete) echo '{\"deleted\": [\"i-2\"]}';;\n"
           "list) echo '{\"instances\": [{\"id\": \"i-1\", \"node\": \"gpu-1\"}]}';; esac");
  gp_provider_result res;
  gp_provider_error e;
  CHECK_EQ_INT(0, call(GP_PROVIDER_DELETE, 0, 5000, &res, &e));
  CHECK_EQ_INT(1, res.n);
  CHECK_EQ_STR("i-2", res.instances[0].id);
  gp_provider_result_done(&res);
  char path[320], text[4096];
  snprintf(path, sizeof path, "%s/request.json", dir);
  read_text(path, text, sizeof text);
  CHECK_CONTAINS(text, "\"instances\":[\"i-1\",\"i-2\"]");
  CHECK_EQ_INT(0, call(GP_PROVIDER_LIST, 0, 5000, &res, &e));
  CHECK_EQ_INT(1, res.n);
  CHECK_EQ_STR("gpu-1", res.instances[0].node);
  gp_provider_result_done(&res);
  read_text(path, text, sizeof text);
  CHECK(!strstr(text, "idempotency_key"));
  /* A delete's answer names only instances it was asked to delete. */
  provider("echo '{\"deleted\": [\"i-9\"]}'");
  expect_broken(call(GP_PROVIDER_DELETE, 0, 5000, &res, &e), &e, "not asked to be deleted");
  gp_provider_result_done(&res);
}

static void test_error_classes(void) {
  static const char *const classes[] = {"capacity", "quota", "auth", "transient", "invalid"};
  for (int i = 0; i < 5; i++) {
    char body[512];
    snprintf(body, sizeof body,
             "echo '{\"error\": {\"class\": \"%s\", \"message\": \"no A100 in eu-west-1\","
             " \"retry_after\": %d}}' >&1; echo 'cloud said no' >&2; exit 1", classes[i], 30 + i);
    provider(body);
    gp_provider_result res;
    gp_provider_error e;
    CHECK_EQ_INT(GP_EIO, call(GP_PROVIDER_CREATE, 1, 5000, &res, &e));
    CHECK_EQ_STR(classes[i], gp_provider_class_name(e.cls));
    CHECK_EQ_STR("no A100 in eu-west-1", e.message);
    CHECK_EQ_INT(30 + i, e.retry_after_s);
    CHECK_EQ_INT(1, res.exit_status);
    CHECK_CONTAINS(res.stderr_text, "cloud said no");
    gp_provider_result_done(&res);
  }
  /* No retry_after: none named; an unknown class or no error object: broken. */
  provider("echo '{\"error\": {\"class\": \"quota\", \"message\": \"limit\"}}'; exit 1");
  gp_provider_result res;
  gp_provider_error e;
  CHECK_EQ_INT(GP_EIO, call(GP_PROVIDER_CREATE, 1, 5000, &res, &e));
  CHECK_EQ_STR("quota", gp_provider_class_name(e.cls));
  CHECK_EQ_INT(-1, e.retry_after_s);
  gp_provider_result_done(&res);
  provider("echo '{\"error\": {\"class\": \"oops\"}}'; exit 1");
  expect_broken(call(GP_PROVIDER_CREATE, 1, 5000, &res, &e), &e, "error.class");
  gp_provider_result_done(&res);
  provider("echo '{}'; exit 1");
  expect_broken(call(GP_PROVIDER_CREATE, 1, 5000, &res, &e), &e, "no error object");
  gp_provider_result_done(&res);
}

static void test_garbage_answer(void) {
  provider("echo 'Traceback (most recent call last): \x01 boom'");
  gp_provider_result res;
  gp_provider_error e;
  expect_broken(call(GP_PROVIDER_CREATE, 1, 5000, &res, &e), &e, "is not a JSON object");
  for (const char *p = e.message; *p; p++) CHECK((unsigned char)*p >= 0x20);
  gp_provider_result_done(&res);
  provider("echo '[1, 2]'");
  expect_broken(call(GP_PROVIDER_LIST, 0, 5000, &res, &e), &e, "not an object");
  gp_provider_result_done(&res);
  provider("echo '{\"instances\": \"many\"}'");
  expect_broken(call(GP_PROVIDER_CREATE, 1, 5000, &res, &e), &e, "no instances list");
  gp_provider_result_done(&res);
  provider("echo '{\"instances\": [{\"id\": \"i-1\", \"node\": \"n1\", \"price\": \"cheap\"}]}'");
  expect_broken(call(GP_PROVIDER_CREATE, 1, 5000, &res, &e), &e, "instances[0].price");
  gp_provider_result_done(&res);
}

static void test_huge_answer_is_cut(void) {
  provider("echo $$ > $D/pid; head -c 10485760 /dev/zero | tr '\\0' 'a'");
  gp_provider_result res;
  gp_provider_error e;
  int64_t t0 = now_ms();
  expect_broken(call(GP_PROVIDER_CREATE, 1, 10000, &res, &e), &e, "more than 1048576 bytes");
  CHECK(now_ms() - t0 < 5000);
  gp_provider_result_done(&res);
  check_group_gone();
}

static void test_silent_provider_stopped_at_deadline(void) {
  provider("echo $$ > $D/pid; trap '' TERM; sleep 30 & sleep 30; wait");
  gp_provider_result res;
  gp_provider_error e;
  int64_t t0 = now_ms();
  expect_broken(call(GP_PROVIDER_CREATE, 1, 2000, &res, &e), &e, "did not exit within");
  int64_t took = now_ms() - t0;
  CHECK(took >= 1500 && took < 2500); /* the deadline, and a moment to reap */
  gp_provider_result_done(&res);
  check_group_gone();
}

static void test_closed_stdout_still_running(void) {
  provider("echo $$ > $D/pid; echo '{\"instances\": []}'; exec >&- 2>&-; sleep 30");
  gp_provider_result res;
  gp_provider_error e;
  int64_t t0 = now_ms();
  expect_broken(call(GP_PROVIDER_CREATE, 1, 1500, &res, &e), &e, "did not exit within");
  CHECK(now_ms() - t0 < 2000);
  gp_provider_result_done(&res);
  check_group_gone();
}

static void test_background_child_holding_stdout(void) {
  /* The script answers and exits, a child it left keeps stdout open: the answer counts at
   * once, and the child goes with the group. */
  provider("echo $$ > $D/pid; sleep 30 & echo '{\"instances\": []}'");
  gp_provider_result res;
  gp_provider_error e;
  int64_t t0 = now_ms();
  CHECK_EQ_INT(0, call(GP_PROVIDER_LIST, 0, 5000, &res, &e));
  CHECK_EQ_INT(0, res.n);
  CHECK(now_ms() - t0 < 1500);
  gp_provider_result_done(&res);
  check_group_gone();
}

/* Endless stderr, from the provider itself or from a child it leaves behind, and a provider
 * that never reads its request: the call still ends by its deadline, or at once. */
static void test_noisy_and_deaf_providers(void) {
  gp_provider_result res;
  gp_provider_error e;
  provider("echo $$ > $D/pid; while :; do echo noise >&2; done");
  int64_t t0 = now_ms();
  expect_broken(call(GP_PROVIDER_LIST, 0, 1000, &res, &e), &e, "did not exit within");
  CHECK(now_ms() - t0 < 1500);
  CHECK(strlen(res.stderr_text) <= GP_PROVIDER_MAX_STDERR);
  CHECK_CONTAINS(res.stderr_text, "noise");
  gp_provider_result_done(&res);
  check_group_gone();
  provider("echo $$ > $D/pid; yes >&2 & echo '{\"instances\": []}'");
  t0 = now_ms();
  CHECK_EQ_INT(0, call(GP_PROVIDER_LIST, 0, 5000, &res, &e));
  CHECK(now_ms() - t0 < 2000);
  gp_provider_result_done(&res);
  check_group_gone();
  provider("exec 0<&-; echo '{\"instances\": []}'");
  CHECK_EQ_INT(0, call(GP_PROVIDER_LIST, 0, 5000, &res, &e));
  gp_provider_result_done(&res);
}

static void test_exit_status_and_signal(void) {
  provider("echo 'no such command: aws' >&2; exit 3");
  gp_provider_result res;
  gp_provider_error e;
  expect_broken(call(GP_PROVIDER_CREATE, 1, 5000, &res, &e), &e, "exited with status 3");
  CHECK_EQ_INT(3, res.exit_status);
  CHECK_CONTAINS(res.stderr_text, "no such command: aws");
  gp_provider_result_done(&res);
  provider("kill -9 $$");
  expect_broken(call(GP_PROVIDER_CREATE, 1, 5000, &res, &e), &e, "killed by signal 9");
  CHECK_EQ_INT(137, res.exit_status);
  gp_provider_result_done(&res);
  /* A missing executable and one that is not executable. */
  provider("true");
  chmod(script, 0644);
  expect_broken(call(GP_PROVIDER_CREATE, 1, 5000, &res, &e), &e, "cannot start");
  gp_provider_result_done(&res);
  snprintf(script, sizeof script, "%s/missing.sh", dir);
  expect_broken(call(GP_PROVIDER_CREATE, 1, 5000, &res, &e), &e, "cannot start");
  gp_provider_result_done(&res);
}

static void test_unsafe_ids_and_counts(void) {
  gp_provider_result res;
  gp_provider_error e;
  provider("echo '{\"instances\": [{\"id\": \"i-\\u0001x\", \"node\": \"gpu-1\"}]}'");
  expect_broken(call(GP_PROVIDER_CREATE, 1, 5000, &res, &e), &e, "instances[0].id");
  gp_provider_result_done(&res);
  provider("echo '{\"instances\": [{\"id\": \"i-1\", \"node\": \"../etc\"}]}'");
  expect_broken(call(GP_PROVIDER_CREATE, 1, 5000, &res, &e), &e, "instances[0].node");
  gp_provider_result_done(&res);
  provider("echo '{\"instances\": [{\"id\": \"i-1\", \"node\": \"a\"}, {\"id\": \"i-2\", \"node\": \"b\"},"
           " {\"id\": \"i-3\", \"node\": \"c\"}]}'");
  expect_broken(call(GP_PROVIDER_CREATE, 2, 5000, &res, &e), &e, "more than the 2 asked for");
  gp_provider_result_done(&res);
  provider("echo '{\"instances\": [{\"id\": \"i-1\", \"node\": \"a\"}, {\"id\": \"i-1\", \"node\": \"b\"}]}'");
  expect_broken(call(GP_PROVIDER_CREATE, 2, 5000, &res, &e), &e, "repeats an id");
  gp_provider_result_done(&res);
  provider("echo '{\"instances\": [], \"instances\": []}'");
  expect_broken(call(GP_PROVIDER_CREATE, 2, 5000, &res, &e), &e, "not a JSON object");
  gp_provider_result_done(&res);
}

static void test_bad_requests_never_start(void) {
  provider("touch $D/ran; echo '{}'");
  gp_provider_template t = tmpl();
  gp_provider_result res;
  gp_provider_error e;
  gp_provider_request req = {.verb = GP_PROVIDER_CREATE, .tmpl = &t, .count = 0,
                             .idempotency_key = "k", .deadline_ms = now_ms() + 5000};
  CHECK_EQ_INT(GP_EINVAL, gp_provider_run(&req, &res, &e));
  CHECK_CONTAINS(e.message, "count");
  gp_provider_result_done(&res);
  req.count = 1;
  req.idempotency_key = "has space";
  CHECK_EQ_INT(GP_EINVAL, gp_provider_run(&req, &res, &e));
  CHECK_CONTAINS(e.message, "idempotency_key");
  gp_provider_result_done(&res);
  req.idempotency_key = "k";
  req.deadline_ms = now_ms() - 1;
  CHECK_EQ_INT(GP_EINVAL, gp_provider_run(&req, &res, &e));
  gp_provider_result_done(&res);
  char path[320];
  snprintf(path, sizeof path, "%s/ran", dir);
  CHECK(access(path, F_OK) != 0);
}

/* Calls on several threads at once, as the server's provider thread and `gpool provider
 * test` may make them: each waits for its own child only, so the quick ones answer at once
 * beside one that runs to its deadline, and each gets its own answer. */
typedef struct par_call {
  char script[320];
  int timeout_ms;
  int rc;
  int64_t took_ms;
  char first_id[GP_PROVIDER_ID_MAX + 1];
  char message[GP_PROVIDER_MESSAGE_MAX + 1];
} par_call;

static void *par_run(void *arg) {
  par_call *pc = arg;
  gp_provider_template t = tmpl();
  t.provider = pc->script;
  gp_provider_request req = {.verb = GP_PROVIDER_LIST, .tmpl = &t,
                             .deadline_ms = now_ms() + pc->timeout_ms};
  gp_provider_result res;
  gp_provider_error e;
  int64_t t0 = now_ms();
  pc->rc = gp_provider_run(&req, &res, &e);
  pc->took_ms = now_ms() - t0;
  if (res.n > 0) snprintf(pc->first_id, sizeof pc->first_id, "%s", res.instances[0].id);
  snprintf(pc->message, sizeof pc->message, "%s", e.message);
  gp_provider_result_done(&res);
  return NULL;
}

static void test_calls_on_several_threads(void) {
  par_call calls[4];
  memset(calls, 0, sizeof calls);
  for (int i = 0; i < 4; i++) {
    char body[256];
    if (i == 0) snprintf(body, sizeof body, "sleep 30");
    else snprintf(body, sizeof body, "cat >/dev/null; echo '{\"instances\": [{\"id\": \"i-%d\", \"node\": \"n%d\"}]}'", i, i);
    provider(body);
    snprintf(calls[i].script, sizeof calls[i].script, "%s", script);
    calls[i].timeout_ms = i == 0 ? 1500 : 5000;
  }
  pthread_t th[4];
  for (int i = 0; i < 4; i++) REQUIRE(pthread_create(&th[i], NULL, par_run, &calls[i]) == 0);
  for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
  CHECK_EQ_INT(GP_EIO, calls[0].rc);
  CHECK_CONTAINS(calls[0].message, "did not exit within");
  for (int i = 1; i < 4; i++) {
    char want[16];
    snprintf(want, sizeof want, "i-%d", i);
    CHECK_EQ_INT(0, calls[i].rc);
    CHECK_EQ_STR(want, calls[i].first_id);
    CHECK(calls[i].took_ms < 1000);
  }
  CHECK(waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD);
}

GP_TESTS(test_calls_on_several_threads, test_create_answers_instances, test_delete_and_list, test_error_classes,
         test_garbage_answer, test_huge_answer_is_cut, test_silent_provider_stopped_at_deadline,
         test_closed_stdout_still_running, test_background_child_holding_stdout,
         test_exit_status_and_signal, test_noisy_and_deaf_providers, test_unsafe_ids_and_counts, test_bad_requests_never_start)
