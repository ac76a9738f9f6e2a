/* SPDX-License-Identifier: Apache-2.0 */
/* Notifications (src/server/notify*.c): what users may name (Slurm's --mail-type values,
 * addresses, URLs), the config's `notify:` block, one mail handed to a real stand-in for
 * sendmail (a script that records its arguments and stdin) with no header injection and a
 * bounded time, and the sender's queue: the rate limit per user, the oldest dropped from a
 * full queue, and webhooks kept off internal addresses in `public` mode. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test.h"
#include "server/state/config.h"
#include "server/state/notify.h"
#include "util/clock.h"

static char dir[64];

static void remove_dir(void) {
  char cmd[96];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

static void make_dir(void) {
  if (dir[0]) return;
  snprintf(dir, sizeof dir, "/tmp/gp-notify-XXXXXX");
  REQUIRE(mkdtemp(dir));
  atexit(remove_dir);
}

/* A stand-in for sendmail: records its arguments and stdin, then runs `then`. */
static const char *stand_in(const char *name, const char *then) {
  make_dir();
  static char path[128];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  REQUIRE(f);
  fprintf(f, "#!/bin/sh\necho \"$@\" > %s/%s.args\ncat >> %s/%s.in\n%s\n", dir, name, dir, name, then);
  fclose(f);
  chmod(path, 0755);
  return path;
}

static char *slurp(const char *name, const char *ext) {
  char path[160];
  snprintf(path, sizeof path, "%s/%s.%s", dir, name, ext);
  FILE *f = fopen(path, "r");
  if (!f) return strdup("");
  static char buf[8192];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = '\0';
  fclose(f);
  return strdup(buf);
}

static void slurm_mail_types_are_read_or_refused_by_name(void) {
  unsigned ev = 0;
  gp_err e = {0};
  CHECK_EQ_INT(0, gp_notify_events_parse("BEGIN,END,FAIL", "mail_type", &ev, &e));
  CHECK_EQ_INT(GP_NOTIFY_BEGIN | GP_NOTIFY_END | GP_NOTIFY_FAIL, ev);
  CHECK_EQ_INT(0, gp_notify_events_parse("ALL,ARRAY_TASKS", "mail_type", &ev, &e));
  CHECK_EQ_INT(GP_NOTIFY_ALL | GP_NOTIFY_ARRAY_TASKS, ev);
  CHECK_EQ_INT(0, gp_notify_events_parse("NONE", "mail_type", &ev, &e));
  CHECK_EQ_INT(0, ev);
  CHECK_EQ_INT(0, gp_notify_events_parse("requeue,time_limit", "mail_type", &ev, &e));
  CHECK_EQ_INT(GP_NOTIFY_REQUEUE | GP_NOTIFY_TIME_LIMIT, ev);
  char buf[128];
  gp_notify_events_format(GP_NOTIFY_ALL, buf, sizeof buf);
  CHECK_EQ_STR("begin,end,fail,requeue", buf);
  CHECK_EQ_INT(0, gp_notify_events_parse("TIME_LIMIT_80,time_limit_90", "mail_type", &ev, &e));
  CHECK_EQ_INT(GP_NOTIFY_TIME_LIMIT_80 | GP_NOTIFY_TIME_LIMIT_90, ev);
  const char *refused[] = {"TIME_LIMIT_70", "END,STAGE_OUT", "INVALID_DEPEND", "NONE,END",
                           "ARRAY_TASKS", "END,", "", "bogus", "END,,FAIL"};
  for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
    memset(&e, 0, sizeof e);
    CHECK_EQ_INT(GP_EINVAL, gp_notify_events_parse(refused[i], "mail_type", &ev, &e));
    CHECK_EQ_STR("mail_type", e.field);
  }
  gp_notify_events_parse("END,STAGE_OUT", "mail_type", &ev, &e);
  CHECK_CONTAINS(e.message, "STAGE_OUT is not supported");
}

