/**
 * Every SQL statement of the SQLite adapter (but the schedules' and locks', in
 * sqlite-schedules.ts), each with a one-line `-- leasehold …` header inside its text, like the
 * other dialects. `{p}` is the table prefix. Named parameters (`@now`, …) are bound by the
 * calling module; a positional `?` list gives its order in the header.
 *
 * `@now` is always the process clock (the `clock` option, default Date.now) in epoch
 * milliseconds: SQLite runs in-process, so the database clock IS the process clock. Passing it
 * as a parameter (instead of SQL `unixepoch()`) keeps every timestamp of one operation equal
 * and lets tests inject a clock.
 */

/** The ledger of applied migrations, created on first migrate. */
export const MIGRATIONS_SQL = {
  createLedger: `-- leasehold migrations.createLedger: create the migrations ledger if this database has none yet
    CREATE TABLE IF NOT EXISTS {p}migrations (
    version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT`,
  ledgerExists: `-- leasehold migrations.ledgerExists: does the ledger table exist? (schemaVersion on an empty file must not create it)
    SELECT 1 AS ok FROM sqlite_master WHERE type = 'table' AND name = '{p}migrations'`,
  maxVersion: `-- leasehold migrations.maxVersion: highest applied migration version, 0 when none
    SELECT coalesce(max(version), 0) AS v FROM {p}migrations`,
  record: `-- leasehold migrations.record: record one applied migration
    INSERT INTO {p}migrations (version, name, applied_at) VALUES (@version, @name, @now)`,
} as const;

/**
 * The next job id: above every id in the table and above the floor, which holds the largest id
 * deleted (schema 6: ids are never reused). Read under the write lock every insert holds; an
 * uncorrelated subquery, evaluated once per statement.
 */
export const NEXT_JOB_ID = `(SELECT max(coalesce((SELECT max(id) FROM {p}jobs), 0), floor) + 1 FROM {p}job_id_floor)`;

