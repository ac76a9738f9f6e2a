/* SPDX-License-Identifier: Apache-2.0 */
/* `gpool plan FILE [-o json|table]`: reads a cluster snapshot, runs one scheduling step of
 * the core and prints the plan. Nothing is started or stopped: it shows what the scheduler
 * would decide, which makes it the way to try a policy or explain a decision. Exit status:
 * 0 on success, 1 when the snapshot is bad (the message names file, line and key), 2 on a
 * usage error. */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "core/sched.h"
#include "snapshot/plan_write.h"
#include "snapshot/snapshot.h"

static void usage(FILE *out) {
  fputs("Usage: gpool plan FILE [-o table|json]\n\n"
        "Reads a cluster snapshot (YAML or JSON: policy, queues, nodes, jobs; format in\n"
        "docs/plan-format.md; FILE - reads stdin), runs one scheduling step and prints\n"
        "the plan: which jobs start where, which are preempted and for whom, reservations,\n"
        "and why every other job waits or ends. Nothing is started or stopped.\n\n"
        "Options:\n"
        "  -o, --output FORMAT  table (default, for people) or json (for scripts)\n"
        "  -h, --help           show this help\n\n"
        "Exit status: 0 plan printed, 1 bad snapshot, 2 usage error.\n",
        out);
}

/* `gpool plan -`: the snapshot comes on stdin (e.g. piped from another tool), bounded like
 * a file. */
static int read_stdin(gp_snapshot **ret, gp_err *err) {
  gp_buf in;
  gp_buf_init(&in, GP_DOC_MAX_BYTES + 1);
  char chunk[65536];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, stdin)) > 0 && !gp_buf_truncated(&in))
    gp_buf_append(&in, chunk, n);
  int r;
  if (ferror(stdin)) {
    r = gp_err_set(err, GP_EIO, "<stdin>", 0, NULL, "read error");
  } else if (gp_buf_truncated(&in) || in.len > GP_DOC_MAX_BYTES) {
    r = gp_err_set(err, GP_ELIMIT, "<stdin>", 0, NULL, "document larger than %zu bytes",
                   GP_DOC_MAX_BYTES);
  } else {
    gp_doc *d = NULL;
    r = gp_doc_load_string("<stdin>", in.data ? in.data : "", in.len, &d, err);
    if (!r) r = gp_snapshot_read(d, ret, err);
    gp_doc_free(d);
  }
  gp_buf_done(&in);
  return r;
}

int gp_cmd_plan(int argc, char **argv) {
  const char *file = NULL, *format = "table";
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout);
      return 0;
    } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
      if (++i >= argc) {
        fprintf(stderr, "gpool plan: %s needs a value: table or json\n", a);
        return 2;
      }
      format = argv[i];
    } else if (!strncmp(a, "--output=", 9)) {
      format = a + 9;
    } else if (!strncmp(a, "-o", 2) && a[2]) {
      format = a + 2;
    } else if (a[0] == '-' && a[1]) { /* "-" alone is stdin */
      fprintf(stderr, "gpool plan: unknown option '%s' (see 'gpool plan --help')\n", a);
      return 2;
    } else if (file) {
      fprintf(stderr, "gpool plan: one snapshot file at a time ('%s' and '%s')\n", file, a);
      return 2;
    } else {
      file = a;
    }
  }
  if (strcmp(format, "table") && strcmp(format, "json")) {
    fprintf(stderr, "gpool plan: unknown output format '%s': use table or json\n", format);
    return 2;
  }
  if (!file) {
    usage(stderr);
    return 2;
  }

  gp_err err = {0};
  char msg[1024];
  gp_snapshot *snap = NULL;
  if (!strcmp(file, "-") ? read_stdin(&snap, &err) : gp_snapshot_load(file, &snap, &err)) {
    gp_err_format(&err, msg, sizeof msg);
    fprintf(stderr, "%s\n", msg);
    return 1;
  }
  gp_plan *plan = NULL;
  memset(&err, 0, sizeof err);
  if (gp_sched_step(&snap->policy, &snap->view, snap->now, &plan, &err) ||
      gp_scale_propose(&snap->policy, &snap->view, &snap->scale, plan, &err)) {
    gp_plan_free(plan);
    /* The reader checks what the core checks; should they ever disagree, still say so. */
    if (!err.file[0]) snprintf(err.file, sizeof err.file, "%s", file);
    gp_err_format(&err, msg, sizeof msg);
    fprintf(stderr, "%s\n", msg);
    gp_snapshot_free(snap);
    return 1;
  }
  /* A plan can be several times its (64 MiB at most) snapshot: pending jobs carry a
   * sentence each. 1 GiB still bounds it. */
  gp_buf out;
  gp_buf_init(&out, (size_t)1 << 30);
  if (!strcmp(format, "json")) gp_plan_write_json(plan, &snap->view, &out);
  else gp_plan_write_table(plan, &snap->view, &out);
  int rc = 0;
  if (gp_buf_truncated(&out)) {
    fprintf(stderr, "gpool plan: the plan is too large to print\n");
    rc = 1;
  } else if (fwrite(out.data, 1, out.len, stdout) != out.len || fflush(stdout)) {
    perror("gpool plan: write");
    rc = 1;
  }
  gp_buf_done(&out);
  gp_plan_free(plan);
  gp_snapshot_free(snap);
  return rc;
}
