/**
 * Every SQL statement of the SQLite adapter, one line of comment each. `{p}` is the table
 * prefix. Named parameters (`@now`, …) are bound by sqlite-storage.ts.
 *
 * `@now` is always the process clock (the `clock` option, default Date.now) in epoch
 * milliseconds: SQLite runs in-process, so the database clock IS the process clock. Passing it
 * as a parameter (instead of SQL `unixepoch()`) keeps every timestamp of one operation equal
 * and lets tests inject a clock.
 */

/** The ledger of applied migrations, created on first migrate. */
export const MIGRATIONS_SQL = {
  // create the migrations ledger if this database has none yet
  createLedger: `CREATE TABLE IF NOT EXISTS {p}migrations (
    version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT`,
  // does the ledger table exist? (schemaVersion on an empty file must not create it)
  ledgerExists: `SELECT 1 AS ok FROM sqlite_master WHERE type = 'table' AND name = '{p}migrations'`,
  // highest applied migration version, 0 when none
  maxVersion: `SELECT coalesce(max(version), 0) AS v FROM {p}migrations`,
  // record one applied migration
  record: `INSERT INTO {p}migrations (version, name, applied_at) VALUES (@version, @name, @now)`,
} as const;

export const JOB_SQL = {
  // insert one job; a duplicate idempotency key inserts nothing and returns no row (a safety net:
  // keyed jobs are looked up first, so a duplicate does not even consume an id)
  insert: `INSERT INTO {p}jobs (queue, type, payload, status, priority, run_at, attempts, max_attempts,
      idempotency_key, timeout_ms, max_runtime_ms, created_at, updated_at)
    VALUES (@queue, @type, @payload, 'queued', @priority, @runAt, 0, @maxAttempts,
      @idempotencyKey, @timeoutMs, @maxRuntimeMs, @now, @now)
    ON CONFLICT DO NOTHING
    RETURNING *`,
  // the existing job holding an idempotency key
  byIdempotencyKey: `SELECT * FROM {p}jobs WHERE idempotency_key = ?`,
  // lease up to @limit due jobs in claim order; each gets its own token from the @tokens JSON array
  // (numbered after the LIMIT: a window over every due row would cost O(due) per claim)
  claim: `WITH top AS (
      SELECT id, priority, run_at
      FROM {p}jobs
      WHERE status IN ('queued','failed') AND run_at <= @now
        AND type IN (SELECT value FROM json_each(@types))
        AND (@queues IS NULL OR queue IN (SELECT value FROM json_each(@queues)))
      ORDER BY priority, run_at, id
      LIMIT @limit),
    picked AS (SELECT id, row_number() OVER (ORDER BY priority, run_at, id) - 1 AS rn FROM top)
    UPDATE {p}jobs
    SET status = 'running', locked_by = @workerId,
        lease_token = json_extract(@tokens, '$[' || picked.rn || ']'),
        locked_until = @now + @leaseMs, heartbeat_at = @now, started_at = @now,
        attempts = attempts + 1, updated_at = @now
    FROM picked
    WHERE {p}jobs.id = picked.id
    RETURNING *`,
  // open a 'running' attempt row for every job just claimed (ids as a JSON array)
  openAttempts: `INSERT INTO {p}job_attempts (job_id, attempt, worker_id, lease_token, started_at, outcome)
    SELECT id, attempts, locked_by, lease_token, started_at, 'running'
    FROM {p}jobs WHERE id IN (SELECT value FROM json_each(@ids)) ORDER BY id`,
  // extend one lease that still holds
  heartbeat: `UPDATE {p}jobs SET locked_until = @now + @leaseMs, heartbeat_at = @now, updated_at = @now
    WHERE id = @id AND lease_token = @leaseToken AND status = 'running'`,
  // a job's current status (to report a lost lease)
  status: `SELECT status FROM {p}jobs WHERE id = ?`,
  // fenced finish of one attempt: lands only under the same lease on a running job
  finish: `UPDATE {p}jobs
    SET status = @status,
        run_at = CASE WHEN @runAfterMs IS NULL THEN run_at ELSE @now + @runAfterMs END,
        attempts = attempts - @uncount,
        last_error_code = CASE WHEN @hasError THEN @errorCode ELSE last_error_code END,
        last_error = CASE WHEN @hasError THEN @errorMessage ELSE last_error END,
        locked_by = NULL, lease_token = NULL, locked_until = NULL,
        finished_at = @finishedAt, updated_at = @now
    WHERE id = @id AND lease_token = @leaseToken AND status = 'running'
      AND (@onlyIfExpired = 0 OR locked_until < @now)`,
  // close the attempt row opened by the claim with this (job_id, lease_token)
  closeAttempt: `UPDATE {p}job_attempts
    SET finished_at = @now, duration_ms = max(0, @now - started_at), outcome = @outcome,
        error_code = @errorCode, error_message = @errorMessage, error_stack = @errorStack,
        retry_delay_ms = @retryDelayMs
    WHERE job_id = @id AND lease_token = @leaseToken`,
  // running jobs whose lease has expired, oldest expiry first
  expired: `SELECT id, type, lease_token, locked_by, attempts, max_attempts FROM {p}jobs
    WHERE status = 'running' AND locked_until < @now ORDER BY locked_until, id LIMIT @limit`,
  // one job by id
  get: `SELECT * FROM {p}jobs WHERE id = ?`,
  // counts per (queue, type, status), with how many of the due statuses are due now
  count: `SELECT queue, type, status, count(*) AS count,
      sum(CASE WHEN status IN ('queued','failed') AND run_at <= @now THEN 1 ELSE 0 END) AS due
    FROM {p}jobs GROUP BY queue, type, status ORDER BY queue, type, status`,
  // attempt history of one job, oldest first
  attempts: `SELECT * FROM {p}job_attempts WHERE job_id = ? ORDER BY id`,
  // admin "retry now": back to queued, due now, attempts reset, lease and finish cleared
  retry: `UPDATE {p}jobs
    SET status = 'queued', run_at = @now, attempts = 0, locked_by = NULL, lease_token = NULL,
        locked_until = NULL, finished_at = NULL, updated_at = @now
    WHERE id = @id AND status IN ('queued','failed','dead','cancelled')
    RETURNING *`,
  // admin cancel: queued/failed/running → cancelled, lease cleared
  cancel: `UPDATE {p}jobs
    SET status = 'cancelled', finished_at = @now, locked_by = NULL, lease_token = NULL,
        locked_until = NULL, last_error_code = 'CANCELLED', last_error = @message, updated_at = @now
    WHERE id = @id AND status IN ('queued','failed','running')
    RETURNING *`,
  // close a cancelled job's running attempt row
  cancelAttempt: `UPDATE {p}job_attempts
    SET finished_at = @now, duration_ms = max(0, @now - started_at), outcome = 'cancelled',
        error_code = 'CANCELLED', error_message = @message
    WHERE job_id = @id AND lease_token = @leaseToken AND outcome = 'running'`,
  // ids of finished jobs past retention, oldest first, at most @limit
  pruneIds: `SELECT id FROM {p}jobs
    WHERE finished_at < @cutoff AND status IN (SELECT value FROM json_each(@statuses))
    ORDER BY finished_at, id LIMIT @limit`,
  // delete the attempt rows of pruned jobs
  pruneAttempts: `DELETE FROM {p}job_attempts WHERE job_id IN (SELECT value FROM json_each(@ids))`,
  // delete pruned jobs
  pruneJobs: `DELETE FROM {p}jobs WHERE id IN (SELECT value FROM json_each(@ids))`,
} as const;

