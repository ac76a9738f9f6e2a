/* SPDX-License-Identifier: Apache-2.0 */
/* The agent among several servers (docs/ha.md): it follows a follower's redirect to the
 * leader, moves to the next server of its list when one goes away, and refuses the orders
 * of a server whose leader epoch is older than one it has seen, so a deposed leader cannot
 * start a job the new one may have placed elsewhere. Real agent processes against stand-in
 * servers on 127.0.0.1. */
#include "agent_harness.h"

static bool log_has(const agent_proc *ap, const char *needle) {
  char *text = read_text(ap->log);
  bool has = text && strstr(text, needle);
  free(text);
  return has;
}

static void a_follower_sends_the_agent_to_the_leader(void) {
  fake_server *leader = fs_start(), *follower = fs_start();
  leader->epoch = 3;
  snprintf(follower->redirect, sizeof follower->redirect, "http://127.0.0.1:%d", leader->port);
  char list[128];
  snprintf(list, sizeof list, "http://127.0.0.1:%d,http://127.0.0.1:%d", follower->port, leader->port);
  agent_proc ap;
  agent_new(&ap, follower, "2xH100-80GB", "--personal", "--server", list);
  json_t *reg = fs_wait_register(leader, 1, 10000);
  CHECK(reg != NULL);
  json_decref(reg);
  fs_order(leader, start_order("5", "exit 0", 0));
  json_t *ev = fs_wait_event(leader, "started", "5", 5000);
  CHECK(ev != NULL);
  json_decref(ev);
  CHECK(log_has(&ap, "job 5 task 0 started (epoch 3,"));
  agent_stop(&ap);
  rm_rf(ap.data);
  fs_stop(follower);
  fs_stop(leader);
}

/* A redirect to a server the agent was not given is not followed: its token and node
 * credential go only to its own list (a follower's Location could be wrong or crafted). */
static void a_redirect_outside_the_list_is_not_followed(void) {
  fake_server *stranger = fs_start(), *follower = fs_start();
  snprintf(follower->redirect, sizeof follower->redirect, "http://127.0.0.1:%d", stranger->port);
  agent_proc ap;
  agent_new(&ap, follower, "2xH100-80GB", "--personal");
  int64_t until = fs_now_ms() + 10000;
  while (fs_now_ms() < until && !log_has(&ap, "not one of the agent's servers")) usleep(50000);
  CHECK(log_has(&ap, "not one of the agent's servers"));
  json_t *reg = fs_wait_register(stranger, 1, 1500);
  CHECK(reg == NULL);
  json_decref(reg);
  agent_stop(&ap);
  rm_rf(ap.data);
  fs_stop(follower);
  fs_stop(stranger);
}

static void an_older_epoch_is_refused_after_a_failover(void) {
  fake_server *a = fs_start(), *b = fs_start();
  a->epoch = 4; /* the leader the agent meets first */
  b->epoch = 2; /* a deposed leader that still answers */
  char list[128];
  snprintf(list, sizeof list, "http://127.0.0.1:%d,http://127.0.0.1:%d", a->port, b->port);
  agent_proc ap;
  agent_new(&ap, a, "2xH100-80GB", "--personal", "--server", list);
  json_t *reg = fs_wait_register(a, 1, 10000);
  REQUIRE(reg);
  json_decref(reg);
  /* A heartbeat comes only once the agent has read the register answer, and with it a's
   * epoch; stopping a before that would leave b the newest leader the agent knows. */
  int64_t until = fs_now_ms() + 10000;
  while (fs_now_ms() < until && __atomic_load_n(&a->heartbeats, __ATOMIC_SEQ_CST) == 0) usleep(20000);
  REQUIRE(a->heartbeats > 0);
  fs_order(b, start_order("9", "sleep 30", 1));
  fs_stop(a); /* the agent turns to b, whose epoch is older */
  until = fs_now_ms() + 8000;
  while (fs_now_ms() < until && !log_has(&ap, "refusing its orders")) usleep(50000);
  CHECK(log_has(&ap, "answers for leader epoch 2, older than 4: refusing its orders"));
  CHECK(!log_has(&ap, "job 9 task 0 started"));
  CHECK_EQ_INT(0, fs_count_events(b, "started", "9"));
  agent_stop(&ap);
  rm_rf(ap.data);
  fs_stop(b);
}

static int log_count(const agent_proc *ap, const char *needle) {
  char *text = read_text(ap->log);
  int n = 0;
  for (const char *p = text; p && (p = strstr(p, needle)); p += strlen(needle)) n++;
  free(text);
  return n;
}

/* While no server can lead (a database outage), a follower keeps naming the last leader,
 * which answers 503: the agent goes round every half second. It says so once. */
static void an_outage_is_logged_once_not_on_every_retry(void) {
  fake_server *old_leader = fs_start(), *follower = fs_start();
  old_leader->no_leader = 1;
  snprintf(follower->redirect, sizeof follower->redirect, "http://127.0.0.1:%d", old_leader->port);
  char list[128];
  snprintf(list, sizeof list, "http://127.0.0.1:%d,http://127.0.0.1:%d", follower->port,
           old_leader->port);
  agent_proc ap;
  agent_new(&ap, follower, "2xH100-80GB", "--personal", "--server", list);
  int64_t until = fs_now_ms() + 10000;
  while (fs_now_ms() < until && log_count(&ap, "no server leads") == 0) usleep(50000);
  usleep(3000000); /* six rounds or so */
  CHECK_EQ_INT(1, log_count(&ap, "follows the leader"));
  CHECK_EQ_INT(1, log_count(&ap, "no server leads the pool now"));
  /* The outage ends: the leader answers, and the agent registers with it. */
  old_leader->no_leader = 0;
  json_t *reg = fs_wait_register(old_leader, 1, 10000);
  CHECK(reg != NULL);
  json_decref(reg);
  agent_stop(&ap);
  rm_rf(ap.data);
  fs_stop(follower);
  fs_stop(old_leader);
}

GP_TESTS(a_follower_sends_the_agent_to_the_leader, a_redirect_outside_the_list_is_not_followed,
         an_older_epoch_is_refused_after_a_failover,
         an_outage_is_logged_once_not_on_every_retry)
