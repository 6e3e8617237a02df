/** What the queues hold on SQLite: counts per queue, type and status. */
import type { JobCount, QueueStore } from '../../core/storage.js';
import type { SqliteDb } from './db.js';

const QUEUE_SQL = {
  counts: `-- leasehold queues.counts: counts per (queue, type, status), with how many of the due statuses are due now
    SELECT queue, type, status, count(*) AS count,
      sum(CASE WHEN status IN ('queued','failed') AND run_at <= @now THEN 1 ELSE 0 END) AS due
    FROM {p}jobs GROUP BY queue, type, status ORDER BY queue, type, status`,
} as const;

export class SqliteQueues implements QueueStore {
  constructor(private readonly db: SqliteDb) {}

  async counts(): Promise<JobCount[]> {
    const now = this.db.now();
    const rows = this.db.read(() => this.db.stmt(QUEUE_SQL.counts).all({ now }) as JobCount[]);
    return rows.map((r) => ({ queue: r.queue, type: r.type, status: r.status, count: r.count, due: r.due }));
  }
}