static void addresses_and_urls_are_checked(void) {
  gp_notify_config c;
  gp_notify_config_init(&c);
  gp_err e = {0};
  const char *good[] = {"bob@example.org", "a.b+tag@sub.example.co.uk", "x_y%z@a-b.org"};
  for (size_t i = 0; i < sizeof good / sizeof *good; i++)
    CHECK_EQ_INT(0, gp_notify_check_mail(&c, good[i], "mail", &e));
  const char *bad[] = {"bob", "bob@localhost", "-oQ/tmp@x.org", "bob@example.org\r\nBcc: eve@x.org",
                       "bob@example.org,eve@x.org", "bob @x.org", "<bob@x.org>", "bob@x..org",
                       "bob@.x.org", "@x.org", "bob@x.org.", ".bob@x.org", ""};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    CHECK_EQ_INT(GP_EINVAL, gp_notify_check_mail(&c, bad[i], "mail", &e));
  const char *doms[] = {"example.org"};
  c.mail_domains = doms;
  c.n_mail_domains = 1;
  CHECK_EQ_INT(0, gp_notify_check_mail(&c, "bob@EXAMPLE.org", "mail", &e));
  CHECK_EQ_INT(GP_EINVAL, gp_notify_check_mail(&c, "bob@evil.org", "mail", &e));
  CHECK_CONTAINS(e.message, "notify.mail_domains");
  CHECK_EQ_INT(0, gp_notify_check_url("https://hooks.slack.com/services/T/B/X", "webhook", &e));
  CHECK_EQ_INT(0, gp_notify_check_url("http://127.0.0.1:8080/x?a=b", "webhook", &e));
  const char *bad_urls[] = {"ftp://x.org/", "file:///etc/passwd", "http://", "http:///x",
                            "https://x.org/a b", "gopher://x", "http://x.org/\r\n"};
  for (size_t i = 0; i < sizeof bad_urls / sizeof *bad_urls; i++)
    CHECK_EQ_INT(GP_EINVAL, gp_notify_check_url(bad_urls[i], "webhook", &e));
  char *long_url = malloc(GP_NOTIFY_URL_MAX + 16);
  strcpy(long_url, "https://x.org/");
  memset(long_url + 14, 'a', GP_NOTIFY_URL_MAX);
  long_url[GP_NOTIFY_URL_MAX + 14] = '\0';
  CHECK_EQ_INT(GP_EINVAL, gp_notify_check_url(long_url, "webhook", &e));
  free(long_url);
}

static void the_config_block_is_read(void) {
  const char *text = "notify:\n"
                     "  sendmail: /usr/bin/msmtp\n"
                     "  mail_from: gpool@example.org\n"
                     "  mail_domains: [example.org]\n"
                     "  webhooks: off\n"
                     "  hooks: [{url: \"https://ops.example.org/hook\", events: \"fail,requeue\"}]\n"
                     "  queue_max: 10\n"
                     "  timeout_s: 5\n"
                     "  attempts: 3\n"
                     "  backoff_s: 1\n"
                     "  per_user_per_hour: 7\n";
  gp_server_config *c = NULL;
  gp_err e = {0};
  REQUIRE(gp_server_config_parse("server.yaml", text, strlen(text), &c, &e) == 0);
  CHECK_EQ_STR("/usr/bin/msmtp", c->notify.sendmail);
  CHECK_EQ_STR("gpool@example.org", c->notify.mail_from);
  CHECK_EQ_INT(1, c->notify.n_mail_domains);
  CHECK_EQ_INT(GP_NOTIFY_HOOKS_OFF, c->notify.webhooks);
  CHECK_EQ_INT(1, c->notify.n_hooks);
  CHECK_EQ_INT(GP_NOTIFY_FAIL | GP_NOTIFY_REQUEUE, c->notify.hooks[0].events);
  CHECK_EQ_INT(10, c->notify.queue_max);
  CHECK_EQ_INT(7, c->notify.per_user_per_hour);
  gp_server_config_free(c);
  c = NULL;
  const char *bad = "notify:\n  webhooks: sometimes\n";
  CHECK(gp_server_config_parse("server.yaml", bad, strlen(bad), &c, &e) != 0);
  CHECK_EQ_STR("notify.webhooks", e.field);
  bad = "notify:\n  hooks: [{url: \"ftp://x.org\"}]\n";
  CHECK(gp_server_config_parse("server.yaml", bad, strlen(bad), &c, &e) != 0);
  CHECK_EQ_STR("notify.hooks[0].url", e.field);
  CHECK_EQ_INT(2, e.line);
  bad = "notify:\n  sendmail: sendmail\n";
  CHECK(gp_server_config_parse("server.yaml", bad, strlen(bad), &c, &e) != 0);
  CHECK_EQ_STR("notify.sendmail", e.field);
  /* The default: the system's sendmail, webhooks to public addresses only. */
  const char *none = "listen: 127.0.0.1:0\n";
  REQUIRE(gp_server_config_parse("server.yaml", none, strlen(none), &c, &e) == 0);
  CHECK_EQ_STR("/usr/sbin/sendmail", c->notify.sendmail);
  CHECK_EQ_INT(GP_NOTIFY_HOOKS_PUBLIC, c->notify.webhooks);
  gp_server_config_free(c);
}

