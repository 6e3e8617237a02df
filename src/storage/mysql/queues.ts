/** What the queues hold, on MySQL/MariaDB: counts, each queue's health, and whether it is paused. */
import type { JobStatus } from '../../core/status.js';
import type { JobCount, QueueHealth, QueueState, QueueStore } from '../../core/storage.js';
import { type Db, exec, run } from './db.js';
import { NOW, type Row, type Tables, parseUtc, parseUtcOrNull } from './sql.js';
import { SqlAggregate } from '../aggregates.js';
import type { JobSummary, JobSummaryQuery } from '../../core/search.js';
import { type DueCounts, type DueCountsQuery, checkDueCounts, dueCountsOf } from '../../core/due-counts.js';
import { jobSummary } from '../search-pages.js';
import { MysqlMatchReader } from './search.js';
import { wakeupsOf } from './wakeups.js';

export function queuesSql(t: Tables) {
  return {
    countJobs: `-- leasehold countJobs: jobs per (queue, type, status), and how many of the due ones are due now
      SELECT queue, type, status, COUNT(*) AS n, SUM(status IN ('queued', 'failed') AND run_at <= ${NOW}) AS due
      FROM ${t.jobs} GROUP BY queue, type, status ORDER BY queue, type, status`,
    // one arm per due status, each read in its claim index's order (no sort of every due row; no index hint, so doctor still
    // answers with the index dropped); a type nobody handles leads
    dueCounts: `-- leasehold dueCounts: due jobs by (queue, type, status), reading at most ? of them in claim order
      SELECT queue, type, status, COUNT(*) AS n FROM (
        SELECT queue, type, status FROM (
          (SELECT queue, type, status, priority, run_at, id FROM ${t.jobs}
           WHERE status = 'queued' AND run_at <= ${NOW} ORDER BY priority, run_at, id LIMIT ?)
          UNION ALL
          (SELECT queue, type, status, priority, run_at, id FROM ${t.jobs}
           WHERE status = 'failed' AND run_at <= ${NOW} ORDER BY priority, run_at, id LIMIT ?)
        ) AS arms ORDER BY priority, run_at, id LIMIT ?
      ) AS d GROUP BY queue, type, status`,
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
    setQueueState: `-- leasehold setQueueState: pause (paused_at = now) or resume (paused_at kept) a queue
      INSERT INTO ${t.queueStates} (queue, paused, paused_at, updated_at) VALUES (?, ?, IF(? = 1, ${NOW}, NULL), ${NOW})
      ON DUPLICATE KEY UPDATE paused = VALUES(paused), paused_at = IF(VALUES(paused) = 1, VALUES(paused_at), paused_at), updated_at = VALUES(updated_at)`,
    queueState: `-- leasehold queueState: one queue's paused state
      SELECT queue, paused, paused_at, updated_at FROM ${t.queueStates} WHERE queue = ?`,
    queueStates: `-- leasehold queueStates: every queue ever paused or resumed, by name
      SELECT queue, paused, paused_at, updated_at FROM ${t.queueStates} ORDER BY queue`,
  };
}

export class MysqlQueues extends SqlAggregate<Db, ReturnType<typeof queuesSql>> implements QueueStore {
  constructor(db: Db) {
    super(db, queuesSql(db.t));
  }

  /** The overview's counts, each status bounded by its cap (../search-pages.ts over ./search.ts). */
  summary(p?: JobSummaryQuery): Promise<JobSummary> {
    return jobSummary(new MysqlMatchReader(this.db), p);
  }

  async counts(): Promise<JobCount[]> {
    const rows = await this.db.one('countJobs', (c) => run(c, this.sql.countJobs));
    return rows.map((r) => ({ queue: String(r.queue), type: String(r.type), status: String(r.status) as JobStatus, count: Number(r.n), due: Number(r.due ?? 0) }));
  }

  async dueCounts(p?: DueCountsQuery): Promise<DueCounts> {
    const { limit } = checkDueCounts(p);
    const rows = await this.db.one('dueCounts', (c) => run(c, this.sql.dueCounts, [limit, limit, limit]));
    return dueCountsOf(rows.map((r) => ({ queue: String(r.queue), type: String(r.type), status: String(r.status) as JobStatus, n: Number(r.n) })), limit);
  }

  async health(): Promise<QueueHealth[]> {
    const rows = await this.db.one('queueHealth', (c) => run(c, this.sql.queueHealth));
    return rows.map((r) => ({
      queue: String(r.queue), due: Number(r.due), running: Number(r.running),
      // whole ms, as a Date difference would give
      oldestDueAgeMs: r.oldest_age_us == null ? null : Math.floor(Number(r.oldest_age_us) / 1000),
    }));
  }

  pause(p: { queue: string }): Promise<QueueState> {
    return this.#set(p.queue, true);
  }

  resume(p: { queue: string }): Promise<QueueState> {
    return this.#set(p.queue, false);
  }

  async states(): Promise<QueueState[]> {
    return (await this.db.one('queueStates', (c) => run(c, this.sql.queueStates))).map(stateOf);
  }

  /** The write and the read of its result in one transaction: the state returned is the one this call wrote. */
  async #set(queue: string, paused: boolean): Promise<QueueState> {
    const flag = paused ? 1 : 0;
    const state = await this.db.tx('setQueueState', async (c) => {
      await exec(c, this.sql.setQueueState, [queue, flag, flag]);
      return stateOf((await run(c, this.sql.queueState, [queue]))[0]!);
    });
    // a resumed queue's due jobs are claimable again
    if (!paused) wakeupsOf(this.db).jobsDue();
    return state;
  }
}

function stateOf(r: Row): QueueState {
  return { queue: String(r.queue), paused: Number(r.paused) === 1, pausedAt: parseUtcOrNull(r.paused_at), updatedAt: parseUtc(r.updated_at) };
}
