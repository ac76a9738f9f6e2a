/* SPDX-License-Identifier: Apache-2.0 */
/* The PostgreSQL backend's ledger roll-ups: the tables and the statements of
 * sqlite_rollup.c (which explains them) in PostgreSQL's dialect, as macros so that the
 * schema step that adds the tables (pg_schema.c) builds them with the very text that the
 * close (pg.c) runs on each job's intervals. */
#ifndef GP_STORE_PG_ROLLUP_H
#define GP_STORE_PG_ROLLUP_H

#define GP_STORE_PG_ROLLUP_TABLES                                                            \
  "CREATE TABLE IF NOT EXISTS ledger_day(day bigint NOT NULL, \"user\" text NOT NULL,"     \
  " queue text NOT NULL, model text NOT NULL, capacity text NOT NULL,"                     \
  " gpu_s double precision NOT NULL, used_gpu_s double precision NOT NULL,"                \
  " known_gpu_s double precision NOT NULL, energy_j double precision NOT NULL,"            \
  " energy_known integer NOT NULL, PRIMARY KEY(day, \"user\", queue, model, capacity));"   \
  "CREATE INDEX IF NOT EXISTS ledger_day_user ON ledger_day(\"user\", day);"               \
  "CREATE TABLE IF NOT EXISTS ledger_alloc_day(day bigint NOT NULL, model text NOT NULL,"  \
  " capacity text NOT NULL, state text NOT NULL, gpu_s double precision NOT NULL,"         \
  " PRIMARY KEY(day, model, capacity, state));"                                            \
  "CREATE TABLE IF NOT EXISTS ledger_held_day(day bigint NOT NULL, job_id bigint NOT NULL,"  \
  " model text NOT NULL, capacity text NOT NULL, \"user\" text NOT NULL,"                  \
  " queue text NOT NULL, gpu_s double precision NOT NULL,"                                 \
  " used_gpu_s double precision NOT NULL, known_gpu_s double precision NOT NULL,"          \
  " first_start bigint NOT NULL, longest_s bigint NOT NULL,"                               \
  " PRIMARY KEY(day, job_id, model, capacity));"                                           \
  "CREATE INDEX IF NOT EXISTS ledger_held_day_user ON ledger_held_day(\"user\", day);"

#define GP_STORE_PG_DAY_OF(t) "((" t ") - ((((" t ") % 86400) + 86400) % 86400))"

#define GP_STORE_PG_ROLL_DAYS(SRC)                                                           \
  "WITH RECURSIVE iv(\"user\", queue, model, capacity, share, start, e, u, en) AS (" SRC "),"\
  " d(\"user\", queue, model, capacity, share, start, e, u, en, day) AS ("                 \
  "  SELECT iv.*, " GP_STORE_PG_DAY_OF("start") " FROM iv WHERE e > start"                  \
  "  UNION ALL SELECT \"user\", queue, model, capacity, share, start, e, u, en,"           \
  "  day + 86400 FROM d WHERE day + 86400 < e),"                                          \
  " p AS (SELECT d.*, LEAST(e, day + 86400) - GREATEST(start, day) AS s FROM d)"          \
  " INSERT INTO ledger_day(day, \"user\", queue, model, capacity, gpu_s, used_gpu_s,"     \
  " known_gpu_s, energy_j, energy_known)"                                                 \
  " SELECT day, \"user\", queue, model, capacity, sum(share * s),"                        \
  " sum(CASE WHEN u IS NULL THEN 0 ELSE u * s / (e - start) END),"                        \
  " sum(CASE WHEN u IS NULL THEN 0 ELSE share * s END),"                                  \
  " sum(CASE WHEN en IS NULL THEN 0 ELSE en * s / (e - start) END),"                      \
  " max(CASE WHEN en IS NULL THEN 0 ELSE 1 END)"                                          \
  " FROM p GROUP BY day, \"user\", queue, model, capacity"                                \
  " ON CONFLICT(day, \"user\", queue, model, capacity) DO UPDATE SET"                     \
  " gpu_s = ledger_day.gpu_s + EXCLUDED.gpu_s,"                                           \
  " used_gpu_s = ledger_day.used_gpu_s + EXCLUDED.used_gpu_s,"                            \
  " known_gpu_s = ledger_day.known_gpu_s + EXCLUDED.known_gpu_s,"                         \
  " energy_j = ledger_day.energy_j + EXCLUDED.energy_j,"                                  \
  " energy_known = GREATEST(ledger_day.energy_known, EXCLUDED.energy_known)"

