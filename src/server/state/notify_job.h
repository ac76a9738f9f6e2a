/* SPDX-License-Identifier: Apache-2.0 */
/* The state thread's side of job notifications (notify.h, notify_job.c): a job's mail
 * fields, the users' own settings (`gpool notify set`, kept in the store as the setting
 * "notify/USER"), the transitions noted during a batch and turned into messages once it is
 * committed, and GET/PUT/DELETE /v1/notify. Internal to src/server. */
#ifndef GP_SERVER_NOTIFY_JOB_H
#define GP_SERVER_NOTIFY_JOB_H

#include <jansson.h>

#include "server/state/notify.h"
#include "server/state/state.h"

struct gp_srv_req;

#define GP_SRV_SETTING_NOTIFY "notify/" /* + user */

/* Reads a job's `mail_type` (event list, notify.h) and `mail_user` (an address) from a
 * submission or a stored document into j; errors name the field. */
int gp__srv_notify_job_read(const json_t *o, gp_srv_job *j, gp_err *err);
/* Writes them into a job's API object (null when not set). */
void gp__srv_notify_job_json(json_t *o, const gp_srv_job *j);
/* The checks that need the server's config and the owner's settings (state thread): mail
 * asked for where the server sends none, or with no address to send to, is refused; so is
 * an address outside notify.mail_domains. */
int gp__srv_notify_job_admit(const gp_srv_state *s, const gp_srv_job *j, gp_err *err);

/* gp__srv_job_set_state moved job j from `old` to its current state: notes the event for
 * the end of the batch. Nothing is noted while s->notify is NULL (a loading or following
 * state). */
void gp__srv_notify_note(gp_srv_state *s, gp_srv_job *j, gp_job_state old);
/* Notes one event of `kind` (a single GP_NOTIFY_* event) for job j, sent after the commit
 * as gp__srv_notify_note's are. Job arrays call it with GP_NOTIFY_ARRAY_DONE, on the job
 * that stands for the array, when its last element ends: it reaches those who asked for
 * END. (Whether an element's own events are sent without ARRAY_TASKS is the arrays'
 * decision: they skip gp__srv_job_set_state's notes for such elements.) */
void gp__srv_notify_event(gp_srv_state *s, const gp_srv_job *j, unsigned kind);
/* The tick, for a running job with a time limit: notes TIME_LIMIT_50/80/90 once per run as
 * the run passes each share of its limit (within a minute of it: a server that was down
 * then sends none, rather than every share passed at once after its restart). */
void gp__srv_notify_time_check(gp_srv_state *s, gp_srv_job *j, int64_t now);
/* After a commit (before ended jobs are evicted): hands the messages of the noted events
 * to the sender. */
void gp__srv_notify_flush(gp_srv_state *s);
/* A stored setting "notify/USER" read at load. */
void gp__srv_notify_user_loaded(gp_srv_state *s, const char *user, const char *doc);
/* Frees what the state holds for notifications (notes, users' settings). */
void gp__srv_notify_state_free(gp_srv_state *s);
/* GET, PUT and DELETE /v1/notify: the caller's own settings. */
int gp__srv_notify_route(gp_srv_state *s, struct gp_srv_req *r, gp_err *err);

#endif