/**
 * listJobs: only the filters in use go into the WHERE clause, so SQLite can pick an index
 * (`? IS NULL OR col = ?` would defeat it). One statement per filter combination, cached.
 */
export function listJobsSql(f: { status: boolean; queue: boolean; type: boolean; beforeId: boolean }): string {
  const where = [
    f.status ? 'status = @status' : null,
    f.queue ? 'queue = @queue' : null,
    f.type ? 'type = @type' : null,
    f.beforeId ? 'id < @beforeId' : null,
  ].filter((x) => x !== null);
  // jobs matching the filters, newest first, keyset-paginated by id
  return `SELECT * FROM {p}jobs ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY id DESC LIMIT @limit`;
}

export const EFFECT_SQL = {
  // is this job running under this lease? (fence for the effect ledger)
  leaseHolds: `SELECT 1 AS ok FROM {p}jobs WHERE id = @jobId AND lease_token = @leaseToken AND status = 'running'`,
  // one effect by key
  get: `SELECT * FROM {p}effects WHERE key = ?`,
  // reserve a new effect for this attempt
  insert: `INSERT INTO {p}effects (key, job_id, lease_token, state, created_at)
    VALUES (@key, @jobId, @leaseToken, 'pending', @now)`,
  // take over a pending effect, only if its holder no longer runs under the lease it reserved with
  takeOver: `UPDATE {p}effects SET job_id = @jobId, lease_token = @leaseToken
    WHERE key = @key AND state = 'pending' AND NOT EXISTS (SELECT 1 FROM {p}jobs j
      WHERE j.id = {p}effects.job_id AND j.lease_token = {p}effects.lease_token AND j.status = 'running')`,
  // mark a pending effect reserved under this lease as done, with its result
  complete: `UPDATE {p}effects SET state = 'done', result = @result, done_at = @now
    WHERE key = @key AND lease_token = @leaseToken AND state = 'pending'`,
  // effects of every job, newest first (rowid = insertion order; the ledger is never pruned)
  listAll: `SELECT * FROM {p}effects ORDER BY rowid DESC LIMIT @limit`,
  // effects of one job, newest first
  listByJob: `SELECT * FROM {p}effects WHERE job_id = @jobId ORDER BY rowid DESC LIMIT @limit`,
  // how many effects are recorded
  count: `SELECT count(*) AS n FROM {p}effects`,
} as const;

export const WORKER_SQL = {
  // register (or re-register) a worker; both clocks start now
  upsert: `INSERT INTO {p}workers (id, host, pid, version, queues, types, started_at, heartbeat_at)
    VALUES (@id, @host, @pid, @version, @queues, @types, @now, @now)
    ON CONFLICT (id) DO UPDATE SET host = excluded.host, pid = excluded.pid,
      version = excluded.version, queues = excluded.queues, types = excluded.types,
      started_at = excluded.started_at, heartbeat_at = excluded.heartbeat_at`,
  // a worker says it is alive
  heartbeat: `UPDATE {p}workers SET heartbeat_at = @now WHERE id = @id`,
  // a worker leaves
  remove: `DELETE FROM {p}workers WHERE id = ?`,
  // every registered worker, oldest first
  list: `SELECT * FROM {p}workers ORDER BY started_at, id`,
  // forget workers silent since before @cutoff
  prune: `DELETE FROM {p}workers WHERE heartbeat_at < @cutoff`,
} as const;