static void a_mail_reaches_sendmail_without_injected_headers(void) {
  const char *sm = stand_in("sm1", "exit 0");
  gp_err e = {0};
  CHECK_EQ_INT(0, gp__srv_notify_mail(sm, "gpool@example.org", "bob@example.org",
                                      "job 1 (x\r\nBcc: eve@evil.org) ended", "line one\n.\nline three",
                                      5, &e));
  char *args = slurp("sm1", "args"), *in = slurp("sm1", "in");
  CHECK_EQ_STR("-oi -t\n", args);
  CHECK_CONTAINS(in, "From: gpool@example.org\nTo: bob@example.org\n");
  CHECK_CONTAINS(in, "Subject: job 1 (x??Bcc: eve@evil.org) ended\n");
  CHECK(strstr(in, "\nBcc:") == NULL);
  CHECK_CONTAINS(in, "\n\nline one\n.\nline three\n");
  free(args);
  free(in);
  /* A sendmail that fails, or hangs, is an error within the deadline. */
  CHECK_EQ_INT(GP_EIO, gp__srv_notify_mail(stand_in("sm2", "exit 75"), NULL, "bob@example.org", "s",
                                           "t", 5, &e));
  CHECK_CONTAINS(e.message, "exited with status 75");
  int64_t t0 = gp_mono_ms();
  CHECK_EQ_INT(GP_EIO, gp__srv_notify_mail(stand_in("sm3", "sleep 30"), NULL, "bob@example.org", "s",
                                           "t", 1, &e));
  CHECK(gp_mono_ms() - t0 < 3000);
  CHECK_CONTAINS(e.message, "did not finish within 1 s");
  CHECK_EQ_INT(GP_EIO, gp__srv_notify_mail("/nonexistent/sendmail", NULL, "bob@example.org", "s",
                                           "t", 1, &e));
}

static bool settled(gp_srv_notify *n, uint64_t want, int ch) {
  gp_srv_notify_stats st;
  for (int i = 0; i < 500; i++) {
    gp__srv_notify_stats_get(n, &st);
    if (st.sent[ch] + st.failed[ch] + st.dropped[ch] + st.limited[ch] >= want && st.queued == 0)
      return true;
    usleep(10000);
  }
  return false;
}

static void the_sender_limits_each_user_and_drops_the_oldest(void) {
  gp_notify_config c;
  gp_notify_config_init(&c);
  c.sendmail = stand_in("sm4", "exit 0");
  c.per_user_per_hour = 2;
  gp_srv_notify *n = gp__srv_notify_new(&c);
  REQUIRE(n);
  for (int i = 0; i < 4; i++) gp__srv_notify_send(n, GP_NOTIFY_MAIL, "bob", "bob@example.org", "s", "t");
  gp__srv_notify_send(n, GP_NOTIFY_MAIL, "carol", "carol@example.org", "s", "t");
  REQUIRE(settled(n, 5, GP_NOTIFY_MAIL));
  gp_srv_notify_stats st;
  gp__srv_notify_stats_get(n, &st);
  CHECK_EQ_INT(3, (int)st.sent[GP_NOTIFY_MAIL]); /* bob's 2, carol's 1 */
  CHECK_EQ_INT(2, (int)st.limited[GP_NOTIFY_MAIL]);
  gp_buf m;
  gp_buf_init(&m, 0);
  gp__srv_notify_metrics(n, &m);
  CHECK_CONTAINS(m.data, "gpool_notify_sent_total{channel=\"mail\"} 3\n");
  CHECK_CONTAINS(m.data, "gpool_notify_limited_total{channel=\"mail\"} 2\n");
  gp_buf_done(&m);
  gp__srv_notify_free(n);

  /* A slow sendmail and a queue of 2: what comes meanwhile pushes the oldest out. */
  c.sendmail = stand_in("sm5", "sleep 0.5");
  c.per_user_per_hour = 1000;
  c.queue_max = 2;
  n = gp__srv_notify_new(&c);
  for (int i = 0; i < 6; i++) gp__srv_notify_send(n, GP_NOTIFY_MAIL, "bob", "bob@example.org", "s", "t");
  REQUIRE(settled(n, 6, GP_NOTIFY_MAIL));
  gp__srv_notify_stats_get(n, &st);
  CHECK(st.dropped[GP_NOTIFY_MAIL] >= 3);
  CHECK_EQ_INT(6, (int)(st.sent[GP_NOTIFY_MAIL] + st.dropped[GP_NOTIFY_MAIL]));
  gp__srv_notify_free(n);

  /* A failing one is tried `attempts` times, then counted failed. */
  c.sendmail = stand_in("sm6", "exit 1");
  c.queue_max = 10;
  c.attempts = 3;
  c.backoff_s = 0;
  n = gp__srv_notify_new(&c);
  gp__srv_notify_send(n, GP_NOTIFY_MAIL, "bob", "bob@example.org", "s", "t");
  REQUIRE(settled(n, 1, GP_NOTIFY_MAIL));
  gp__srv_notify_stats_get(n, &st);
  CHECK_EQ_INT(1, (int)st.failed[GP_NOTIFY_MAIL]);
  CHECK_EQ_INT(2, (int)st.retries[GP_NOTIFY_MAIL]);
  gp__srv_notify_free(n);
}

