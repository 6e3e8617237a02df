/**
 * Every attempt's history on MySQL/MariaDB. Ended attempts are rows, written when each ended
 * (one lease at a time, so in the order they ran); the running one lives in the job row until
 * its finish writes its row, and is read from there.
 */
import type { AttemptOutcome } from '../../core/status.js';
import { checkRollUp } from '../../core/chart-rollups.js';
import type { AttemptOutcomeCount, AttemptRow, AttemptStore } from '../../core/storage.js';
import { type Db, run } from './db.js';
import { NOW, type Tables, idParam, micros, toAttemptRow } from './sql.js';
import { SqlAggregate } from '../aggregates.js';
import type { AttemptSeries, AttemptSeriesQuery } from '../../core/charts.js';
import { MysqlSeries } from './series.js';

export function attemptsSql(t: Tables) {
  return {
    // job id twice; id is text in both arms ('running:' + job id for the one from the job row,
    // as on PostgreSQL), `seq` keeps the rows in numeric id order; a running attempt's wait is
    // the whole ms between its ms-truncated times, as a finish writes it (sql.ts waitMs)
    listAttempts: `-- leasehold listAttempts: a job's attempt history, first to last, then the attempt running now (held in the job row)
      SELECT CAST(id AS CHAR) AS id, 0 AS running, id AS seq, job_id, attempt, worker_id, lease_token, started_at,
        finished_at, duration_ms, outcome, error_code, error_message, error_stack, retry_delay_ms, wait_ms
      FROM ${t.attempts} WHERE job_id = ?
      UNION ALL
      SELECT CONCAT('running:', id), 1, 0, id, attempts, locked_by, lease_token, started_at, NULL, NULL, 'running', NULL, NULL, NULL, NULL,
        GREATEST(0, (TIMESTAMPDIFF(MICROSECOND, run_at, started_at) - MICROSECOND(started_at) % 1000 + MICROSECOND(run_at) % 1000) DIV 1000)
      FROM ${t.jobs} WHERE id = ? AND status = 'running'
      ORDER BY running, seq`,
    // rows are written when an attempt ends, so none is 'running'; the join drops pruned jobs
    attemptOutcomes: `-- leasehold attemptOutcomes: attempts that ended in the last N µs, counted by their job's type and queue and by outcome
      SELECT j.type, j.queue, a.outcome, COUNT(*) AS n
      FROM ${t.attempts} a JOIN ${t.jobs} j ON j.id = a.job_id
      WHERE a.finished_at >= ${NOW} - INTERVAL ? MICROSECOND AND a.outcome <> 'running'
      GROUP BY j.type, j.queue, a.outcome ORDER BY j.type, j.queue, a.outcome`,
  };
}

export class MysqlAttempts extends SqlAggregate<Db, ReturnType<typeof attemptsSql>> implements AttemptStore {
  constructor(db: Db) {
    super(db, attemptsSql(db.t));
  }

  async list(p: { jobId: string }): Promise<AttemptRow[]> {
    const id = idParam(p.jobId);
    if (id === null) return [];
    return (await this.db.one('listAttempts', (c) => run(c, this.sql.listAttempts, [id, id]))).map(toAttemptRow);
  }

  /** Closed slots counted ahead of a chart (./series.ts). */
  async rollUp(p: { slots: number }): Promise<number> {
    return new MysqlSeries(this.db).rollUp(checkRollUp(p));
  }

  /** Ended attempts per time bucket (./series.ts). */
  series(p: AttemptSeriesQuery): Promise<AttemptSeries> {
    return new MysqlSeries(this.db).series(p);
  }

  async outcomes(p: { sinceMs: number }): Promise<AttemptOutcomeCount[]> {
    const rows = await this.db.one('attemptOutcomes', (c) => run(c, this.sql.attemptOutcomes, [micros(p.sinceMs)]));
    return rows.map((r) => ({ type: String(r.type), queue: String(r.queue), outcome: String(r.outcome) as AttemptOutcome, count: Number(r.n) }));
  }
}