export const JOB_SQL = {
  insertOne: `-- leasehold jobs.insertOne (insertJobs): one job; a duplicate idempotency key inserts nothing (changes = 0)
    INSERT INTO {p}jobs (id, queue, type, payload, status, priority, run_at, attempts, max_attempts,
      idempotency_key, timeout_ms, max_runtime_ms, created_at, updated_at)
    VALUES (${NEXT_JOB_ID}, ?, ?, ?, 'queued', ?, ?, 0, ?, ?, ?, ?, ?, ?)
    ON CONFLICT DO NOTHING`,
  nextJobId: `-- leasehold jobs.nextJobId (insertJobs): the id a run's first job takes, read in the run's write transaction
    SELECT ${NEXT_JOB_ID} AS id`,
  // The first id is a parameter: a subquery on jobs here would make SQLite copy the SELECT's
  // rows to a temporary table before inserting them (it reads the table it writes), 20-40 %
  // slower. The rows after the first take SQLite's own next rowid, one above the largest: the
  // ids that follow, without a uniqueness probe per row (the caller checks the last one).
  insertRun: `-- leasehold jobs.insertRun (insertJobs): a run of alike jobs without idempotency key, one per payload text of the @payloads JSON array, ids @firstId on in array order
    INSERT INTO {p}jobs (id, queue, type, payload, status, priority, run_at, attempts, max_attempts,
      timeout_ms, max_runtime_ms, created_at, updated_at)
    SELECT CASE WHEN key = 0 THEN @firstId END, @queue, @type, value, 'queued', @priority, @runAt, 0, @maxAttempts, @timeoutMs, @maxRuntimeMs, @now, @now
    FROM json_each(@payloads) ORDER BY key`,
  byIdempotencyKey: `-- leasehold jobs.byIdempotencyKey (insertJobs): the existing job holding an idempotency key
    SELECT * FROM {p}jobs WHERE idempotency_key = ?`,
  heartbeat: `-- leasehold jobs.heartbeat (heartbeat): extend one lease that still holds (? = lockedUntil, now, now, id, leaseToken)
    UPDATE {p}jobs SET locked_until = ?, heartbeat_at = ?, updated_at = ?
    WHERE id = ? AND lease_token = ? AND status = 'running'`,
  status: `-- leasehold jobs.status (heartbeat): a job's current status (to report a lost lease)
    SELECT status FROM {p}jobs WHERE id = ?`,
  // finishJobs: per item, one endAttempt and one finish, inside one transaction. Measured against
  // one UPDATE … FROM json_each for the whole batch: per-item statements are 15-30 % cheaper at
  // batches of 10-100 (SQLite re-parses the JSON item for every ->> it extracts), and an equality
  // on the INTEGER PRIMARY KEY is a rowid lookup whatever ANALYZE has recorded, where the join's
  // order is the planner's guess (after ANALYZE of a near-empty table: a scan of jobs per batch).
  //
  // A claim writes no attempt row (schema 3): the job row holds the running attempt (worker,
  // number, lease, start) until the write that ends it. endAttempt reads those from the job row
  // under the same fence as finish, and runs first because finish clears locked_by (RETURNING
  // gives new values only). Both run in one IMMEDIATE transaction, so the row cannot change in
  // between: the history row is written exactly when finish lands. Measured per item (20,000
  // claimed jobs, batches of 400, median of 7): 8.1 µs for the pair; 8.5 for a SELECT by rowid,
  // the finish, then INSERT … VALUES; 10.3 for that with one INSERT of the batch's rows from
  // json_each; 7.1 for the schema-2 finish + close, whose claim also paid ~3 µs per row to open it.
  endAttempt: `-- leasehold jobs.endAttempt (finishJobs, cancelJob): write the history row of the attempt a lease holds, read from the job row under the finish's fence; a row a schema-2 claim opened is closed in place (? = now, now, outcome, errorCode, errorMessage, errorStack, retryDelayMs, id, leaseToken, onlyIfExpired, now)
    INSERT INTO {p}job_attempts (job_id, attempt, worker_id, lease_token, started_at, finished_at, duration_ms,
      outcome, error_code, error_message, error_stack, retry_delay_ms)
    SELECT id, attempts, locked_by, lease_token, started_at, ?, max(0, ? - started_at), ?, ?, ?, ?, ?
    FROM {p}jobs WHERE id = ? AND lease_token = ? AND status = 'running' AND (? = 0 OR locked_until < ?)
    ON CONFLICT (job_id, lease_token) DO UPDATE
    SET finished_at = excluded.finished_at, duration_ms = max(0, excluded.finished_at - started_at),
        outcome = excluded.outcome, error_code = excluded.error_code, error_message = excluded.error_message,
        error_stack = excluded.error_stack, retry_delay_ms = excluded.retry_delay_ms
    WHERE outcome = 'running'`,
  finish: `-- leasehold jobs.finish (finishJobs): fenced finish of one attempt: lands only under the same lease on a running job (? = status, now, runAfterMs, uncount, hasError, errorCode, hasError, errorMessage, finishedAt, now, id, leaseToken, onlyIfExpired, now)
    UPDATE {p}jobs
    SET status = ?, run_at = coalesce(? + ?, run_at), attempts = attempts - ?,
        last_error_code = CASE WHEN ? THEN ? ELSE last_error_code END,
        last_error = CASE WHEN ? THEN ? ELSE last_error END,
        locked_by = NULL, lease_token = NULL, locked_until = NULL, finished_at = ?, updated_at = ?
    WHERE id = ? AND lease_token = ? AND status = 'running' AND (? = 0 OR locked_until < ?)`,
  expired: `-- leasehold jobs.expired: running jobs whose lease has expired, of @types when not null, oldest expiry first
    SELECT id, type, lease_token, locked_by, attempts, max_attempts FROM {p}jobs
    WHERE status = 'running' AND locked_until < @now AND (@types IS NULL OR type IN (SELECT value FROM json_each(@types)))
    ORDER BY locked_until, id LIMIT @limit`,
  get: `-- leasehold jobs.get: one job by id
    SELECT * FROM {p}jobs WHERE id = ?`,
  count: `-- leasehold jobs.count: counts per (queue, type, status), with how many of the due statuses are due now
    SELECT queue, type, status, count(*) AS count,
      sum(CASE WHEN status IN ('queued','failed') AND run_at <= @now THEN 1 ELSE 0 END) AS due
    FROM {p}jobs GROUP BY queue, type, status ORDER BY queue, type, status`,
  // ended attempts are rows, in the order they were written (one lease at a time, so the order
  // they ran); the running one is read from the job row, unless a schema-2 claim opened a row
  // for its lease. Its id is 'running:' + job id, as on PostgreSQL and MySQL.
  attempts: `-- leasehold jobs.attempts (listAttempts): a job's attempt history, oldest first, then the attempt running now (held in the job row)
    SELECT id, 0 AS running, job_id, attempt, worker_id, lease_token, started_at, finished_at, duration_ms,
      outcome, error_code, error_message, error_stack, retry_delay_ms
    FROM {p}job_attempts WHERE job_id = @id
    UNION ALL
    SELECT 'running:' || j.id, 1, j.id, j.attempts, j.locked_by, j.lease_token, j.started_at, NULL, NULL,
      'running', NULL, NULL, NULL, NULL
    FROM {p}jobs j
    WHERE j.id = @id AND j.status = 'running'
      AND NOT EXISTS (SELECT 1 FROM {p}job_attempts a WHERE a.job_id = j.id AND a.lease_token = j.lease_token)
    ORDER BY running, id`,
  retry: `-- leasehold jobs.retry: admin "retry now": back to queued, due now, attempts reset, lease and finish cleared
    UPDATE {p}jobs
    SET status = 'queued', run_at = @now, attempts = 0, locked_by = NULL, lease_token = NULL,
        locked_until = NULL, finished_at = NULL, updated_at = @now
    WHERE id = @id AND status IN ('queued','failed','dead','cancelled')
    RETURNING *`,
  // a running job's attempt row is written just before, by endAttempt, from the job row as it was
  cancel: `-- leasehold jobs.cancel: admin cancel: queued/failed/running → cancelled, lease cleared
    UPDATE {p}jobs
    SET status = 'cancelled', finished_at = @now, locked_by = NULL, lease_token = NULL,
        locked_until = NULL, last_error_code = 'CANCELLED', last_error = @message, updated_at = @now
    WHERE id = @id AND status IN ('queued','failed','running')
    RETURNING *`,
  pruneIds: `-- leasehold jobs.pruneIds: ids of finished jobs past retention, oldest first, at most @limit
    SELECT id FROM {p}jobs
    WHERE finished_at < @cutoff AND status IN (SELECT value FROM json_each(@statuses))
    ORDER BY finished_at, id LIMIT @limit`,
  pruneAttempts: `-- leasehold jobs.pruneAttempts: delete the attempt rows of pruned jobs
    DELETE FROM {p}job_attempts WHERE job_id IN (SELECT value FROM json_each(@ids))`,
  pruneJobs: `-- leasehold jobs.pruneJobs: delete pruned jobs
    DELETE FROM {p}jobs WHERE id IN (SELECT value FROM json_each(@ids))`,
} as const;

