/* SPDX-License-Identifier: Apache-2.0 */
/* The leader lease against a real PostgreSQL: one holder at a time, the epoch rises with
 * every takeover, a release frees it at once, and a lease connection cut by the database
 * fails one tick and reconnects on the next. */
#include "test.h"

#include <time.h>

#include "server/leader_pg.h"
#include "store/lease.h"

static gp_lease *open_lease(const char *url, const char *holder, int ttl_ms) {
  char adv[64];
  snprintf(adv, sizeof adv, "http://%s.example:7070", holder);
  gp_lease_cfg cfg = {.url = url, .holder = holder, .advertise = adv, .ttl_ms = ttl_ms};
  gp_lease *l = NULL;
  gp_err e = {0};
  int r = gp_lease_open(&cfg, &l, &e);
  if (r) fprintf(stderr, "lease: %s\n", e.message);
  REQUIRE(r == 0 && l);
  return l;
}

static int tick(gp_lease *l, gp_lease_state *st) {
  gp_err e = {0};
  int r = gp_lease_tick(l, st, &e);
  if (r) fprintf(stderr, "tick: %s\n", e.message);
  return r;
}

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void one_holder_until_expiry_and_the_epoch_rises(void) {
  const char *url = tpg_start();
  gp_lease *a = open_lease(url, "a", 1500), *b = open_lease(url, "b", 1500);
  gp_lease_state sa, sb;
  REQUIRE(tick(a, &sa) == 0);
  CHECK(sa.leader);
  CHECK_EQ_INT(1, sa.epoch);
  CHECK_EQ_STR("a", sa.holder);
  REQUIRE(tick(b, &sb) == 0);
  CHECK(!sb.leader);
  CHECK_EQ_INT(1, sb.epoch);
  CHECK_EQ_STR("a", sb.holder);
  CHECK_EQ_STR("http://a.example:7070", sb.leader_url);
  CHECK(sb.expires_in_ms > 0 && sb.expires_in_ms <= 1500);
  /* Renewals keep it a's, past several lease lengths' worth of b's attempts. */
  int64_t end = now_ms() + 1800;
  while (now_ms() < end) {
    REQUIRE(tick(a, &sa) == 0);
    CHECK(sa.leader);
    CHECK_EQ_INT(1, sa.epoch);
    REQUIRE(tick(b, &sb) == 0);
    CHECK(!sb.leader);
    usleep(200 * 1000);
  }
  /* a stops renewing: b takes it once it expired, never before, with the next epoch. */
  int64_t stopped = now_ms();
  bool took = false;
  while (!took && now_ms() < stopped + 4000) {
    REQUIRE(tick(b, &sb) == 0);
    took = sb.leader;
    if (!took) usleep(50 * 1000);
  }
  CHECK(took);
  CHECK(now_ms() - stopped >= 1200); /* a's last renewal gave it 1500 ms from then */
  CHECK_EQ_INT(2, sb.epoch);
  CHECK_EQ_STR("b", sb.holder);
  /* a's renewal is refused now: it holds an older epoch. */
  REQUIRE(tick(a, &sa) == 0);
  CHECK(!sa.leader);
  CHECK_EQ_INT(2, sa.epoch);
  CHECK_EQ_STR("b", sa.holder);
  gp_lease_close(a);
  gp_lease_close(b);
}

static void a_release_lets_another_take_at_once(void) {
  const char *url = tpg_start();
  gp_lease *a = open_lease(url, "a", 10000), *b = open_lease(url, "b", 10000);
  gp_lease_state sa, sb;
  REQUIRE(tick(a, &sa) == 0);
  CHECK(sa.leader);
  REQUIRE(tick(b, &sb) == 0);
  CHECK(!sb.leader);
  gp_err e = {0};
  CHECK_EQ_INT(0, gp_lease_release(a, &e));
  REQUIRE(tick(b, &sb) == 0);
  CHECK(sb.leader);
  CHECK_EQ_INT(2, sb.epoch);
  /* a asks again: b holds it for 10 s. */
  REQUIRE(tick(a, &sa) == 0);
  CHECK(!sa.leader);
  CHECK_EQ_STR("b", sa.holder);
  gp_lease_close(a);
  gp_lease_close(b);
}

/* A holder whose lease session is gone (the process died: kill -9 closes its connection)
 * is replaced at the next tick, not after its lease's 10 s; one whose session lives on
 * keeps its lease to the end (one_holder_until_expiry_and_the_epoch_rises). */
