/* SPDX-License-Identifier: Apache-2.0 */
/* Agent configuration: defaults, the YAML file and the small text formats flags share with
 * it (see config.h). */
#include "agent/config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/doc.h"
#include "util/fileperm.h"
#include "util/units.h"

void gp_agent_config_init(gp_agent_config *cfg) {
  memset(cfg, 0, sizeof *cfg);
  snprintf(cfg->listen, sizeof cfg->listen, "127.0.0.1:0");
  snprintf(cfg->capacity, sizeof cfg->capacity, "on-demand");
  snprintf(cfg->cgroup_root, sizeof cfg->cgroup_root, "/sys/fs/cgroup/gpool");
  snprintf(cfg->signal, sizeof cfg->signal, "TERM");
  snprintf(cfg->data_dir, sizeof cfg->data_dir, "/var/lib/gpool/agent");
  cfg->heartbeat_s = 5;
  cfg->grace_s = 30;
  cfg->watchdog_ms = 1000;
  cfg->spot.interval_s = 2;
  gp_agent_container_cfg_init(&cfg->container);
  cfg->default_mode.mode = GP_MODE_EXCLUSIVE;
  cfg->default_mode.replicas = 1;
  gp_health_policy_default(&cfg->health);
}

const char *gp_agent_mode_name(gp_agent_share m) {
  switch (m) {
  case GP_MODE_SHARED: return "shared";
  case GP_MODE_TIMESLICE: return "timeslice";
  case GP_MODE_MIG: return "mig";
  default: return "exclusive";
  }
}

int gp_gpu_mode_parse(const char *text, gp_gpu_mode *ret, gp_err *err) {
  gp_gpu_mode m = {0};
  m.set = true;
  m.replicas = 1;
  if (!text) text = "";
  if (strcmp(text, "exclusive") == 0) {
    m.mode = GP_MODE_EXCLUSIVE;
  } else if (strcmp(text, "shared") == 0) {
    m.mode = GP_MODE_SHARED;
  } else if (strncmp(text, "timeslice", 9) == 0) {
    m.mode = GP_MODE_TIMESLICE;
    int64_t n = 0;
    if (text[9] != ':' || gp_parse_int64(text + 10, &n) != 0 || n < 2 || n > 64)
      return gp_err_set(err, GP_EINVAL, NULL, 0, NULL,
                        "'%s': time-slicing needs a replica count from 2 to 64, e.g. timeslice:4",
                        text);
    m.replicas = (int)n;
  } else if (strncmp(text, "mig:", 4) == 0 && text[4]) {
    m.mode = GP_MODE_MIG;
    if (strlen(text + 4) >= sizeof m.mig_layout)
      return gp_err_set(err, GP_EINVAL, NULL, 0, NULL, "MIG layout too long");
    snprintf(m.mig_layout, sizeof m.mig_layout, "%s", text + 4);
  } else {
    return gp_err_set(err, GP_EINVAL, NULL, 0, NULL,
                      "unknown sharing mode '%s' (expected exclusive, shared, timeslice:N or "
                      "mig:<profiles>)", text);
  }
  *ret = m;
  return 0;
}

