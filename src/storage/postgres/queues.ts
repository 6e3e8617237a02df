/**
 * What the queues hold: jobs by queue, type and status, and each queue's health, for the
 * dashboard, the CLI and alerts; and which queues an operator paused (the claim leaves them).
 */
import type { JobCount, QueueHealth, QueueState, QueueStore } from '../../core/storage.js';
import type { JobStatus } from '../../core/status.js';
import { type Db, type Row } from './db.js';
import { NOW, date, dateOrNull, toJobCount } from './sql.js';
import { SqlAggregate } from '../aggregates.js';
import type { JobSummary, JobSummaryQuery } from '../../core/search.js';
import { type DueCounts, type DueCountsQuery, checkDueCounts, dueCountsOf } from '../../core/due-counts.js';
import { jobSummary } from '../search-pages.js';
import { PostgresMatchReader } from './search.js';

function queuesSql(s: string) {
  return {
    counts: `-- leasehold countJobs: jobs per (queue, type, status), with how many of the due statuses are due now
SELECT queue, type, status, count(*)::int AS count,
       (count(*) FILTER (WHERE status IN ('queued','failed') AND run_at <= ${NOW}))::int AS due
FROM ${s}.jobs GROUP BY queue, type, status ORDER BY queue, type, status`,

    /** $1 limit. Claim order over jobs_due_idx: a type nobody handles is never claimed, so its jobs lead. */
    dueCounts: `-- leasehold dueCounts: due jobs by (queue, type, status), reading at most $1 of them in claim order
SELECT queue, type, status, count(*)::int AS n FROM (
  SELECT queue, type, status FROM ${s}.jobs WHERE status IN ('queued','failed') AND run_at <= ${NOW}
  ORDER BY priority, run_at, id LIMIT $1
) AS d GROUP BY queue, type, status`,

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

    /** $1 queue */
    pause: `-- leasehold pauseQueue: claims leave this queue's jobs from now on
INSERT INTO ${s}.queue_states AS q (queue, paused, paused_at, updated_at) VALUES ($1::text, true, ${NOW}, ${NOW})
ON CONFLICT (queue) DO UPDATE SET paused = true, paused_at = ${NOW}, updated_at = ${NOW}
RETURNING queue, paused, paused_at, updated_at`,

    /** $1 queue, $2 $3 notify: its due jobs are claimable again, so idle workers wake */
    resume: `-- leasehold resumeQueue: claims take this queue's jobs again; wake listening workers
WITH upd AS (
  INSERT INTO ${s}.queue_states AS q (queue, paused, paused_at, updated_at) VALUES ($1::text, false, NULL, ${NOW})
  ON CONFLICT (queue) DO UPDATE SET paused = false, updated_at = ${NOW}
  RETURNING queue, paused, paused_at, updated_at
), woke AS (
  SELECT pg_notify($2, $3)
)
SELECT upd.*, (SELECT count(*) FROM woke) AS notified FROM upd`,

    states: `-- leasehold queueStates: every queue ever paused or resumed, by name
SELECT queue, paused, paused_at, updated_at FROM ${s}.queue_states ORDER BY queue`,
  };
}

function toQueueState(r: Row): QueueState {
  return { queue: String(r.queue), paused: r.paused === true, pausedAt: dateOrNull(r.paused_at), updatedAt: date(r.updated_at) };
}

export class PostgresQueues extends SqlAggregate<Db, ReturnType<typeof queuesSql>> implements QueueStore {
  constructor(db: Db) {
    super(db, queuesSql(db.q));
  }

  /** The overview's counts, each status bounded by its cap (../search-pages.ts over ./search.ts). */
  summary(p?: JobSummaryQuery): Promise<JobSummary> {
    return jobSummary(new PostgresMatchReader(this.db), p);
  }

  async counts(): Promise<JobCount[]> {
    return (await this.db.run('countJobs', this.sql.counts)).map(toJobCount);
  }

  async dueCounts(p?: DueCountsQuery): Promise<DueCounts> {
    const { limit } = checkDueCounts(p);
    const rows = await this.db.run('dueCounts', this.sql.dueCounts, [limit]);
    return dueCountsOf(rows.map((r) => ({ queue: String(r.queue), type: String(r.type), status: String(r.status) as JobStatus, n: Number(r.n) })), limit);
  }

  async health(): Promise<QueueHealth[]> {
    const rows = await this.db.run('queueHealth', this.sql.health);
    return rows.map((r) => ({
      queue: String(r.queue), due: Number(r.due), running: Number(r.running),
      oldestDueAgeMs: r.oldest_due_age_ms == null ? null : Number(r.oldest_due_age_ms),
    }));
  }

  async pause(p: { queue: string }): Promise<QueueState> {
    return this.#one('pauseQueue', this.sql.pause, [p.queue]);
  }

  async resume(p: { queue: string }): Promise<QueueState> {
    return this.#one('resumeQueue', this.sql.resume, [p.queue, ...this.db.notify]);
  }

  async states(): Promise<QueueState[]> {
    return (await this.db.run('queueStates', this.sql.states)).map(toQueueState);
  }

  async #one(what: string, text: string, params: unknown[]): Promise<QueueState> {
    const [row] = await this.db.run(what, text, params);
    if (!row) throw new Error(`postgres ${what}: no row back`);
    return toQueueState(row);
  }
}
