/* SPDX-License-Identifier: Apache-2.0 */
/* Slurm's filename patterns for a job's output files (outpath.h). */
#include "protocol/outpath.h"

#include <stdio.h>
#include <string.h>

static bool known(char c) { return c && strchr("jJxuNtnsAa%", c) != NULL; }

const char *gp_outpath_check(const char *p) {
  if (!p || !*p) return "the file name is empty";
  size_t n = strlen(p);
  if (n > GP_OUTPATH_MAX) return "the file name is longer than 1024 bytes";
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)p[i];
    if (c < 0x20 || c == 0x7f) return "the file name contains a control character";
    if (c != '%') continue;
    size_t k = i + 1;
    if (p[k] >= '0' && p[k] <= '9') k++;
    if (!known(p[k]))
      return "unknown pattern after '%' (use %j %x %A %a %N %t %u %% and the like)";
    i = k;
  }
  return NULL;
}

/* Appends s, with '/' made '_' when `safe`, zero-padded to `width`. */
static int put(char *out, size_t size, size_t *len, const char *s, int width, bool safe) {
  size_t sl = strlen(s);
  for (int pad = width - (int)sl; pad > 0; pad--) {
    if (*len + 1 >= size) return -1;
    out[(*len)++] = '0';
  }
  for (size_t i = 0; i < sl; i++) {
    if (*len + 1 >= size) return -1;
    out[(*len)++] = safe && s[i] == '/' ? '_' : s[i];
  }
  out[*len] = '\0';
  return 0;
}

int gp_outpath_expand(const char *p, const gp_outpath_vars *v, char *out, size_t size) {
  if (!size) return -1;
  size_t len = 0;
  out[0] = '\0';
  char num[48], node[256];
  const char *dot = v->node ? strchr(v->node, '.') : NULL;
  snprintf(node, sizeof node, "%.*s", (int)(dot ? (size_t)(dot - v->node) : strlen(v->node ? v->node : "")),
           v->node ? v->node : "");
  for (const char *c = p; *c; c++) {
    if (*c != '%') {
      char one[2] = {*c, '\0'};
      if (put(out, size, &len, one, 0, false)) return -1;
      continue;
    }
    int width = 0;
    if (c[1] >= '0' && c[1] <= '9') width = *++c - '0';
    const char *val = "";
    switch (*++c) {
    case 'j': val = v->job_id; break;
    case 'J':
      if (v->step) snprintf(num, sizeof num, "%.22s.%.22s", v->job_id ? v->job_id : "", v->step);
      val = v->step ? num : v->job_id;
      break;
    case 'x': val = v->name; break;
    case 'u': val = v->user; break;
    case 'N': val = node; break;
    case 't': case 'n':
      snprintf(num, sizeof num, "%d", *c == 'n' && v->has_node_index ? v->node_index : v->task);
      val = num;
      break;
    case 's': val = v->step ? v->step : "batch"; break;
    case 'A': val = v->array_id ? v->array_id : v->job_id; break;
    case 'a': val = v->array_id ? v->array_index : "4294967294"; break;
    case '%': val = "%"; break;
    default: return -1; /* not a checked pattern */
    }
    if (put(out, size, &len, val ? val : "", width, true)) return -1;
  }
  return len ? 0 : -1;
}
