/** What the queues hold: jobs by queue, type and status, and each queue's health, for the dashboard, the CLI and alerts. */
import type { JobCount, QueueHealth, QueueStore } from '../../core/storage.js';
import { type Db } from './db.js';
import { NOW, toJobCount } from './sql.js';
import { SqlAggregate } from '../aggregates.js';

function queuesSql(s: string) {
  return {
    counts: `-- leasehold countJobs: jobs per (queue, type, status), with how many of the due statuses are due now
SELECT queue, type, status, count(*)::int AS count,
       (count(*) FILTER (WHERE status IN ('queued','failed') AND run_at <= ${NOW}))::int AS due
FROM ${s}.jobs GROUP BY queue, type, status ORDER BY queue, type, status`,

    /** Two arms, each matching a partial index (jobs_due_idx, jobs_running_lease_idx): finished rows are never read. */
    health: `-- leasehold queueHealth: per queue with due or running jobs, how many of each and the age of the oldest due job in ms
SELECT queue, sum(due)::int AS due, sum(running)::int AS running,
       round(extract(epoch FROM ${NOW} - min(oldest)) * 1000)::float8 AS oldest_due_age_ms
FROM (
  SELECT queue, count(*) AS due, 0 AS running, min(run_at) AS oldest FROM ${s}.jobs
  WHERE status IN ('queued','failed') AND run_at <= ${NOW} GROUP BY queue
  UNION ALL
  SELECT queue, 0, count(*), NULL FROM ${s}.jobs WHERE status = 'running' GROUP BY queue
) AS arms
GROUP BY queue ORDER BY queue`,
  };
}

export class PostgresQueues extends SqlAggregate<Db, ReturnType<typeof queuesSql>> implements QueueStore {
  constructor(db: Db) {
    super(db, queuesSql(db.q));
  }

  async counts(): Promise<JobCount[]> {
    return (await this.db.run('countJobs', this.sql.counts)).map(toJobCount);
  }

  async health(): Promise<QueueHealth[]> {
    const rows = await this.db.run('queueHealth', this.sql.health);
    return rows.map((r) => ({
      queue: String(r.queue), due: Number(r.due), running: Number(r.running),
      oldestDueAgeMs: r.oldest_due_age_ms == null ? null : Number(r.oldest_due_age_ms),
    }));
  }
}
