/* SPDX-License-Identifier: Apache-2.0 */
/* Who may use an image this node holds (docs/containers.md#credentials). The engine's store
 * is shared by every job of the node, so an image pulled with one user's own credential
 * would run for any other user's job without the registry being asked. The agent keeps the
 * registries a user's own credential pulled from on this node (<data_dir>/private-registries,
 * one host[:port] a line, at most GP__AGENT_PRIVATE_MAX, kept across restarts since the
 * images are); a job in an image of such a registry has its pull run even when the image is
 * here, with its own user's credential (or the pool's, or the node's): with the layers
 * present the engine fetches the manifest only, and a registry that refuses this user fails
 * the job with `unauthorized`. Images of other registries (public, or pulled with the
 * pool's or the node's credential, which serve every job alike) start without a check. */
#include "agent/agent_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "protocol/registry.h"
#include "util/mem.h"

#define GP__AGENT_PRIVATE_MAX 256

struct gp__agent_private_regs {
  int n;
  char v[GP__AGENT_PRIVATE_MAX][GP_PROTO_REGISTRY_MAX + 1];
};

static void path_of(const gp_agent *a, char *buf, size_t size) {
  snprintf(buf, size, "%s/private-registries", a->cfg.data_dir);
}

/* Loaded once, at the first use: a line that is no valid registry is skipped (the file is
 * the agent's own, but its directory may have been copied or edited by hand). */
static struct gp__agent_private_regs *regs(gp_agent *a) {
  if (a->private_regs) return a->private_regs;
  struct gp__agent_private_regs *r = gp_xcalloc(1, sizeof *r);
  a->private_regs = r;
  char path[700], line[512];
  path_of(a, path, sizeof path);
  FILE *f = fopen(path, "re");
  while (f && r->n < GP__AGENT_PRIVATE_MAX && fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = '\0';
    if (strlen(line) <= GP_PROTO_REGISTRY_MAX && !gp_proto_registry_check(line))
      memcpy(r->v[r->n++], line, strlen(line) + 1); /* bounded just above */
  }
  if (f) fclose(f);
  return r;
}

bool gp__agent_registry_private(gp_agent *a, const char *image) {
  char reg[GP_PROTO_REGISTRY_MAX + 1];
  if (!gp_proto_image_registry(image, reg, sizeof reg)) return true; /* cannot tell: check */
  struct gp__agent_private_regs *r = regs(a);
  for (int i = 0; i < r->n; i++)
    if (!strcmp(r->v[i], reg)) return true;
  return false;
}

void gp__agent_registry_mark_private(gp_agent *a, const char *image) {
  char reg[GP_PROTO_REGISTRY_MAX + 1];
  if (!gp_proto_image_registry(image, reg, sizeof reg) || gp_proto_registry_check(reg)) return;
  if (gp__agent_registry_private(a, image)) return;
  struct gp__agent_private_regs *r = regs(a);
  /* Full: the oldest goes (a registry dropped is no worse than one never seen: its images
   * start unchecked until a user's credential pulls from it again). */
  if (r->n == GP__AGENT_PRIVATE_MAX) {
    memmove(r->v[0], r->v[1], sizeof r->v[0] * (GP__AGENT_PRIVATE_MAX - 1));
    r->n--;
  }
  snprintf(r->v[r->n++], sizeof r->v[0], "%s", reg);
  char path[700], tmp[720];
  path_of(a, path, sizeof path);
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  FILE *f = fd >= 0 ? fdopen(fd, "we") : NULL;
  if (!f) {
    if (fd >= 0) close(fd);
    gp__agent_log("cannot write %s: %s (kept in memory)", tmp, strerror(errno));
    return;
  }
  for (int i = 0; i < r->n; i++) fprintf(f, "%s\n", r->v[i]);
  bool ok = fflush(f) == 0 && fsync(fileno(f)) == 0;
  fclose(f);
  if (!ok || rename(tmp, path) != 0) {
    unlink(tmp);
    gp__agent_log("cannot write %s (kept in memory)", path);
    return;
  }
  gp__agent_log("registry %s: pulled with a user's own credential: its images are checked "
                "for each job's user from now on", reg);
}

void gp__agent_private_free(gp_agent *a) {
  free(a->private_regs);
  a->private_regs = NULL;
}
