/* SPDX-License-Identifier: Apache-2.0 */
/* Trace readers: slices of the real Philly and openb traces read as users expect, the
 * generic CSV/JSONL format carries every field, and malformed rows are named by line and
 * column, then skipped or fatal as asked. */
#include "sim/trace/reader.h"
#include "sim/trace/trace.h"
#include "test.h"

/* The first `lines` lines of a slice of a real trace (tests/data), as a malloc'd string. */
static char *head_of(const char *rel, int lines, size_t *ret_len) {
  char path[1024];
  snprintf(path, sizeof path, "%s/tests/data/%s", GP_SOURCE_DIR, rel);
  FILE *f = fopen(path, "r");
  REQUIRE(f);
  size_t cap = 1 << 20, len = 0;
  char *buf = malloc(cap);
  char line[4096];
  for (int i = 0; i < lines && fgets(line, sizeof line, f); i++) {
    size_t n = strlen(line);
    REQUIRE(len + n < cap);
    memcpy(buf + len, line, n);
    len += n;
  }
  fclose(f);
  buf[len] = '\0';
  *ret_len = len;
  return buf;
}

static gp_trace *read_str(const char *name, const char *text, bool skip, gp_err *e) {
  gp_trace *t = NULL;
  gp_trace_opts o = {.skip_bad = skip};
  int rc = gp_trace_read_string(name, text, strlen(text), &o, &t, e);
  return rc ? NULL : t;
}

static void philly_slice_reads_times_as_utc_and_sorts_jobs(void) {
  size_t len;
  char *text = head_of("philly_head2000.csv", 201, &len);
  gp_trace *t = NULL;
  gp_err e = {0};
  gp_trace_opts o = {0};
  REQUIRE(gp_trace_read_string("philly.csv", text, len, &o, &t, &e) == 0);
  CHECK_EQ_INT(GP_TRACE_PHILLY, t->format); /* detected from the header */
  CHECK_EQ_INT(200, t->n_jobs);
  /* Row 2 of the file: "2017-10-09 07:01:55,66.0,1,66.0,11cb48". */
  const gp_trace_job *first_row = NULL;
  for (size_t i = 0; i < t->n_jobs; i++)
    if (t->jobs[i].line == 2) first_row = &t->jobs[i];
  REQUIRE(first_row);
  CHECK_EQ_INT(1507532515, first_row->submit);
  CHECK_EQ_INT(66, first_row->duration);
  CHECK_EQ_INT(1, first_row->gpus);
  CHECK_EQ_STR("11cb48", gp_trace_name(t, first_row->queue));
  CHECK_EQ_INT(0, first_row->time_limit);
  /* The file is unsorted; the trace is in submit order. */
  for (size_t i = 1; i < t->n_jobs; i++) CHECK(t->jobs[i - 1].submit <= t->jobs[i].submit);
  CHECK(t->jobs[0].line != 2);
  gp_trace_free(t);
  free(text);
}

static void philly_malformed_rows_are_named_then_skipped_or_fatal(void) {
  const char *text =
      "timestamp,duration,num_gpus,gpu_time,cluster\n"
      "2017-10-09 07:01:55,66.0,1,66.0,11cb48\n"
      "2017-13-09 07:01:55,66.0,1,66.0,11cb48\n" /* month 13 */
      "2017-10-09 07:01:56,-5,1,66.0,11cb48\n"   /* negative duration */
      "2017-10-09 07:01:57,10,two,66.0,11cb48\n" /* not a number */
      "2017-10-09 07:01:58,10,1,66.0\n"          /* a field short */
      "2017-10-09 07:01:59,10,1.5,15,11cb48\n"   /* half a GPU in Philly */
      "\n"
      "2017-10-09 07:02:00,10,2,20,6214e9\n";
  gp_err e = {0};
  CHECK(read_str("p.csv", text, false, &e) == NULL);
  CHECK_EQ_INT(3, e.line);
  CHECK_EQ_STR("timestamp", e.field);
  CHECK_EQ_STR("p.csv", e.file);

  memset(&e, 0, sizeof e);
  gp_trace *t = read_str("p.csv", text, true, &e);
  REQUIRE(t);
  CHECK_EQ_INT(2, t->n_jobs);
  CHECK_EQ_INT(5, t->bad_rows);
  CHECK_CONTAINS(t->bad_report.data, "p.csv:3: timestamp:");
  CHECK_CONTAINS(t->bad_report.data, "p.csv:4: duration:");
  CHECK_CONTAINS(t->bad_report.data, "p.csv:5: num_gpus:");
  CHECK_CONTAINS(t->bad_report.data, "p.csv:6:");
  CHECK_CONTAINS(t->bad_report.data, "p.csv:7: num_gpus:");
  CHECK_EQ_INT(9, t->jobs[1].line); /* the blank line still counts */
  gp_trace_free(t);
}

