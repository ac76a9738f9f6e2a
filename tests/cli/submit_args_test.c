/* SPDX-License-Identifier: Apache-2.0 */
/* What `gpool submit` sends for what a user types: gpool's options, #GPOOL lines, Slurm's
 * #SBATCH spellings, the precedence between them, and the errors a user sees for bad
 * input (naming the script's line). No server: these check the request body. */
#include "test.h"

#include <jansson.h>

#include "cli/opts.h"
#include "cli/submit_args.h"

typedef struct parsed {
  gp_submit s;
  gp_err err;
  int rc;
} parsed;

/* Parses a command line given as one string (words split on spaces) plus an optional
 * script text, as `gpool submit` does. */
static parsed *submit(const char *cmdline, const char *script) {
  static char buf[4096];
  static char *argv[64];
  parsed *p = calloc(1, sizeof *p);
  gp_submit_init(&p->s);
  snprintf(buf, sizeof buf, "submit %s", cmdline);
  int argc = gp_opt_split(buf, argv, 63);
  REQUIRE(argc > 0);
  p->rc = gp_submit_parse_args(&p->s, argc, argv, &p->err);
  if (p->rc) return p;
  if (script) {
    p->s.script = p->s.n_args ? p->s.args[0] : "job.sh";
    p->rc = gp_submit_parse_script(&p->s, "job.sh", script, strlen(script), &p->err);
    if (p->rc) return p;
  }
  p->rc = gp_submit_finish(&p->s, "/home/alice", script, &p->err);
  return p;
}

static void done(parsed *p) {
  gp_submit_done(&p->s);
  free(p);
}

static long long get_int(parsed *p, const char *key) {
  json_t *v = json_object_get(p->s.req, key);
  return json_is_integer(v) ? json_integer_value(v) : -999;
}
static const char *get_str(parsed *p, const char *key) {
  return json_string_value(json_object_get(p->s.req, key));
}
static const char *item(parsed *p, const char *key, size_t i) {
  return json_string_value(json_array_get(json_object_get(p->s.req, key), i));
}

static void gpool_options_become_the_request(void) {
  parsed *p = submit("-q team/proj -g 2 --gpu-type h100,h200 -N 2 -c 8 --mem 64G -t 4h -p training "
                     "--requeue --grace 60s --signal SIGUSR1 --afterok 11 --after 9 --afterany 7,8 "
                     "-n train --hold -D /data -- python train.py --lr 3", NULL);
  REQUIRE(p->rc == 0);
  CHECK_EQ_STR("team/proj", get_str(p, "queue"));
  CHECK_EQ_INT(2, get_int(p, "gpus"));
  CHECK_EQ_INT(2, get_int(p, "tasks"));
  CHECK_EQ_STR("h100", item(p, "gpu_types", 0));
  CHECK_EQ_STR("h200", item(p, "gpu_types", 1));
  CHECK_EQ_INT(8, get_int(p, "cpus"));
  CHECK_EQ_INT(65536, get_int(p, "mem_mib"));
  CHECK_EQ_INT(14400, get_int(p, "time_limit"));
  CHECK_EQ_STR("training", get_str(p, "priority"));
  CHECK(json_is_true(json_object_get(p->s.req, "requeue")));
  CHECK_EQ_INT(60, get_int(p, "grace_s"));
  CHECK_EQ_STR("USR1", get_str(p, "signal"));
  CHECK_EQ_STR("11", item(p, "after_ok", 0));
  CHECK_EQ_STR("9", item(p, "after", 0));
  CHECK_EQ_STR("8", item(p, "after_any", 1));
  CHECK_EQ_STR("train", get_str(p, "name"));
  CHECK(json_is_true(json_object_get(p->s.req, "hold")));
  CHECK_EQ_STR("/data", get_str(p, "workdir"));
  CHECK_EQ_STR("python", item(p, "command", 0));
  CHECK_EQ_STR("--lr", item(p, "command", 2)); /* options after -- belong to the command */
  done(p);
}

static void a_command_without_dashdash_and_defaults(void) {
  parsed *p = submit("-g1 nvidia-smi -L", NULL);
  REQUIRE(p->rc == 0);
  CHECK_EQ_INT(1, get_int(p, "gpus"));
  CHECK_EQ_STR("nvidia-smi", item(p, "command", 0));
  CHECK_EQ_STR("-L", item(p, "command", 1));
  CHECK_EQ_STR("/home/alice", get_str(p, "workdir")); /* default: where you submit from */
  CHECK_EQ_STR("nvidia-smi", get_str(p, "name"));
  CHECK(json_object_get(p->s.req, "queue") == NULL); /* the server picks your default */
  done(p);
}

