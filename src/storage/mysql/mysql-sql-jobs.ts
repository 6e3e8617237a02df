/**
 * The SQL of the job hot paths: insert, claim, heartbeat and fenced finish. Each statement
 * starts with a `-- leasehold …` line saying what it does (it shows in the processlist and
 * the slow log).
 *
 * Batches are set-based. Rows that get the same values (a batch of successes) are one
 * single-table UPDATE over `id IN (…)`. Where each row gets its own values (claim tokens,
 * finishes ending in different ways) they travel as ONE JSON array parameter that JSON_TABLE
 * (MariaDB 10.6+, MySQL 8.0.4+) turns into a table joined by id: the statement text does not
 * grow a CASE branch or a UNION arm per row. Such a join is the first table of a STRAIGHT_JOIN,
 * so each of its rows finds its job by primary key whatever the statistics say (left alone, the
 * optimizer may scan the jobs table), and stands in the UPDATE's table list itself, not in a
 * derived table, which MariaDB would materialise (on disk, for the TEXT columns). Lease tokens
 * from JSON_TABLE are compared as bytes: its columns' collation differs from the tables' binary
 * one, and tokens are ASCII, so byte equality is the exact match the fence needs.
 *
 * A claim writes no attempt row: the job row holds the running attempt (worker, number, start,
 * lease) until the finish that ends it inserts its history row (insertAttempts).
 */

/** The database's clock, UTC, microseconds; constant within one statement. */
export const NOW = 'UTC_TIMESTAMP(6)';

/**
 * Whole milliseconds since 2000-01-01 of a DATETIME(6): durations are the difference of the two
 * ms-truncated times, so they equal `finishedAt - startedAt` as the Dates read back show them.
 */
export const msSinceEpoch2000 = (col: string): string => `(TIMESTAMPDIFF(MICROSECOND, '2000-01-01 00:00:00', ${col}) DIV 1000)`;

/** Column list of a job row, as the row mapper reads it. */
export const JOB_COLS = `id, queue, type, payload, status, priority, run_at, attempts, max_attempts, idempotency_key,
  locked_by, lease_token, locked_until, heartbeat_at, started_at, finished_at, last_error_code, last_error,
  timeout_ms, max_runtime_ms, created_at, updated_at, schedule_name, slot_at`;

/**
 * What a claim reads of each candidate: what the claimed job is made of, minus what the claim
 * itself sets (status, worker, lease, the lease times, updated_at). Fewer columns, fewer values
 * for the driver to parse per candidate.
 */
export const CLAIM_COLS = `id, queue, type, payload, priority, run_at, attempts, max_attempts, idempotency_key,
  finished_at, last_error_code, last_error, timeout_ms, max_runtime_ms, created_at, schedule_name, slot_at`;

/** Placeholders of one inserted row, in `insertJobs` column order; run_at = explicit time, else now + delay (µs). */
const INSERT_ROW = `(?, ?, ?, 'queued', ?, COALESCE(CAST(? AS DATETIME(6)), ${NOW} + INTERVAL ? MICROSECOND), 0, ?, ?, ?, ?, ${NOW}, ${NOW})`;

/** Finishes ending in different ways, as a table: one JSON object per item (jsonBatch in mysql-finish.ts); absent keys read as NULL. */
const FINISH_ITEMS = `JSON_TABLE(?, '$[*]' COLUMNS (
    id BIGINT UNSIGNED PATH '$.i', token VARCHAR(64) PATH '$.t', status VARCHAR(16) PATH '$.s', terminal INT PATH '$.f',
    expired_only INT PATH '$.x', run_after BIGINT PATH '$.r', uncount INT PATH '$.u', has_error INT PATH '$.e',
    error_code TEXT PATH '$.ec', error_message TEXT PATH '$.em')) AS v`;

/**
 * One attempt row of `insertAttempts`: job_id, attempt, worker, lease token, started_at (the
 * lock read's text, exact to the µs), finished_at (the finish's now, read under the row lock, as
 * text) and the duration in whole ms between the two ms-truncated times (so it equals
 * `finishedAt - startedAt` as the Dates read back show them), then outcome, error code,
 * message, stack, retry delay. All given: the same duration as an expression over the row's
 * columns cost the server about a quarter of the insert (31 against 23 µs per row, 250-row
 * batches on MariaDB 10.11).
 */
