/**
 * Every attempt's history. An attempt's row is written once, by the write that ends it
 * (finish, rescue, hand-back, cancel); while it runs, the job row holds it, and the listing
 * reads it from there.
 */
import type { AttemptOutcome } from '../../core/status.js';
import { checkRollUp } from '../../core/chart-rollups.js';
import type { AttemptOutcomeCount, AttemptRow, AttemptStore } from '../../core/storage.js';
import { type Db } from './db.js';
import { NOW, ms, toAttemptRow, validId, waitSince } from './sql.js';
import { SqlAggregate } from '../aggregates.js';
import type { AttemptSeries, AttemptSeriesQuery } from '../../core/charts.js';
import { PostgresSeries } from './series.js';

function attemptsSql(s: string) {
  return {
    /**
     * $1 job id. Ended attempts in the order their rows were written (one lease at a time, so
     * the order they ran; attempt numbers start again after an operator's retry).
     */
    list: `-- leasehold attempts.list: a job's attempt history, oldest first (ids compared as numbers), then the attempt running now (held in the job row)
SELECT * FROM (
SELECT id::text AS id, job_id, attempt, worker_id, lease_token, started_at, finished_at, duration_ms, outcome,
       error_code, error_message, error_stack, retry_delay_ms, wait_ms, 0 AS running
FROM ${s}.job_attempts WHERE job_id = $1::bigint
UNION ALL
SELECT 'running:' || j.id, j.id, j.attempts, j.locked_by, j.lease_token, j.started_at, NULL, NULL, 'running',
       NULL, NULL, NULL, NULL, ${waitSince('j.run_at', 'j.started_at')}, 1
FROM ${s}.jobs j
WHERE j.id = $1::bigint AND j.status = 'running'
) AS history
ORDER BY running, length(id), id`,

    /** $1 window in ms. Rows are written when an attempt ends, so none is 'running'; the join drops pruned jobs. */
    outcomes: `-- leasehold attempts.outcomes: attempts that ended in the last $1 ms, counted by their job's type and queue and by outcome
SELECT j.type, j.queue, a.outcome, count(*)::int AS count
FROM ${s}.job_attempts a JOIN ${s}.jobs j ON j.id = a.job_id
WHERE a.finished_at >= ${NOW} - ${ms('$1::float8')} AND a.outcome <> 'running'
GROUP BY j.type, j.queue, a.outcome ORDER BY j.type, j.queue, a.outcome`,
  };
}

export class PostgresAttempts extends SqlAggregate<Db, ReturnType<typeof attemptsSql>> implements AttemptStore {
  constructor(db: Db) {
    super(db, attemptsSql(db.q));
  }

  async list(p: { jobId: string }): Promise<AttemptRow[]> {
    const id = validId(p.jobId);
    if (id === null) return [];
    return (await this.db.run('listAttempts', this.sql.list, [id])).map(toAttemptRow);
  }

  /** Closed slots counted ahead of a chart (./series.ts). */
  async rollUp(p: { slots: number }): Promise<number> {
    return new PostgresSeries(this.db).rollUp(checkRollUp(p));
  }

  /** Ended attempts per time bucket (./series.ts). */
  series(p: AttemptSeriesQuery): Promise<AttemptSeries> {
    return new PostgresSeries(this.db).series(p);
  }

  async outcomes(p: { sinceMs: number }): Promise<AttemptOutcomeCount[]> {
    const rows = await this.db.run('attemptOutcomes', this.sql.outcomes, [p.sinceMs]);
    return rows.map((r) => ({ type: String(r.type), queue: String(r.queue), outcome: r.outcome as AttemptOutcome, count: Number(r.count) }));
  }
}
