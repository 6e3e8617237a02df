/**
 * SQL for reads, admin operations, retention, the effect ledger's listing, workers and the
 * migrations ledger (the ledger's writes are in postgres-sql-effects.ts). Each statement starts
 * with a one-line `--` header saying what it does. Times come from the database clock; `s` is
 * the quoted schema name.
 */

import { JOB_COLUMNS, NOW, durationSince, jobColumns, ms } from './postgres-sql-jobs.js';


export function adminSql(s: string) {
  return {
    /** $1 id */
    getJob: `-- leasehold getJob: one job by id
SELECT * FROM ${s}.jobs WHERE id = $1::bigint`,

    /** $1 status, $2 queue, $3 type, $4 before id (each null = any), $5 limit */
    listJobs: `-- leasehold listJobs: jobs matching the filters, newest first, below a keyset cursor
SELECT * FROM ${s}.jobs
WHERE ($1::text IS NULL OR status = $1::text) AND ($2::text IS NULL OR queue = $2::text)
  AND ($3::text IS NULL OR type = $3::text) AND ($4::bigint IS NULL OR id < $4::bigint)
ORDER BY id DESC
LIMIT $5::int`,

    countJobs: `-- leasehold countJobs: jobs per (queue, type, status), with how many of the due statuses are due now
SELECT queue, type, status, count(*)::int AS count,
       (count(*) FILTER (WHERE status IN ('queued','failed') AND run_at <= ${NOW}))::int AS due
FROM ${s}.jobs GROUP BY queue, type, status ORDER BY queue, type, status`,

    /** $1 job id */
    listAttempts: `-- leasehold listAttempts: a job's attempt history, oldest first, then the attempt running now (held in the job row)
SELECT id::text AS id, job_id, attempt, worker_id, lease_token, started_at, finished_at, duration_ms, outcome,
       error_code, error_message, error_stack, retry_delay_ms, 0 AS running
FROM ${s}.job_attempts WHERE job_id = $1::bigint
UNION ALL
SELECT 'running:' || j.id, j.id, j.attempts, j.locked_by, j.lease_token, j.started_at, NULL, NULL, 'running',
       NULL, NULL, NULL, NULL, 1
FROM ${s}.jobs j
WHERE j.id = $1::bigint AND j.status = 'running'
  AND NOT EXISTS (SELECT 1 FROM ${s}.job_attempts a WHERE a.job_id = j.id AND a.lease_token = j.lease_token)
ORDER BY running, attempt, id`,

    /** $1 id, $2 notify channel, $3 notify payload */
    retryJob: `-- leasehold retryJob: queued/failed/dead/cancelled -> queued due now with attempts reset; returns the row and whether it applied
WITH upd AS (
  UPDATE ${s}.jobs
  SET status = 'queued', run_at = ${NOW}, attempts = 0, locked_by = NULL, lease_token = NULL,
      locked_until = NULL, finished_at = NULL, updated_at = ${NOW}
  WHERE id = $1::bigint AND status IN ('queued','failed','dead','cancelled')
  RETURNING *
), woke AS (
  SELECT pg_notify($2, $3) FROM (SELECT 1 FROM upd LIMIT 1) AS due
)
SELECT true AS applied, (SELECT count(*) FROM woke) AS notified, upd.* FROM upd
UNION ALL
SELECT false, 0, j.* FROM ${s}.jobs j WHERE j.id = $1::bigint AND NOT EXISTS (SELECT 1 FROM upd)`,

    /** $1 id. Runs first in cancelJob's transaction: waits out a claim or finish in flight. */
    lockJob: `-- leasehold cancelJob (lock): lock the job row and read its current lease token
SELECT lease_token FROM ${s}.jobs WHERE id = $1::bigint FOR UPDATE`,

    /**
     * $1 id, $2 message, $3 the lease token read under the lock. A statement after the lock, so
     * its snapshot sees the attempt row of a claim that committed while we waited.
     */
    cancelJob: `-- leasehold cancelJob: queued/failed/running -> cancelled, lease cleared, a running attempt written as cancelled; returns the row and whether it applied
WITH before AS (
  SELECT id, status, attempts, locked_by, lease_token, started_at FROM ${s}.jobs WHERE id = $1::bigint
), upd AS (
  UPDATE ${s}.jobs
  SET status = 'cancelled', finished_at = ${NOW}, locked_by = NULL, lease_token = NULL,
      locked_until = NULL, last_error_code = 'CANCELLED', last_error = $2::text, updated_at = ${NOW}
  WHERE id = $1::bigint AND status IN ('queued','failed','running')
  RETURNING ${JOB_COLUMNS.join(", ")}
), closed AS (
  INSERT INTO ${s}.job_attempts (job_id, attempt, worker_id, lease_token, started_at, finished_at, duration_ms,
                                 outcome, error_code, error_message)
  SELECT b.id, b.attempts, b.locked_by, b.lease_token, b.started_at, ${NOW}, ${durationSince('b.started_at')},
         'cancelled', 'CANCELLED', $2::text
  FROM before b JOIN upd ON upd.id = b.id
  WHERE b.status = 'running' AND b.lease_token = $3::text
  ON CONFLICT (job_id, lease_token) DO UPDATE
  SET finished_at = EXCLUDED.finished_at, duration_ms = EXCLUDED.duration_ms, outcome = 'cancelled',
      error_code = 'CANCELLED', error_message = EXCLUDED.error_message
  WHERE ${s}.job_attempts.outcome = 'running'
)
SELECT true AS applied, upd.* FROM upd
UNION ALL
SELECT false, ${jobColumns('j')} FROM ${s}.jobs j WHERE j.id = $1::bigint AND NOT EXISTS (SELECT 1 FROM upd)`,

    /** $1 statuses, $2 older than ms, $3 limit; attempts go with their jobs */
    pruneJobs: `-- leasehold pruneJobs: delete up to $3 finished jobs of the listed statuses finished more than $2 ms ago
WITH victims AS (
  SELECT id FROM ${s}.jobs
  WHERE finished_at < ${NOW} - ${ms('$2::float8')} AND status = ANY($1::text[])
  ORDER BY finished_at
  LIMIT $3::int
  FOR UPDATE SKIP LOCKED
), gone AS (
  DELETE FROM ${s}.jobs j USING victims v WHERE j.id = v.id RETURNING j.id
), history AS (
  DELETE FROM ${s}.job_attempts a USING gone g WHERE a.job_id = g.id
)
SELECT count(*)::int AS n FROM gone`,

    /** $1 key */
    effectByKey: `-- leasehold getEffect: the effect recorded under this key (the whole row)
SELECT * FROM ${s}.effects WHERE key = $1::text`,

    /** $1 job id (null = all), $2 limit */
    listEffects: `-- leasehold listEffects: recorded effects, newest first, optionally for one job
SELECT * FROM ${s}.effects WHERE ($1::bigint IS NULL OR job_id = $1::bigint)
ORDER BY created_at DESC, key LIMIT $2::int`,

    countEffects: `-- leasehold countEffects: how many effects the ledger holds
SELECT count(*)::int AS n FROM ${s}.effects`,

    /** $1 id, $2 host, $3 pid, $4 version, $5 queues json (null = all), $6 types json */
    registerWorker: `-- leasehold registerWorker: record (or re-record) a live worker, started and heartbeating now
INSERT INTO ${s}.workers (id, host, pid, version, queues, types, started_at, heartbeat_at)
VALUES ($1::text, $2::text, $3::int, $4::text, $5::jsonb, $6::jsonb, ${NOW}, ${NOW})
ON CONFLICT (id) DO UPDATE SET host = excluded.host, pid = excluded.pid, version = excluded.version,
  queues = excluded.queues, types = excluded.types, started_at = excluded.started_at,
  heartbeat_at = excluded.heartbeat_at`,

    /** $1 id */
    heartbeatWorker: `-- leasehold heartbeatWorker: mark a worker alive now
UPDATE ${s}.workers SET heartbeat_at = ${NOW} WHERE id = $1::text`,

    /** $1 id */
    removeWorker: `-- leasehold removeWorker: forget a worker that stopped
DELETE FROM ${s}.workers WHERE id = $1::text`,

    listWorkers: `-- leasehold listWorkers: every registered worker, oldest first
SELECT * FROM ${s}.workers ORDER BY started_at, id`,

    /** $1 silent for ms */
    pruneWorkers: `-- leasehold pruneWorkers: forget workers silent for longer than $1 ms
WITH gone AS (DELETE FROM ${s}.workers WHERE heartbeat_at < ${NOW} - ${ms('$1::float8')} RETURNING 1)
SELECT count(*)::int AS n FROM gone`,

    now: `-- leasehold now: the database clock
SELECT ${NOW} AS now`,
  };
}

