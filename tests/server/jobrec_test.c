/* SPDX-License-Identifier: Apache-2.0 */
/* A job's load record rebuilds exactly the job its document does, for jobs that use every
 * field (quotes, newlines, non-ASCII text, containers, arrays, attempts, use figures), and
 * a damaged record never reads: cut short anywhere, a length or a count changed, bytes that
 * are not UTF-8, a figure out of range. */
#include "test.h"
#include "server/state/jobrec.h"
#include "server/state/state.h"

static gp_srv_job *parsed(const gp_server_config *cfg, const char *body) {
  json_t *o = json_loads(body, 0, NULL);
  REQUIRE(o);
  gp_srv_job *j = NULL;
  gp_err e = {0};
  if (gp__srv_job_parse(cfg, o, "alice", false, &j, &e)) fprintf(stderr, "parse: %s\n", e.message);
  REQUIRE(j);
  json_decref(o);
  if (!j->queue) j->queue = strdup("default"); /* as admission gives it */
  j->id = 7;
  snprintf(j->idstr, sizeof j->idstr, "7");
  j->submitted_at = 1700000000;
  return j;
}

/* The job as its document (as the store keeps it) and back through its record: the same
 * document, and the same record again. */
static void same_job(const gp_srv_job *j) {
  char *doc = gp__srv_job_store_doc(j), *rec = gp__srv_job_store_rec(j);
  gp_srv_job *from_doc = NULL, *from_rec = NULL;
  gp_err e = {0};
  if (gp__srv_job_from_doc(doc, &from_doc, &e)) fprintf(stderr, "doc: %s\n", e.message);
  REQUIRE(from_doc);
  char *rec2 = gp__srv_job_store_rec(from_doc); /* what a restart writes of a loaded job */
  CHECK_EQ_STR(rec, rec2);
  if (gp__srv_job_from_rec(rec, &from_rec, &e)) fprintf(stderr, "rec: %s (%s)\n", e.message, rec);
  REQUIRE(from_rec);
  char *doc2 = gp__srv_job_store_doc(from_rec), *doc_of_doc = gp__srv_job_store_doc(from_doc);
  CHECK_EQ_STR(doc_of_doc, doc2);
  CHECK_EQ_STR(doc, doc2);
  CHECK_EQ_INT(from_doc->state, from_rec->state);
  CHECK(json_equal(from_doc->command, from_rec->command));
  CHECK(json_equal(from_doc->env, from_rec->env));
  free(doc);
  free(doc2);
  free(doc_of_doc);
  free(rec);
  free(rec2);
  gp__srv_job_free(from_doc);
  gp__srv_job_free(from_rec);
}

static void a_record_rebuilds_the_job_its_document_does(void) {
  gp_server_config *cfg = gp_server_config_new();
  /* Pending, as most of a restart's jobs are. */
  gp_srv_job *j = parsed(cfg, "{\"command\": [\"python\", \"train.py\"], \"gpus\": 1}");
  same_job(j);
  gp__srv_job_free(j);
  /* Every request field, with text that needs escaping in JSON. */
  j = parsed(cfg,
             "{\"queue\": \"org/a\", \"name\": \"tr\\\"ain \\u00e9\", \"command\": [\"python\", \"-c\","
             " \"print('a\\\\b')\\t\\u0001\", \"\", \"\\u4e2d\\ud83d\\ude00\"], \"workdir\": \"/home/a\","
             " \"env\": {\"K\": \"V\\\"\\n\", \"PATH\": \"/bin\", \"EMPTY\": \"\"}, \"gpus\": 0, \"tasks\": 4,"
             " \"tasks_per_node\": 2, \"nodes\": 2, \"gpu_fraction\": 0.25, \"gpu_types\": [\"H100-80GB\", \"A100\"],"
             " \"cpus\": 2.5, \"mem_mib\": 1024, \"time_limit\": 3600, \"priority\": \"batch\","
             " \"requeue\": true, \"grace_s\": 5, \"signal\": \"USR1\", \"after\": [\"1\"], \"after_ok\": [\"2\", \"3\"],"
             " \"singleton\": true, \"node_selector\": {\"pool\": \"x\", \"zone\": \"b\"}, \"allow_spot\": true,"
             " \"exclusive\": true, \"model\": \"m1\", \"mail_type\": \"BEGIN,END\", \"mail_user\": \"a@example.org\","
             " \"output\": \"out-%j.txt\", \"error\": \"err-%j.txt\", \"open_mode\": \"append\","
             " \"warn_signal\": \"USR2\", \"warn_before_s\": 60, \"warn_batch\": true, \"begin_at\": 1800000000,"
             " \"batch\": true, \"image\": \"localhost/busybox\", \"container_env\": [\"K\"]}");
  j->state = GP_JOB_FAILED;
  j->started_at = 1700000100;
  j->ended_at = 1700000200;
  j->last_checkpoint_at = 1700000150;
  j->restarts = 2;
  j->has_exit_code = true;
  j->exit_code = -1;
  j->exit_signal = 9;
  j->end_reason = strdup("gpu_fault: xid 79\nsecond line");
  j->stop_reason = strdup("failed");
  j->last_placements = json_loads("[{\"node\": \"n1\", \"gpu_ids\": [0]}]", 0, NULL);
  j->attempts = json_loads("[{\"attempt\": 1, \"start\": 1, \"end\": 2, \"nodes\": [\"n1\"]}]", 0, NULL);
  j->enforcement = strdup("watchdog");
  j->usage = json_loads("{\"avg_sm_util_pct\": 20.5, \"peak_mem_mib\": 15360}", 0, NULL);
  j->service = strdup("chat");
  j->service_rev = 3;
  same_job(j);
  /* Running: what its run left that a running job keeps. */
  j->state = GP_JOB_RUNNING;
  j->ended_at = 0;
  same_job(j);
  gp__srv_job_free(j);
  /* An array, and one of its elements. */
  j = parsed(cfg, "{\"command\": [\"x\"], \"array\": \"0-99:2%8\"}");
  same_job(j);
  gp__srv_job_free(j);
  j = parsed(cfg, "{\"command\": [\"x\"]}");
  j->array_job = 5;
  j->array_index = 42;
  j->gpu_mem_mib = 2048;
  same_job(j);
  gp__srv_job_free(j);
  gp_server_config_free(cfg);
}