static void gres_and_fractions(void) {
  parsed *p = submit("--gres gpu:h100:2 -- true", NULL);
  REQUIRE(p->rc == 0);
  CHECK_EQ_INT(2, get_int(p, "gpus"));
  CHECK_EQ_STR("h100", item(p, "gpu_types", 0));
  done(p);

  p = submit("--gpu-fraction 0.5 -- true", NULL);
  REQUIRE(p->rc == 0);
  CHECK_NEAR(0.5, json_real_value(json_object_get(p->s.req, "gpu_fraction")), 1e-9);
  CHECK(json_object_get(p->s.req, "gpus") == NULL);
  done(p);

  p = submit("--gpu-mem 20G -- true", NULL);
  REQUIRE(p->rc == 0);
  CHECK_EQ_INT(20480, get_int(p, "gpu_mem_mib"));
  done(p);

  p = submit("-g 1 --mig 1g.10gb -- true", NULL);
  REQUIRE(p->rc == 0);
  CHECK_EQ_STR("1g.10gb", get_str(p, "mig"));
  CHECK(json_object_get(p->s.req, "gpus") == NULL);
  done(p);
}

static void bad_values_are_named(void) {
  parsed *p = submit("--gpu-fraction 1.5 -- true", NULL);
  CHECK_EQ_INT(GP_EINVAL, p->rc);
  CHECK_CONTAINS(p->err.message, "1.5");
  CHECK_EQ_STR("gpu_fraction", p->err.field);
  done(p);

  p = submit("-g 2 --gpu-mem 20G -- true", NULL);
  CHECK_EQ_INT(GP_EINVAL, p->rc);
  CHECK_CONTAINS(p->err.message, "part of one GPU");
  done(p);

  p = submit("--mig 1g.10gb --gpu-fraction 0.5 -- true", NULL);
  CHECK_EQ_INT(GP_EINVAL, p->rc);
  CHECK_CONTAINS(p->err.message, "choose one");
  done(p);

  p = submit("--mig big -- true", NULL);
  CHECK_EQ_INT(GP_EINVAL, p->rc);
  CHECK_CONTAINS(p->err.message, "MIG profile");
  done(p);

  p = submit("-t forever -- true", NULL);
  CHECK_CONTAINS(p->err.message, "'forever' is not a duration");
  done(p);

  p = submit("--afterok abc -- true", NULL);
  CHECK_CONTAINS(p->err.message, "job ids");
  done(p);

  p = submit("--signal KILLME -- true", NULL);
  CHECK_CONTAINS(p->err.message, "signal");
  done(p);

  p = submit("--frobnicate -- true", NULL);
  CHECK_CONTAINS(p->err.message, "unknown option '--frobnicate'");
  done(p);

  p = submit("-g", NULL);
  CHECK_CONTAINS(p->err.message, "needs a value");
  done(p);

  p = submit("-g 1", NULL);
  CHECK_EQ_INT(GP_EINVAL, p->rc);
  CHECK_CONTAINS(p->err.message, "nothing to run");
  done(p);
}

static void gpool_directives_and_precedence(void) {
  const char *script = "#!/bin/bash\n"
                       "# a training job\n"
                       "#GPOOL -q org/a -g 4\n"
                       "#GPOOL --time 2h --name 'my run'   # trailing comment\n"
                       "\n"
                       "python train.py\n"
                       "#GPOOL -g 8\n"; /* after the first command: not a directive */
  parsed *p = submit("-g 2 job.sh --epochs 3", script);
  REQUIRE(p->rc == 0);
  CHECK_EQ_STR("org/a", get_str(p, "queue"));
  CHECK_EQ_INT(2, get_int(p, "gpus")); /* the command line wins over #GPOOL */
  CHECK_EQ_INT(7200, get_int(p, "time_limit"));
  CHECK_EQ_STR("my run", get_str(p, "name"));
  CHECK_EQ_STR("/bin/bash", item(p, "command", 0));
  CHECK_EQ_STR("/home/alice/job.sh", item(p, "command", 1));
  CHECK_EQ_STR("--epochs", item(p, "command", 2));
  done(p);
}