/**
 * claimJobs: one UPDATE … RETURNING leases the batch. Tokens come from SQLite's randomblob()
 * (its ChaCha20 generator, seeded from the OS), so exactly one is made per claimed row. Only the
 * queue filter in use goes into the SQL. RETURNING carries what the caller cannot compute
 * itself (the rest is the claim's own values); its order is unspecified, the caller sorts.
 */
export function claimSql(byQueue: boolean): string {
  return `-- leasehold jobs.claim (claimJobs): lease up to @limit due jobs of @types${byQueue ? ' in @queues' : ''} in claim order, each with a fresh 128-bit token
    UPDATE {p}jobs
    SET status = 'running', locked_by = @workerId, lease_token = lower(hex(randomblob(16))),
        locked_until = @now + @leaseMs, heartbeat_at = @now, started_at = @now,
        attempts = attempts + 1, updated_at = @now
    WHERE id IN (SELECT id FROM {p}jobs
      WHERE status IN ('queued','failed') AND run_at <= @now
        AND type IN (SELECT value FROM json_each(@types))${byQueue ? '\n        AND queue IN (SELECT value FROM json_each(@queues))' : ''}
      ORDER BY priority, run_at, id
      LIMIT @limit)
    RETURNING id, queue, type, payload, priority, run_at, attempts, max_attempts, idempotency_key,
      finished_at, last_error_code, last_error, timeout_ms, max_runtime_ms, created_at,
      schedule_name, slot_at, lease_token`;
}

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
  return `-- leasehold jobs.list: jobs matching the filters, newest first, keyset-paginated by id
    SELECT * FROM {p}jobs ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY id DESC LIMIT @limit`;
}