static bool reads(const char *rec, gp_err *e) {
  gp_srv_job *j = NULL;
  int r = gp__srv_job_from_rec(rec, &j, e);
  CHECK((r == 0) == (j != NULL));
  gp__srv_job_free(j);
  return r == 0;
}

static void a_damaged_record_never_reads(void) {
  gp_server_config *cfg = gp_server_config_new();
  gp_srv_job *j = parsed(cfg, "{\"command\": [\"python\", \"t\\u00e9.py\"], \"env\": {\"A\": \"1\"},"
                              " \"gpus\": 2, \"name\": \"n\"}");
  char *rec = gp__srv_job_store_rec(j);
  gp_err e = {0};
  if (!reads(rec, &e)) fprintf(stderr, "rec: %s (%s)\n", e.message, rec);
  CHECK(reads(rec, &e));
  size_t n = strlen(rec);
  char *cut = malloc(n + 1);
  /* Cut short anywhere. */
  for (size_t k = 0; k < n; k++) {
    memcpy(cut, rec, k);
    cut[k] = '\0';
    CHECK(!reads(cut, &e));
  }
  /* Each byte changed to each of a few others: it does not read, or it reads as a job (a
   * digit of a figure, a letter of a name) without ever overrunning (ASan watches). */
  const char subst[] = {'0', '9', ';', ':', '~', '-', 'x', '\x01', '\xff'};
  for (size_t k = 0; k < n; k++)
    for (size_t m = 0; m < sizeof subst; m++) {
      memcpy(cut, rec, n + 1);
      cut[k] = subst[m];
      reads(cut, &e);
    }
  /* And a few that must not read, each naming what did not. */
  memcpy(cut, rec, n + 1);
  char *g = strstr(cut, "~2;1;"); /* no workdir, gpus 2, tasks 1 */
  REQUIRE(g);
  g[1] = '9', g[2] = '9', g[3] = ';';       /* gpus 99 (> 32) and no tasks */
  CHECK(!reads(cut, &e));
  CHECK_EQ_STR("gpus", e.field);
  memcpy(cut, rec, n + 1);
  char *w = strstr(cut, "t\xc3\xa9");
  REQUIRE(w);
  w[1] = '\xc3', w[2] = 'x';                 /* not UTF-8 */
  CHECK(!reads(cut, &e));
  CHECK_EQ_STR("command", e.field);
  CHECK(!reads("{\"id\":\"7\"}", &e));      /* a document is no record */
  free(cut);
  free(rec);
  gp__srv_job_free(j);
  gp_server_config_free(cfg);
}

GP_TESTS(a_record_rebuilds_the_job_its_document_does, a_damaged_record_never_reads)