static void sbatch_directives_map_to_gpool(void) {
  const char *script = "#!/usr/bin/env python3\n"
                       "#SBATCH --job-name=bert\n"
                       "#SBATCH -p research\n"
                       "#SBATCH -N 2\n"
                       "#SBATCH --gpus=h100:16\n"
                       "#SBATCH --cpus-per-task=16 --mem=128G\n"
                       "#SBATCH -t 90\n"
                       "#SBATCH --dependency=afterok:41:42,afterany:40\n"
                       "#SBATCH --requeue --signal=B:USR1@120\n"
                       "#SBATCH --output=slurm-%j.out\n"
                       "#SBATCH --mail-user someone@example.org --mail-type=BEGIN,END\n"
                       "#SBATCH --frobnicate=3\n"
                       "import torch\n";
  parsed *p = submit("job.sh", script);
  REQUIRE(p->rc == 0);
  CHECK_EQ_STR("bert", get_str(p, "name"));
  CHECK_EQ_STR("research", get_str(p, "queue")); /* a partition is a queue */
  CHECK_EQ_INT(2, get_int(p, "tasks"));
  CHECK_EQ_INT(8, get_int(p, "gpus"));           /* Slurm's --gpus is the total: 16 over 2 nodes */
  CHECK_EQ_STR("h100", item(p, "gpu_types", 0));
  CHECK_EQ_INT(16, get_int(p, "cpus"));
  CHECK_EQ_INT(131072, get_int(p, "mem_mib"));
  CHECK_EQ_INT(5400, get_int(p, "time_limit")); /* Slurm: plain minutes */
  CHECK_EQ_STR("41", item(p, "after_ok", 0));
  CHECK_EQ_STR("42", item(p, "after_ok", 1));
  CHECK_EQ_STR("40", item(p, "after_any", 0));
  CHECK(json_is_true(json_object_get(p->s.req, "requeue")));
  /* --signal=B:USR1@120: USR1 to the batch shell 120 s before the limit (submit_batch.c);
   * the stop signal at the limit stays TERM. */
  CHECK_EQ_STR("USR1", get_str(p, "warn_signal"));
  CHECK_EQ_INT(120, get_int(p, "warn_before_s"));
  CHECK(json_is_true(json_object_get(p->s.req, "warn_batch")));
  CHECK(get_str(p, "signal") == NULL);
  CHECK_EQ_STR("slurm-%j.out", get_str(p, "output"));
  CHECK(p->s.sbatch);
  CHECK(json_object_get(p->s.req, "_gpus_total") == NULL); /* private keys never leave */
  CHECK_EQ_STR("/usr/bin/env", item(p, "command", 0));
  CHECK_EQ_STR("python3", item(p, "command", 1));
  CHECK(!strstr(p->s.warnings.data ? p->s.warnings.data : "", "--output"));
  CHECK_EQ_STR("someone@example.org", get_str(p, "mail_user")); /* notifications */
  CHECK_EQ_STR("BEGIN,END", get_str(p, "mail_type"));
  CHECK_CONTAINS(p->s.warnings.data, "job.sh:12: #SBATCH --frobnicate=3 is not supported");
  done(p);

  /* In a #GPOOL line -o is always a file; on the command line json and table are formats. */
  p = submit("-o json job.sh", "#!/bin/sh\n#GPOOL -o out-%j.txt --open-mode append\n#GPOOL --begin now+60\nrun\n");
  REQUIRE(p->rc == 0);
  CHECK(p->s.json_out);
  CHECK(!p->s.sbatch); /* no #SBATCH line: --export stays NONE */
  CHECK_EQ_STR("out-%j.txt", get_str(p, "output"));
  CHECK_EQ_STR("append", get_str(p, "open_mode"));
  CHECK(get_int(p, "begin_at") > 0);
  done(p);
  p = submit("-o logs/%x.out --error=logs/%x.err -- true", NULL);
  REQUIRE(p->rc == 0);
  CHECK(!p->s.json_out);
  CHECK_EQ_STR("logs/%x.out", get_str(p, "output"));
  CHECK_EQ_STR("logs/%x.err", get_str(p, "error"));
  done(p);
  p = submit("job.sh", "#!/bin/sh\n#SBATCH -e 'bad%y'\n");
  CHECK(p->rc != 0);
  CHECK_EQ_STR("error", p->err.field);
  CHECK_EQ_INT(2, p->err.line);
  CHECK_CONTAINS(p->err.message, "--error 'bad%y'");
  done(p);

  p = submit("job.sh", "#!/bin/sh\n#SBATCH --gres=gpu:a100:4\n#SBATCH -J x\n");
  REQUIRE(p->rc == 0);
  CHECK_EQ_INT(4, get_int(p, "gpus"));
  CHECK_EQ_STR("a100", item(p, "gpu_types", 0));
  done(p);
}

