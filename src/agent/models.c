/* SPDX-License-Identifier: Apache-2.0 */
/* The node's models (models.h): its models_dir listed, and the periodic refresh for the
 * heartbeat. */
#include "agent/models.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "agent/agent_int.h"
#include "protocol/model.h"
#include "util/mem.h"

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

json_t *gp_agent_models_scan(const char *dir) {
  json_t *out = json_array();
  DIR *d = opendir(dir);
  if (!d) return out;
  char **names = gp_xcalloc(GP_AGENT_MODELS_SCAN_MAX, sizeof *names);
  int n = 0, seen = 0;
  struct dirent *e;
  while (seen < GP_AGENT_MODELS_SCAN_MAX && (e = readdir(d)) != NULL) {
    seen++;
    if (!gp_proto_model_name_valid(e->d_name)) continue; /* also ".", ".." and hidden ones */
    if (e->d_type != DT_DIR) {
      struct stat st; /* a link to a directory, or a file system without d_type */
      if (e->d_type != DT_LNK && e->d_type != DT_UNKNOWN) continue;
      if (fstatat(dirfd(d), e->d_name, &st, 0) != 0 || !S_ISDIR(st.st_mode)) continue;
    }
    names[n++] = gp_xstrdup(e->d_name);
  }
  closedir(d);
  qsort(names, (size_t)n, sizeof *names, cmp_str);
  for (int i = 0; i < n; i++) {
    if (i < GP_PROTO_MODELS_MAX) json_array_append_new(out, json_string(names[i]));
    free(names[i]);
  }
  free(names);
  return out;
}

void gp__agent_models_refresh(gp_agent *a) {
  int64_t now = gp__agent_now_ms();
  if (!a->cfg.models_dir[0] || now < a->models_next_ms) return;
  a->models_next_ms = now + 60000;
  json_decref(a->models);
  a->models = gp_agent_models_scan(a->cfg.models_dir);
  a->models_send = true; /* every read goes out: a server that restarted learns it again */
}
