/* SPDX-License-Identifier: Apache-2.0 */
/* `gpool submit`'s container options (submit_container.c): --image and pyxis's
 * --container-image, --container-mounts, --container-workdir, --container-env,
 * --container-writable, --[no-]container-mount-home, on the command line and in #GPOOL and
 * #SBATCH lines. Each sets a key of the POST /v1/jobs body; `where` is "file:line" for a
 * directive, NULL for the command line; errors name the option. */
#ifndef GP_CLI_SUBMIT_CONTAINER_H
#define GP_CLI_SUBMIT_CONTAINER_H

#include <jansson.h>

#include "util/error.h"

typedef enum gp_submit_container_opt {
  GP_SUBMIT_IMAGE = 1,
  GP_SUBMIT_MOUNTS,
  GP_SUBMIT_CT_WORKDIR,
  GP_SUBMIT_CT_ENV,
  GP_SUBMIT_WRITABLE,
  GP_SUBMIT_NO_MOUNT_HOME,
  GP_SUBMIT_MOUNT_HOME,
} gp_submit_container_opt;

/* Applies one of them (v is NULL for the flags). */
int gp_submit_container(json_t *req, gp_submit_container_opt which, const char *v,
                        const char *where, gp_err *err);

#endif