#define GP_STORE_PG_ROLL_ALLOC(SRC)                                                          \
  "WITH RECURSIVE iv(node, share, start, e) AS (" SRC "),"                                 \
  " p(model, capacity, state, share, a, b) AS (SELECT n.model, n.capacity, n.state,"       \
  "  iv.share, GREATEST(iv.start, n.start), LEAST(iv.e, coalesce(n.\"end\", iv.e))"       \
  "  FROM iv JOIN node_ledger n ON n.node = iv.node AND n.start < iv.e"                   \
  "  AND (n.\"end\" IS NULL OR n.\"end\" > iv.start) WHERE iv.e > iv.start),"             \
  " d(model, capacity, state, share, a, b, day) AS ("                                      \
  "  SELECT p.*, " GP_STORE_PG_DAY_OF("a") " FROM p WHERE b > a"                           \
  "  UNION ALL SELECT model, capacity, state, share, a, b, day + 86400"                   \
  "  FROM d WHERE day + 86400 < b)"                                                       \
  " INSERT INTO ledger_alloc_day(day, model, capacity, state, gpu_s)"                     \
  " SELECT day, model, capacity, state,"                                                  \
  " sum(share * (LEAST(b, day + 86400) - GREATEST(a, day)))"                              \
  " FROM d GROUP BY day, model, capacity, state"                                          \
  " ON CONFLICT(day, model, capacity, state) DO UPDATE SET"                               \
  " gpu_s = ledger_alloc_day.gpu_s + EXCLUDED.gpu_s"

#define GP_STORE_PG_ROLL_HELD(SRC)                                                           \
  "WITH RECURSIVE iv(job_id, \"user\", queue, model, capacity, share, start, e, u) AS ("    \
  SRC "),"                                                                                  \
  " d(job_id, \"user\", queue, model, capacity, share, start, e, u, day) AS ("             \
  "  SELECT iv.*, " GP_STORE_PG_DAY_OF("start") " FROM iv WHERE e > start"                  \
  "  UNION ALL SELECT job_id, \"user\", queue, model, capacity, share, start, e, u,"       \
  "  day + 86400 FROM d WHERE day + 86400 < e),"                                          \
  " p AS (SELECT d.*, LEAST(e, day + 86400) - GREATEST(start, day) AS s FROM d)"          \
  " INSERT INTO ledger_held_day(day, job_id, model, capacity, \"user\", queue, gpu_s,"    \
  " used_gpu_s, known_gpu_s, first_start, longest_s)"                                     \
  " SELECT day, job_id, model, capacity, min(\"user\"), min(queue), sum(share * s),"      \
  " sum(CASE WHEN u IS NULL THEN 0 ELSE u * s / (e - start) END),"                        \
  " sum(CASE WHEN u IS NULL THEN 0 ELSE share * s END), min(GREATEST(start, day)),"       \
  " max(e - start) FROM p GROUP BY day, job_id, model, capacity"                          \
  " ON CONFLICT(day, job_id, model, capacity) DO UPDATE SET"                              \
  " gpu_s = ledger_held_day.gpu_s + EXCLUDED.gpu_s,"                                      \
  " used_gpu_s = ledger_held_day.used_gpu_s + EXCLUDED.used_gpu_s,"                       \
  " known_gpu_s = ledger_held_day.known_gpu_s + EXCLUDED.known_gpu_s,"                    \
  " first_start = LEAST(ledger_held_day.first_start, EXCLUDED.first_start),"              \
  " longest_s = GREATEST(ledger_held_day.longest_s, EXCLUDED.longest_s)"

/* A job's open intervals as they close at $2 (the close clamps end to start). */
#define GP_STORE_PG_CLOSING "FROM ledger WHERE job_id = $1 AND \"end\" IS NULL"
#define GP_STORE_PG_ROLL_DAYS_CLOSE                                                          \
  GP_STORE_PG_ROLL_DAYS("SELECT \"user\", queue, model, capacity, share, start,"           \
                        " GREATEST(start, $2::bigint), used_gpu_s, energy_j "               \
                        GP_STORE_PG_CLOSING)
#define GP_STORE_PG_ROLL_HELD_CLOSE                                                          \
  GP_STORE_PG_ROLL_HELD("SELECT job_id, \"user\", queue, model, capacity, share, start,"   \
                        " GREATEST(start, $2::bigint), used_gpu_s " GP_STORE_PG_CLOSING)
#define GP_STORE_PG_ROLL_ALLOC_CLOSE                                                         \
  GP_STORE_PG_ROLL_ALLOC("SELECT node, share, start, GREATEST(start, $2::bigint) "         \
                         GP_STORE_PG_CLOSING)

/* The schema step that adds the roll-ups and builds them from the closed intervals. */
#define GP_STORE_PG_CLOSED "FROM ledger WHERE \"end\" IS NOT NULL"
#define GP_STORE_PG_ROLLUP_STEP                                                              \
  GP_STORE_PG_ROLLUP_TABLES                                                                 \
  GP_STORE_PG_ROLL_DAYS("SELECT \"user\", queue, model, capacity, share, start, \"end\","  \
                        " used_gpu_s, energy_j " GP_STORE_PG_CLOSED) ";"                    \
  GP_STORE_PG_ROLL_ALLOC("SELECT node, share, start, \"end\" " GP_STORE_PG_CLOSED) ";"      \
  GP_STORE_PG_ROLL_HELD("SELECT job_id, \"user\", queue, model, capacity, share, start,"   \
                        " \"end\", used_gpu_s " GP_STORE_PG_CLOSED) ";"

#endif
