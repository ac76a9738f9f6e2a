/* SPDX-License-Identifier: Apache-2.0 */
/* A simulated `nvidia-smi` for jobs on a simulated node. `gpool up` on a machine without
 * GPUs suggests `gpool submit -g 1 -- nvidia-smi`; on the sim backend there is no driver, so
 * that would fail with "command not found". The agent (sim backend only, never when NVML
 * found real GPUs) writes <data>/sim-bin/nvidia-smi at start, a small sh script holding this
 * node's simulated GPUs (index, UUID, name, memory), and puts that directory first in each
 * job's PATH. The script prints a table of the GPUs in CUDA_VISIBLE_DEVICES, under a first
 * line saying they are gpool's simulated GPUs, so nobody mistakes it for real hardware. */
#include "agent/agent_int.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/buf.h"

/* Text that goes inside single quotes in the script: only harmless characters survive. */
static void put_safe(gp_buf *b, const char *s) {
  for (; *s; s++) {
    char c = *s;
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == ' ' || c == '.' || c == '-' || c == '_';
    gp_buf_printf(b, "%c", ok ? c : '_');
  }
}

static const char script_body[] =
    "echo \"gpool simulated GPUs on node $node: not real hardware, no NVIDIA driver"
    " (gpool agent --sim)\"\n"
    "if [ -z \"${CUDA_VISIBLE_DEVICES:-}\" ]; then\n"
    "  echo 'No devices were found (CUDA_VISIBLE_DEVICES is empty: this job has no GPU)'\n"
    "  exit 6\n"
    "fi\n"
    "printf '%-5s %-42s %-24s %s\\n' GPU UUID Name Memory\n"
    "rc=0\n"
    "for d in $(printf '%s' \"$CUDA_VISIBLE_DEVICES\" | tr ',' ' '); do\n"
    "  case $d in\n"
    "    MIG-*) printf '%-5s %-42s %-24s %s\\n' MIG \"$d\" 'MIG instance' '-'; continue ;;\n"
    "  esac\n"
    "  row=$(printf '%s\\n' \"$gpus\" | awk -F'|' -v d=\"$d\" '$2 == d')\n"
    "  if [ -z \"$row\" ]; then\n"
    "    printf '%-5s %-42s %s\\n' '?' \"$d\" '(not a GPU of this node)'; rc=6; continue\n"
    "  fi\n"
    "  printf '%s\\n' \"$row\" | awk -F'|' '{printf \"%-5s %-42s %-24s %sMiB\\n\", $1, $2, $3, $4}'\n"
    "done\n"
    "exit $rc\n";

int gp__agent_sim_bin_write(gp_agent *a) {
  char dir[sizeof a->sim_bin], path[sizeof a->sim_bin + 32], tmp[sizeof a->sim_bin + 48];
  a->sim_bin[0] = '\0';
  snprintf(dir, sizeof dir, "%s/sim-bin", a->cfg.data_dir);
  if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
    gp__agent_log("cannot create %s (%s): jobs get no simulated nvidia-smi", dir, strerror(errno));
    return -1;
  }
  gp_buf b;
  gp_buf_init(&b, 1 << 20);
  gp_buf_printf(&b, "#!/bin/sh\n# gpool's simulated nvidia-smi, written by gpool agent --sim; "
                    "not NVIDIA's tool.\nnode='");
  put_safe(&b, a->cfg.name);
  gp_buf_printf(&b, "'\ngpus='");
  for (int i = 0; i < a->n_gpus; i++) {
    gp_buf_printf(&b, "%s%d|", i ? "\n" : "", i);
    put_safe(&b, a->gpus[i].uuid);
    gp_buf_printf(&b, "|");
    put_safe(&b, a->gpus[i].name);
    gp_buf_printf(&b, "|%lld", (long long)a->gpus[i].mem_mib);
  }
  gp_buf_printf(&b, "'\n%s", script_body);
  snprintf(path, sizeof path, "%s/nvidia-smi", dir);
  snprintf(tmp, sizeof tmp, "%s/.nvidia-smi.tmp", dir);
  int rc = -1;
  FILE *f = fopen(tmp, "w");
  if (f) {
    bool ok = fwrite(b.data, 1, b.len, f) == b.len;
    ok = fclose(f) == 0 && ok;
    if (ok && chmod(tmp, 0755) == 0 && rename(tmp, path) == 0) rc = 0;
  }
  if (rc != 0) {
    gp__agent_log("cannot write %s (%s): jobs get no simulated nvidia-smi", path, strerror(errno));
    unlink(tmp);
  } else {
    snprintf(a->sim_bin, sizeof a->sim_bin, "%s", dir);
  }
  gp_buf_done(&b);
  return rc;
}
