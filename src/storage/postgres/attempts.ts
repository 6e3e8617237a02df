/**
 * Every attempt's history. An attempt's row is written once, by the write that ends it
 * (finish, rescue, hand-back, cancel); while it runs, the job row holds it, and the listing
 * reads it from there.
 */
import type { AttemptRow, AttemptStore } from '../../core/storage.js';
import type { Db } from './db.js';
import { toAttemptRow, validId } from './sql.js';

function attemptsSql(s: string) {
  return {
    /** $1 job id */
    list: `-- leasehold attempts.list: a job's attempt history, oldest first (ids compared as numbers), then the attempt running now (held in the job row)
SELECT * FROM (
SELECT id::text AS id, job_id, attempt, worker_id, lease_token, started_at, finished_at, duration_ms, outcome,
       error_code, error_message, error_stack, retry_delay_ms, 0 AS running
FROM ${s}.job_attempts WHERE job_id = $1::bigint
UNION ALL
SELECT 'running:' || j.id, j.id, j.attempts, j.locked_by, j.lease_token, j.started_at, NULL, NULL, 'running',
       NULL, NULL, NULL, NULL, 1
FROM ${s}.jobs j
WHERE j.id = $1::bigint AND j.status = 'running'
) AS history
ORDER BY running, attempt, length(id), id`,
  };
}

export class PostgresAttempts implements AttemptStore {
  private readonly sql: ReturnType<typeof attemptsSql>;

  constructor(private readonly db: Db) {
    this.sql = attemptsSql(db.q);
  }

  async list(p: { jobId: string }): Promise<AttemptRow[]> {
    const id = validId(p.jobId);
    if (id === null) return [];
    return (await this.db.run('listAttempts', this.sql.list, [id])).map(toAttemptRow);
  }
}