static int add_label(gp_agent_config *cfg, const char *k, size_t kl, const char *v, gp_err *err) {
  if (kl == 0 || kl >= sizeof cfg->label_keys[0] || strlen(v) >= sizeof cfg->label_values[0])
    return gp_err_set(err, GP_EINVAL, NULL, 0, "labels", "bad label '%.*s' (key 1-63 bytes, value "
                      "up to 127)", (int)kl, k);
  for (size_t i = 0; i < kl; i++) {
    char c = k[i];
    if (!(c == '.' || c == '-' || c == '_' || c == '/' || (c >= '0' && c <= '9') ||
          (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')))
      return gp_err_set(err, GP_EINVAL, NULL, 0, "labels", "label key '%.*s' has a character "
                        "other than letters, digits, '.', '-', '_', '/'", (int)kl, k);
  }
  for (int i = 0; i < cfg->n_labels; i++)
    if (strlen(cfg->label_keys[i]) == kl && strncmp(cfg->label_keys[i], k, kl) == 0) {
      snprintf(cfg->label_values[i], sizeof cfg->label_values[i], "%s", v);
      return 0;
    }
  if (cfg->n_labels >= GP_AGENT_MAX_LABELS)
    return gp_err_set(err, GP_ELIMIT, NULL, 0, "labels", "more than %d labels",
                      GP_AGENT_MAX_LABELS);
  snprintf(cfg->label_keys[cfg->n_labels], sizeof cfg->label_keys[0], "%.*s", (int)kl, k);
  snprintf(cfg->label_values[cfg->n_labels], sizeof cfg->label_values[0], "%s", v);
  cfg->n_labels++;
  return 0;
}

int gp_agent_config_add_labels(gp_agent_config *cfg, const char *text, gp_err *err) {
  char buf[4096];
  if (strlen(text) >= sizeof buf)
    return gp_err_set(err, GP_EINVAL, NULL, 0, "labels", "labels too long");
  snprintf(buf, sizeof buf, "%s", text);
  char *save = NULL;
  for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(t, '=');
    if (!eq)
      return gp_err_set(err, GP_EINVAL, NULL, 0, "labels", "label '%s' is not key=value", t);
    int rc = add_label(cfg, t, (size_t)(eq - t), eq + 1, err);
    if (rc) return rc;
  }
  return 0;
}

const char *gp_agent_spot_provider_name(gp_agent_spot_provider p) {
  switch (p) {
  case GP_SPOT_AWS: return "aws";
  case GP_SPOT_GCP: return "gcp";
  case GP_SPOT_AZURE: return "azure";
  default: return "none";
  }
}

const gp_gpu_mode *gp_agent_config_gpu_mode(const gp_agent_config *cfg, int index) {
  if (index >= 0 && index < GP_GPU_MAX_DEVICES && cfg->gpus[index].set) return &cfg->gpus[index];
  return &cfg->default_mode;
}

/* Re-anchors an error from a text parser at a document node, keeping its message. */
static int at_node(gp_err *err, int rc, const gp_doc *d, int line, const char *field) {
  char msg[512];
  snprintf(msg, sizeof msg, "%s", err ? err->message : "");
  return gp_err_set(err, rc, d->name, line, field, "%s", msg);
}

static int copy_str(const gp_doc *d, const gp_doc_node *n, const char *key, char *dst,
                    size_t size, gp_err *err) {
  const char *s = NULL;
  int rc = gp_doc_str(d, n, key, &s, err);
  if (rc) return rc;
  if (strlen(s) >= size)
    return gp_err_set(err, GP_EINVAL, d->name, n->line, key, "value longer than %zu bytes",
                      size - 1);
  snprintf(dst, size, "%s", s);
  return 0;
}

/* "3" or "0-3" -> [lo, hi]. */
static bool parse_gpu_range(const char *s, int *lo, int *hi) {
  char *end = NULL;
  long a = strtol(s, &end, 10);
  long b = a;
  if (end == s) return false;
  if (*end == '-') {
    const char *s2 = end + 1;
    b = strtol(s2, &end, 10);
    if (end == s2) return false;
  }
  if (*end || a < 0 || b < a || b >= GP_GPU_MAX_DEVICES) return false;
  *lo = (int)a;
  *hi = (int)b;
  return true;
}

/* `spot: {provider: aws|gcp|azure, url: http://..., interval: 2s}` */
static int load_spot(const gp_doc *d, const gp_doc_node *n, gp_agent_spot *spot, gp_err *err) {
  static const char *const keys[] = {"provider", "url", "interval", NULL};
  int rc = gp_doc_expect(d, n, "spot", GP_DOC_MAP, err);
  if (!rc) rc = gp_doc_check_keys(d, n, "spot", keys, err);
  if (rc) return rc;
  const gp_doc_node *v = gp_doc_get(n, "provider");
  if (!v)
    return gp_err_set(err, GP_EINVAL, d->name, n->line, "spot.provider",
                      "say which metadata service to watch: aws, gcp or azure");
  const char *s = NULL;
  if ((rc = gp_doc_str(d, v, "spot.provider", &s, err)) != 0) return rc;
  if (strcmp(s, "aws") == 0) spot->provider = GP_SPOT_AWS;
  else if (strcmp(s, "gcp") == 0) spot->provider = GP_SPOT_GCP;
  else if (strcmp(s, "azure") == 0) spot->provider = GP_SPOT_AZURE;
  else
    return gp_err_set(err, GP_EINVAL, d->name, v->line, "spot.provider",
                      "unknown provider '%s' (expected aws, gcp or azure)", s);
  if ((v = gp_doc_get(n, "url"))) {
    if ((rc = copy_str(d, v, "spot.url", spot->url, sizeof spot->url, err)) != 0) return rc;
    if (strncmp(spot->url, "http://", 7) != 0 && strncmp(spot->url, "https://", 8) != 0)
      return gp_err_set(err, GP_EINVAL, d->name, v->line, "spot.url",
                        "expected an http:// or https:// URL, not '%s'", spot->url);
    size_t len = strlen(spot->url); /* the paths read are appended to it */
    while (len > 0 && spot->url[len - 1] == '/') spot->url[--len] = '\0';
  }
  if ((v = gp_doc_get(n, "interval"))) {
    int64_t sec = 0;
    if ((rc = gp_doc_duration_s(d, v, "spot.interval", &sec, err)) != 0) return rc;
    if (sec < 1 || sec > 60)
      return gp_err_set(err, GP_EINVAL, d->name, v->line, "spot.interval", "expected 1s to 60s");
    spot->interval_s = (int)sec;
  }
  return 0;
}

int gp_agent_config_load(const char *path, gp_agent_config *cfg, gp_err *err) {
  gp_doc *d = NULL;
  int rc = gp_fileperm_check(path, GP_FILEPERM_CONFIG, NULL, err);
  if (!rc) rc = gp_doc_load_file(path, &d, err);
  if (rc) return rc;
  const gp_doc_node *root = d->root;
  if (!root) goto done;
  /* The agent's token reaches every node's orders: a file holding it is a secret. */
  if (root->kind == GP_DOC_MAP && gp_doc_get(root, "token") &&
      (rc = gp_fileperm_check(path, GP_FILEPERM_SECRET, "token", err)) != 0)
    goto done;
  static const char *const keys[] = {
      "name", "server", "job_server", "token", "sim", "data_dir", "listen", "capacity", "cgroup_root",
      "mps_pipe_dir", "signal", "labels", "cpus", "mem", "heartbeat_s", "grace",
      "watchdog_interval", "personal", "allow_root_jobs", "sharing", "gpus", "health", "tls",
      "spot", "container", "models_dir", NULL};
  if ((rc = gp_doc_expect(d, root, "", GP_DOC_MAP, err)) != 0) goto done;
  if ((rc = gp_doc_check_keys(d, root, "", keys, err)) != 0) goto done;
  struct {
    const char *key;
    char *dst;
    size_t size;
  } strs[] = {
      {"name", cfg->name, sizeof cfg->name},
      {"server", cfg->server, sizeof cfg->server},
      {"job_server", cfg->job_server, sizeof cfg->job_server},
      {"token", cfg->token, sizeof cfg->token},
      {"sim", cfg->sim, sizeof cfg->sim},
      {"data_dir", cfg->data_dir, sizeof cfg->data_dir},
      {"listen", cfg->listen, sizeof cfg->listen},
      {"capacity", cfg->capacity, sizeof cfg->capacity},
      {"cgroup_root", cfg->cgroup_root, sizeof cfg->cgroup_root},
      {"mps_pipe_dir", cfg->mps_pipe_dir, sizeof cfg->mps_pipe_dir},
      {"signal", cfg->signal, sizeof cfg->signal},
      {"models_dir", cfg->models_dir, sizeof cfg->models_dir},
  };
  for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++) {
    const gp_doc_node *n = gp_doc_get(root, strs[i].key);
    if (n && (rc = copy_str(d, n, strs[i].key, strs[i].dst, strs[i].size, err)) != 0) goto done;
  }
  const gp_doc_node *n;
  int64_t v = 0;
  if ((n = gp_doc_get(root, "cpus"))) {
    if ((rc = gp_doc_int(d, n, "cpus", &v, err)) != 0) goto done;
    if (v < 1 || v > 100000) {
      rc = gp_err_set(err, GP_EINVAL, d->name, n->line, "cpus", "expected 1 to 100000 CPUs");
      goto done;
    }
    cfg->cpus = v;
  }
  if ((n = gp_doc_get(root, "mem"))) {
    if ((rc = gp_doc_mem_mib(d, n, "mem", &cfg->mem_mib, err)) != 0) goto done;
  }
  if ((n = gp_doc_get(root, "heartbeat_s"))) {
    if ((rc = gp_doc_int(d, n, "heartbeat_s", &v, err)) != 0) goto done;
    if (v < 1 || v > 30) {
      rc = gp_err_set(err, GP_EINVAL, d->name, n->line, "heartbeat_s", "expected 1 to 30");
      goto done;
    }
    cfg->heartbeat_s = (int)v;
  }
  if ((n = gp_doc_get(root, "grace"))) {
    if ((rc = gp_doc_duration_s(d, n, "grace", &v, err)) != 0) goto done;
    cfg->grace_s = (int)(v > 86400 ? 86400 : v);
  }
  if ((n = gp_doc_get(root, "watchdog_interval"))) {
    if ((rc = gp_doc_duration_s(d, n, "watchdog_interval", &v, err)) != 0) goto done;
    cfg->watchdog_ms = (int)(v < 1 ? 1000 : (v > 60 ? 60000 : v * 1000));
  }
  if ((n = gp_doc_get(root, "personal")) && (rc = gp_doc_bool(d, n, "personal", &cfg->personal, err)))
    goto done;
  if ((n = gp_doc_get(root, "allow_root_jobs")) &&
      (rc = gp_doc_bool(d, n, "allow_root_jobs", &cfg->allow_root_jobs, err)))
    goto done;
  if ((n = gp_doc_get(root, "labels"))) {
    if ((rc = gp_doc_expect(d, n, "labels", GP_DOC_MAP, err)) != 0) goto done;
    for (int i = 0; i < n->n; i++) {
      const char *val = NULL;
      char field[160];
      snprintf(field, sizeof field, "labels.%s", n->keys[i]);
      if ((rc = gp_doc_str(d, n->items[i], field, &val, err)) != 0) goto done;
      if ((rc = add_label(cfg, n->keys[i], strlen(n->keys[i]), val, err)) != 0) {
        at_node(err, rc, d, n->items[i]->line, field);
        goto done;
      }
    }
  }
  if ((n = gp_doc_get(root, "health")) &&
      (rc = gp_health_policy_load(d, n, &cfg->health, err)) != 0)
    goto done;
  if ((n = gp_doc_get(root, "sharing"))) {
    const char *s = NULL;
    if ((rc = gp_doc_str(d, n, "sharing", &s, err)) != 0) goto done;
    if ((rc = gp_gpu_mode_parse(s, &cfg->default_mode, err)) != 0) {
      at_node(err, rc, d, n->line, "sharing");
      goto done;
    }
    cfg->default_mode.set = false;
  }
  if ((n = gp_doc_get(root, "gpus"))) {
    if ((rc = gp_doc_expect(d, n, "gpus", GP_DOC_MAP, err)) != 0) goto done;
    for (int i = 0; i < n->n; i++) {
      char field[160];
      snprintf(field, sizeof field, "gpus.%s", n->keys[i]);
      int lo = 0, hi = 0;
      if (!parse_gpu_range(n->keys[i], &lo, &hi)) {
        rc = gp_err_set(err, GP_EINVAL, d->name, n->items[i]->line, field,
                        "expected a GPU index or range such as 0 or 4-7 (at most %d)",
                        GP_GPU_MAX_DEVICES - 1);
        goto done;
      }
      const char *s = NULL;
      gp_gpu_mode m;
      if ((rc = gp_doc_str(d, n->items[i], field, &s, err)) != 0) goto done;
      if ((rc = gp_gpu_mode_parse(s, &m, err)) != 0) {
        at_node(err, rc, d, n->items[i]->line, field);
        goto done;
      }
      for (int g = lo; g <= hi; g++) cfg->gpus[g] = m;
    }
  }
  if ((n = gp_doc_get(root, "tls")) &&
      (rc = gp_tls_files_read(d, n, path, "server_ca", &cfg->tls, err)) != 0)
    goto done;
  if ((n = gp_doc_get(root, "spot")) && (rc = load_spot(d, n, &cfg->spot, err)) != 0) goto done;
  if ((n = gp_doc_get(root, "container")) &&
      (rc = gp_agent_container_cfg_load(d, n, &cfg->container, err)) != 0)
    goto done;
done:
  gp_doc_free(d);
  return rc;
}
