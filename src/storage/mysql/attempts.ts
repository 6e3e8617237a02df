/**
 * Every attempt's history on MySQL/MariaDB. Ended attempts are rows, written when each ended
 * (one lease at a time, so in the order they ran); the running one lives in the job row until
 * its finish writes its row, and is read from there.
 */
import type { AttemptRow, AttemptStore } from '../../core/storage.js';
import { type Db, run } from './db.js';
import { type Tables, idParam, toAttemptRow } from './sql.js';

export function attemptsSql(t: Tables) {
  return {
    // job id twice; id is text in both arms ('running:' + job id for the one from the job row,
    // as on PostgreSQL), `seq` keeps the rows in numeric id order
    listAttempts: `-- leasehold listAttempts: a job's attempt history, first to last, then the attempt running now (held in the job row)
      SELECT CAST(id AS CHAR) AS id, 0 AS running, id AS seq, job_id, attempt, worker_id, lease_token, started_at,
        finished_at, duration_ms, outcome, error_code, error_message, error_stack, retry_delay_ms
      FROM ${t.attempts} WHERE job_id = ?
      UNION ALL
      SELECT CONCAT('running:', id), 1, 0, id, attempts, locked_by, lease_token, started_at, NULL, NULL, 'running', NULL, NULL, NULL, NULL
      FROM ${t.jobs} WHERE id = ? AND status = 'running'
      ORDER BY running, seq`,
  };
}

export class MysqlAttempts implements AttemptStore {
  private readonly sql: ReturnType<typeof attemptsSql>;

  constructor(private readonly db: Db) {
    this.sql = attemptsSql(db.t);
  }

  async list(p: { jobId: string }): Promise<AttemptRow[]> {
    const id = idParam(p.jobId);
    if (id === null) return [];
    return (await this.db.one('listAttempts', (c) => run(c, this.sql.listAttempts, [id, id]))).map(toAttemptRow);
  }
}