static void bad_directives_name_file_and_line(void) {
  /* Mail events gpool cannot produce, and addresses it does not send to, are refused. */
  parsed *m = submit("job.sh", "#!/bin/sh\n#SBATCH --mail-type=END,INVALID_DEPEND\n");
  CHECK_EQ_INT(GP_EINVAL, m->rc);
  CHECK_EQ_INT(2, m->err.line);
  CHECK_CONTAINS(m->err.message, "INVALID_DEPEND is not supported");
  done(m);
  m = submit("job.sh", "#!/bin/sh\n#SBATCH --mail-user=someone\n");
  CHECK_EQ_INT(GP_EINVAL, m->rc);
  CHECK_EQ_INT(2, m->err.line);
  CHECK_CONTAINS(m->err.message, "'someone' is not a mail address");
  done(m);
  parsed *p = submit("job.sh", "#!/bin/sh\n#GPOOL -g 1\n#GPOOL --gpus lots\n");
  CHECK_EQ_INT(GP_EINVAL, p->rc);
  CHECK_EQ_STR("job.sh", p->err.file);
  CHECK_EQ_INT(3, p->err.line);
  CHECK_CONTAINS(p->err.message, "'lots' is not a GPU count");
  done(p);

  p = submit("job.sh", "#!/bin/sh\n#GPOOL --token abc\n");
  CHECK_CONTAINS(p->err.message, "only job options");
  done(p);

  p = submit("job.sh", "#!/bin/sh\n#GPOOL -n 'unterminated\n");
  CHECK_CONTAINS(p->err.message, "unterminated quote");
  done(p);

  p = submit("job.sh", "#!/bin/sh\n#SBATCH -N 3\n#SBATCH --gpus=8\n");
  CHECK_CONTAINS(p->err.message, "cannot be split evenly over 3 tasks");
  done(p);

  p = submit("job.sh", "#!/bin/sh\n#SBATCH --dependency=afterburst:5\n");
  CHECK_CONTAINS(p->err.message, "afterburst");
  CHECK_EQ_INT(2, p->err.line);
  done(p);

  /* Arrays: the spec goes to the server as written; aftercorr and element ids ("12_7"). */
  p = submit("job.sh", "#!/bin/sh\n#SBATCH --array=0-99:2%8\n#SBATCH -d aftercorr:12,afterok:12_7\n");
  REQUIRE(p->rc == 0);
  CHECK_EQ_STR("0-99:2%8", get_str(p, "array"));
  CHECK_EQ_STR("12", item(p, "after_corr", 0));
  CHECK_EQ_STR("12_7", item(p, "after_ok", 0));
  done(p);
  p = submit("job.sh", "#!/bin/sh\n#SBATCH --array=0-9\n#SBATCH -a 1-x\n");
  CHECK_CONTAINS(p->err.message, "not an array spec");
  CHECK_EQ_INT(3, p->err.line);
  done(p);
  p = submit("job.sh", "#!/bin/sh\n#SBATCH -d afterok:12_\n");
  CHECK_CONTAINS(p->err.message, "not a list of job ids");
  done(p);

  /* afternotok and singleton are Slurm's and mean what they mean there. */
  p = submit("job.sh", "#!/bin/sh\n#SBATCH --dependency=afternotok:5:6,singleton\n");
  REQUIRE(p->rc == 0);
  CHECK_EQ_STR("5", item(p, "after_not_ok", 0));
  CHECK_EQ_STR("6", item(p, "after_not_ok", 1));
  CHECK(json_is_true(json_object_get(p->s.req, "singleton")));
  done(p);

  p = submit("job.sh", "#!/bin/sh\n#SBATCH --gres=shard:2\n");
  CHECK_CONTAINS(p->err.message, "only GPU resources");
  done(p);

  gp_submit s;
  gp_submit_init(&s);
  gp_err err = {0};
  CHECK_EQ_INT(GP_EINVAL, gp_submit_parse_script(&s, "bin.sh", "#!\0x", 4, &err));
  CHECK_CONTAINS(err.message, "NUL");
  gp_submit_done(&s);
}