static void a_dead_holders_lease_is_taken_at_once(void) {
  const char *url = tpg_start();
  gp_lease *a = open_lease(url, "a", 10000), *b = open_lease(url, "b", 10000);
  gp_lease_state sa, sb;
  REQUIRE(tick(a, &sa) == 0);
  CHECK(sa.leader);
  REQUIRE(tick(b, &sb) == 0);
  CHECK(!sb.leader);
  char n[32];
  tpg_sql("SELECT count(pg_terminate_backend(holder_pid)) FROM gp_lease WHERE id = 1", n, sizeof n);
  CHECK_EQ_STR("1", n);
  int64_t t0 = now_ms();
  bool took = false;
  while (!took && now_ms() < t0 + 3000) { /* the backend exits a moment after the signal */
    REQUIRE(tick(b, &sb) == 0);
    took = sb.leader;
    if (!took) usleep(50 * 1000);
  }
  CHECK(took);
  CHECK(now_ms() - t0 < 3000);
  CHECK_EQ_INT(2, sb.epoch);
  /* The old holder, reconnected, finds the lease gone to a newer epoch. */
  gp_err e = {0};
  gp_lease_tick(a, &sa, &e);
  if (!gp_lease_tick(a, &sa, &e)) {
    CHECK(!sa.leader);
    CHECK_EQ_INT(2, sa.epoch);
  }
  gp_lease_close(a);
  gp_lease_close(b);
}

static void a_cut_connection_fails_a_tick_then_reconnects(void) {
  const char *url = tpg_start();
  gp_lease *a = open_lease(url, "a", 10000);
  gp_lease_state sa;
  REQUIRE(tick(a, &sa) == 0);
  CHECK(sa.leader);
  char n[32];
  tpg_sql("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
          " WHERE application_name = 'gpool-lease'", n, sizeof n);
  CHECK_EQ_STR("1", n);
  gp_err e = {0};
  CHECK(gp_lease_tick(a, &sa, &e) != 0);
  CHECK(!sa.leader);
  CHECK_CONTAINS(e.message, "lease");
  /* The next tick connects again and still holds the same lease (same epoch). */
  REQUIRE(tick(a, &sa) == 0);
  CHECK(sa.leader);
  CHECK_EQ_INT(1, sa.epoch);
  gp_lease_close(a);
}

static void a_restarted_database_is_rejoined(void) {
  const char *url = tpg_start();
  /* A lease that outlives the restart: on a loaded machine an immediate shutdown and start
   * took over 10 s, after which the lease had rightly expired and was taken anew (epoch 2). */
  gp_lease *a = open_lease(url, "a", 60000);
  gp_lease_state sa;
  REQUIRE(tick(a, &sa) == 0);
  CHECK(sa.leader);
  tpg_restart();
  gp_err e = {0};
  /* The first tick may fail (the old connection is gone); the next ones reconnect, as the
   * server's renewals every renew_ms do. A loaded machine may need a few: up to ~5 s. */
  int r = gp_lease_tick(a, &sa, &e);
  for (int i = 0; r && i < 20; i++) {
    usleep(250000);
    r = tick(a, &sa);
  }
  REQUIRE(r == 0);
  CHECK(sa.leader);
  CHECK_EQ_INT(1, sa.epoch);
  gp_lease_close(a);
}

static void a_frozen_database_fails_the_tick_within_the_timeout(void) {
  const char *url = tpg_start();
  char adv[] = "http://a:1";
  gp_lease_cfg cfg = {.url = url, .holder = "a", .advertise = adv, .ttl_ms = 2500, .timeout_ms = 500};
  gp_lease *a = NULL;
  gp_err e = {0};
  REQUIRE(gp_lease_open(&cfg, &a, &e) == 0);
  gp_lease_state sa;
  REQUIRE(tick(a, &sa) == 0);
  /* Another session holds the row locked: the renewal waits on it, as on a frozen server. */
  PGconn *c = PQconnectdb(url);
  REQUIRE(PQstatus(c) == CONNECTION_OK);
  PQclear(PQexec(c, "BEGIN"));
  PGresult *res = PQexec(c, "SELECT * FROM gp_lease WHERE id = 1 FOR UPDATE");
  REQUIRE(PQresultStatus(res) == PGRES_TUPLES_OK);
  PQclear(res);
  int64_t t0 = now_ms();
  CHECK(gp_lease_tick(a, &sa, &e) != 0);
  int64_t took = now_ms() - t0;
  CHECK(took < 1500);
  CHECK(!sa.leader);
  PQclear(PQexec(c, "ROLLBACK"));
  PQfinish(c);
  REQUIRE(tick(a, &sa) == 0);
  CHECK(sa.leader);
  gp_lease_close(a);
}

/* A writer fenced mid-transaction (paused while it held the lease row share-locked, as
 * the store's fencing does) does not block a takeover once the lease has expired: its
 * session is ended and its transaction rolled back. */
static void a_paused_writer_does_not_block_the_takeover(void) {
  const char *url = tpg_start();
  gp_lease *a = open_lease(url, "a", 1000), *b = open_lease(url, "b", 1000);
  gp_lease_state sa, sb;
  REQUIRE(tick(a, &sa) == 0);
  CHECK(sa.leader);
  PGconn *w = PQconnectdb(url);
  REQUIRE(PQstatus(w) == CONNECTION_OK);
  PQclear(PQexec(w, "BEGIN"));
  PGresult *res = PQexec(w, "SELECT epoch FROM gp_lease WHERE id = 1 FOR SHARE");
  REQUIRE(PQresultStatus(res) == PGRES_TUPLES_OK);
  PQclear(res);
  int64_t t0 = now_ms();
  bool took = false;
  while (!took && now_ms() - t0 < 5000) {
    gp_err e = {0};
    took = gp_lease_tick(b, &sb, &e) == 0 && sb.leader;
    if (!took) usleep(100 * 1000);
  }
  CHECK(took);
  CHECK_EQ_INT(2, sb.epoch);
  CHECK(now_ms() - t0 >= 900); /* not before a's lease expired */
  /* The paused writer's transaction is gone: it cannot commit. */
  res = PQexec(w, "COMMIT");
  CHECK(PQresultStatus(res) != PGRES_COMMAND_OK || PQstatus(w) != CONNECTION_OK);
  PQclear(res);
  PQfinish(w);
  gp_lease_close(a);
  gp_lease_close(b);
}

