/**
 * Attempt history on SQLite. A claim writes no attempt row: the job row holds the running
 * attempt (worker, number, lease, start) until the write that ends it — a rescue, a hand-back,
 * a failure or an operator's cancel — inserts its history row, once. A handler's success writes
 * none: the job row keeps that attempt for good (worker, token, start, finish, due time; no
 * write takes a job out of 'succeeded'), which saves a row write per job on the drain's path. A
 * succeeded row holds its attempt exactly when its lease_token is set (a success that moves
 * run_at or the attempt count writes a row instead: keepsAttempt below), and every read of
 * ended attempts (`list`, `outcomes`, the series in ./series.ts) adds those rows as attempts.
 */
import type { AttemptOutcomeCount, AttemptRow, AttemptStore, FinishParams } from '../../core/storage.js';
import { checkRollUp } from '../../core/chart-rollups.js';
import type { SqliteDb } from './db.js';
import type { AttemptSeries, AttemptSeriesQuery } from '../../core/charts.js';
import { attemptSeries, rollUpSlots } from './series.js';
import { HOLDS_SUCCESS, toAttemptRow, toSqlId } from './sql.js';
import type { SqlAttempt } from './sql.js';

export const ATTEMPT_SQL = {
  // reads the attempt from the job row, so it runs before the write that clears the lease
  // (RETURNING gives new values only), under the same fence and in the same transaction; the
  // job's run_at is still the due time the claim took it at
  end: `-- leasehold attempts.end (leases.finish, jobs.cancel): write the history row of the attempt a lease holds, read from the job row under the finish's fence (? = now, now, outcome, errorCode, errorMessage, errorStack, retryDelayMs, id, leaseToken, onlyIfExpired, now)
    INSERT INTO {p}job_attempts (job_id, attempt, worker_id, lease_token, started_at, finished_at, duration_ms,
      outcome, error_code, error_message, error_stack, retry_delay_ms, wait_ms)
    SELECT id, attempts, locked_by, lease_token, started_at, ?, max(0, ? - started_at), ?, ?, ?, ?, ?, max(0, started_at - run_at)
    FROM {p}jobs WHERE id = ? AND lease_token = ? AND status = 'running' AND (? = 0 OR locked_until < ?)`,
  // ended attempts in the order they were written (one lease at a time, so the order they ran),
  // then the one the job row holds: running ('running:' + job id, as on PostgreSQL and MySQL) or
  // the success that ended the job ('succeeded:' + job id)
  list: `-- leasehold attempts.list: a job's attempt history, oldest first, then the attempt its job row holds (running now, or the success that ended it)
    SELECT id, 0 AS held, job_id, attempt, worker_id, lease_token, started_at, finished_at, duration_ms,
      outcome, error_code, error_message, error_stack, retry_delay_ms, wait_ms
    FROM {p}job_attempts WHERE job_id = @id
    UNION ALL
    SELECT status || ':' || id, 1, id, attempts, locked_by, lease_token, started_at,
      CASE WHEN status = 'succeeded' THEN finished_at END, CASE WHEN status = 'succeeded' THEN max(0, finished_at - started_at) END,
      status, NULL, NULL, NULL, NULL, max(0, started_at - run_at)
    FROM {p}jobs WHERE id = @id AND (status = 'running' OR (${HOLDS_SUCCESS}))
    ORDER BY held, id`,
  // rows are written when an attempt ends, so none is 'running'; the join drops pruned jobs
  outcomes: `-- leasehold attempts.outcomes: attempts that ended at or after @since (history rows and the succeeded job rows that hold theirs), counted by their job's type and queue and by outcome
    SELECT type, queue, outcome, sum(n) AS count FROM (
      SELECT j.type AS type, j.queue AS queue, a.outcome AS outcome, count(*) AS n
      FROM {p}job_attempts a JOIN {p}jobs j ON j.id = a.job_id
      WHERE a.finished_at >= @since AND a.outcome <> 'running'
      GROUP BY 1, 2, 3
      UNION ALL
      SELECT type, queue, 'succeeded', count(*) FROM {p}jobs WHERE finished_at >= @since AND ${HOLDS_SUCCESS} GROUP BY 1, 2)
    GROUP BY type, queue, outcome ORDER BY type, queue, outcome`,
} as const;

/**
 * A success whose attempt its job row can keep: nothing moves run_at or the attempt count (the
 * attempt's wait and number) and the attempt has no error. Any other success writes a history
 * row and clears the lease, as every other finish does: a succeeded row holds its attempt
 * exactly when its lease_token is set (see the top of this file).
 */
export function keepsAttempt(f: FinishParams): boolean {
  return f.status === 'succeeded' && f.attempt.outcome === 'succeeded' && f.attempt.error == null && f.attempt.retryDelayMs == null
    && f.runAfterMs === undefined && f.uncountAttempt !== true;
}

export class SqliteAttempts implements AttemptStore {
  constructor(private readonly db: SqliteDb) {}

  async list(p: { jobId: string }): Promise<AttemptRow[]> {
    const id = toSqlId(p.jobId);
    if (id === null) return [];
    const rows = this.db.read(() => this.db.stmt(ATTEMPT_SQL.list).all({ id }) as SqlAttempt[]);
    return rows.map(toAttemptRow);
  }

  /** Closed slots counted ahead of a chart (./series.ts). */
  async rollUp(p: { slots: number }): Promise<number> {
    return rollUpSlots(this.db, checkRollUp(p));
  }

  /** Ended attempts per time bucket (./series.ts). */
  async series(p: AttemptSeriesQuery): Promise<AttemptSeries> {
    return attemptSeries(this.db, p);
  }

  async outcomes(p: { sinceMs: number }): Promise<AttemptOutcomeCount[]> {
    const since = this.db.now() - p.sinceMs;
    const rows = this.db.read(() => this.db.stmt(ATTEMPT_SQL.outcomes).all({ since }) as AttemptOutcomeCount[]);
    // plain objects: node:sqlite hands out rows without a prototype
    return rows.map((r) => ({ type: r.type, queue: r.queue, outcome: r.outcome, count: r.count }));
  }
}