static void model_names_resolve_against_the_fleet(void) {
  json_error_t je;
  json_t *nodes = json_loads("{\"nodes\": [{\"model\": \"H100-80GB\"}, {\"model\": \"H100-NVL-94GB\"},"
                             " {\"model\": \"A100-40GB\"}, {\"model\": \"H200-141GB\"}]}", 0, &je);
  REQUIRE(nodes);
  json_t *req = json_loads("{\"gpu_types\": [\"h100\", \"a100-40gb\"]}", 0, &je);
  gp_err err = {0};
  CHECK_EQ_INT(0, gp_submit_resolve_types(req, nodes, &err));
  json_t *t = json_object_get(req, "gpu_types");
  CHECK_EQ_INT(3, json_array_size(t));
  CHECK_EQ_STR("H100-80GB", json_string_value(json_array_get(t, 0)));
  CHECK_EQ_STR("H100-NVL-94GB", json_string_value(json_array_get(t, 1)));
  CHECK_EQ_STR("A100-40GB", json_string_value(json_array_get(t, 2)));
  json_decref(req);

  req = json_loads("{\"gpu_types\": [\"h10\"]}", 0, &je); /* a prefix must end at a word */
  CHECK_EQ_INT(GP_EINVAL, gp_submit_resolve_types(req, nodes, &err));
  CHECK_CONTAINS(err.message, "no GPU model in the pool matches 'h10'");
  CHECK_CONTAINS(err.message, "H200-141GB");
  json_decref(req);

  json_t *empty = json_loads("{\"nodes\": []}", 0, &je);
  req = json_loads("{\"gpu_types\": [\"b200\"]}", 0, &je);
  CHECK_EQ_INT(0, gp_submit_resolve_types(req, empty, &err)); /* no fleet yet: server decides */
  CHECK_EQ_STR("b200", json_string_value(json_array_get(json_object_get(req, "gpu_types"), 0)));
  json_decref(req);
  json_decref(empty);
  json_decref(nodes);
}

static void directive_words_split_like_a_shell(void) {
  char line[] = "  --name \"a b\" -J'c d'  x#y # comment";
  char *w[8];
  int n = gp_opt_split(line, w, 8);
  CHECK_EQ_INT(4, n);
  CHECK_EQ_STR("--name", w[0]);
  CHECK_EQ_STR("a b", w[1]);
  CHECK_EQ_STR("-Jc d", w[2]);
  CHECK_EQ_STR("x#y", w[3]);
  char many[] = "a b c d e f g h i";
  CHECK_EQ_INT(GP_ELIMIT, gp_opt_split(many, w, 8));
}

/* Scripts are untrusted input: mutated directive blocks (random bytes spliced into real
 * directives, unbalanced quotes, huge counts) must give an answer or an error, never a
 * crash (ASan and UBSan watch this test). */
/* The #! line is read as the kernel reads it: the interpreter, then the rest of the line as
 * one argument, quotes and all. A quoted word that reads differently once unquoted (the
 * fuzzer's find) once sent the argument's bounds past the line. */
static void the_interpreter_line_is_read_as_the_kernel_does(void) {
  parsed *p = submit("job.sh", "#!/bin/-time   n'x y'\n#SBATCH --n'2h-x y'\n#innx ys");
  CHECK_EQ_INT(0, p->rc);
  CHECK_EQ_STR("/bin/-time", item(p, "command", 0));
  CHECK_EQ_STR("n'x y'", item(p, "command", 1));
  done(p);
  const char *awk = "#! /usr/bin/awk  -f -v x=1 \t\necho\n";
  p = submit("job.sh", awk);
  CHECK_EQ_INT(0, p->rc);
  CHECK_EQ_STR("/usr/bin/awk", item(p, "command", 0));
  CHECK_EQ_STR("-f -v x=1", item(p, "command", 1));
  done(p);
}

