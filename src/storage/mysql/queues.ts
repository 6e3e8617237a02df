/** What the queues hold, on MySQL/MariaDB: counts, and each queue's health. */
import type { JobStatus } from '../../core/status.js';
import type { JobCount, QueueHealth, QueueStore } from '../../core/storage.js';
import { type Db, run } from './db.js';
import { NOW, type Tables } from './sql.js';
import { SqlAggregate } from '../aggregates.js';

export function queuesSql(t: Tables) {
  return {
    countJobs: `-- leasehold countJobs: jobs per (queue, type, status), and how many of the due ones are due now
      SELECT queue, type, status, COUNT(*) AS n, SUM(status IN ('queued', 'failed') AND run_at <= ${NOW}) AS due
      FROM ${t.jobs} GROUP BY queue, type, status ORDER BY queue, type, status`,
    // two arms, each a range on status of an index that leads with it: finished rows are never read
    queueHealth: `-- leasehold queueHealth: per queue with due or running jobs, how many of each and the age of the oldest due job in µs
      SELECT queue, SUM(due) AS due, SUM(running) AS running, TIMESTAMPDIFF(MICROSECOND, MIN(oldest), ${NOW}) AS oldest_age_us
      FROM (
        SELECT queue, COUNT(*) AS due, 0 AS running, MIN(run_at) AS oldest FROM ${t.jobs} FORCE INDEX (${t.jobs}_claim)
        WHERE status IN ('queued', 'failed') AND run_at <= ${NOW} GROUP BY queue
        UNION ALL
        SELECT queue, 0, COUNT(*), NULL FROM ${t.jobs} FORCE INDEX (${t.jobs}_sweep) WHERE status = 'running' GROUP BY queue
      ) AS arms
      GROUP BY queue ORDER BY queue`,
  };
}

export class MysqlQueues extends SqlAggregate<Db, ReturnType<typeof queuesSql>> implements QueueStore {
  constructor(db: Db) {
    super(db, queuesSql(db.t));
  }

  async counts(): Promise<JobCount[]> {
    const rows = await this.db.one('countJobs', (c) => run(c, this.sql.countJobs));
    return rows.map((r) => ({ queue: String(r.queue), type: String(r.type), status: String(r.status) as JobStatus, count: Number(r.n), due: Number(r.due ?? 0) }));
  }

  async health(): Promise<QueueHealth[]> {
    const rows = await this.db.one('queueHealth', (c) => run(c, this.sql.queueHealth));
    return rows.map((r) => ({
      queue: String(r.queue), due: Number(r.due), running: Number(r.running),
      // whole ms, as a Date difference would give
      oldestDueAgeMs: r.oldest_age_us == null ? null : Math.floor(Number(r.oldest_age_us) / 1000),
    }));
  }
}
