/**
 * An operator's change to one job on SQLite — retry, cancel — the same for jobs.retry,
 * jobs.cancel and every job of a bulk batch; and the deletion of jobs with their history. Each runs inside the caller's IMMEDIATE write
 * transaction: the job read first is the job the guarded UPDATE lands on, and the event
 * (events.ts) is written only when it landed.
 */
import type { JobRow } from '../../core/storage.js';
import { ATTEMPT_SQL } from './attempts.js';
import type { SqliteDb } from './db.js';
import { EVENT_SQL, type Recording, recordEvent } from './events.js';
import { toJobRow } from './sql.js';
import type { SqlJob } from './sql.js';
import { RETRY_GUARD } from '../operator-guards.js';
import { BatchTally, FORGET_EDGES, settleChildren } from './workflows.js';

export type AdminResult = { job: JobRow | null; applied: boolean };

const CANCEL_MESSAGE = 'cancelled by an operator';

export const OPERATOR_SQL = {
  get: `-- leasehold operator.get: the job an operator's change is about, as it is before the change
    SELECT * FROM {p}jobs WHERE id = ?`,
  // a unique key another job took meanwhile stays with that job: this one comes back without it;
  // never a succeeded job, whose row may hold its last attempt (attempts.ts)
  retry: `-- leasehold jobs.retry: admin "retry now": back to queued, due now, attempts reset, lease and finish cleared
    UPDATE {p}jobs
    SET status = 'queued', run_at = @now, attempts = 0, locked_by = NULL, lease_token = NULL,
        locked_until = NULL, finished_at = NULL, updated_at = @now,
        unique_key = CASE WHEN EXISTS (SELECT 1 FROM {p}jobs h WHERE h.unique_key = {p}jobs.unique_key
          AND h.status IN ('queued','failed','running') AND h.id <> {p}jobs.id) THEN NULL ELSE unique_key END
    WHERE id = @id AND status IN ('queued','failed','dead','cancelled') AND ${RETRY_GUARD}
    RETURNING *`,
  cancel: `-- leasehold jobs.cancel: admin cancel: queued/failed/running/waiting → cancelled, lease cleared
    UPDATE {p}jobs
    SET status = 'cancelled', finished_at = @now, locked_by = NULL, lease_token = NULL,
        locked_until = NULL, last_error_code = 'CANCELLED', last_error = @message, updated_at = @now
    WHERE id = @id AND status IN ('queued','failed','running','waiting')
    RETURNING *`,
  deleteAttempts: `-- leasehold operator.deleteAttempts: delete the attempt rows of the jobs deleteJobs will delete
    DELETE FROM {p}job_attempts WHERE job_id IN (SELECT id FROM {p}jobs WHERE id IN (SELECT value FROM json_each(@ids)) AND status <> 'running')`,
  deleteJobs: `-- leasehold operator.deleteJobs: delete these jobs (never a running one)
    DELETE FROM {p}jobs WHERE id IN (SELECT value FROM json_each(@ids)) AND status <> 'running'`,
} as const;

/**
 * Delete jobs that are not running, with their attempts and events (the effect ledger stays);
 * returns how many. For ids read in the same write transaction (pruning, a bulk delete).
 */
export function deleteJobs(db: SqliteDb, ids: readonly number[]): number {
  if (ids.length === 0) return 0;
  const json = JSON.stringify(ids);
  db.stmt(OPERATOR_SQL.deleteAttempts).run({ ids: json });
  db.stmt(EVENT_SQL.forget).run({ ids: json });
  db.stmt(FORGET_EDGES).run({ ids: json });
  return db.stmt(OPERATOR_SQL.deleteJobs).run({ ids: json }).changes;
}

/** Retry job `id`; recorded as 'retried' when `rec` is given and it applied. Inside a write transaction. */
export function retryRow(db: SqliteDb, id: number, now: number, rec: Recording | null): AdminResult {
  const before = db.stmt(OPERATOR_SQL.get).get(id) as SqlJob | undefined;
  if (!before) return { job: null, applied: false };
  const row = db.stmt(OPERATOR_SQL.retry).get({ id, now }) as SqlJob | undefined;
  if (!row) return { job: toJobRow(before), applied: false };
  if (rec) recordEvent(db, id, now, 'retried', before, rec);
  return { job: toJobRow(row), applied: true };
}

/**
 * Cancel job `id`; recorded as 'cancelled' when `rec` is given and it applied. A running job's
 * attempt ends as cancelled: its history row is written from the job row as it was, fenced by
 * the lease just read. Inside a write transaction.
 */
export function cancelRow(db: SqliteDb, id: number, now: number, rec: Recording | null): AdminResult {
  const before = db.stmt(OPERATOR_SQL.get).get(id) as SqlJob | undefined;
  if (!before) return { job: null, applied: false };
  if (before.status === 'running' && before.lease_token !== null) {
    db.stmt(ATTEMPT_SQL.end).run(now, now, 'cancelled', 'CANCELLED', CANCEL_MESSAGE, null, null, id, before.lease_token, 0, now);
  }
  const row = db.stmt(OPERATOR_SQL.cancel).get({ id, now, message: CANCEL_MESSAGE }) as SqlJob | undefined;
  if (!row) return { job: toJobRow(before), applied: false };
  if (rec) recordEvent(db, id, now, 'cancelled', before, rec);
  // it ends for its workflow and its batch as a finish would, in the same transaction
  const flow = row as SqlJob & { dependents?: number | null; batch_id?: number | null };
  if (flow.dependents != null || flow.batch_id != null) {
    const tally = new BatchTally();
    if (flow.dependents != null) settleChildren(db, id, 'cancelled', now, tally);
    if (flow.batch_id != null) tally.add(flow.batch_id, 'cancelled');
    tally.settle(db, now);
  }
  return { job: toJobRow(row), applied: true };
}