static void hostile_scripts_never_crash(void) {
  static const char *const seeds[] = {
    "#!/bin/sh\n#GPOOL -q a -g 4 --time 2h -n 'x y'\n#SBATCH --gres=gpu:h100:2 -N 2\necho\n",
    "#SBATCH --dependency=afterok:1:2,afterany:3 --signal=B:USR1@60 -t 1-00:00:00\n",
    "#GPOOL --gpu-mem 20G\n#GPOOL --mig 1g.10gb\n#SBATCH --gpus=h100:16 -N 4 --mem=128G\n",
  };
  unsigned seed = 42;
  char buf[512];
  int answered = 0, refused = 0;
  for (int round = 0; round < 3000; round++) {
    const char *base = seeds[round % 3];
    size_t n = strlen(base);
    memcpy(buf, base, n + 1);
    int edits = 1 + (int)(rand_r(&seed) % 6);
    for (int e = 0; e < edits; e++) {
      size_t at = (size_t)rand_r(&seed) % n;
      static const char alphabet[] = "-=:,'\"# \n\tg0123456789@?hx.";
      buf[at] = (rand_r(&seed) % 4) ? alphabet[rand_r(&seed) % (sizeof alphabet - 1)] : (char)(1 + rand_r(&seed) % 255);
    }
    gp_submit s;
    gp_submit_init(&s);
    gp_err err = {0};
    s.script = "fuzz.sh";
    int rc = gp_submit_parse_script(&s, "fuzz.sh", buf, n, &err);
    if (rc == 0) rc = gp_submit_finish(&s, "/w", buf, &err);
    if (rc == 0) answered++;
    else {
      refused++;
      CHECK(err.message[0] != '\0'); /* every refusal says why */
    }
    gp_submit_done(&s);
  }
  CHECK(answered > 0);
  CHECK(refused > 0);
}

static void spot_and_node_selector_options(void) {
  parsed *p = submit("--allow-spot --node-selector zone=eu-1 --node-selector rack=r7 "
                     "--node-selector zone=eu-2 -- x", NULL);
  REQUIRE(p->rc == 0);
  CHECK(json_is_true(json_object_get(p->s.req, "allow_spot")));
  const json_t *sel = json_object_get(p->s.req, "node_selector");
  CHECK_EQ_INT(2, (long long)json_object_size(sel));
  CHECK_EQ_STR("eu-2", json_string_value(json_object_get(sel, "zone"))); /* the last wins */
  CHECK_EQ_STR("r7", json_string_value(json_object_get(sel, "rack")));
  done(p);
  /* --no-spot on the command line overrides a directive's --allow-spot. */
  p = submit("--no-spot job.sh", "#!/bin/sh\n#GPOOL --allow-spot --node-selector pool=a\nrun\n");
  REQUIRE(p->rc == 0);
  CHECK(json_is_false(json_object_get(p->s.req, "allow_spot")));
  CHECK_EQ_STR("a", json_string_value(json_object_get(json_object_get(p->s.req, "node_selector"), "pool")));
  done(p);
  static const char *const bad[] = {"--node-selector zone -- x", "--node-selector =a -- x",
                                    "--node-selector zone= -- x"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    p = submit(bad[i], NULL);
    CHECK(p->rc != 0);
    CHECK_EQ_STR("node_selector", p->err.field);
    done(p);
  }
}

/* Tasks and nodes: -N alone is one task per node's worth; --ntasks and --ntasks-per-node set
 * the count and the most tasks one node holds; per-node GPU counts are split over a node's
 * tasks, per-task ones are kept. */
