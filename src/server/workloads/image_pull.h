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

/* True when the set of images changed (the scheduler's view then changes). */
bool gp__srv_node_images_take(gp_srv_node *n, const json_t *images);
/* An agent's progress of a task's pull (image_pull.c): the task's last `pulling_image` entry
 * of the timeline, still open, gets done_bytes, total_bytes and its message "pulling image
 * REF (3.1 of 9.8 GB)". In memory only (a pull is minutes; its end is stored); a figure out
 * of bounds or going back is not taken. Always 0. */
int gp__srv_pull_progress(gp_srv_state *s, gp_srv_job *j, int task, int64_t done, int64_t total);

#endif
