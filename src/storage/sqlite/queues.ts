/** What the queues hold on SQLite: counts per queue, type and status, each queue's health, and which are paused. */
import type { JobCount, QueueHealth, QueueState, QueueStore } from '../../core/storage.js';
import type { JobStatus } from '../../core/status.js';
import type { SqliteDb } from './db.js';
import type { JobSummary, JobSummaryQuery } from '../../core/search.js';
import { type DueCounts, type DueCountsQuery, checkDueCounts, dueCountsOf } from '../../core/due-counts.js';
import { jobSummary } from '../search-pages.js';
import { SqliteMatchReader } from './search.js';

const QUEUE_SQL = {
  counts: `-- leasehold queues.counts: counts per (queue, type, status), with how many of the due statuses are due now
    SELECT queue, type, status, count(*) AS count,
      sum(CASE WHEN status IN ('queued','failed') AND run_at <= @now THEN 1 ELSE 0 END) AS due
    FROM {p}jobs GROUP BY queue, type, status ORDER BY queue, type, status`,
  // claim order over the claim index: a type nobody handles is never claimed, so its jobs lead
  dueCounts: `-- leasehold queues.dueCounts: due jobs by (queue, type, status), reading at most @limit of them in claim order
    SELECT queue, type, status, count(*) AS n FROM (
      SELECT queue, type, status FROM {p}jobs WHERE status IN ('queued','failed') AND run_at <= @now
      ORDER BY priority, run_at, id LIMIT @limit
    ) GROUP BY queue, type, status`,
  // two arms, each over its partial index (due rows, running rows): finished rows are never read
  health: `-- leasehold queues.health: per queue with due or running jobs, how many of each and the oldest due run_at
    SELECT queue, sum(due) AS due, sum(running) AS running, min(oldest) AS oldest FROM (
      SELECT queue, count(*) AS due, 0 AS running, min(run_at) AS oldest FROM {p}jobs
      WHERE status IN ('queued','failed') AND run_at <= @now GROUP BY queue
      UNION ALL
      SELECT queue, 0, count(*), NULL FROM {p}jobs WHERE status = 'running' GROUP BY queue
    ) GROUP BY queue ORDER BY queue`,
  // paused_at keeps the last pause when a queue is resumed
  setPaused: `-- leasehold queues.setPaused: pause or resume one queue, cluster-wide
    INSERT INTO {p}queue_states (queue, paused, paused_at, updated_at)
    VALUES (@queue, @paused, CASE WHEN @paused THEN @now END, @now)
    ON CONFLICT (queue) DO UPDATE SET paused = excluded.paused,
      paused_at = coalesce(excluded.paused_at, paused_at), updated_at = excluded.updated_at
    RETURNING queue, paused, paused_at, updated_at`,
  states: `-- leasehold queues.states: every queue ever paused or resumed, by name
    SELECT queue, paused, paused_at, updated_at FROM {p}queue_states ORDER BY queue`,
} as const;

interface SqlQueueState {
  queue: string;
  paused: number;
  paused_at: number | null;
  updated_at: number;
}

const toQueueState = (r: SqlQueueState): QueueState => ({
  queue: r.queue,
  paused: r.paused === 1,
  pausedAt: r.paused_at === null ? null : new Date(r.paused_at),
  updatedAt: new Date(r.updated_at),
});

export class SqliteQueues implements QueueStore {
  constructor(private readonly db: SqliteDb) {}

  /** The overview's counts, each status bounded by its cap (../search-pages.ts over ./search.ts). */
  summary(p?: JobSummaryQuery): Promise<JobSummary> {
    return jobSummary(new SqliteMatchReader(this.db), p);
  }

  async counts(): Promise<JobCount[]> {
    const now = this.db.now();
    const rows = this.db.read(() => this.db.stmt(QUEUE_SQL.counts).all({ now }) as JobCount[]);
    return rows.map((r) => ({ queue: r.queue, type: r.type, status: r.status, count: r.count, due: r.due }));
  }

  async dueCounts(p?: DueCountsQuery): Promise<DueCounts> {
    const { limit } = checkDueCounts(p);
    const now = this.db.now();
    return dueCountsOf(this.db.read(() => this.db.stmt(QUEUE_SQL.dueCounts).all({ now, limit }) as { queue: string; type: string; status: JobStatus; n: number }[]), limit);
  }

  async health(): Promise<QueueHealth[]> {
    const now = this.db.now();
    const rows = this.db.read(() => this.db.stmt(QUEUE_SQL.health).all({ now }) as { queue: string; due: number; running: number; oldest: number | null }[]);
    return rows.map((r) => ({ queue: r.queue, due: r.due, running: r.running, oldestDueAgeMs: r.oldest === null ? null : now - r.oldest }));
  }

  async pause(p: { queue: string }): Promise<QueueState> {
    return this.#set(p.queue, true);
  }

  async resume(p: { queue: string }): Promise<QueueState> {
    return this.#set(p.queue, false);
  }

  async states(): Promise<QueueState[]> {
    return this.db.read(() => this.db.stmt(QUEUE_SQL.states).all() as SqlQueueState[]).map(toQueueState);
  }

  /** One statement in autocommit; a worker polls, so a resumed queue is claimed at the next poll. */
  #set(queue: string, paused: boolean): QueueState {
    const now = this.db.now();
    return toQueueState(this.db.read(() => this.db.stmt(QUEUE_SQL.setPaused).get({ queue, paused: paused ? 1 : 0, now }) as SqlQueueState));
  }
}
