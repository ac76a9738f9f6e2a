/* SPDX-License-Identifier: Apache-2.0 */
/* The launcher runs real processes: environment, working directory, logs, exit codes and
 * signals reach the exit file; a job lives in its own process group, apart from the shim
 * that records its end; failures to start say what went wrong. */
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>

#include "agent/launcher.h"
#include "test.h"

#include <time.h>

static char dir[128];

static void cleanup(void) {
  char cmd[200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd)) {}
}

static void setup(void) {
  snprintf(dir, sizeof dir, "/tmp/gpool-launch-XXXXXX");
  REQUIRE(mkdtemp(dir));
}

static char *slurp(const char *name) {
  char path[256];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "r");
  if (!f) return NULL;
  static char buf[8192];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

static int run(const char *script, const char *workdir, char **envp, gp_launch_result *res,
               gp_err *err) {
  char out[256], errp[256];
  snprintf(out, sizeof out, "%s/stdout", dir);
  snprintf(errp, sizeof errp, "%s/stderr", dir);
  char *argv[] = {"sh", "-c", (char *)script, NULL};
  gp_launch_spec s = {0};
  s.dir = dir;
  s.argv = argv;
  s.envp = envp;
  s.workdir = workdir;
  s.stdout_path = out;
  s.stderr_path = errp;
  return gp_launch(&s, res, err);
}