static void bad_settings_are_refused_naming_the_key(void) {
  gp_lease *l = NULL;
  gp_err e = {0};
  gp_lease_cfg cfg = {.url = "postgresql://127.0.0.1:1/x", .holder = "", .advertise = "http://x"};
  CHECK_EQ_INT(GP_EINVAL, gp_lease_open(&cfg, &l, &e));
  CHECK_EQ_STR("ha.id", e.field);
  cfg.holder = "a";
  cfg.timeout_ms = 300;
  CHECK(gp_lease_open(&cfg, &l, &e) != 0); /* nothing listens there */
  CHECK(l == NULL);
}

/* Two processes with one id (a copied config): the second never takes the lease from the
 * first, which a "restarted holder" could; once the first has refreshed its id after the
 * second opened, the second reports the conflict, naming the first's URL. */
static void a_second_process_with_the_same_id_never_takes_the_lease(void) {
  const char *url = tpg_start();
  gp_lease *a = open_lease(url, "a", 1500);
  gp_lease_state sa, sb;
  REQUIRE(tick(a, &sa) == 0);
  CHECK(sa.leader && sa.claimed && sa.mine);
  gp_lease_cfg cfg = {.url = url, .holder = "a", .advertise = "http://other.example:7070", .ttl_ms = 1500};
  gp_lease *b = NULL;
  gp_err e = {0};
  REQUIRE(gp_lease_open(&cfg, &b, &e) == 0);
  for (int i = 0; i < 8; i++) {
    REQUIRE(tick(b, &sb) == 0);
    CHECK(!sb.leader && !sb.claimed && !sb.mine);
    CHECK_EQ_INT(1, sb.epoch);
    REQUIRE(tick(a, &sa) == 0);
    CHECK(sa.leader);
    CHECK_EQ_INT(1, sa.epoch);
    usleep(100 * 1000);
  }
  CHECK_CONTAINS(sb.conflict, "ha.id 'a' is also the id of another running server");
  CHECK_CONTAINS(sb.conflict, "http://a.example:7070");
  CHECK_EQ_STR("", sa.conflict);
  /* The first stops cleanly: the id and the lease are the second's at once. */
  CHECK_EQ_INT(0, gp_lease_release(a, &e));
  REQUIRE(tick(b, &sb) == 0);
  CHECK(sb.leader && sb.claimed);
  CHECK_EQ_INT(2, sb.epoch);
  CHECK_EQ_STR("", sb.conflict);
  gp_lease_close(a);
  gp_lease_close(b);
}

/* A restarted server (a new process, same id) whose old process died claims its id and
 * takes the lease at once: the old session is gone. Each server lists the others. */
static void a_restarted_process_claims_its_id_at_once(void) {
  const char *url = tpg_start();
  gp_lease *a = open_lease(url, "a", 10000), *b = open_lease(url, "b", 10000);
  gp_lease_state sa, sb;
  REQUIRE(tick(a, &sa) == 0);
  CHECK(sa.leader);
  REQUIRE(tick(b, &sb) == 0);
  REQUIRE(tick(a, &sa) == 0);
  CHECK_EQ_INT(1, sa.n_servers);
  CHECK_EQ_STR("http://b.example:7070", sa.servers[0]);
  CHECK_EQ_INT(1, sb.n_servers);
  CHECK_EQ_STR("http://a.example:7070", sb.servers[0]);
  gp_lease_close(a); /* no release: as a kill -9 leaves it */
  gp_lease *a2 = open_lease(url, "a", 10000);
  int64_t t0 = now_ms();
  bool took = false;
  while (!took && now_ms() < t0 + 3000) { /* the old backend exits a moment after the close */
    REQUIRE(tick(a2, &sa) == 0);
    took = sa.leader;
    if (!took) usleep(50 * 1000);
  }
  CHECK(took);
  CHECK_EQ_INT(2, sa.epoch);
  CHECK_EQ_STR("", sa.conflict);
  gp_lease_close(a2);
  gp_lease_close(b);
}

GP_TESTS(one_holder_until_expiry_and_the_epoch_rises, a_dead_holders_lease_is_taken_at_once, a_release_lets_another_take_at_once,
         a_cut_connection_fails_a_tick_then_reconnects, a_restarted_database_is_rejoined,
         a_frozen_database_fails_the_tick_within_the_timeout, a_paused_writer_does_not_block_the_takeover,
         bad_settings_are_refused_naming_the_key, a_second_process_with_the_same_id_never_takes_the_lease,
         a_restarted_process_claims_its_id_at_once)
