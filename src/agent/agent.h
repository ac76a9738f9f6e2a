/* SPDX-License-Identifier: Apache-2.0 */
/* The node agent: registers the node with the server, long-polls heartbeats for orders
 * (start, stop, mig, drain_gpu, resume_gpu), runs jobs through the launcher, enforces GPU
 * shares, serves logs and metrics on its own HTTP endpoint, and re-adopts its jobs after a
 * restart. One thread owns all state (the run loop); the HTTP endpoint runs on libmicrohttpd's
 * thread and reads only files and a few counters. */
#ifndef GP_AGENT_AGENT_H
#define GP_AGENT_AGENT_H

#include <signal.h>

#include "agent/config.h"
#include "agent/gpu.h"
#include "util/error.h"

typedef struct gp_agent gp_agent;

/* Creates the agent: data directory, GPU discovery, cgroup probe, MIG layouts from the
 * config, re-adoption of jobs found on disk, the HTTP endpoint. Takes ownership of
 * `backend` (closed by gp_agent_free, also on failure). */
int gp_agent_new(const gp_agent_config *cfg, gp_gpu_backend *backend, gp_agent **ret,
                 gp_err *err);

/* Runs until *stop becomes non-zero. Jobs keep running when it returns. */
int gp_agent_run(gp_agent *a, volatile sig_atomic_t *stop);

/* The URL of the agent's own endpoint ("http://127.0.0.1:PORT"). */
const char *gp_agent_url(const gp_agent *a);

void gp_agent_free(gp_agent *a); /* accepts NULL */

#endif