static void tasks_and_nodes(void) {
  parsed *p = submit("-N 2 -g 1 -- true", NULL);
  REQUIRE(p->rc == 0);
  CHECK_EQ_INT(2, get_int(p, "tasks"));
  CHECK(json_object_get(p->s.req, "tasks_per_node") == NULL);
  CHECK(json_object_get(p->s.req, "_nodes") == NULL);
  done(p);

  p = submit("--ntasks 4 --gpus-per-task 2 -- true", NULL);
  REQUIRE(p->rc == 0);
  CHECK_EQ_INT(4, get_int(p, "tasks"));
  CHECK_EQ_INT(2, get_int(p, "gpus"));
  CHECK(json_object_get(p->s.req, "tasks_per_node") == NULL);
  done(p);

  p = submit("-N 2 --ntasks-per-node 4 -g 1 -- true", NULL);
  REQUIRE(p->rc == 0);
  CHECK_EQ_INT(8, get_int(p, "tasks"));
  CHECK_EQ_INT(4, get_int(p, "tasks_per_node"));
  CHECK_EQ_INT(2, get_int(p, "nodes")); /* N nodes x K tasks: exactly 2 nodes */
  CHECK(json_object_get(p->s.req, "batch") == NULL); /* a command runs in every task */
  done(p);

  p = submit("-N 2 --ntasks 3 -- true", NULL);
  REQUIRE(p->rc == 0);
  CHECK_EQ_INT(3, get_int(p, "tasks"));
  CHECK_EQ_INT(2, get_int(p, "tasks_per_node")); /* at least two nodes */
  done(p);

  p = submit("-N 2 --ntasks 9 --ntasks-per-node 4 -- true", NULL);
  CHECK(p->rc != 0);
  CHECK_CONTAINS(p->err.message, "does not fit");
  done(p);

  /* Slurm's one-task-per-GPU layout: 8 tasks a node, a GPU each. */
  p = submit("job.sh", "#!/bin/sh\n#SBATCH -N 2\n#SBATCH --ntasks-per-node=8\n#SBATCH --gpus-per-task=1\n");
  REQUIRE(p->rc == 0);
  CHECK_EQ_INT(16, get_int(p, "tasks"));
  CHECK_EQ_INT(8, get_int(p, "tasks_per_node"));
  CHECK_EQ_INT(2, get_int(p, "nodes"));
  CHECK_EQ_INT(1, get_int(p, "gpus"));
  CHECK(json_is_true(json_object_get(p->s.req, "batch"))); /* runs once, as the batch step */
  done(p);

  /* --gpus-per-node over 8 tasks a node: one GPU each; -c is per task. */
  p = submit("job.sh", "#!/bin/sh\n#SBATCH -N 2\n#SBATCH --ntasks-per-node=8\n#SBATCH --gpus-per-node=8\n#SBATCH -c 4\n");
  REQUIRE(p->rc == 0);
  CHECK_EQ_INT(16, get_int(p, "tasks"));
  CHECK_EQ_INT(1, get_int(p, "gpus"));
  CHECK_EQ_INT(4, get_int(p, "cpus"));
  CHECK_EQ_INT(2, get_int(p, "nodes"));
  done(p);

  /* -N 3 -n 4: on exactly 3 nodes (at most 2 a node alone would allow 2). */
  p = submit("job.sh", "#!/bin/sh\n#SBATCH -N 3\n#SBATCH -n 4\n");
  REQUIRE(p->rc == 0);
  CHECK_EQ_INT(4, get_int(p, "tasks"));
  CHECK_EQ_INT(3, get_int(p, "nodes"));
  done(p);

  p = submit("job.sh", "#!/bin/sh\n#SBATCH -N 3\n#SBATCH -n 2\n");
  CHECK(p->rc != 0);
  CHECK_CONTAINS(p->err.message, "more nodes than");
  done(p);

  /* A script without #SBATCH lines is no batch job. */
  p = submit("-N 2 job.sh", "#!/bin/sh\n#GPOOL -g 1\necho hi\n");
  REQUIRE(p->rc == 0);
  CHECK(json_object_get(p->s.req, "batch") == NULL);
  CHECK(json_object_get(p->s.req, "nodes") == NULL); /* gpool's -N alone: tasks may share */
  done(p);

  /* --gres is per node: split over the node's tasks. */
  p = submit("job.sh", "#!/bin/sh\n#SBATCH -N 2\n#SBATCH --ntasks-per-node=4\n#SBATCH --gres=gpu:8\n");
  REQUIRE(p->rc == 0);
  CHECK_EQ_INT(8, get_int(p, "tasks"));
  CHECK_EQ_INT(2, get_int(p, "gpus"));
  done(p);

  /* One task per node with torchrun: the node's GPUs all go to its task. */
  p = submit("job.sh", "#!/bin/sh\n#SBATCH --nodes=2\n#SBATCH --gpus-per-node=8\n");
  REQUIRE(p->rc == 0);
  CHECK_EQ_INT(2, get_int(p, "tasks"));
  CHECK_EQ_INT(8, get_int(p, "gpus"));
  done(p);

  /* The command line's GPUs replace the script's, however either spelled them. */
  p = submit("-g 1 job.sh", "#!/bin/sh\n#SBATCH --gres=gpu:4\n");
  REQUIRE(p->rc == 0);
  CHECK_EQ_INT(1, get_int(p, "gpus"));
  done(p);

  p = submit("--ntasks-per-node 0 -- true", NULL);
  CHECK(p->rc != 0);
  CHECK_EQ_STR("tasks_per_node", p->err.field);
  done(p);
}

/* Slurm's meanings: #SBATCH -N is that many distinct nodes (one task each unless told
 * otherwise; N-N is N, a range is refused), --exclusive keeps other jobs off the job's
 * nodes, --mem=0 is a whole node (exclusive, no memory limit). */