static void openb_pods_take_duration_from_deletion_minus_creation(void) {
  size_t len;
  char *text = head_of("openb_pod_list_default_head100.csv", 101, &len);
  gp_trace *t = NULL;
  gp_err e = {0};
  gp_trace_opts o = {0};
  REQUIRE(gp_trace_read_string("openb_pod_list_default.csv", text, len, &o, &t, &e) == 0);
  CHECK_EQ_INT(GP_TRACE_OPENB, t->format);
  CHECK_EQ_INT(100, t->n_jobs);
  /* openb-pod-0001,6000,12288,1,460,,LS,Running,427061,12902960,427061 */
  const gp_trace_job *j = NULL;
  for (size_t i = 0; i < t->n_jobs; i++)
    if (t->jobs[i].line == 3) j = &t->jobs[i];
  REQUIRE(j);
  CHECK_EQ_STR("openb-pod-0001", gp_trace_name(t, j->id));
  CHECK_EQ_INT(427061, j->submit);
  CHECK_EQ_INT(12902960 - 427061, j->duration);
  CHECK_EQ_INT(0, j->gpus);
  CHECK_EQ_INT(460, j->gpu_milli); /* a shared GPU */
  CHECK_EQ_INT(6000, j->cpu_milli);
  CHECK_EQ_INT(12288, j->mem_mib);
  CHECK_EQ_STR("default", gp_trace_name(t, j->queue));
  gp_trace_free(t);
  free(text);
}

static void openb_pods_without_times_are_rejected_with_their_line(void) {
  size_t len;
  char *text = head_of("openb_pod_list_multigpu50_head19.csv", 20, &len);
  gp_trace *t = NULL;
  gp_err e = {0};
  gp_trace_opts o = {.format = GP_TRACE_OPENB};
  CHECK(gp_trace_read_string("multigpu50.csv", text, len, &o, &t, &e) != 0);
  CHECK_EQ_INT(2, e.line);
  CHECK_EQ_STR("creation_time", e.field);
  CHECK_CONTAINS(e.message, "missing");
  /* Skipping them all leaves nothing to replay: still an error, and it says why. */
  o.skip_bad = true;
  memset(&e, 0, sizeof e);
  CHECK(gp_trace_read_string("multigpu50.csv", text, len, &o, &t, &e) != 0);
  CHECK_CONTAINS(e.message, "19 bad rows");
  free(text);
}

/* Read for their shapes (gpool sim frag), the same pods need no times and keep file order,
 * even where their creation times would sort them otherwise. */
static void openb_pods_read_for_shapes_keep_file_order_without_times(void) {
  size_t len;
  char *text = head_of("openb_pod_list_multigpu50_head19.csv", 20, &len);
  gp_trace *t = NULL;
  gp_err e = {0};
  gp_trace_opts o = {.format = GP_TRACE_OPENB, .shapes = true};
  REQUIRE(gp_trace_read_string("multigpu50.csv", text, len, &o, &t, &e) == 0);
  CHECK_EQ_INT(19, (int)t->n_jobs);
  for (size_t i = 0; i < t->n_jobs; i++) CHECK_EQ_INT((int)i + 2, t->jobs[i].line);
  gp_trace_free(t);
  free(text);
  const char *late_first =
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli,creation_time,deletion_time\n"
      "a,1000,1024,1,500,900,1000\n"
      "b,2000,2048,2,1000,100,200\n";
  REQUIRE(gp_trace_read_string("late.csv", late_first, strlen(late_first), &o, &t, &e) == 0);
  CHECK_EQ_STR("a", gp_trace_name(t, t->jobs[0].id));
  CHECK_EQ_INT(500, t->jobs[0].gpu_milli);
  CHECK_EQ_INT(2, t->jobs[1].gpus);
  CHECK_EQ_INT(0, (int)t->jobs[1].submit);
  gp_trace_free(t);
  const char *no_mem = "name,cpu_milli,num_gpu,gpu_milli\na,1,1,500\n";
  CHECK(gp_trace_read_string("nomem.csv", no_mem, strlen(no_mem), &o, &t, &e) != 0);
  CHECK_EQ_STR("memory_mib", e.field);
  const char *cpu_share = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\na,1,1,0,500\n";
  memset(&e, 0, sizeof e);
  CHECK(gp_trace_read_string("share.csv", cpu_share, strlen(cpu_share), &o, &t, &e) != 0);
  CHECK_EQ_INT(2, e.line);
  CHECK_EQ_STR("gpu_milli", e.field);
}

