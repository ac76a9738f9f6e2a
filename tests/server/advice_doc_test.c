/* SPDX-License-Identifier: Apache-2.0 */
/* The allocation-free scan of an ended job's stored document reads the same run as jansson
 * does, on the server's own documents and on hand-made ones with whitespace, nesting, braces
 * and quotes inside strings, unknown use and nulls; a document it cannot read plainly (an
 * escape in a needed string, malformed text) is refused, so the caller falls back. */
#include "test.h"
#include "server/accounting/advice.h"
#include "server/state/state.h"

static void same_run(const char *doc) {
  gp_srv_advice_doc_buf b;
  gp_advice_run fast, ref;
  REQUIRE(gp__srv_advice_doc_scan(doc, "alice", "org/a", 9, &b, &fast));
  json_t *o = json_loads(doc, 0, NULL);
  REQUIRE(o);
  REQUIRE(gp__srv_advice_run_of(o, "alice", "org/a", 9, &ref));
  CHECK_EQ_INT(ref.job, fast.job);
  CHECK((ref.name == NULL) == (fast.name == NULL));
  if (ref.name && fast.name) CHECK_EQ_STR(ref.name, fast.name);
  CHECK((ref.mig == NULL) == (fast.mig == NULL));
  if (ref.mig && fast.mig) CHECK_EQ_STR(ref.mig, fast.mig);
  CHECK_EQ_INT(ref.tasks, fast.tasks);
  CHECK_EQ_INT(ref.gpus, fast.gpus);
  CHECK_EQ_INT(ref.gpu_milli, fast.gpu_milli);
  CHECK_EQ_INT(ref.requeue, fast.requeue);
  CHECK_EQ_INT(ref.last_checkpoint_at, fast.last_checkpoint_at);
  CHECK_EQ_INT(ref.submitted_at, fast.submitted_at);
  CHECK_EQ_INT(ref.started_at, fast.started_at);
  CHECK_EQ_INT(ref.peak_mem_mib, fast.peak_mem_mib);
  CHECK(fabs(ref.avg_sm_util_pct - fast.avg_sm_util_pct) < 1e-12);
  json_decref(o);
}

static void the_scan_reads_what_jansson_reads(void) {
  same_run("{\"id\":\"9\",\"name\":\"train-7b\",\"queue\":\"org/a\",\"user\":\"alice\",\"gpus\":1,"
           "\"tasks\":1,\"gpu_fraction\":0,\"mig\":null,\"requeue\":true,\"submitted_at\":100,"
           "\"started_at\":160,\"last_checkpoint_at\":900,\"usage\":{\"avg_sm_util_pct\":20.5,"
           "\"peak_sm_util_pct\":60,\"idle_s\":0,\"sm_busy_gpu_s\":7.5,\"peak_mem_mib\":15360,"
           "\"energy_j\":1.5}}");
  same_run(" {\n \"command\" : [\"sh\", \"-c\", \"echo '}' \\\"]\\\" {\"] ,\n"
           " \"env\": {\"A\": \"{[\", \"B\": \"\\\\\"}, \"name\" : \"eval\" ,\"tasks\": 1,\n"
           " \"gpus\": 0, \"gpu_fraction\": 0.25, \"mig\": \"3g.40gb\", \"requeue\": false,\n"
           " \"attempts\": [{\"attempt\": 1, \"nodes\": [\"n1\"], \"end\": null}],\n"
           " \"usage\": {\"peak_mem_mib\": 2048, \"energy_j\": 3e2} , \"started_at\": 5 }");
  /* Unknown utilisation (MPS), null use, a real where an integer is expected. */
  same_run("{\"name\":\"mps\",\"tasks\":1,\"gpus\":1,\"usage\":{\"peak_mem_mib\":100}}");
  same_run("{\"name\":\"x\",\"tasks\":1.0,\"gpus\":1,\"usage\":null,\"last_checkpoint_at\":null}");
  same_run("{\"tasks\":2,\"gpus\":8,\"usage\":{\"avg_sm_util_pct\":150,\"peak_mem_mib\":-5}}");
}

/* The server's own stored document of an ended job with its use. */
static void the_servers_documents_scan(void) {
  gp_server_config *cfg = gp_server_config_new();
  json_t *o = json_loads("{\"queue\": \"org/a\", \"name\": \"train-7b\", \"command\": [\"t\"], "
                         "\"gpus\": 1, \"requeue\": true}", 0, NULL);
  gp_srv_job *j = NULL;
  gp_err e = {0};
  REQUIRE(gp__srv_job_parse(cfg, o, "alice", false, &j, &e) == 0);
  j->id = 9;
  snprintf(j->idstr, sizeof j->idstr, "9");
  j->state = GP_JOB_COMPLETED;
  j->submitted_at = 100;
  j->started_at = 200;
  j->ended_at = 300;
  j->last_checkpoint_at = 250;
  j->usage = json_loads("{\"avg_sm_util_pct\": 20.0, \"peak_mem_mib\": 15360}", 0, NULL);
  char *doc = gp__srv_job_store_doc(j);
  same_run(doc);
  gp_srv_advice_doc_buf b;
  gp_advice_run r;
  REQUIRE(gp__srv_advice_doc_scan(doc, "alice", "org/a", 9, &b, &r));
  CHECK_EQ_STR("train-7b", r.name);
  CHECK_EQ_INT(15360, r.peak_mem_mib);
  CHECK_EQ_INT(250, r.last_checkpoint_at);
  CHECK(r.requeue);
  free(doc);
  gp__srv_job_free(j);
  json_decref(o);
  gp_server_config_free(cfg);
}

static void what_it_cannot_read_plainly_is_refused(void) {
  gp_srv_advice_doc_buf b;
  gp_advice_run r;
  static const char *const docs[] = {
      "{\"name\":\"a\\u00e9\",\"tasks\":1}",   /* an escape in a needed string */
      "{\"name\":\"a\",\"tasks\":1",            /* cut short */
      "{\"name\":\"a\" \"tasks\":1}",           /* no comma */
      "[1, 2]", "", "{\"tasks\":0}",            /* not a job */
      "{\"a\":" "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}",
  };
  for (size_t i = 0; i < sizeof docs / sizeof *docs; i++)
    CHECK(!gp__srv_advice_doc_scan(docs[i], "alice", "org/a", 1, &b, &r));
  /* Jansson reads the escaped name, so the job still counts. */
  json_t *o = json_loads(docs[0], 0, NULL);
  REQUIRE(gp__srv_advice_run_of(o, "alice", "org/a", 1, &r));
  CHECK_EQ_STR("a\xc3\xa9", r.name);
  json_decref(o);
}

GP_TESTS(the_scan_reads_what_jansson_reads, the_servers_documents_scan,
         what_it_cannot_read_plainly_is_refused)
