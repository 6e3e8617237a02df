/**
 * Every SQL statement of the MySQL/MariaDB adapter (the migrations' DDL lives in
 * mysql-migrations.ts, the job hot paths' in mysql-sql-jobs.ts). Each one starts with a
 * `-- leasehold …` line saying what it does.
 *
 * Rules kept throughout: time is `UTC_TIMESTAMP(6)` (never NOW(), which follows the session
 * time zone) into DATETIME(6) columns that hold UTC; durations arrive in microseconds as
 * `INTERVAL ? MICROSECOND`; ids are bound as BigInt; `IN (?)` takes a JS array.
 */
import { JOB_COLS, NOW, mysqlJobSql } from './mysql-sql-jobs.js';

export type MysqlSql = ReturnType<typeof mysqlSql>;

export function mysqlSql(prefix: string) {
  const jobs = `${prefix}jobs`;
  const attempts = `${prefix}job_attempts`;
  const effects = `${prefix}effects`;
  const workers = `${prefix}workers`;
  const ledger = `${prefix}migrations`;

  return {
    ...mysqlJobSql(prefix),

    // ---- transactions and clock ----------------------------------------------------------
    begin: `-- leasehold begin: open a transaction
      START TRANSACTION`,
    commit: `-- leasehold commit: commit the open transaction
      COMMIT`,
    rollback: `-- leasehold rollback: roll the open transaction back
      ROLLBACK`,
    readCommitted: `-- leasehold readCommitted: make the next transaction on this connection READ COMMITTED (no gap locks for claims)
      SET TRANSACTION ISOLATION LEVEL READ COMMITTED`,
    now: `-- leasehold now: the database's clock, UTC, microseconds
      SELECT ${NOW} AS now`,

    // ---- migrations ----------------------------------------------------------------------
    version: `-- leasehold version: server version string, for the SKIP LOCKED check
      SELECT VERSION() AS version`,
    features: `-- leasehold features: server version (MariaDB has INSERT … RETURNING) and the auto-increment step
      SELECT VERSION() AS version, @@auto_increment_increment AS step`,
    migrateLock: `-- leasehold migrateLock: take the per-database migration lock (server-wide name, hashed to fit 64 chars); waits up to 30 s
      SELECT GET_LOCK(CONCAT('leasehold_migrate_', SHA1(CONCAT(DATABASE(), ':', ?))), 30) AS got`,
    migrateUnlock: `-- leasehold migrateUnlock: release the migration lock
      SELECT RELEASE_LOCK(CONCAT('leasehold_migrate_', SHA1(CONCAT(DATABASE(), ':', ?)))) AS released`,
    schemaVersion: `-- leasehold schemaVersion: highest applied migration version (NULL: none)
      SELECT MAX(version) AS version FROM ${ledger}`,
    recordMigration: `-- leasehold recordMigration: record one applied migration
      INSERT INTO ${ledger} (version, name, applied_at) VALUES (?, ?, ${NOW})`,

    // ---- jobs: admin and reads -----------------------------------------------------------
    jobForUpdate: `-- leasehold jobForUpdate: one job, locked for an admin change
      SELECT ${JOB_COLS} FROM ${jobs} WHERE id = ? FOR UPDATE`,
    jobById: `-- leasehold jobById: one job
      SELECT ${JOB_COLS} FROM ${jobs} WHERE id = ?`,
    retryJob: `-- leasehold retryJob: admin "retry now": back to queued, due now, attempts reset, lease and finish cleared
      UPDATE ${jobs} SET status = 'queued', run_at = ${NOW}, attempts = 0, locked_by = NULL, lease_token = NULL,
        locked_until = NULL, finished_at = NULL, updated_at = ${NOW}
      WHERE id = ? AND status IN ('queued', 'failed', 'dead', 'cancelled')`,
    cancelJob: `-- leasehold cancelJob: admin cancel: cancelled now, lease cleared, error code CANCELLED
      UPDATE ${jobs} SET status = 'cancelled', finished_at = ${NOW}, locked_by = NULL, lease_token = NULL,
        locked_until = NULL, last_error_code = 'CANCELLED', last_error = ?, updated_at = ${NOW}
      WHERE id = ? AND status IN ('queued', 'failed', 'running')`,
    listJobs: (where: readonly string[]): string =>
      `-- leasehold listJobs: newest jobs first, filtered, keyset-paginated below an id
      SELECT ${JOB_COLS} FROM ${jobs}${where.length ? ` WHERE ${where.join(' AND ')}` : ''} ORDER BY id DESC LIMIT ?`,
    countJobs: `-- leasehold countJobs: jobs per (queue, type, status), and how many of the due ones are due now
      SELECT queue, type, status, COUNT(*) AS n,
        SUM(status IN ('queued', 'failed') AND run_at <= ${NOW}) AS due
      FROM ${jobs} GROUP BY queue, type, status ORDER BY queue, type, status`,
    /**
     * Job id twice. Ended attempts are rows, in the order they were written (one lease at a time,
     * so that is the order they ran); the running one is read from the job row, unless a schema-2
     * claim opened a row for its lease. id is text in both arms ('running:' + job id for the
     * synthesized one, as on PostgreSQL); `seq` keeps the rows in numeric id order.
     */
    listAttempts: `-- leasehold listAttempts: a job's attempt history, first to last, then the attempt running now (held in the job row)
      SELECT CAST(id AS CHAR) AS id, 0 AS running, id AS seq, job_id, attempt, worker_id, lease_token, started_at,
        finished_at, duration_ms, outcome, error_code, error_message, error_stack, retry_delay_ms
      FROM ${attempts} WHERE job_id = ?
      UNION ALL
      SELECT CONCAT('running:', j.id), 1, 0, j.id, j.attempts, j.locked_by, j.lease_token, j.started_at,
        NULL, NULL, 'running', NULL, NULL, NULL, NULL
      FROM ${jobs} j
      WHERE j.id = ? AND j.status = 'running'
        AND NOT EXISTS (SELECT 1 FROM ${attempts} a WHERE a.job_id = j.id AND a.lease_token = j.lease_token)
      ORDER BY running, seq`,
    pruneCandidates: `-- leasehold pruneCandidates: lock finished jobs past retention, at most N
      SELECT id FROM ${jobs} FORCE INDEX (${jobs}_prune)
      WHERE status IN (?) AND finished_at < ${NOW} - INTERVAL ? MICROSECOND ORDER BY finished_at, id LIMIT ? FOR UPDATE`,
    pruneAttempts: `-- leasehold pruneAttempts: delete the attempt history of pruned jobs
      DELETE FROM ${attempts} WHERE job_id IN (?)`,
    pruneJobs: `-- leasehold pruneJobs: delete pruned jobs
      DELETE FROM ${jobs} WHERE id IN (?)`,

    // ---- effects -------------------------------------------------------------------------
    leaseHeld: `-- leasehold leaseHeld: is this lease still running? Share-locks the job so no finish lands until we commit
      SELECT id FROM ${jobs} WHERE id = ? AND lease_token = ? AND status = 'running' LOCK IN SHARE MODE`,
    effectForUpdate: `-- leasehold effectForUpdate: the effect row of a key, locked
      SELECT state, lease_token, result FROM ${effects} WHERE effect_key = ? FOR UPDATE`,
    reserveNewEffect: `-- leasehold reserveNewEffect: insert a never-seen key as pending under a lease just share-locked by leaseHeld (a seen key is a duplicate-key error)
      INSERT INTO ${effects} (effect_key, job_id, lease_token, state, created_at) VALUES (?, ?, ?, 'pending', ${NOW})`,
    takeOverEffect: `-- leasehold takeOverEffect: take over a pending reservation left by another lease
      UPDATE ${effects} e SET e.job_id = ?, e.lease_token = ? WHERE e.effect_key = ? AND e.state = 'pending'
      AND NOT EXISTS (SELECT 1 FROM ${jobs} j WHERE j.id = e.job_id AND j.lease_token = e.lease_token AND j.status = 'running')`,
    leasesHeld: `-- leasehold leasesHeld (reserveEffects): which of these jobs run, under which lease; share-locked in id order, as finishes lock them
      SELECT id, lease_token FROM ${jobs} WHERE id IN (?) AND status = 'running' ORDER BY id LOCK IN SHARE MODE`,
    effectKeysSeen: `-- leasehold effectKeysSeen (reserveEffects): which of these keys the ledger holds already, and the results of those done (a plain read: no gap locks)
      SELECT effect_key, state, IF(state = 'done', result, NULL) AS result FROM ${effects} WHERE effect_key IN (?)`,
    // keys as LONGTEXT: a key too long for the column fails the insert, as the one-key insert
    // does, instead of being cut short by JSON_TABLE (and meeting another key's row)
    reserveNewEffects: `-- leasehold reserveNewEffects: insert never-seen keys as pending under leases just share-locked, in array (key) order
      INSERT INTO ${effects} (effect_key, job_id, lease_token, state, created_at)
      SELECT v.k, v.id, v.t, 'pending', ${NOW}
      FROM JSON_TABLE(?, '$[*]' COLUMNS (n FOR ORDINALITY, k LONGTEXT PATH '$[0]', id BIGINT UNSIGNED PATH '$[1]', t VARCHAR(64) PATH '$[2]')) AS v
      ORDER BY v.n`,
    effectKeyCollation: `-- leasehold effectKeyCollation (completeEffects): the collation the ledger's keys were created with
      SELECT COLLATION_NAME AS c FROM information_schema.COLUMNS
      WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = '${effects}' AND COLUMN_NAME = 'effect_key'`,
    /**
     * One statement for the batch: a multi-table UPDATE costs the optimizer about 0.3 ms, more
     * than its work. Rows in job id order; each key is compared in the column's own collation
     * (`collation`, from effectKeyCollation), so the unique key finds its one row: compared as
     * bytes, the effect was reached through its job, and every effect row of the job was read
     * and locked. Tokens compared as bytes.
     */
    completeEffects: (collation: string): string => `-- leasehold completeEffects: mark these leases' pending reservations done with their results, only while each lease runs its job
      UPDATE JSON_TABLE(?, '$[*]' COLUMNS (n FOR ORDINALITY, k LONGTEXT PATH '$[0]', id BIGINT UNSIGNED PATH '$[1]', t VARCHAR(64) PATH '$[2]', r LONGTEXT PATH '$[3]')) AS v
        STRAIGHT_JOIN ${jobs} j ON j.id = v.id AND CAST(j.lease_token AS BINARY) = CAST(v.t AS BINARY) AND j.status = 'running'
        STRAIGHT_JOIN ${effects} e ON e.effect_key = v.k COLLATE ${collation} AND e.job_id = j.id
          AND CAST(e.lease_token AS BINARY) = CAST(v.t AS BINARY) AND e.state = 'pending'
      SET e.state = 'done', e.result = v.r, e.done_at = ${NOW}`,
    // the job row is read (share-locked) before the effect row is locked, the order every
    // reserve takes them in: the other order let a record, a reserve of the same key and a
    // heartbeat deadlock
    completeEffect: `-- leasehold completeEffect: mark this lease's pending reservation done with its result, only while the lease runs its job
      UPDATE ${jobs} j STRAIGHT_JOIN ${effects} e ON e.effect_key = ? AND e.lease_token = j.lease_token AND e.state = 'pending'
      SET e.state = 'done', e.result = ?, e.done_at = ${NOW}
      WHERE j.id = ? AND j.lease_token = ? AND j.status = 'running'`,
    effectByKey: `-- leasehold getEffect: the effect recorded under this key (the column's collation compares exactly)
      SELECT effect_key, job_id, state, result, created_at, done_at FROM ${effects} WHERE effect_key = ?`,
    listEffects: (byJob: boolean): string =>
      `-- leasehold listEffects: effects, newest first (the contract's order), optionally of one job
      SELECT effect_key, job_id, state, result, created_at, done_at FROM ${effects}${byJob ? ' WHERE job_id = ?' : ''} ORDER BY id DESC LIMIT ?`,
    countEffects: `-- leasehold countEffects: how many effects are recorded
      SELECT COUNT(*) AS n FROM ${effects}`,

    // ---- workers -------------------------------------------------------------------------
    registerWorker: `-- leasehold registerWorker: register (or re-register) a worker; started and seen now
      INSERT INTO ${workers} (id, host, pid, version, queues, types, started_at, heartbeat_at)
      VALUES (?, ?, ?, ?, ?, ?, ${NOW}, ${NOW})
      ON DUPLICATE KEY UPDATE host = VALUES(host), pid = VALUES(pid), version = VALUES(version),
        queues = VALUES(queues), types = VALUES(types), started_at = VALUES(started_at), heartbeat_at = VALUES(heartbeat_at)`,
    heartbeatWorker: `-- leasehold heartbeatWorker: a worker is still alive
      UPDATE ${workers} SET heartbeat_at = ${NOW} WHERE id = ?`,
    removeWorker: `-- leasehold removeWorker: a worker left
      DELETE FROM ${workers} WHERE id = ?`,
    listWorkers: `-- leasehold listWorkers: every registered worker, oldest first
      SELECT id, host, pid, version, queues, types, started_at, heartbeat_at FROM ${workers} ORDER BY started_at, id`,
    pruneWorkers: `-- leasehold pruneWorkers: forget workers silent for longer than this (µs)
      DELETE FROM ${workers} WHERE heartbeat_at < ${NOW} - INTERVAL ? MICROSECOND`,
  };
}