static void generic_csv_carries_every_field(void) {
  const char *text =
      "id,submit_time,duration,gpus,tasks,queue,user,priority,time_limit,gpu_model,extra\n"
      "a,100,4h,16,2,org/vision,\"smith, j\",training,1-00:00:00,A100|H100,x\n"
      "b,2024-01-01T00:00:00Z,90,0.5,,org/nlp,lee,,,,\n"
      "c,50,30,3,2,org/nlp,lee,,,,\n"; /* 3 GPUs do not split over 2 tasks */
  gp_err e = {0};
  gp_trace *t = read_str("mine.csv", text, true, &e);
  REQUIRE(t);
  CHECK_EQ_INT(GP_TRACE_CSV, t->format);
  CHECK_EQ_INT(2, t->n_jobs);
  CHECK_EQ_INT(1, t->bad_rows);
  CHECK_CONTAINS(t->bad_report.data, "mine.csv:4: tasks:");
  const gp_trace_job *a = &t->jobs[0], *b = &t->jobs[1];
  CHECK_EQ_INT(100, a->submit);
  CHECK_EQ_INT(4 * 3600, a->duration);
  CHECK_EQ_INT(16, a->gpus);
  CHECK_EQ_INT(2, a->tasks);
  CHECK_EQ_INT(86400, a->time_limit);
  CHECK_EQ_STR("org/vision", gp_trace_name(t, a->queue));
  CHECK_EQ_STR("smith, j", gp_trace_name(t, a->user));
  CHECK_EQ_STR("training", gp_trace_name(t, a->priority));
  CHECK_EQ_STR("A100|H100", gp_trace_name(t, a->gpu_models));
  CHECK_EQ_INT(1704067200, b->submit);
  CHECK_EQ_INT(500, b->gpu_milli);
  CHECK_EQ_INT(0, b->gpus);
  CHECK_EQ_INT(-1, b->priority);
  gp_trace_free(t);
}

static void jsonl_reads_the_same_fields_and_names_bad_lines(void) {
  const char *text =
      "{\"submit_time\": 10, \"duration\": \"2h\", \"gpus\": 8, \"queue\": \"team-a\", \"note\": 1}\n"
      "[1, 2]\n"
      "{\"submit_time\": 5, \"duration\": 60.4, \"gpus\": 1, \"time_limit\": 600}\n"
      "{\"submit_time\": 7, \"duration\": {\"h\": 1}, \"gpus\": 1}\n"
      "{\"submit_time\": 7, \"duration\": 1, \n";
  gp_err e = {0};
  gp_trace *t = read_str("jobs.jsonl", text, true, &e);
  REQUIRE(t);
  CHECK_EQ_INT(GP_TRACE_JSONL, t->format);
  CHECK_EQ_INT(2, t->n_jobs);
  CHECK_EQ_INT(3, t->bad_rows);
  CHECK_CONTAINS(t->bad_report.data, "jobs.jsonl:2:");
  CHECK_CONTAINS(t->bad_report.data, "jobs.jsonl:4: duration:");
  CHECK_CONTAINS(t->bad_report.data, "jobs.jsonl:5:");
  CHECK_EQ_INT(5, t->jobs[0].submit);
  CHECK_EQ_INT(60, t->jobs[0].duration);
  CHECK_EQ_INT(600, t->jobs[0].time_limit);
  CHECK_EQ_STR("default", gp_trace_name(t, t->jobs[0].queue));
  CHECK_EQ_INT(7200, t->jobs[1].duration);
  CHECK_EQ_STR("team-a", gp_trace_name(t, t->jobs[1].queue));
  gp_trace_free(t);
}

