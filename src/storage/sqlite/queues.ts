/** What the queues hold on SQLite: counts per queue, type and status, and each queue's health. */
import type { JobCount, QueueHealth, QueueStore } from '../../core/storage.js';
import type { SqliteDb } from './db.js';

const QUEUE_SQL = {
  counts: `-- leasehold queues.counts: counts per (queue, type, status), with how many of the due statuses are due now
    SELECT queue, type, status, count(*) AS count,
      sum(CASE WHEN status IN ('queued','failed') AND run_at <= @now THEN 1 ELSE 0 END) AS due
    FROM {p}jobs GROUP BY queue, type, status ORDER BY queue, type, status`,
  // two arms, each over its partial index (due rows, running rows): finished rows are never read
  health: `-- leasehold queues.health: per queue with due or running jobs, how many of each and the oldest due run_at
    SELECT queue, sum(due) AS due, sum(running) AS running, min(oldest) AS oldest FROM (
      SELECT queue, count(*) AS due, 0 AS running, min(run_at) AS oldest FROM {p}jobs
      WHERE status IN ('queued','failed') AND run_at <= @now GROUP BY queue
      UNION ALL
      SELECT queue, 0, count(*), NULL FROM {p}jobs WHERE status = 'running' GROUP BY queue
    ) GROUP BY queue ORDER BY queue`,
} as const;

export class SqliteQueues implements QueueStore {
  constructor(private readonly db: SqliteDb) {}

  async counts(): Promise<JobCount[]> {
    const now = this.db.now();
    const rows = this.db.read(() => this.db.stmt(QUEUE_SQL.counts).all({ now }) as JobCount[]);
    return rows.map((r) => ({ queue: r.queue, type: r.type, status: r.status, count: r.count, due: r.due }));
  }

  async health(): Promise<QueueHealth[]> {
    const now = this.db.now();
    const rows = this.db.read(() => this.db.stmt(QUEUE_SQL.health).all({ now }) as { queue: string; due: number; running: number; oldest: number | null }[]);
    return rows.map((r) => ({ queue: r.queue, due: r.due, running: r.running, oldestDueAgeMs: r.oldest === null ? null : now - r.oldest }));
  }
}
