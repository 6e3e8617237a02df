/** What the queues hold: jobs by queue, type and status, for the dashboard and the CLI. */
import type { JobCount, QueueStore } from '../../core/storage.js';
import type { Db } from './db.js';
import { NOW, toJobCount } from './sql.js';

function queuesSql(s: string) {
  return {
    counts: `-- leasehold countJobs: jobs per (queue, type, status), with how many of the due statuses are due now
SELECT queue, type, status, count(*)::int AS count,
       (count(*) FILTER (WHERE status IN ('queued','failed') AND run_at <= ${NOW}))::int AS due
FROM ${s}.jobs GROUP BY queue, type, status ORDER BY queue, type, status`,
  };
}

export class PostgresQueues implements QueueStore {
  private readonly sql: ReturnType<typeof queuesSql>;

  constructor(private readonly db: Db) {
    this.sql = queuesSql(db.q);
  }

  async counts(): Promise<JobCount[]> {
    return (await this.db.run('countJobs', this.sql.counts)).map(toJobCount);
  }
}
