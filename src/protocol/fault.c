/* SPDX-License-Identifier: Apache-2.0 */
/* The fault-spec grammar (fault.h): one term per fault, terms separated by ';'. A term is
 * parsed in a copy, so the spec the caller holds stays as it was. */
#include "protocol/fault.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "protocol/limits.h"
#include "util/mem.h"
#include "util/units.h"

static int parse_delay_ms(const char *s, int64_t *ret) {
  size_t n = strlen(s);
  if (n > 2 && !strcasecmp(s + n - 2, "ms")) {
    char num[32];
    if (n - 2 >= sizeof num) return GP_EINVAL;
    memcpy(num, s, n - 2);
    num[n - 2] = '\0';
    int64_t v;
    if (gp_parse_int64(num, &v) || v < 0 || v > 86400000ll * 365) return GP_EINVAL;
    *ret = v;
    return 0;
  }
  int64_t secs;
  if (gp_parse_duration_s(s, &secs) || secs > 86400ll * 365) return GP_EINVAL;
  *ret = secs * 1000;
  return 0;
}

static const struct {
  const char *name;
  gp_proto_fault_kind kind;
  bool takes_value;
} fault_kinds[] = {
    {"xid", GP_PROTO_FAULT_XID, true},          {"ecc_sbe", GP_PROTO_FAULT_ECC_SBE, true},
    {"ecc_dbe", GP_PROTO_FAULT_ECC_DBE, true},  {"remap_failure", GP_PROTO_FAULT_REMAP_FAILURE, false},
    {"thermal", GP_PROTO_FAULT_THERMAL, false}, {"power", GP_PROTO_FAULT_POWER, false},
    {"pcie_replay", GP_PROTO_FAULT_PCIE_REPLAY, true},
};

static int parse_fault(char *t, gp_proto_fault *f, gp_err *err) {
  const char *orig = t;
  char saved[160];
  snprintf(saved, sizeof saved, "%s", orig);
  memset(f, 0, sizeof *f);
  char *at = strchr(t, '@');
  if (!at)
    return gp_err_set(err, GP_EINVAL, NULL, 0, "inject",
                      "'%s': expected KIND[:VALUE]@gpuN, e.g. xid:79@gpu3", saved);
  *at = '\0';
  char *colon = strchr(t, ':');
  if (colon) *colon = '\0';
  int k = -1;
  for (size_t i = 0; i < sizeof fault_kinds / sizeof fault_kinds[0]; i++)
    if (!strcasecmp(t, fault_kinds[i].name)) k = (int)i;
  if (k < 0)
    return gp_err_set(err, GP_EINVAL, NULL, 0, "inject",
                      "'%s': unknown fault '%s' (known: xid, ecc_sbe, ecc_dbe, remap_failure, "
                      "thermal, power, pcie_replay)", saved, t);
  f->kind = fault_kinds[k].kind;
  if (fault_kinds[k].takes_value) {
    int64_t v;
    if (!colon || gp_parse_int64(colon + 1, &v) || v < 1 || v > 1000000)
      return gp_err_set(err, GP_EINVAL, NULL, 0, "inject",
                        "'%s': %s needs a positive number, e.g. %s:%s", saved, t, t,
                        f->kind == GP_PROTO_FAULT_XID ? "79" : "10");
    f->value = v;
  } else if (colon) {
    return gp_err_set(err, GP_EINVAL, NULL, 0, "inject", "'%s': %s takes no value", saved, t);
  }
  char *opts = strchr(at + 1, ',');
  if (opts) *opts++ = '\0';
  const char *g = at + 1;
  if (strncasecmp(g, "gpu", 3) == 0) g += 3;
  int64_t idx;
  if (gp_parse_int64(g, &idx) || idx < 0 || idx >= GP_PROTO_MAX_GPUS)
    return gp_err_set(err, GP_EINVAL, NULL, 0, "inject", "'%s': expected @gpuN after the fault",
                      saved);
  f->gpu = (int)idx;
  for (char *save = NULL, *o = opts ? strtok_r(opts, ",", &save) : NULL; o;
       o = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(o, '=');
    int64_t *dst = NULL;
    if (eq && !strncasecmp(o, "after", (size_t)(eq - o)) && eq - o == 5) dst = &f->after_ms;
    if (eq && !strncasecmp(o, "for", (size_t)(eq - o)) && eq - o == 3) dst = &f->for_ms;
    if (!dst || parse_delay_ms(eq + 1, dst))
      return gp_err_set(err, GP_EINVAL, NULL, 0, "inject",
                        "'%s': unknown option '%s' (expected after=DUR or for=DUR)", saved, o);
  }
  return 0;
}

int gp_proto_fault_parse(const char *spec, gp_proto_fault *out, int max, int *ret_n,
                            gp_err *err) {
  if (!spec || !*spec) return gp_err_set(err, GP_EINVAL, NULL, 0, "inject", "empty fault spec");
  if (strlen(spec) > GP_PROTO_FAULT_SPEC_MAX)
    return gp_err_set(err, GP_EINVAL, NULL, 0, "inject", "fault spec longer than 2048 bytes");
  char *copy = gp_xstrdup(spec);
  int n = 0, rc = 0;
  for (char *save = NULL, *t = strtok_r(copy, ";", &save); t; t = strtok_r(NULL, ";", &save)) {
    while (isspace((unsigned char)*t)) t++;
    for (char *e = t + strlen(t); e > t && isspace((unsigned char)e[-1]);) *--e = '\0';
    if (!*t) continue;
    if (n == max) {
      rc = gp_err_set(err, GP_ELIMIT, NULL, 0, "inject", "more than %d faults", max);
      break;
    }
    if ((rc = parse_fault(t, &out[n], err))) break;
    n++;
  }
  free(copy);
  if (rc) return rc;
  if (!n) return gp_err_set(err, GP_EINVAL, NULL, 0, "inject", "empty fault spec");
  *ret_n = n;
  return 0;
}