export const EFFECT_SQL = {
  leaseHolds: `-- leasehold effects.leaseHolds: is this job running under this lease? (fence for the effect ledger)
    SELECT 1 AS ok FROM {p}jobs WHERE id = @jobId AND lease_token = @leaseToken AND status = 'running'`,
  get: `-- leasehold effects.get: one effect by key
    SELECT * FROM {p}effects WHERE key = ?`,
  insert: `-- leasehold effects.insert: reserve a new effect for this attempt
    INSERT INTO {p}effects (key, job_id, lease_token, state, created_at)
    VALUES (@key, @jobId, @leaseToken, 'pending', @now)`,
  takeOver: `-- leasehold effects.takeOver: take over a pending effect, only if its holder no longer runs under the lease it reserved with
    UPDATE {p}effects SET job_id = @jobId, lease_token = @leaseToken
    WHERE key = @key AND state = 'pending' AND NOT EXISTS (SELECT 1 FROM {p}jobs j
      WHERE j.id = {p}effects.job_id AND j.lease_token = {p}effects.lease_token AND j.status = 'running')`,
  complete: `-- leasehold effects.complete: mark a pending effect reserved under this lease as done, with its result
    UPDATE {p}effects SET state = 'done', result = @result, done_at = @now
    WHERE key = @key AND lease_token = @leaseToken AND state = 'pending'`,
  listAll: `-- leasehold effects.listAll: effects of every job, newest first (rowid = insertion order; the ledger is never pruned)
    SELECT * FROM {p}effects ORDER BY rowid DESC LIMIT @limit`,
  listByJob: `-- leasehold effects.listByJob: effects of one job, newest first
    SELECT * FROM {p}effects WHERE job_id = @jobId ORDER BY rowid DESC LIMIT @limit`,
  count: `-- leasehold effects.count: how many effects are recorded
    SELECT count(*) AS n FROM {p}effects`,
} as const;

export const WORKER_SQL = {
  upsert: `-- leasehold workers.upsert: register (or re-register) a worker; both clocks start now
    INSERT INTO {p}workers (id, host, pid, version, queues, types, started_at, heartbeat_at)
    VALUES (@id, @host, @pid, @version, @queues, @types, @now, @now)
    ON CONFLICT (id) DO UPDATE SET host = excluded.host, pid = excluded.pid,
      version = excluded.version, queues = excluded.queues, types = excluded.types,
      started_at = excluded.started_at, heartbeat_at = excluded.heartbeat_at`,
  heartbeat: `-- leasehold workers.heartbeat: a worker says it is alive
    UPDATE {p}workers SET heartbeat_at = @now WHERE id = @id`,
  remove: `-- leasehold workers.remove: a worker leaves
    DELETE FROM {p}workers WHERE id = ?`,
  list: `-- leasehold workers.list: every registered worker, oldest first
    SELECT * FROM {p}workers ORDER BY started_at, id`,
  prune: `-- leasehold workers.prune: forget workers silent since before @cutoff
    DELETE FROM {p}workers WHERE heartbeat_at < @cutoff`,
} as const;
