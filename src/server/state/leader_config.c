/* SPDX-License-Identifier: Apache-2.0 */
/* Reads `ha:` from the server config; every key is bounded and an error names it. */
#include "server/state/leader_config.h"

#include <stdio.h>
#include <string.h>

#include "store/lease.h"

#define LEASE_MIN_MS 1000
#define LEASE_MAX_MS 600000
#define RENEW_MIN_MS 100

void gp_server_ha_init(gp_server_ha *ha) {
  memset(ha, 0, sizeof *ha);
  ha->lease_ms = 10000;
  ha->renew_ms = 2000;
  ha->advertise = "";
  ha->id = "";
  ha->url = "";
}

static int read_ms(const gp_doc *d, const gp_doc_node *m, const char *path, const char *key,
                   int lo, int hi, int *ret, gp_err *err) {
  const gp_doc_node *n = gp_doc_get(m, key);
  if (!n) return 0;
  char f[160];
  gp_doc_path(f, sizeof f, path, key);
  int64_t v;
  int r = gp_doc_int(d, n, f, &v, err);
  if (r) return r;
  if (v < lo || v > hi)
    return gp_err_set(err, GP_EINVAL, d->name, n->line, f, "must be between %d and %d ms", lo, hi);
  *ret = (int)v;
  return 0;
}

/* A printable string without spaces or control bytes, shorter than `max`. */
static int read_word(const gp_doc *d, const gp_doc_node *m, const char *path, const char *key,
                     size_t max, gp_arena *a, const char **ret, gp_err *err) {
  const gp_doc_node *n = gp_doc_get(m, key);
  if (!n) return 0;
  char f[160];
  gp_doc_path(f, sizeof f, path, key);
  const char *v;
  int r = gp_doc_str(d, n, f, &v, err);
  if (r) return r;
  size_t len = strlen(v);
  bool ok = len > 0 && len < max;
  for (size_t i = 0; ok && i < len; i++) ok = (unsigned char)v[i] > 0x20 && v[i] != 0x7f;
  if (!ok)
    return gp_err_set(err, GP_EINVAL, d->name, n->line, f,
                      "must be 1 to %zu printable characters without spaces", max - 1);
  if (strcmp(key, "advertise") == 0 && strncmp(v, "http://", 7) != 0 && strncmp(v, "https://", 8) != 0)
    return gp_err_set(err, GP_EINVAL, d->name, n->line, f, "must be an http:// or https:// URL");
  *ret = gp_arena_strdup(a, v);
  return 0;
}

int gp_server_ha_read(const gp_doc *d, const gp_doc_node *m, const char *path, gp_arena *a,
                      gp_server_ha *ha, gp_err *err) {
  static const char *const keys[] = {"lease_ms", "renew_ms", "advertise", "id", NULL};
  int r = gp_doc_expect(d, m, path, GP_DOC_MAP, err);
  if (r || (r = gp_doc_check_keys(d, m, path, keys, err))) return r;
  if ((r = read_ms(d, m, path, "lease_ms", LEASE_MIN_MS, LEASE_MAX_MS, &ha->lease_ms, err)) ||
      (r = read_ms(d, m, path, "renew_ms", RENEW_MIN_MS, LEASE_MAX_MS, &ha->renew_ms, err)) ||
      (r = read_word(d, m, path, "advertise", GP_LEASE_URL_MAX - 64, a, &ha->advertise, err)) ||
      (r = read_word(d, m, path, "id", GP_LEASE_HOLDER_MAX, a, &ha->id, err)))
    return r;
  /* The leader acts lease_ms - renew_ms after sending its last renewal; the next one is
   * sent renew_ms later and has renew_ms to be answered: both fit when renew_ms is at most
   * a third of lease_ms (leader.h). */
  if (ha->renew_ms * 3 > ha->lease_ms) {
    char f[160];
    gp_doc_path(f, sizeof f, path, "renew_ms");
    const gp_doc_node *n = gp_doc_get(m, "renew_ms");
    return gp_err_set(err, GP_EINVAL, d->name, (n ? n : m)->line, f,
                      "must be at most a third of lease_ms (%d ms)", ha->lease_ms);
  }
  ha->on = true;
  return 0;
}
