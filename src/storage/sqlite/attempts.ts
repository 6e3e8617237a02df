/**
 * Attempt history on SQLite. A claim writes no attempt row: the job row holds the running
 * attempt (worker, number, lease, start) until the write that ends it — a finish, a rescue, a
 * hand-back or an operator's cancel — inserts its history row, once. `list` reads a running
 * attempt from its job row.
 */
import type { AttemptOutcomeCount, AttemptRow, AttemptStore } from '../../core/storage.js';
import { checkRollUp } from '../../core/chart-rollups.js';
import type { SqliteDb } from './db.js';
import type { AttemptSeries, AttemptSeriesQuery } from '../../core/charts.js';
import { attemptSeries, rollUpSlots } from './series.js';
import { toAttemptRow, toSqlId } from './sql.js';
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
  // the common end for a whole finish write: one statement (and one statement journal) per
  // batch, not per job; @items is [[id, leaseToken, result], …]; CROSS JOIN: @items drives;
  // +status: each job read by its rowid, never by a walk of the running index however ANALYZE
  // counted it
  succeeded: `-- leasehold attempts.succeeded (leases.finish): write the history rows of the attempts in @items that succeeded, read from their job rows under the finish's fence
    INSERT INTO {p}job_attempts (job_id, attempt, worker_id, lease_token, started_at, finished_at, duration_ms,
      outcome, error_code, error_message, error_stack, retry_delay_ms, wait_ms)
    SELECT j.id, j.attempts, j.locked_by, j.lease_token, j.started_at, @now, max(0, @now - j.started_at), 'succeeded', NULL, NULL, NULL, NULL,
      max(0, j.started_at - j.run_at)
    FROM json_each(@items) AS i CROSS JOIN {p}jobs AS j
    WHERE j.id = i.value ->> 0 AND j.lease_token = i.value ->> 1 AND +j.status = 'running'`,
  // ended attempts in the order they were written (one lease at a time, so the order they ran);
  // the running one's id is 'running:' + job id, as on PostgreSQL and MySQL
  list: `-- leasehold attempts.list: a job's attempt history, oldest first, then the attempt running now (held in the job row)
    SELECT id, 0 AS running, job_id, attempt, worker_id, lease_token, started_at, finished_at, duration_ms,
      outcome, error_code, error_message, error_stack, retry_delay_ms, wait_ms
    FROM {p}job_attempts WHERE job_id = @id
    UNION ALL
    SELECT 'running:' || id, 1, id, attempts, locked_by, lease_token, started_at, NULL, NULL,
      'running', NULL, NULL, NULL, NULL, max(0, started_at - run_at)
    FROM {p}jobs WHERE id = @id AND status = 'running'
    ORDER BY running, id`,
  // rows are written when an attempt ends, so none is 'running'; the join drops pruned jobs
  outcomes: `-- leasehold attempts.outcomes: attempts that ended at or after @since, counted by their job's type and queue and by outcome
    SELECT j.type AS type, j.queue AS queue, a.outcome AS outcome, count(*) AS count
    FROM {p}job_attempts a JOIN {p}jobs j ON j.id = a.job_id
    WHERE a.finished_at >= @since AND a.outcome <> 'running'
    GROUP BY j.type, j.queue, a.outcome ORDER BY j.type, j.queue, a.outcome`,
} as const;

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
