/* SPDX-License-Identifier: Apache-2.0 */
/* Pre-pulls of container images on nodes (image_pull.c). */
#ifndef GP_SERVER_IMAGE_PULL_H
#define GP_SERVER_IMAGE_PULL_H

#include <stdbool.h>
#include <stdint.h>

#include "server/state/state.h"

struct gp_srv_req;

/* POST /v1/images/pull, GET /v1/images/pulls; rest: after "/v1/images". */
int gp__srv_images_route(gp_srv_state *s, struct gp_srv_req *req, const char *rest, int64_t now_s,
                         gp_err *err);
/* A pull_done event of node n. */
void gp__srv_pull_done(gp_srv_state *s, const gp_srv_node *n, const char *order, bool ok,
                       const char *message);
/* A pull_progress event of node n: bytes pulled so far of total (0: not known; -1: not given). */
void gp__srv_pull_moved(gp_srv_state *s, const gp_srv_node *n, const char *order, int64_t done,
                        int64_t total);
void gp__srv_pulls_free(gp_srv_state *s);

#endif
