/* SPDX-License-Identifier: Apache-2.0 */
/* `gpool notify`: the caller's own notification settings (GET /v1/notify); `gpool notify
 * set [--mail ADDR] [--webhook URL] [--events LIST]` changes the ones given ("" clears one;
 * PUT); `gpool notify clear` forgets them all (DELETE). docs/notifications.md. A webhook
 * URL is a secret of its user: the server shows it to nobody else. */
#include <stdio.h>
#include <string.h>

#include "cli/cli_common.h"
#include "cli/commands.h"

enum { O_MAIL = 1, O_WEBHOOK, O_EVENTS };

static const gp_opt notify_opts[] = {
  {0, "mail", true, O_MAIL},
  {0, "webhook", true, O_WEBHOOK},
  {0, "events", true, O_EVENTS},
  GP_CLI_COMMON_OPTS,
};

static const char notify_usage[] =
  "Usage: gpool notify [-o json]          your notification settings\n"
  "       gpool notify set [--mail ADDR] [--webhook URL] [--events LIST]\n"
  "       gpool notify clear              forget them all\n"
  "  --mail ADDR     where your jobs' events are mailed (also the default of --mail-user)\n"
  "  --webhook URL   an http(s) URL your jobs' events are POSTed to as JSON (Slack-compatible)\n"
  "  --events LIST   begin,end,fail,requeue,time_limit(_50,_80,_90),all or none (default end,fail)\n"
  "  An empty value (--webhook \"\") clears that setting. See docs/notifications.md.\n";

typedef struct args {
  const char *words[2];
  json_t *body;
} args;

static int own(void *arg, int id, const char *v) {
  args *a = arg;
  const char *key = id == O_MAIL ? "mail" : id == O_WEBHOOK ? "webhook" : "events";
  json_object_set_new(a->body, key, *v || id == O_EVENTS ? json_string(v) : json_null());
  return 0;
}

static int word(void *arg, const char *w) {
  args *a = arg;
  for (int i = 0; i < 2; i++)
    if (!a->words[i]) {
      a->words[i] = w;
      return 0;
    }
  return gp_cli_usage_error("notify", "unexpected argument \"%s\"", w);
}

static const char *str(const json_t *o, const char *key) {
  const char *s = json_string_value(json_object_get(o, key));
  return s ? s : "-";
}

int gp_cmd_notify(int argc, char **argv) {
  gp_cli cli = {.cmd = "notify"};
  args a = {{NULL, NULL}, json_object()};
  int code = gp_cli_parse(&cli, argc, argv, notify_opts, own, word, &a, notify_usage);
  if (code) {
    json_decref(a.body);
    return code < 0 ? 0 : code;
  }
  const char *method = "GET";
  if (a.words[0] && !strcmp(a.words[0], "set")) {
    method = "PUT";
    if (json_object_size(a.body) == 0)
      code = gp_cli_usage_error("notify", "set what? give --mail, --webhook or --events");
  } else if (a.words[0] && !strcmp(a.words[0], "clear")) {
    method = "DELETE";
  } else if (a.words[0]) {
    code = gp_cli_usage_error("notify", "unknown action \"%s\" (set or clear)", a.words[0]);
  }
  if (!code && a.words[1]) code = gp_cli_usage_error("notify", "unexpected argument \"%s\"", a.words[1]);
  if (!code && strcmp(method, "PUT") && json_object_size(a.body))
    code = gp_cli_usage_error("notify", "--mail, --webhook and --events go with `gpool notify set`");
  json_t *answer = NULL;
  if (!code) code = gp_cli_connect(&cli);
  if (!code) code = gp_cli_call(&cli, method, "/v1/notify", strcmp(method, "PUT") ? NULL : a.body, &answer);
  if (!code) {
    if (cli.json) {
      gp_cli_print_json(answer);
    } else {
      printf("Mail:    %s%s\n", str(answer, "mail"),
             json_is_false(json_object_get(answer, "mail_enabled")) ? " (this server sends no mail)" : "");
      printf("Webhook: %s%s\n", str(answer, "webhook"),
             !strcmp(str(answer, "webhooks"), "off") ? " (this server takes no webhooks)" : "");
      printf("Events:  %s\n", str(answer, "events"));
    }
  }
  json_decref(a.body);
  json_decref(answer);
  gp_cli_done(&cli);
  return code;
}