/** The migrations ledger and the statements `migrate()` runs around the migrations. */
export function migrationSql(s: string) {
  return {
    /** $1 lock name */
    lock: `-- leasehold migrate: serialise migrators of this schema until the transaction ends
SELECT pg_advisory_xact_lock(hashtextextended($1::text, 0))`,

    serverVersion: `-- leasehold migrate: the server's version number (e.g. 150004), to refuse servers older than 13
SELECT current_setting('server_version_num')::int AS v`,

    createSchema: `-- leasehold migrate: create the schema if it is missing
CREATE SCHEMA IF NOT EXISTS ${s}`,

    createLedger: `-- leasehold migrate: create the migrations ledger if it is missing
CREATE TABLE IF NOT EXISTS ${s}.migrations (
  version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,

    /** $1 the ledger's qualified name */
    ledgerExists: `-- leasehold schemaVersion: whether the migrations ledger exists yet
SELECT to_regclass($1::text) IS NOT NULL AS present`,

    maxVersion: `-- leasehold migrate: highest applied migration in the ledger
SELECT coalesce(max(version), 0)::int AS version FROM ${s}.migrations`,

    /** $1 version, $2 name */
    record: `-- leasehold migrate: record an applied migration in the ledger
INSERT INTO ${s}.migrations (version, name) VALUES ($1::int, $2::text)`,
  };
}