/* One user's hanging endpoint holds one sender thread: another user's mail goes meanwhile,
 * and so do the same user's messages on the other channel. */
static void a_hanging_user_does_not_hold_up_others(void) {
  gp_notify_config c;
  gp_notify_config_init(&c);
  make_dir();
  char then[256];
  snprintf(then, sizeof then, "grep -q '^To: slow@' %s/sm7.in && sleep 3; exit 0", dir);
  c.sendmail = stand_in("sm7", then);
  gp_srv_notify *n = gp__srv_notify_new(&c);
  REQUIRE(n);
  gp__srv_notify_send(n, GP_NOTIFY_MAIL, "slow", "slow@example.org", "s", "t");
  usleep(200000); /* its sendmail is sleeping now */
  unlink(strcat(strcpy(then, dir), "/sm7.in"));
  int64_t t0 = gp_mono_ms();
  gp__srv_notify_send(n, GP_NOTIFY_MAIL, "fast", "fast@example.org", "s", "t");
  gp_srv_notify_stats st = {0};
  while (gp_mono_ms() - t0 < 2500) {
    gp__srv_notify_stats_get(n, &st);
    if (st.sent[GP_NOTIFY_MAIL] >= 1) break;
    usleep(10000);
  }
  CHECK_EQ_INT(1, (int)st.sent[GP_NOTIFY_MAIL]);
  CHECK(gp_mono_ms() - t0 < 2000);
  gp__srv_notify_free(n);

  /* Nor that user's other channel: slow's webhook (to a closed port: refused at once) is
   * tried while slow's mail is still in flight. */
  c.webhooks = GP_NOTIFY_HOOKS_ANY;
  c.attempts = 1;
  n = gp__srv_notify_new(&c);
  REQUIRE(n);
  gp__srv_notify_send(n, GP_NOTIFY_MAIL, "slow", "slow@example.org", "s", "t");
  usleep(200000);
  t0 = gp_mono_ms();
  gp__srv_notify_send(n, GP_NOTIFY_WEBHOOK, "slow", "http://127.0.0.1:1/hook", NULL, "{}");
  memset(&st, 0, sizeof st);
  while (gp_mono_ms() - t0 < 2500) {
    gp__srv_notify_stats_get(n, &st);
    if (st.failed[GP_NOTIFY_WEBHOOK] >= 1) break;
    usleep(10000);
  }
  CHECK_EQ_INT(1, (int)st.failed[GP_NOTIFY_WEBHOOK]);
  CHECK_EQ_INT(0, (int)st.sent[GP_NOTIFY_MAIL]); /* the mail still hangs */
  CHECK(gp_mono_ms() - t0 < 2000);
  gp__srv_notify_free(n);
}

static void public_webhooks_never_reach_internal_addresses(void) {
  gp_err e = {0};
  const char *internal[] = {"http://127.0.0.1:9/x", "http://10.1.2.3:9/x", "http://[::1]:9/x",
                            "http://169.254.169.254/latest/meta-data/", "http://192.168.1.1:9/"};
  for (size_t i = 0; i < sizeof internal / sizeof *internal; i++) {
    memset(&e, 0, sizeof e);
    CHECK_EQ_INT(GP_EIO, gp__srv_notify_post(internal[i], "{}", GP_NOTIFY_HOOKS_PUBLIC, 2, &e));
    CHECK_CONTAINS(e.message, "public addresses");
  }
}

GP_TESTS(slurm_mail_types_are_read_or_refused_by_name, addresses_and_urls_are_checked,
         the_config_block_is_read, a_mail_reaches_sendmail_without_injected_headers,
         the_sender_limits_each_user_and_drops_the_oldest, a_hanging_user_does_not_hold_up_others,
         public_webhooks_never_reach_internal_addresses)
