/**
 * Every SQL statement of the MySQL/MariaDB adapter (the migrations' DDL lives in
 * mysql-migrations.ts). Each one has a one-line header saying what it does.
 *
 * Rules kept throughout: time is `UTC_TIMESTAMP(6)` (never NOW(), which follows the session
 * time zone) into DATETIME(6) columns that hold UTC; durations arrive in microseconds as
 * `INTERVAL ? MICROSECOND`; ids are bound as BigInt; `IN (?)` takes a JS array.
 */

const NOW = 'UTC_TIMESTAMP(6)';

/**
 * Whole milliseconds since 2000-01-01 of a DATETIME(6): durations are the difference of the two
 * ms-truncated times, so they equal `finishedAt - startedAt` as the Dates read back show them.
 */
const msSinceEpoch2000 = (col: string): string => `(TIMESTAMPDIFF(MICROSECOND, '2000-01-01 00:00:00', ${col}) DIV 1000)`;

/** Column list of a job row, as the row mapper reads it. */
const JOB_COLS = `id, queue, type, payload, status, priority, run_at, attempts, max_attempts, idempotency_key,
  locked_by, lease_token, locked_until, heartbeat_at, started_at, finished_at, last_error_code, last_error,
  timeout_ms, max_runtime_ms, created_at, updated_at, schedule_name, slot_at`;

export type MysqlSql = ReturnType<typeof mysqlSql>;