static void sbatch_nodes_exclusive_and_mem0(void) {
  parsed *p = submit("job.sh", "#!/bin/sh\n#SBATCH -N 2\n#SBATCH --gpus-per-task=1\n");
  REQUIRE(p->rc == 0);
  CHECK_EQ_INT(2, get_int(p, "tasks"));
  CHECK_EQ_INT(1, get_int(p, "tasks_per_node")); /* two distinct nodes */
  CHECK(json_object_get(p->s.req, "_sb_nodes") == NULL);
  done(p);

  p = submit("job.sh", "#!/bin/sh\n#SBATCH --nodes=3-3\n");
  REQUIRE(p->rc == 0);
  CHECK_EQ_INT(3, get_int(p, "tasks"));
  CHECK_EQ_INT(1, get_int(p, "tasks_per_node"));
  done(p);

  p = submit("job.sh", "#!/bin/sh\n#SBATCH --nodes=2-4\n");
  CHECK(p->rc != 0);
  CHECK_CONTAINS(p->err.message, "range of node counts");
  done(p);

  p = submit("job.sh", "#!/bin/sh\n#SBATCH --nodes=x\n");
  CHECK(p->rc != 0);
  CHECK_EQ_STR("tasks", p->err.field);
  done(p);

  /* With --ntasks, at most its share a node (already so). */
  p = submit("job.sh", "#!/bin/sh\n#SBATCH -N 2\n#SBATCH --ntasks=5\n");
  REQUIRE(p->rc == 0);
  CHECK_EQ_INT(5, get_int(p, "tasks"));
  CHECK_EQ_INT(3, get_int(p, "tasks_per_node"));
  done(p);

  p = submit("job.sh", "#!/bin/sh\n#SBATCH --exclusive\n");
  REQUIRE(p->rc == 0);
  CHECK(json_is_true(json_object_get(p->s.req, "exclusive")));
  CHECK(strstr(p->s.warnings.data ? p->s.warnings.data : "", "exclusive") == NULL); /* not "ignored" */
  done(p);

  p = submit("--exclusive -g 1 -- true", NULL);
  REQUIRE(p->rc == 0);
  CHECK(json_is_true(json_object_get(p->s.req, "exclusive")));
  done(p);

  p = submit("job.sh", "#!/bin/sh\n#SBATCH --mem=0\n");
  REQUIRE(p->rc == 0);
  CHECK(json_is_true(json_object_get(p->s.req, "exclusive")));
  CHECK(json_object_get(p->s.req, "mem_mib") == NULL);
  done(p);

  p = submit("job.sh", "#!/bin/sh\n#SBATCH --mem=0G\n");
  REQUIRE(p->rc == 0);
  CHECK(json_is_true(json_object_get(p->s.req, "exclusive")));
  done(p);

  /* -p a,b: the server tries the queues in turn; one name is the queue; -q wins. */
  p = submit("job.sh", "#!/bin/sh\n#SBATCH -p a,b/c\n");
  REQUIRE(p->rc == 0);
  CHECK_EQ_STR("a", item(p, "partitions", 0));
  CHECK_EQ_STR("b/c", item(p, "partitions", 1));
  CHECK(json_object_get(p->s.req, "queue") == NULL);
  done(p);

  p = submit("job.sh", "#!/bin/sh\n#SBATCH --partition=gpu\n");
  REQUIRE(p->rc == 0);
  CHECK_EQ_STR("gpu", get_str(p, "queue"));
  CHECK(json_object_get(p->s.req, "partitions") == NULL);
  done(p);

  p = submit("-q mine job.sh", "#!/bin/sh\n#SBATCH -p a,b\n");
  REQUIRE(p->rc == 0);
  CHECK_EQ_STR("mine", get_str(p, "queue"));
  CHECK(json_object_get(p->s.req, "partitions") == NULL);
  done(p);

  p = submit("job.sh", "#!/bin/sh\n#SBATCH -p a,,b\n");
  CHECK(p->rc != 0);
  CHECK_CONTAINS(p->err.message, "not a partition list");
  done(p);

  p = submit("job.sh", "#!/bin/sh\n#SBATCH --mem=-5\n");
  CHECK(p->rc != 0);
  CHECK_EQ_STR("mem_mib", p->err.field);
  done(p);
}

GP_TESTS(tasks_and_nodes, sbatch_nodes_exclusive_and_mem0, gpool_options_become_the_request, a_command_without_dashdash_and_defaults, gres_and_fractions,
         bad_values_are_named, gpool_directives_and_precedence, sbatch_directives_map_to_gpool,
         bad_directives_name_file_and_line, model_names_resolve_against_the_fleet,
         directive_words_split_like_a_shell, the_interpreter_line_is_read_as_the_kernel_does,
         hostile_scripts_never_crash, spot_and_node_selector_options)
