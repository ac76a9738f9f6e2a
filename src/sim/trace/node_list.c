/* SPDX-License-Identifier: Apache-2.0 */
/* The node list reader (node_list.h), and two text helpers it shares with the reader of
 * the Philly VC file (sim/replay/fleet.c): a whole small file into memory, bounded, and
 * its lines one by one. */
#include "sim/trace/node_list.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/model.h"
#include "sim/trace/reader.h"
#include "util/mem.h"
#include "util/units.h"

char *gp__sim_trace_slurp(const char *path, size_t max, size_t *ret_len, gp_err *err) {
  FILE *fp = fopen(path, "rb");
  if (!fp) {
    gp_err_set(err, GP_EIO, path, 0, NULL, "cannot open: %s", strerror(errno));
    return NULL;
  }
  /* Grown as the file is read (a small file costs a small buffer), up to one byte past max
   * to tell a file of exactly max bytes from a larger one. */
  size_t cap = 64 << 10, n = 0;
  if (cap > max + 1) cap = max + 1;
  char *buf = gp_xmalloc(cap + 1);
  for (;;) {
    if (n == cap) {
      if (cap > max) break;
      cap = cap > (max + 1) / 2 ? max + 1 : cap * 2;
      buf = gp_xrealloc(buf, cap + 1);
    }
    size_t got = fread(buf + n, 1, cap - n, fp);
    n += got;
    if (got == 0) break;
  }
  fclose(fp);
  if (n > max) {
    free(buf);
    gp_err_set(err, GP_ELIMIT, path, 0, NULL, "larger than %zu bytes", max);
    return NULL;
  }
  buf[n] = '\0';
  *ret_len = n;
  return buf;
}

char *gp__sim_trace_next_line(char **cursor) {
  char *s = *cursor, *nl = strchr(s, '\n');
  if (nl) *nl = '\0';
  *cursor = nl ? nl + 1 : s + strlen(s);
  size_t l = strlen(s);
  while (l && (s[l - 1] == '\r' || s[l - 1] == ' ')) s[--l] = '\0';
  return s;
}

int gp_node_list_read(const char *path, gp_node_row_fn fn, void *arg, gp_err *err) {
  size_t len;
  char *text = gp__sim_trace_slurp(path, GP_NODE_LIST_MAX_BYTES, &len, err);
  if (!text) return err ? err->code : GP_EIO;
  int rc = 0, line = 0;
  int c_name = -1, c_gpus = -1, c_model = -1, c_cpu = -1, c_mem = -1, c_cap = -1, n_cols = -1;
  char *fields[64];
  for (char *p = text; *p && !rc;) {
    char *s = gp__sim_trace_next_line(&p);
    line++;
    if (!*s) continue;
    int n = gp__sim_csv_split(s, fields, 64);
    if (n_cols < 0) {
      n_cols = n;
      for (int i = 0; i < n; i++) {
        const char *h = fields[i];
        if (!strcmp(h, "sn") || !strcmp(h, "name") || !strcmp(h, "node")) c_name = i;
        else if (!strcmp(h, "gpu") || !strcmp(h, "gpus")) c_gpus = i;
        else if (!strcmp(h, "model") || !strcmp(h, "gpu_model")) c_model = i;
        else if (!strcmp(h, "cpu_milli")) c_cpu = i;
        else if (!strcmp(h, "memory_mib")) c_mem = i;
        else if (!strcmp(h, "capacity")) c_cap = i;
      }
      if (c_name < 0 || c_gpus < 0)
        rc = gp_err_set(err, GP_EINVAL, path, line, NULL,
                        "a node list needs columns sn (or name) and gpu (or gpus)");
      continue;
    }
    if (n != n_cols) {
      rc = gp_err_set(err, GP_EINVAL, path, line, NULL, "%d fields, the header has %d", n, n_cols);
      break;
    }
    int64_t gpus, cpu = 0, mem = 0;
    if (gp_parse_int64(fields[c_gpus], &gpus) || gpus < 0 || gpus > GP_MAX_NODE_GPUS) {
      rc = gp_err_set(err, GP_EINVAL, path, line, "gpu", "expected 0 to %d GPUs", GP_MAX_NODE_GPUS);
      break;
    }
    if (c_cpu >= 0 && (gp_parse_int64(fields[c_cpu], &cpu) || cpu < 0)) {
      rc = gp_err_set(err, GP_EINVAL, path, line, "cpu_milli", "expected a non-negative integer");
      break;
    }
    if (c_mem >= 0 && (gp_parse_int64(fields[c_mem], &mem) || mem < 0)) {
      rc = gp_err_set(err, GP_EINVAL, path, line, "memory_mib", "expected a non-negative integer");
      break;
    }
    if (!*fields[c_name] || strlen(fields[c_name]) > 255) {
      rc = gp_err_set(err, GP_EINVAL, path, line, "name", "empty or too long node name");
      break;
    }
    gp_node_row row = {.name = fields[c_name],
                       .model = c_model >= 0 ? fields[c_model] : NULL,
                       .gpus = (int)gpus,
                       .cpu_milli = c_cpu >= 0 ? cpu : -1,
                       .mem_mib = c_mem >= 0 ? mem : -1,
                       .capacity = c_cap >= 0 ? fields[c_cap] : NULL,
                       .line = line};
    rc = fn(arg, &row, err);
  }
  free(text);
  return rc;
}