static void wait_shim(const gp_launch_result *r) {
  int st;
  REQUIRE(waitpid(r->shim_pid, &st, 0) == r->shim_pid);
  CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static void job_sees_its_env_workdir_and_logs_and_exit_code(void) {
  setup();
  char *envp[] = {"PATH=/usr/bin:/bin", "GPOOL_JOB_ID=42", "CUDA_VISIBLE_DEVICES=GPU-abc", NULL};
  gp_launch_result r;
  gp_err err = {0};
  REQUIRE(run("echo job=$GPOOL_JOB_ID gpus=$CUDA_VISIBLE_DEVICES; pwd; echo oops >&2; exit 3",
              "/tmp", envp, &r, &err) == 0);
  CHECK(r.pid > 0 && r.shim_pid > 0 && r.pid != r.shim_pid);
  wait_shim(&r);
  int code = -5, sig = -5;
  CHECK_EQ_INT(0, gp_launch_read_exit(dir, &code, &sig));
  CHECK_EQ_INT(3, code);
  CHECK_EQ_INT(0, sig);
  CHECK_EQ_STR("job=42 gpus=GPU-abc\n/tmp\n", slurp("stdout"));
  CHECK_EQ_STR("oops\n", slurp("stderr"));
  cleanup();
}

static void job_killed_by_a_signal_is_recorded_as_such(void) {
  setup();
  char *envp[] = {"PATH=/usr/bin:/bin", NULL};
  gp_launch_result r;
  REQUIRE(run("kill -KILL $$", NULL, envp, &r, NULL) == 0);
  wait_shim(&r);
  int code = 0, sig = 0;
  CHECK_EQ_INT(0, gp_launch_read_exit(dir, &code, &sig));
  CHECK_EQ_INT(-1, code);
  CHECK_EQ_INT(SIGKILL, sig);
  cleanup();
}

static void job_has_its_own_process_group_apart_from_the_shim(void) {
  setup();
  char *envp[] = {"PATH=/usr/bin:/bin", NULL};
  gp_launch_result r;
  REQUIRE(run("sleep 5", NULL, envp, &r, NULL) == 0);
  CHECK_EQ_INT(r.pid, getpgid(r.pid));
  CHECK_EQ_INT(r.shim_pid, getsid(r.shim_pid)); /* the shim leads its own session */
  char comm_path[64];
  snprintf(comm_path, sizeof comm_path, "/proc/%d/comm", (int)r.shim_pid);
  FILE *cf = fopen(comm_path, "r");
  char comm[32] = "";
  if (cf) {
    if (!fgets(comm, sizeof comm, cf)) comm[0] = '\0';
    fclose(cf);
  }
  CHECK_EQ_STR("gpool-shim\n", comm); /* ps tells the shim from the agent */
  snprintf(comm_path, sizeof comm_path, "/proc/%d/cmdline", (int)r.shim_pid);
  cf = fopen(comm_path, "r");
  char cmdline[256] = "";
  if (cf) {
    if (!fgets(cmdline, sizeof cmdline, cf)) cmdline[0] = '\0';
    fclose(cf);
  }
  CHECK_CONTAINS(cmdline, "gpool-shim job gpool-launch-"); /* and pgrep -f too */
  CHECK(getpgid(r.pid) != getpgrp());
  CHECK(gp_proc_alive(r.pid, r.start_ticks));
  CHECK(!gp_proc_alive(r.pid, r.start_ticks + 1)); /* a reused pid is not our job */
  CHECK_EQ_INT(GP_ENOENT, gp_launch_read_exit(dir, NULL, NULL));
  /* TERM to the job's group ends the job but not the shim, which records it. */
  CHECK_EQ_INT(0, killpg(r.pid, SIGTERM));
  wait_shim(&r);
  int code = 0, sig = 0;
  CHECK_EQ_INT(0, gp_launch_read_exit(dir, &code, &sig));
  CHECK_EQ_INT(SIGTERM, sig);
  CHECK(!gp_proc_alive(r.pid, r.start_ticks));
  cleanup();
}

static void missing_command_and_workdir_are_explained(void) {
  setup();
  char *envp[] = {"PATH=/usr/bin:/bin", NULL};
  char out[256];
  snprintf(out, sizeof out, "%s/stdout", dir);
  char *argv[] = {"no-such-command-xyz", NULL};
  gp_launch_spec s = {0};
  s.dir = dir;
  s.argv = argv;
  s.envp = envp;
  s.stdout_path = out;
  s.stderr_path = out;
  gp_launch_result r = {0};
  gp_err err = {0};
  CHECK_EQ_INT(GP_EIO, gp_launch(&s, &r, &err));
  CHECK_CONTAINS(err.message, "cannot run the command 'no-such-command-xyz'");
  CHECK_CONTAINS(err.message, "No such file");
  wait_shim(&r);
  int code = 0, sig = 0;
  CHECK_EQ_INT(0, gp_launch_read_exit(dir, &code, &sig));
  CHECK_EQ_INT(127, code);

  memset(&err, 0, sizeof err);
  CHECK_EQ_INT(GP_EIO, run("true", "/no/such/dir", envp, &r, &err));
  CHECK_CONTAINS(err.message, "working directory '/no/such/dir'");
  CHECK_EQ_STR("workdir", err.field);
  wait_shim(&r);
  cleanup();
}

static void command_is_found_in_the_jobs_own_path(void) {
  setup();
  char bin[256], script[300];
  snprintf(bin, sizeof bin, "%s/bin", dir);
  REQUIRE(mkdir(bin, 0755) == 0);
  snprintf(script, sizeof script, "%s/hello-gpool", bin);
  FILE *f = fopen(script, "w");
  REQUIRE(f);
  fputs("#!/bin/sh\necho found-me\n", f);
  fclose(f);
  chmod(script, 0755);
  char path_env[300];
  snprintf(path_env, sizeof path_env, "PATH=/nonexistent:%s:/bin", bin);
  char *envp[] = {path_env, NULL};
  char *argv[] = {"hello-gpool", NULL};
  char out[256];
  snprintf(out, sizeof out, "%s/stdout", dir);
  gp_launch_spec s = {0};
  s.dir = dir;
  s.argv = argv;
  s.envp = envp;
  s.stdout_path = out;
  s.stderr_path = out;
  gp_launch_result r;
  REQUIRE(gp_launch(&s, &r, NULL) == 0);
  wait_shim(&r);
  CHECK_EQ_STR("found-me\n", slurp("stdout"));
  cleanup();
}

static void root_agent_runs_job_as_another_user(void) {
  if (geteuid() != 0) {
    printf("  (skipped: needs root)\n");
    return;
  }
  setup();
  struct passwd *pw = getpwnam("nobody");
  if (!pw) {
    printf("  (skipped: no user nobody)\n");
    return;
  }
  chmod(dir, 0755);
  char *envp[] = {"PATH=/usr/bin:/bin", NULL};
  char out[256], errp[256];
  snprintf(out, sizeof out, "%s/stdout", dir);
  snprintf(errp, sizeof errp, "%s/stderr", dir);
  char *argv[] = {"sh", "-c", "id -u; id -g", NULL};
  gp_launch_spec s = {0};
  s.dir = dir;
  s.argv = argv;
  s.envp = envp;
  s.workdir = "/";
  s.stdout_path = out;
  s.stderr_path = errp;
  s.switch_user = true;
  s.uid = pw->pw_uid;
  s.gid = pw->pw_gid;
  s.n_groups = 1;
  s.groups[0] = pw->pw_gid;
  gp_launch_result r;
  gp_err err = {0};
  REQUIRE(gp_launch(&s, &r, &err) == 0);
  wait_shim(&r);
  char want[64];
  snprintf(want, sizeof want, "%d\n%d\n", (int)pw->pw_uid, (int)pw->pw_gid);
  CHECK_EQ_STR(want, slurp("stdout"));
  struct stat st;
  CHECK_EQ_INT(0, stat(out, &st));
  CHECK_EQ_INT(pw->pw_uid, st.st_uid); /* the user owns their logs */
  cleanup();
}

/* -o/--error: the copier writes the user's files, relative to the workdir, and the logs;
 * the last output is in place when the exit file is; a signal to the job's group does not
 * stop the copy; a file that cannot be opened fails the start. */
static void user_output_files_get_a_copy(void) {
  setup();
  char *envp[] = {"PATH=/usr/bin:/bin", NULL};
  char out[256], errp[256];
  snprintf(out, sizeof out, "%s/stdout", dir);
  snprintf(errp, sizeof errp, "%s/stderr", dir);
  char *argv[] = {"sh", "-c", "echo one; echo two >&2; kill -USR1 0 2>/dev/null; echo last", NULL};
  gp_launch_spec s = {0};
  s.dir = dir;
  s.argv = argv;
  s.envp = envp;
  s.workdir = dir;
  s.stdout_path = out;
  s.stderr_path = errp;
  s.user_stdout = "job.out";
  gp_launch_result r;
  REQUIRE(gp_launch(&s, &r, NULL) == 0);
  wait_shim(&r);
  /* The job died of USR1 (its own group), the copier did not. */
  CHECK_EQ_STR("one\n", slurp("stdout"));
  CHECK_EQ_STR("two\n", slurp("stderr"));
  const char *both = slurp("job.out"); /* without --error, stderr goes with stdout */
  CHECK(both && strstr(both, "one\n") && strstr(both, "two\n"));

  /* Truncated by default, appended on request, stderr to its own file. */
  char *argv2[] = {"sh", "-c", "echo again; echo err2 >&2", NULL};
  s.argv = argv2;
  s.user_stderr = "job.err";
  REQUIRE(gp_launch(&s, &r, NULL) == 0);
  wait_shim(&r);
  CHECK_EQ_STR("again\n", slurp("job.out"));
  CHECK_EQ_STR("err2\n", slurp("job.err"));
  s.user_append = true;
  REQUIRE(gp_launch(&s, &r, NULL) == 0);
  wait_shim(&r);
  CHECK_EQ_STR("again\nagain\n", slurp("job.out"));

  /* A process left behind holding the output does not hold up the job's end. */
  char *argv3[] = {"sh", "-c", "sleep 30 & echo bg", NULL};
  s.argv = argv3;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  REQUIRE(gp_launch(&s, &r, NULL) == 0);
  wait_shim(&r);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  CHECK((t1.tv_sec - t0.tv_sec) < 3);
  CHECK_CONTAINS(slurp("job.out"), "bg\n");

  s.user_stdout = "no/such/dir/x.out";
  gp_err err = {0};
  CHECK_EQ_INT(GP_EIO, gp_launch(&s, &r, &err));
  CHECK_CONTAINS(err.message, "cannot open the job's output file 'no/such/dir/x.out'");
  CHECK_EQ_STR("output", err.field);
  wait_shim(&r);
  int code = -5, sig = -5;
  CHECK_EQ_INT(0, gp_launch_read_exit(dir, &code, &sig));
  CHECK_EQ_INT(127, code);
  cleanup();
}

GP_TESTS(job_sees_its_env_workdir_and_logs_and_exit_code, job_killed_by_a_signal_is_recorded_as_such,
         job_has_its_own_process_group_apart_from_the_shim, missing_command_and_workdir_are_explained,
         command_is_found_in_the_jobs_own_path, root_agent_runs_job_as_another_user,
         user_output_files_get_a_copy)
