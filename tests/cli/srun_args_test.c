/* SPDX-License-Identifier: Apache-2.0 */
/* srun's command line (cli/srun_args.c): the layout options in every spelling Slurm
 * scripts and OpenMPI's launcher use, the options that are true of gpool anyway, and a
 * refusal naming each option gpool does not offer; and the environment srun passes. */
#include "test.h"

#include <jansson.h>

#include "cli/opts.h"
#include "cli/srun_args.h"

static const char *fake_env(const char *name) { return strcmp(name, "SLURM_CPUS_PER_TASK") == 0 ? "4" : NULL; }

static char line_buf[4096];
static char *words[128];
static char msg[700];

static int parse(const char *cmdline, gp_srun_opts *o) {
  snprintf(line_buf, sizeof line_buf, "srun %s", cmdline);
  int argc = gp_opt_split(line_buf, words, 127);
  msg[0] = '\0';
  return gp_srun_parse(argc, words, fake_env, o, msg, sizeof msg);
}

static void layout_options_in_every_spelling(void) {
  gp_srun_opts o;
  CHECK_EQ_INT(0, parse("-N 2 -n4 --ntasks-per-node=2 -l -K python3 train.py --lr 3", &o));
  CHECK_EQ_INT(2, o.nodes);
  CHECK_EQ_INT(4, o.ntasks);
  CHECK_EQ_INT(2, o.ntasks_per_node);
  CHECK(o.label && o.kill_on_bad_exit);
  CHECK_EQ_INT(4, o.argc); /* the command's own options are its own */
  CHECK_EQ_STR("python3", o.argv[0]);
  CHECK_EQ_STR("--lr", o.argv[2]);
  gp_srun_opts_done(&o);
  /* OpenMPI 4.1's plm_slurm, word for word. */
  CHECK_EQ_INT(0, parse("--ntasks-per-node=1 --kill-on-bad-exit --mpi=none --nodes=1 --nodelist=n3 --ntasks=1 "
                        "orted -mca ess slurm", &o));
  CHECK_EQ_INT(1, o.nodes);
  CHECK_EQ_INT(1, o.ntasks);
  CHECK_EQ_INT(1, (int)json_array_size(o.nodelist));
  CHECK_EQ_STR("n3", json_string_value(json_array_get(o.nodelist, 0)));
  CHECK(o.kill_on_bad_exit);
  CHECK_EQ_STR("orted", o.argv[0]);
  gp_srun_opts_done(&o);
  CHECK_EQ_INT(0, parse("-w n[2-3],gpu7 --kill-on-bad-exit=0 -lu --overlap --cpu-bind=none -c 4 -- hostname", &o));
  CHECK_EQ_INT(3, (int)json_array_size(o.nodelist));
  CHECK_EQ_STR("n3", json_string_value(json_array_get(o.nodelist, 1)));
  CHECK(!o.kill_on_bad_exit && o.label);
  CHECK_EQ_STR("hostname", o.argv[0]);
  gp_srun_opts_done(&o);
  /* Megatron's and NeMo's forms: per-step files by Slurm's patterns. */
  CHECK_EQ_INT(0, parse("--output=logs/%x_%j_%t.log --error logs/e-%J_%t.err -i none --open-mode=append python", &o));
  CHECK_EQ_STR("logs/%x_%j_%t.log", o.output);
  CHECK_EQ_STR("logs/e-%J_%t.err", o.error);
  CHECK(o.append);
  gp_srun_opts_done(&o);
  CHECK_EQ_INT(0, parse("--exclusive -n 1 ./task 3", &o));
  CHECK(o.exclusive);
  gp_srun_opts_done(&o);
}

