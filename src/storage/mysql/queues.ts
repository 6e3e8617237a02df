/** What the queues hold, on MySQL/MariaDB. */
import type { JobStatus } from '../../core/status.js';
import type { JobCount, QueueStore } from '../../core/storage.js';
import { type Db, run } from './db.js';
import { NOW, type Tables } from './sql.js';

export function queuesSql(t: Tables) {
  return {
    countJobs: `-- leasehold countJobs: jobs per (queue, type, status), and how many of the due ones are due now
      SELECT queue, type, status, COUNT(*) AS n, SUM(status IN ('queued', 'failed') AND run_at <= ${NOW}) AS due
      FROM ${t.jobs} GROUP BY queue, type, status ORDER BY queue, type, status`,
  };
}

export class MysqlQueues implements QueueStore {
  private readonly sql: ReturnType<typeof queuesSql>;

  constructor(private readonly db: Db) {
    this.sql = queuesSql(db.t);
  }

  async counts(): Promise<JobCount[]> {
    const rows = await this.db.one('countJobs', (c) => run(c, this.sql.countJobs));
    return rows.map((r) => ({ queue: String(r.queue), type: String(r.type), status: String(r.status) as JobStatus, count: Number(r.n), due: Number(r.due ?? 0) }));
  }
}