export function mysqlSql(prefix: string) {
  const jobs = `${prefix}jobs`;
  const attempts = `${prefix}job_attempts`;
  const effects = `${prefix}effects`;
  const workers = `${prefix}workers`;
  const ledger = `${prefix}migrations`;

  return {
    // ---- transactions and clock ----------------------------------------------------------
    /** Open a transaction. */
    begin: 'START TRANSACTION',
    /** Commit the open transaction. */
    commit: 'COMMIT',
    /** Roll the open transaction back. */
    rollback: 'ROLLBACK',
    /** Make the next transaction on this connection READ COMMITTED (no gap locks for claims). */
    readCommitted: 'SET TRANSACTION ISOLATION LEVEL READ COMMITTED',
    /** The database's clock, UTC, microseconds. */
    now: `SELECT ${NOW} AS now`,

    // ---- migrations ----------------------------------------------------------------------
    /** Server version string, for the SKIP LOCKED check. */
    version: 'SELECT VERSION() AS version',
    /** Take the per-database migration lock (server-wide name, hashed to fit 64 chars); waits up to 30 s. */
    migrateLock: `SELECT GET_LOCK(CONCAT('leasehold_migrate_', SHA1(CONCAT(DATABASE(), ':', ?))), 30) AS got`,
    /** Release the migration lock. */
    migrateUnlock: `SELECT RELEASE_LOCK(CONCAT('leasehold_migrate_', SHA1(CONCAT(DATABASE(), ':', ?)))) AS released`,
    /** Highest applied migration version (NULL: none). */
    schemaVersion: `SELECT MAX(version) AS version FROM ${ledger}`,
    /** Record one applied migration. */
    recordMigration: `INSERT INTO ${ledger} (version, name, applied_at) VALUES (?, ?, ${NOW})`,

    // ---- jobs: insert --------------------------------------------------------------------
    /** Insert one queued job; run_at = explicit time, else now + delay (µs). */
    insertJob: `INSERT INTO ${jobs} (queue, type, payload, status, priority, run_at, attempts, max_attempts,
        idempotency_key, timeout_ms, max_runtime_ms, created_at, updated_at)
      VALUES (?, ?, ?, 'queued', ?, COALESCE(CAST(? AS DATETIME(6)), ${NOW} + INTERVAL ? MICROSECOND), 0, ?, ?, ?, ?, ${NOW}, ${NOW})`,
    /** Latest committed job holding an idempotency key (locking read: sees past our snapshot). */
    jobByKeyLocked: `SELECT ${JOB_COLS} FROM ${jobs} WHERE idempotency_key = ? LOCK IN SHARE MODE`,
    /** Jobs by id. */
    jobsByIds: `SELECT ${JOB_COLS} FROM ${jobs} WHERE id IN (?)`,

    // ---- jobs: claim ---------------------------------------------------------------------
    /** Lock up to N due jobs of one due status, in claim order, skipping rows others hold. */
    claimCandidates: (withQueues: boolean): string =>
      `SELECT id, priority, run_at FROM ${jobs} FORCE INDEX (${jobs}_claim)
       WHERE status = ? AND run_at <= ${NOW} AND type IN (?)${withQueues ? ' AND queue IN (?)' : ''}
       ORDER BY priority, run_at, id LIMIT ? FOR UPDATE SKIP LOCKED`,
    /** Lease the locked candidates: each row gets its own token (CASE), a deadline and one more attempt. */
    claimUpdate: (n: number): string =>
      `UPDATE ${jobs} SET status = 'running', locked_by = ?,
         lease_token = CASE id ${'WHEN ? THEN ? '.repeat(n)}END,
         locked_until = ${NOW} + INTERVAL ? MICROSECOND, heartbeat_at = ${NOW}, started_at = ${NOW},
         attempts = attempts + 1, updated_at = ${NOW}
       WHERE id IN (?)`,
    /** Open one 'running' attempt row per just-claimed job, copied from the job row. */
    openAttempts: `INSERT INTO ${attempts} (job_id, attempt, worker_id, lease_token, started_at, outcome)
      SELECT id, attempts, locked_by, lease_token, started_at, 'running' FROM ${jobs} WHERE id IN (?)`,
    /** The claimed rows, in claim order. */
    claimedRows: `SELECT ${JOB_COLS} FROM ${jobs} WHERE id IN (?) ORDER BY priority, run_at, id`,

    // ---- jobs: leases --------------------------------------------------------------------
    /** Extend the leases still held (id + token + running). */
    heartbeat: `UPDATE ${jobs} SET locked_until = ${NOW} + INTERVAL ? MICROSECOND, heartbeat_at = ${NOW}, updated_at = ${NOW}
      WHERE status = 'running' AND (id, lease_token) IN (?)`,
    /** Current status and token of some jobs, to report lost leases. */
    leaseState: `SELECT id, status, lease_token FROM ${jobs} WHERE id IN (?)`,
    /** One fenced finish; `sets` are the optional assignments built by the caller. */
    finishJob: (sets: readonly string[], onlyIfExpired: boolean): string =>
      `UPDATE ${jobs} SET status = ?, locked_by = NULL, lease_token = NULL, locked_until = NULL,
         finished_at = IF(? , ${NOW}, NULL), updated_at = ${NOW}${sets.map((s) => `, ${s}`).join('')}
       WHERE id = ? AND lease_token = ? AND status = 'running'${onlyIfExpired ? ` AND locked_until < ${NOW}` : ''}`,
    /** finishJob assignment: run_at = now + delay (µs). */
    setRunAfter: `run_at = ${NOW} + INTERVAL ? MICROSECOND`,
    /** finishJob assignment: give the claimed attempt back. */
    setUncount: 'attempts = GREATEST(attempts - 1, 0)',
    /** finishJob assignment: record the error. */
    setError: 'last_error_code = ?, last_error = ?',
    /** Close the attempt row of a lease: when, how long, how it ended. */
    closeAttempt: `UPDATE ${attempts} SET finished_at = ${NOW},
        duration_ms = ${msSinceEpoch2000(NOW)} - ${msSinceEpoch2000('started_at')},
        outcome = ?, error_code = ?, error_message = ?, error_stack = ?, retry_delay_ms = ?
      WHERE job_id = ? AND lease_token = ? AND outcome = 'running'`,
    /** Running jobs whose lease has expired, oldest deadline first. */
    expiredLeases: `SELECT id, type, lease_token, locked_by, attempts, max_attempts FROM ${jobs} FORCE INDEX (${jobs}_sweep)
      WHERE status = 'running' AND locked_until < ${NOW} ORDER BY locked_until, id LIMIT ?`,

    // ---- jobs: admin and reads -----------------------------------------------------------
    /** One job, locked for an admin change. */
    jobForUpdate: `SELECT ${JOB_COLS} FROM ${jobs} WHERE id = ? FOR UPDATE`,
    /** One job. */
    jobById: `SELECT ${JOB_COLS} FROM ${jobs} WHERE id = ?`,
    /** Admin "retry now": back to queued, due now, attempts reset, lease and finish cleared. */
    retryJob: `UPDATE ${jobs} SET status = 'queued', run_at = ${NOW}, attempts = 0, locked_by = NULL, lease_token = NULL,
        locked_until = NULL, finished_at = NULL, updated_at = ${NOW}
      WHERE id = ? AND status IN ('queued', 'failed', 'dead', 'cancelled')`,
    /** Admin cancel: cancelled now, lease cleared, error code CANCELLED. */
    cancelJob: `UPDATE ${jobs} SET status = 'cancelled', finished_at = ${NOW}, locked_by = NULL, lease_token = NULL,
        locked_until = NULL, last_error_code = 'CANCELLED', last_error = ?, updated_at = ${NOW}
      WHERE id = ? AND status IN ('queued', 'failed', 'running')`,
    /** Newest jobs first, filtered, keyset-paginated below an id. */
    listJobs: (where: readonly string[]): string =>
      `SELECT ${JOB_COLS} FROM ${jobs}${where.length ? ` WHERE ${where.join(' AND ')}` : ''} ORDER BY id DESC LIMIT ?`,
    /** Jobs per (queue, type, status), and how many of the due ones are due now. */
    countJobs: `SELECT queue, type, status, COUNT(*) AS n,
        SUM(status IN ('queued', 'failed') AND run_at <= ${NOW}) AS due
      FROM ${jobs} GROUP BY queue, type, status ORDER BY queue, type, status`,
    /** A job's attempts, first to last. */
    listAttempts: `SELECT id, job_id, attempt, worker_id, lease_token, started_at, finished_at, duration_ms, outcome,
        error_code, error_message, error_stack, retry_delay_ms
      FROM ${attempts} WHERE job_id = ? ORDER BY id`,
    /** Lock finished jobs past retention, at most N. */
    pruneCandidates: `SELECT id FROM ${jobs} FORCE INDEX (${jobs}_prune)
      WHERE status IN (?) AND finished_at < ${NOW} - INTERVAL ? MICROSECOND ORDER BY finished_at, id LIMIT ? FOR UPDATE`,
    /** Delete the attempt history of pruned jobs. */
    pruneAttempts: `DELETE FROM ${attempts} WHERE job_id IN (?)`,
    /** Delete pruned jobs. */
    pruneJobs: `DELETE FROM ${jobs} WHERE id IN (?)`,

    // ---- effects -------------------------------------------------------------------------
    /** Is this lease still running? Share-locks the job so no finish lands until we commit. */
    leaseHeld: `SELECT id FROM ${jobs} WHERE id = ? AND lease_token = ? AND status = 'running' LOCK IN SHARE MODE`,
    /** The effect row of a key, locked. */
    effectForUpdate: `SELECT state, lease_token, result FROM ${effects} WHERE effect_key = ? FOR UPDATE`,
    /** Reserve a never-seen key for this lease. */
    insertEffect: `INSERT INTO ${effects} (effect_key, job_id, lease_token, state, created_at) VALUES (?, ?, ?, 'pending', ${NOW})`,
    /** Take over a pending reservation left by another lease. */
    takeOverEffect: `UPDATE ${effects} e SET e.job_id = ?, e.lease_token = ? WHERE e.effect_key = ? AND e.state = 'pending'
      AND NOT EXISTS (SELECT 1 FROM ${jobs} j WHERE j.id = e.job_id AND j.lease_token = e.lease_token AND j.status = 'running')`,
    /** Mark a reservation of this lease done, with its result. */
    completeEffect: `UPDATE ${effects} SET state = 'done', result = ?, done_at = ${NOW}
      WHERE effect_key = ? AND lease_token = ? AND state = 'pending'`,
    /** Effects, oldest first, optionally of one job. */
    listEffects: (byJob: boolean): string =>
      `SELECT effect_key, job_id, state, result, created_at, done_at FROM ${effects}${byJob ? ' WHERE job_id = ?' : ''} ORDER BY id LIMIT ?`,
    /** How many effects are recorded. */
    countEffects: `SELECT COUNT(*) AS n FROM ${effects}`,

    // ---- workers -------------------------------------------------------------------------
    /** Register (or re-register) a worker; started and seen now. */
    registerWorker: `INSERT INTO ${workers} (id, host, pid, version, queues, types, started_at, heartbeat_at)
      VALUES (?, ?, ?, ?, ?, ?, ${NOW}, ${NOW})
      ON DUPLICATE KEY UPDATE host = VALUES(host), pid = VALUES(pid), version = VALUES(version),
        queues = VALUES(queues), types = VALUES(types), started_at = VALUES(started_at), heartbeat_at = VALUES(heartbeat_at)`,
    /** A worker is still alive. */
    heartbeatWorker: `UPDATE ${workers} SET heartbeat_at = ${NOW} WHERE id = ?`,
    /** A worker left. */
    removeWorker: `DELETE FROM ${workers} WHERE id = ?`,
    /** Every registered worker, oldest first. */
    listWorkers: `SELECT id, host, pid, version, queues, types, started_at, heartbeat_at FROM ${workers} ORDER BY started_at, id`,
    /** Forget workers silent for longer than this (µs). */
    pruneWorkers: `DELETE FROM ${workers} WHERE heartbeat_at < ${NOW} - INTERVAL ? MICROSECOND`,
  };
}
