/* SPDX-License-Identifier: Apache-2.0 */
/* The hand-written stored job document says exactly what the jansson-built one says, for
 * a job that uses every field, including quotes, backslashes, newlines and non-ASCII text. */
#include "test.h"
#include "server/cycle/parts.h"
#include "server/state/state.h"

static void the_fast_document_equals_the_reference(void) {
  gp_server_config *cfg = gp_server_config_new();
  gp_srv_state *s = gp__srv_state_make(cfg, NULL);
  const char *body =
      "{\"queue\": \"org/a\", \"name\": \"tr\\\"ain \\u00e9\", \"command\": [\"python\", \"-c\", \"print('a\\\\b')\\t\\u0001\"],"
      " \"workdir\": \"/home/a\", \"env\": {\"K\": \"V\\\"\", \"PATH\": \"/bin\"}, \"gpus\": 0, \"tasks\": 2,"
      " \"gpu_fraction\": 0.25, \"gpu_types\": [\"H100-80GB\", \"A100\"], \"cpus\": 2.5, \"mem_mib\": 1024,"
      " \"time_limit\": 3600, \"priority\": \"batch\", \"requeue\": true, \"grace_s\": 5, \"signal\": \"USR1\","
      " \"after\": [\"1\"], \"node_selector\": {\"pool\": \"x\"}, \"allow_spot\": true, \"model\": \"m1\","
      " \"mail_type\": \"BEGIN,END\", \"mail_user\": \"a.b+c@example.org\"}";
  json_t *o = json_loads(body, 0, NULL);
  REQUIRE(o);
  gp_srv_job *j = NULL;
  gp_err e = {0};
  REQUIRE(gp__srv_job_parse(cfg, o, "alice", false, &j, &e) == 0);
  j->id = 7;
  snprintf(j->idstr, sizeof j->idstr, "7");
  j->submitted_at = 100;
  j->started_at = 200;
  j->restarts = 2;
  j->has_exit_code = true;
  j->exit_code = -1;
  j->exit_signal = 9;
  j->end_reason = strdup("gpu_fault: xid 79");
  j->state = GP_JOB_FAILED;
  j->last_placements = json_loads("[{\"node\": \"n1\", \"gpu_ids\": [0]}]", 0, NULL);
  j->enforcement = strdup("watchdog");
  j->usage = json_loads("{\"avg_sm_util_pct\": 20.5, \"peak_mem_mib\": 15360, \"energy_j\": 1.5}", 0, NULL);
  j->service = strdup("chat"); /* a service's replica (service.h) */
  j->service_rev = 3;
  char *fast = gp__srv_job_store_doc(j);
  json_t *parsed = json_loads(fast, 0, NULL);
  json_t *ref = gp__srv_job_to_json(s, j, true);
  REQUIRE(parsed);
  CHECK(json_equal(parsed, ref));
  if (!json_equal(parsed, ref)) {
    char *r = json_dumps(ref, JSON_COMPACT);
    fprintf(stderr, "fast: %s\nref:  %s\n", fast, r);
    free(r);
  }
  /* And it reads back into the same job. */
  gp_srv_job *back = NULL;
  REQUIRE(gp__srv_job_from_doc(fast, &back, &e) == 0);
  CHECK_EQ_STR("tr\"ain \xc3\xa9", back->name);
  CHECK_EQ_INT(250, back->gpu_milli);
  CHECK_EQ_INT(2500, back->cpu_milli);
  CHECK_EQ_INT(2, back->restarts);
  CHECK(back->mail_set); /* notifications survive a restart */
  CHECK_EQ_INT(3, (int)back->mail_events); /* GP_NOTIFY_BEGIN | GP_NOTIFY_END */
  CHECK_EQ_STR("a.b+c@example.org", back->mail_user);
  /* The ended job's use figures come back with it (advice sizes its next runs by them). */
  CHECK(back->usage && json_equal(back->usage, j->usage));
  CHECK_EQ_STR("chat", back->service); /* a replica stays its service's over a restart */
  CHECK_EQ_INT(3, back->service_rev);
  gp__srv_job_free(back);
  json_decref(parsed);
  json_decref(ref);
  free(fast);
  gp__srv_job_free(j);
  json_decref(o);
  gp__srv_state_free(s);
  gp_server_config_free(cfg);
}