static void unknown_formats_and_missing_columns_are_explained(void) {
  gp_err e = {0};
  CHECK(read_str("x.csv", "a,b,c\n1,2,3\n", false, &e) == NULL);
  CHECK_CONTAINS(e.message, "--format");
  gp_trace *t = NULL;
  gp_trace_opts o = {.format = GP_TRACE_PHILLY};
  const char *text = "timestamp,duration,cluster\n2017-10-09 07:01:55,66.0,11cb48\n";
  CHECK(gp_trace_read_string("x.csv", text, strlen(text), &o, &t, &e) != 0);
  CHECK_EQ_STR("num_gpus", e.field);
  CHECK_EQ_INT(1, e.line);
  CHECK(gp_trace_read_file("/nonexistent/trace.csv", NULL, &t, &e) == GP_EIO);
}

static void oversized_rows_are_bad_rows_and_max_jobs_stops_early(void) {
  size_t n = GP_TRACE_MAX_LINE + 100;
  char *text = malloc(n + 200);
  int k = sprintf(text, "submit_time,duration,gpus,queue\n1,1,1,");
  memset(text + k, 'q', n);
  strcpy(text + k + n, "\n2,1,1,a\n3,1,1,b\n4,1,1,c\n");
  gp_err e = {0};
  gp_trace *t = read_str("big.csv", text, true, &e);
  REQUIRE(t);
  CHECK_EQ_INT(1, t->bad_rows);
  CHECK_CONTAINS(t->bad_report.data, "big.csv:2:");
  CHECK_EQ_INT(3, t->n_jobs);
  gp_trace_free(t);
  gp_trace_opts o = {.max_jobs = 2, .skip_bad = true};
  REQUIRE(gp_trace_read_string("big.csv", text, strlen(text), &o, &t, &e) == 0);
  CHECK_EQ_INT(2, t->n_jobs);
  gp_trace_free(t);
  free(text);
}

static void big_jobs_split_into_equal_gangs_that_fit_a_node(void) {
  int tasks, per;
  gp_trace_split_gang(7, 8, &tasks, &per);
  CHECK_EQ_INT(1, tasks); CHECK_EQ_INT(7, per);
  gp_trace_split_gang(16, 8, &tasks, &per);
  CHECK_EQ_INT(2, tasks); CHECK_EQ_INT(8, per);
  gp_trace_split_gang(12, 8, &tasks, &per);
  CHECK_EQ_INT(2, tasks); CHECK_EQ_INT(6, per);
  gp_trace_split_gang(128, 8, &tasks, &per);
  CHECK_EQ_INT(16, tasks); CHECK_EQ_INT(8, per);
  gp_trace_split_gang(0, 8, &tasks, &per);
  CHECK_EQ_INT(1, tasks); CHECK_EQ_INT(0, per);
}

/* Whole files are read into a buffer that grows with the file, up to the limit: a file of
 * exactly the limit is read, one byte more is refused naming the file. */
static void a_file_is_read_whole_up_to_its_limit(void) {
  char path[] = "/tmp/gpool-slurp.XXXXXX";
  int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  char block[1000];
  memset(block, 'x', sizeof block);
  for (int i = 0; i < 200; i++) REQUIRE(write(fd, block, sizeof block) == (ssize_t)sizeof block);
  close(fd);
  size_t len = 0;
  gp_err e = {0};
  char *text = gp__sim_trace_slurp(path, 200000, &len, &e);
  REQUIRE(text);
  CHECK(len == 200000 && text[199999] == 'x' && text[200000] == '\0');
  free(text);
  CHECK(gp__sim_trace_slurp(path, 199999, &len, &e) == NULL);
  CHECK_EQ_INT(GP_ELIMIT, e.code);
  CHECK_CONTAINS(e.message, "larger than 199999 bytes");
  unlink(path);
}

GP_TESTS(a_file_is_read_whole_up_to_its_limit, philly_slice_reads_times_as_utc_and_sorts_jobs,
         philly_malformed_rows_are_named_then_skipped_or_fatal,
         openb_pods_take_duration_from_deletion_minus_creation,
         openb_pods_without_times_are_rejected_with_their_line,
         openb_pods_read_for_shapes_keep_file_order_without_times,
         generic_csv_carries_every_field, jsonl_reads_the_same_fields_and_names_bad_lines,
         unknown_formats_and_missing_columns_are_explained,
         oversized_rows_are_bad_rows_and_max_jobs_stops_early,
         big_jobs_split_into_equal_gangs_that_fit_a_node)