const ATTEMPT_ROW = '(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)';

/*
 * Row constructors `(id, lease_token) IN ((…), …)` come with a plain `id IN (…)`: on its own the
 * row IN is often planned as a scan of the whole table (small tables especially), and an
 * UPDATE that scans locks every row it reads, so concurrent finishes deadlock. The plain list
 * makes it a primary-key (or (job_id, lease_token) index) range.
 */

/** The fence every finish lands under: same lease, still running (and, for the sweeper, expired). */
const FINISH_FENCE = `CAST(j.lease_token AS BINARY) = CAST(v.token AS BINARY) AND j.status = 'running'
    AND (v.expired_only = 0 OR j.locked_until < ${NOW})`;

export function mysqlJobSql(prefix: string) {
  const jobs = `${prefix}jobs`;
  const attempts = `${prefix}job_attempts`;

  return {
    // ---- insert ----------------------------------------------------------------------------
    /** MySQL: n queued jobs in one statement (a "simple insert": consecutive ids). */
    insertJobs: (n: number): string =>
      `-- leasehold insertJobs: insert ${n} queued job(s)
      INSERT INTO ${jobs} (queue, type, payload, status, priority, run_at, attempts, max_attempts,
        idempotency_key, timeout_ms, max_runtime_ms, created_at, updated_at)
      VALUES ${Array<string>(n).fill(INSERT_ROW).join(', ')}`,
    /**
     * MariaDB: one queued job as a one-row VALUES … RETURNING (as insertJobsJson). For a single
     * job the JSON_TABLE form costs more than it saves: 2,116 against 2,635 one-job commits/s
     * side by side on one connection (eighth round, docs/performance.md).
     */
    insertOneJob: `-- leasehold insertJobs: insert one queued job
      INSERT INTO ${jobs} (queue, type, payload, status, priority, run_at, attempts, max_attempts,
        idempotency_key, timeout_ms, max_runtime_ms, created_at, updated_at)
      VALUES ${INSERT_ROW}
      RETURNING id, run_at, created_at`,
    /**
     * MariaDB: queued jobs from a JSON array of [queue, type, payload text, priority, runAt|null,
     * delay µs, max attempts, key|null, timeout, max runtime], inserted in array order; RETURNING
     * the values the database chose (every other column is what the row was given; created_at =
     * updated_at). The server reads one JSON string faster than the same rows as SQL VALUES, and
     * the client sends it without escaping 10 values per row. Text columns are wide here so that a too-long value fails on the
     * table's column, as a VALUES insert would, instead of being cut short by JSON_TABLE.
     */
    insertJobsJson: `-- leasehold insertJobs: insert queued jobs from a JSON array, in its order
      INSERT INTO ${jobs} (queue, type, payload, status, priority, run_at, attempts, max_attempts,
        idempotency_key, timeout_ms, max_runtime_ms, created_at, updated_at)
      SELECT q, t, p, 'queued', pr, COALESCE(ra, ${NOW} + INTERVAL rd MICROSECOND), 0, ma, k, tm, mr, ${NOW}, ${NOW}
      FROM JSON_TABLE(?, '$[*]' COLUMNS (n FOR ORDINALITY, q TEXT PATH '$[0]', t TEXT PATH '$[1]', p LONGTEXT PATH '$[2]',
        pr INT PATH '$[3]', ra DATETIME(6) PATH '$[4]', rd BIGINT PATH '$[5]', ma INT PATH '$[6]', k TEXT PATH '$[7]',
        tm BIGINT PATH '$[8]', mr BIGINT PATH '$[9]')) AS v
      ORDER BY n
      RETURNING id, run_at, created_at`,
    /**
     * MariaDB: a run of jobs alike in everything but the payload (the usual bulk enqueue), the
     * shared values once — queue, type, priority, runAt|null, delay µs, max attempts, timeout,
     * max runtime — and the payload texts as one JSON array of strings, inserted in array order;
     * RETURNING as insertJobsJson. A one-column JSON_TABLE costs the server about a third less per
     * row than the ten-column one (12–15 against 19–21 ms per 1,000 rows here).
     */
    insertRunJson: `-- leasehold insertJobs: insert a run of alike queued jobs (shared values once, payloads from a JSON array, in its order)
      INSERT INTO ${jobs} (queue, type, payload, status, priority, run_at, attempts, max_attempts,
        idempotency_key, timeout_ms, max_runtime_ms, created_at, updated_at)
      SELECT ?, ?, p, 'queued', ?, COALESCE(CAST(? AS DATETIME(6)), ${NOW} + INTERVAL ? MICROSECOND), 0, ?, NULL, ?, ?, ${NOW}, ${NOW}
      FROM JSON_TABLE(?, '$[*]' COLUMNS (n FOR ORDINALITY, p LONGTEXT PATH '$')) AS v
      ORDER BY n
      RETURNING id, run_at, created_at`,
    /** Jobs holding some idempotency keys (locking read: sees rows committed after our snapshot). */
    jobsByKeysLocked: `-- leasehold insertJobs: the jobs already holding these idempotency keys
      SELECT ${JOB_COLS} FROM ${jobs} WHERE idempotency_key IN (?) LOCK IN SHARE MODE`,
    /** Jobs by id (MySQL: the rows a multi-row INSERT just wrote). */
    jobsByIds: `-- leasehold insertJobs: read back the rows just inserted
      SELECT ${JOB_COLS} FROM ${jobs} WHERE id IN (?)`,

    // ---- claim -----------------------------------------------------------------------------
    /**
     * Lock up to N due jobs per due status, each scan index-ordered and skipping rows others hold
     * (an `IN` over both statuses would sort every due row and lock them all, starving other
     * claimers); both scans in one statement, so they share one now, returned with the rows.
     */
    claimCandidates: (withQueues: boolean): string => {
      const scan = (status: string): string =>
        `(SELECT ${CLAIM_COLS}, ${NOW} AS db_now FROM ${jobs} FORCE INDEX (${jobs}_claim)
        WHERE status = '${status}' AND run_at <= ${NOW} AND type IN (?)${withQueues ? ' AND queue IN (?)' : ''}
        ORDER BY priority, run_at, id LIMIT ? FOR UPDATE SKIP LOCKED)`;
      return `-- leasehold claimJobs: lock up to N due queued and N due failed jobs in claim order, skipping locked rows
      ${scan('queued')} UNION ALL ${scan('failed')}`;
    },
    /** Lease the locked candidates: per-row token from the JSON [[id, token], …], the claim's now, one more attempt. */
    claimUpdate: `-- leasehold claimJobs: lease the locked rows (own token each, deadline, one more attempt)
      UPDATE JSON_TABLE(?, '$[*]' COLUMNS (id BIGINT UNSIGNED PATH '$[0]', token VARCHAR(64) PATH '$[1]')) AS v
        STRAIGHT_JOIN ${jobs} j ON j.id = v.id
      SET j.status = 'running', j.locked_by = ?, j.lease_token = v.token,
        j.locked_until = CAST(? AS DATETIME(6)) + INTERVAL ? MICROSECOND, j.heartbeat_at = CAST(? AS DATETIME(6)),
        j.started_at = CAST(? AS DATETIME(6)), j.attempts = j.attempts + 1, j.updated_at = CAST(? AS DATETIME(6))`,

    // ---- leases ----------------------------------------------------------------------------
    /** Extend the leases still held (id + token + running). */
    heartbeat: `-- leasehold heartbeat: extend the leases still held (id + token + running)
      UPDATE ${jobs} SET locked_until = ${NOW} + INTERVAL ? MICROSECOND, heartbeat_at = ${NOW}, updated_at = ${NOW}
      WHERE id IN (?) AND (id, lease_token) IN (?) AND status = 'running'`,
    /** Current status and token of some jobs, to report lost leases. */
    leaseState: `-- leasehold heartbeat: status and token of jobs whose lease may be lost
      SELECT id, status, lease_token FROM ${jobs} WHERE id IN (?)`,
    /** Running jobs whose lease has expired (of some types, or of all), oldest deadline first. */
    expiredLeases: (byType: boolean): string => `-- leasehold findExpiredLeases: running jobs whose lease expired${byType ? ' of these types' : ''}, oldest deadline first
      SELECT id, type, lease_token, locked_by, attempts, max_attempts FROM ${jobs} FORCE INDEX (${jobs}_sweep)
      WHERE status = 'running' AND locked_until < ${NOW}${byType ? ' AND type IN (?)' : ''} ORDER BY locked_until, id LIMIT ?`,

    // ---- finish ----------------------------------------------------------------------------
    /** Fenced finish of jobs that all end the same way: one set of values, many (id, lease_token). */
    finishGroup: `-- leasehold finishJobs: fenced finish of jobs ending the same way (id + lease_token + running), at the finish's now
      UPDATE ${jobs} SET status = ?, locked_by = NULL, lease_token = NULL, locked_until = NULL,
        finished_at = IF(? = 1, CAST(? AS DATETIME(6)), NULL), updated_at = CAST(? AS DATETIME(6)),
        run_at = COALESCE(CAST(? AS DATETIME(6)) + INTERVAL ? MICROSECOND, run_at),
        attempts = IF(? = 1, GREATEST(attempts - 1, 0), attempts),
        last_error_code = IF(? = 1, ?, last_error_code), last_error = IF(? = 1, ?, last_error)
      WHERE id IN (?) AND (id, lease_token) IN (?) AND status = 'running' AND (? = 0 OR locked_until < ${NOW})`,
    /**
     * Lock a finish batch's jobs in id order (no deadlock between batches) and read what the fence
     * needs, and what the attempt row of each lease that lands is made of (the job row holds the
     * running attempt: worker, number, start); `db_now` is the finish's time, written as the
     * job's and the attempt's finished_at.
     */
    finishLock: `-- leasehold finishJobs: lock the batch's jobs in id order and read their lease and running attempt
      SELECT id, lease_token, status, locked_until < ${NOW} AS expired, locked_by, attempts, started_at, ${NOW} AS db_now
      FROM ${jobs} WHERE id IN (?) ORDER BY id FOR UPDATE`,
    /** Fenced finish of every item in the JSON batch, each its own way: status, run_at, attempts, error, lease cleared. */
    finishJobs: `-- leasehold finishJobs: fenced finish of jobs ending in different ways (id + lease_token + running), at the finish's now
      UPDATE ${FINISH_ITEMS} STRAIGHT_JOIN ${jobs} j ON j.id = v.id
      SET j.status = v.status, j.locked_by = NULL, j.lease_token = NULL, j.locked_until = NULL,
        j.finished_at = IF(v.terminal = 1, CAST(? AS DATETIME(6)), NULL), j.updated_at = CAST(? AS DATETIME(6)),
        j.run_at = IF(v.run_after IS NULL, j.run_at, CAST(? AS DATETIME(6)) + INTERVAL v.run_after MICROSECOND),
        j.attempts = IF(v.uncount = 1, GREATEST(j.attempts - 1, 0), j.attempts),
        j.last_error_code = IF(v.has_error = 1, v.error_code, j.last_error_code),
        j.last_error = IF(v.has_error = 1, v.error_message, j.last_error)
      WHERE ${FINISH_FENCE}`,
    /**
     * The history rows of n ended attempts (ATTEMPT_ROW each), written once, as the attempt ends:
     * by a finish (also rescue and hand-back) for its landed leases, by an admin cancel. A
     * "simple insert" (its row count known): InnoDB hands out the ids under a mutex, where an
     * INSERT … SELECT would hold the table's AUTO-INC lock to the statement's end (lock mode 1,
     * MariaDB's default). A row a schema-2 claim opened for the same lease (outcome 'running')
     * is closed in place instead, its duration from its own started_at.
     */
    insertAttempts: (n: number): string =>
      `-- leasehold insertAttempts: write the history rows of ${n} ended attempt(s), closing in place any row a schema-2 claim opened
      INSERT INTO ${attempts} (job_id, attempt, worker_id, lease_token, started_at, finished_at, duration_ms,
        outcome, error_code, error_message, error_stack, retry_delay_ms)
      VALUES ${Array<string>(n).fill(ATTEMPT_ROW).join(', ')}
      ON DUPLICATE KEY UPDATE finished_at = VALUES(finished_at),
        duration_ms = ${msSinceEpoch2000('VALUES(finished_at)')} - ${msSinceEpoch2000('started_at')}, outcome = VALUES(outcome),
        error_code = VALUES(error_code), error_message = VALUES(error_message), error_stack = VALUES(error_stack),
        retry_delay_ms = VALUES(retry_delay_ms)`,
  };
}