/* The checkpoint signal is one a job can catch, named as `gpool submit --signal` names it
 * (one table, util/signals.h): any case and a SIG prefix are accepted; KILL and STOP, which
 * no job can catch, are refused naming the field. */
static const char *parsed_signal(const gp_server_config *cfg, const char *sig, gp_err *e) {
  static char got[16];
  char body[128];
  snprintf(body, sizeof body, "{\"command\": [\"true\"], \"signal\": \"%s\"}", sig);
  json_t *o = json_loads(body, 0, NULL);
  gp_srv_job *j = NULL;
  int r = gp__srv_job_parse(cfg, o, "alice", false, &j, e);
  json_decref(o);
  if (r) return NULL;
  snprintf(got, sizeof got, "%s", j->signal);
  gp__srv_job_free(j);
  return got;
}

static void the_checkpoint_signal_is_one_a_job_can_catch(void) {
  gp_server_config *cfg = gp_server_config_new();
  gp_err e = {0};
  CHECK_EQ_STR("USR1", parsed_signal(cfg, "usr1", &e));
  CHECK_EQ_STR("PWR", parsed_signal(cfg, "SIGPWR", &e));
  CHECK_EQ_STR("TERM", parsed_signal(cfg, "TERM", &e));
  CHECK(!parsed_signal(cfg, "KILL", &e));
  CHECK_EQ_STR("signal", e.field);
  CHECK(!parsed_signal(cfg, "SIGSTOP", &e));
  CHECK(!parsed_signal(cfg, "15", &e));
  gp_server_config_free(cfg);
}

/* What no agent would start is refused at submission, naming the field, instead of being
 * accepted with 201 and failing at start: a command past the start order's 256 KiB (five
 * words of 60 KB, each within the per-word bound), a variable name with a newline, a
 * relative working directory. */
static int parse_body(const gp_server_config *cfg, const char *body, gp_err *e) {
  json_t *o = json_loads(body, 0, NULL);
  gp_srv_job *j = NULL;
  int r = gp__srv_job_parse(cfg, o, "alice", false, &j, e);
  json_decref(o);
  gp__srv_job_free(j);
  return r;
}

static void what_no_agent_would_start_is_refused_at_submission(void) {
  gp_server_config *cfg = gp_server_config_new();
  gp_err e = {0};
  json_t *big = json_pack("{s:[]}", "command");
  char *word = malloc(60001);
  memset(word, 'a', 60000);
  word[60000] = '\0';
  for (int i = 0; i < 5; i++) json_array_append_new(json_object_get(big, "command"), json_string(word));
  char *body = json_dumps(big, JSON_COMPACT);
  /* A size: 413 naming the command (docs/security.md), before what an agent would run. */
  CHECK_EQ_INT(GP_ELIMIT, parse_body(cfg, body, &e));
  CHECK_EQ_STR("command", e.field);
  CHECK_CONTAINS(e.message, "max_job_bytes");
  free(body);
  free(word);
  json_decref(big);
  CHECK_EQ_INT(GP_EINVAL, parse_body(cfg, "{\"command\": [\"true\"], \"env\": {\"A\\nB\": \"1\"}}", &e));
  CHECK_EQ_STR("env", e.field);
  CHECK_EQ_INT(GP_EINVAL, parse_body(cfg, "{\"command\": [\"true\"], \"workdir\": \"data/run\"}", &e));
  CHECK_EQ_STR("workdir", e.field);
  CHECK_EQ_INT(0, parse_body(cfg, "{\"command\": [\"true\"], \"env\": {\"A_1\": \"x\"}, \"workdir\": \"/tmp\"}", &e));
  gp_server_config_free(cfg);
}

GP_TESTS(the_fast_document_equals_the_reference, the_checkpoint_signal_is_one_a_job_can_catch,
         what_no_agent_would_start_is_refused_at_submission)
