/* SPDX-License-Identifier: Apache-2.0 */
/* Jobs in container images (docs/containers.md): the agent's `container:` settings, what
 * this node allows (detected at start: the OCI runtime, the resource limits a container may
 * get without CAP_SYS_RESOURCE, an NVIDIA CDI spec), the engine's command line for one task
 * (a pure function of those and the start order), and the classification of a failed pull.
 * Each task is one `podman run`, started by the launcher in the job's place: the shim, the
 * signals (podman forwards them to the container's process), the logs (attached stdout and
 * stderr) and the exit code are a bare job's. The pull runs first, bounded, in
 * `gpool __container-task` (container_task.c). */
#ifndef GP_AGENT_CONTAINER_H
#define GP_AGENT_CONTAINER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "protocol/container.h"
#include "util/doc.h"
#include "util/error.h"

#define GP_CT_MAX_OPTIONS 16
#define GP_CT_OPTION_MAX 256

/* `container: {engine, runtime, options, run_options, pull_options, pull_timeout, shm_size,
 * image_store_max}` */
typedef struct gp_agent_container_cfg {
  char engine[256];         /* "podman" (looked up in PATH) or a path */
  char runtime[64];         /* "": detected (runc where crun cannot run on this node) */
  int n_options, n_run_options, n_pull_options;
  char options[GP_CT_MAX_OPTIONS][GP_CT_OPTION_MAX];      /* before the engine's verb */
  char run_options[GP_CT_MAX_OPTIONS][GP_CT_OPTION_MAX];  /* added to every run */
  char pull_options[GP_CT_MAX_OPTIONS][GP_CT_OPTION_MAX]; /* added to every pull */
  int pull_timeout_s;       /* default 600 */
  char shm_size[32];        /* /dev/shm of a container, default "16g" */
  int64_t image_store_max;  /* bytes the node's images may take (images.c's LRU); 0: no cap */
} gp_agent_container_cfg;

/* What this node allows, detected once at the agent's start. */
typedef struct gp_agent_container_caps {
  bool available;           /* the engine is installed */
  char message[640];        /* why not, or what was detected (logged at start) */
  char engine[512];         /* its path */
  char runtime[64];         /* "" : the engine's default */
  bool set_ulimits;         /* no CAP_SYS_RESOURCE: limits at or below the hard ones */
  int64_t nofile, nproc, memlock; /* -1: unlimited */
  bool cdi;                 /* an NVIDIA CDI spec exists */
  char inspect[512];        /* skopeo's path, for a pull's total (pull_progress.c); "": none */
} gp_agent_container_caps;

void gp_agent_container_cfg_init(gp_agent_container_cfg *c);
int gp_agent_container_cfg_load(const gp_doc *d, const gp_doc_node *n, gp_agent_container_cfg *c,
                                gp_err *err);

/* Fills *caps from the node (sys_root: "" for /, a test's tree otherwise). */
void gp_agent_container_detect(const gp_agent_container_cfg *c, const char *sys_root,
                               gp_agent_container_caps *caps);

/* One task's container. Strings borrowed. */
typedef struct gp_agent_container_task {
  const gp_proto_container *spec;
  const char *image;         /* the image fully qualified (gp_proto_image_full); NULL: spec's */
  const char *name;          /* the container's name, "gpool-<agent>-<job key>" */
  uid_t uid;
  gid_t gid;
  int n_groups;
  const gid_t *groups;
  const char *workdir;       /* the job's working directory on the host */
  const char *home;          /* the user's home ("" : none) */
  const char *job_dir;       /* the agent's directory of the task (host files), mounted ro */
  const char *env_file;
  const char *cgroup_parent; /* NULL: none */
  const char *mps_dir;       /* the MPS pipe directory of a GPU fraction, NULL: none */
  int tasks;                 /* > 1: host IPC too */
  int n_gpus;
  const char *const *gpu_uuids;
  const int *gpu_minors;
  bool gpus_simulated;       /* no devices */
  bool known_present;        /* the node's inventory holds the image: --pull=missing */
  int n_argv;
  char *const *argv;
} gp_agent_container_task;

/* The `engine [options] run ...` command line (a NULL-terminated, owned array; free with
 * gp_agent_container_argv_free). NULL with a sentence in msg when the GPUs cannot be given. */
char **gp_agent_container_run_argv(const gp_agent_container_cfg *c, const gp_agent_container_caps *caps,
                                   const gp_agent_container_task *t, char *msg, size_t size);
/* `engine [options] pull [pull_options] IMAGE` and `engine [options] image exists IMAGE`. */
char **gp_agent_container_pull_argv(const gp_agent_container_cfg *c, const gp_agent_container_caps *caps,
                                    const char *image);
char **gp_agent_container_exists_argv(const gp_agent_container_cfg *c,
                                      const gp_agent_container_caps *caps, const char *image);
void gp_agent_container_argv_free(char **argv);

/* The final reason of a failed pull from the engine's error output: "image not found",
 * "unauthorized", "registry unreachable", else "image pull failed". */
const char *gp_agent_container_pull_reason(const char *engine_stderr);

/* Whether a variable of a bare job goes into the container: the host's PATH and library
 * paths do not (the image has its own) unless the job names them (pyxis's --container-env). */
bool gp_agent_container_env_passes(const gp_proto_container *spec, const char *name);

/* A pull's progress (pull_progress.c), measured by `gpool __container-task`. */
typedef struct gp_agent_pull_progress {
  char dir[1024];          /* the task's directory: container.progress, pull.tmp */
  char tmp[1100];          /* the pull's TMPDIR, "": none */
  char image[300];
  char **inspect;          /* `skopeo inspect --raw [options]`, borrowed; NULL: no total */
  pid_t inspect_pid;       /* -1: none running */
  bool list_seen;
  int64_t done, total;     /* bytes; total 0: not known */
  int64_t written_total;
  bool written;
} gp_agent_pull_progress;
/* Starts measuring: makes DIR/pull.tmp (the pull's TMPDIR) and starts reading the manifest. */
void gp_agent_pull_progress_start(gp_agent_pull_progress *p, const char *dir, char **inspect,
                                  const char *image);
/* Measures, and writes DIR/container.progress when it changed. */
void gp_agent_pull_progress_tick(gp_agent_pull_progress *p);
/* Stops the manifest's read and removes the temporary files. */
void gp_agent_pull_progress_end(gp_agent_pull_progress *p);
/* The bytes of an image manifest (`text`, JSON): its config and layers. A manifest list:
 * -2 with the digest of its linux/`arch` entry in `digest`; -1: neither, or out of bounds. */
int64_t gp_agent_manifest_total(const char *text, size_t len, const char *arch, char *digest,
                                size_t size);
/* `skopeo inspect --raw` with the options of the node's pull_options it shares with the
 * engine's pull (--tls-verify, --authfile, --cert-dir, --creds), and `authfile` ("": none);
 * NULL when the node has no skopeo (caps->inspect ""): then no total. */
char **gp_agent_container_inspect_argv(const gp_agent_container_cfg *c,
                                       const gp_agent_container_caps *caps, const char *authfile);

/* `gpool __container-task`: pulls (bounded), then execs the run (container_task.c). */
int gp_agent_container_task_main(int argc, char **argv);

#endif
