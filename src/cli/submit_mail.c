/* SPDX-License-Identifier: Apache-2.0 */
/* `gpool submit --mail-type/--mail-user` and their #SBATCH/#GPOOL forms (submit_args.h):
 * Slurm's values are read with the server's own reader (server/notify.h), so an event gpool
 * cannot produce (TIME_LIMIT_80, STAGE_OUT, ...) is refused before anything is sent, naming
 * the script's line; the address is checked again by the server against its config. */
#include <stdio.h>

#include "cli/submit_args.h"
#include "server/state/notify.h"

int gp_submit_mail_opt(json_t *req, bool is_type, const char *v, const char *where, gp_err *err) {
  const char *key = is_type ? "mail_type" : "mail_user";
  gp_err e = {0};
  int rc;
  if (is_type) {
    unsigned events;
    rc = gp_notify_events_parse(v, key, &events, &e);
  } else {
    gp_notify_config any;
    gp_notify_config_init(&any);
    rc = gp_notify_check_mail(&any, v, key, &e);
  }
  if (rc)
    return gp_err_set(err, rc, NULL, 0, key, "%s%s%s", where ? where : "", where ? ": " : "",
                      e.message);
  json_object_set_new(req, key, json_string(v));
  return 0;
}