static void refusals_name_the_option(void) {
  gp_srun_opts o;
  CHECK_EQ_INT(2, parse("--pty bash", &o));
  CHECK_CONTAINS(msg, "--pty");
  gp_srun_opts_done(&o);
  CHECK_EQ_INT(2, parse("--container-image=x python", &o));
  CHECK_CONTAINS(msg, "--container-image");
  gp_srun_opts_done(&o);
  CHECK_EQ_INT(2, parse("-G 1 python", &o));
  CHECK_CONTAINS(msg, "-G");
  gp_srun_opts_done(&o);
  CHECK_EQ_INT(2, parse("--mpi=pmix ./app", &o));
  CHECK_CONTAINS(msg, "--mpi=pmix");
  gp_srun_opts_done(&o);
  CHECK_EQ_INT(2, parse("--cpu-bind=cores ./app", &o));
  CHECK_CONTAINS(msg, "--cpu-bind");
  gp_srun_opts_done(&o);
  CHECK_EQ_INT(2, parse("-c 8 ./app", &o)); /* not the job's 4 */
  CHECK_CONTAINS(msg, "-c");
  gp_srun_opts_done(&o);
  CHECK_EQ_INT(2, parse("-N 1-2 ./app", &o));
  CHECK_CONTAINS(msg, "-N/--nodes");
  gp_srun_opts_done(&o);
  CHECK_EQ_INT(2, parse("-n 0 ./app", &o));
  CHECK_CONTAINS(msg, "-n/--ntasks");
  gp_srun_opts_done(&o);
  CHECK_EQ_INT(2, parse("-w n[3-1] ./app", &o));
  CHECK_CONTAINS(msg, "-w/--nodelist");
  gp_srun_opts_done(&o);
  CHECK_EQ_INT(2, parse("-l", &o));
  CHECK_CONTAINS(msg, "no command");
  gp_srun_opts_done(&o);
  CHECK_EQ_INT(2, parse("--label=1 x", &o));
  CHECK_CONTAINS(msg, "--label takes no value");
  gp_srun_opts_done(&o);
  CHECK_EQ_INT(2, parse("-o logs/%q.out x", &o));
  CHECK_CONTAINS(msg, "-o");
  gp_srun_opts_done(&o);
  CHECK_EQ_INT(2, parse("--input=0 x", &o));
  CHECK_CONTAINS(msg, "--input");
  gp_srun_opts_done(&o);
  CHECK_EQ_INT(2, parse("--export=1BAD x", &o));
  CHECK_CONTAINS(msg, "--export");
  gp_srun_opts_done(&o);
}

static void the_environment_passed(void) {
  char *items[] = {"PATH=/bin", "MINE=1", "GPOOL_JOB_KEY=gpjob.secret", "GPOOL_TOKEN=t", "RANK=3", "GPOOL_RANK=3",
                   "MASTER_PORT=29500", "GPOOL_MASTER_PORT=21000", "BASH_FUNC_f%%=() { :; }", "NOEQ", NULL};
  gp_srun_opts o;
  CHECK_EQ_INT(0, parse("true", &o));
  json_t *env = gp_srun_env(&o, items, msg, sizeof msg);
  REQUIRE(env);
  CHECK_EQ_STR("1", json_string_value(json_object_get(env, "MINE")));
  CHECK(!json_object_get(env, "GPOOL_JOB_KEY")); /* never the credential */
  CHECK(!json_object_get(env, "GPOOL_TOKEN"));
  CHECK(!json_object_get(env, "RANK"));          /* gpool's own: the step's replaces it */
  CHECK_EQ_STR("29500", json_string_value(json_object_get(env, "MASTER_PORT"))); /* the script's */
  CHECK_EQ_INT(3, (int)json_object_size(env));
  json_decref(env);
  gp_srun_opts_done(&o);
  CHECK_EQ_INT(0, parse("--export=NONE true", &o));
  env = gp_srun_env(&o, items, msg, sizeof msg);
  CHECK_EQ_INT(0, (int)json_object_size(env));
  json_decref(env);
  gp_srun_opts_done(&o);
  CHECK_EQ_INT(0, parse("--export=MINE,X=2 true", &o));
  env = gp_srun_env(&o, items, msg, sizeof msg);
  CHECK_EQ_INT(2, (int)json_object_size(env));
  CHECK_EQ_STR("2", json_string_value(json_object_get(env, "X")));
  json_decref(env);
  gp_srun_opts_done(&o);
  CHECK_EQ_INT(0, parse("--export=ALL,X=2 true", &o));
  env = gp_srun_env(&o, items, msg, sizeof msg);
  CHECK_EQ_INT(4, (int)json_object_size(env));
  json_decref(env);
  gp_srun_opts_done(&o);
  /* Past the step's bounds: refused with a sentence, never cut. */
  static char big[200000];
  memset(big, 'x', sizeof big - 1);
  memcpy(big, "BIG=", 4);
  char *large[] = {big, NULL};
  CHECK_EQ_INT(0, parse("true", &o));
  CHECK(gp_srun_env(&o, large, msg, sizeof msg) == NULL);
  CHECK_CONTAINS(msg, "--export");
  gp_srun_opts_done(&o);
}

GP_TESTS(layout_options_in_every_spelling, refusals_name_the_option, the_environment_passed)
