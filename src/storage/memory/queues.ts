/** What the in-memory queues hold: jobs counted by queue, type and status, and each queue's health. */
import { DUE_STATUSES } from '../../core/status.js';
import type { JobCount, QueueHealth, QueueState, QueueStore } from '../../core/storage.js';
import { type MemoryDb, copyDate, copyDateOrNull } from './db.js';
import type { JobSummary, JobSummaryQuery } from '../../core/search.js';
import { type DueCounts, type DueCountsQuery, checkDueCounts, dueCountsOf } from '../../core/due-counts.js';
import { jobSummary } from '../search-pages.js';
import { MemoryMatchReader } from './search.js';

export class MemoryQueues implements QueueStore {
  constructor(private readonly db: MemoryDb) {}

  /** One row per (queue, type, status); `due` counts due statuses with run_at <= now (else 0). */
  /** The overview's counts, each status bounded by its cap (../search-pages.ts over ./search.ts). */
  summary(p?: JobSummaryQuery): Promise<JobSummary> {
    return jobSummary(new MemoryMatchReader(this.db), p);
  }

  async counts(): Promise<JobCount[]> {
    const nowMs = this.db.now().getTime();
    const groups = new Map<string, JobCount>();
    for (const j of this.db.jobs.values()) {
      const k = JSON.stringify([j.queue, j.type, j.status]);
      let g = groups.get(k);
      if (!g) groups.set(k, (g = { queue: j.queue, type: j.type, status: j.status, count: 0, due: 0 }));
      g.count++;
      if (DUE_STATUSES.includes(j.status) && j.runAt.getTime() <= nowMs) g.due++;
    }
    return [...groups.values()];
  }

  /** At most `limit` due jobs, in id order, by queue, type and status. */
  async dueCounts(p?: DueCountsQuery): Promise<DueCounts> {
    const { limit } = checkDueCounts(p);
    const nowMs = this.db.now().getTime();
    const groups = new Map<string, { queue: string; type: string; status: JobCount['status']; n: number }>();
    let read = 0;
    for (const j of this.db.jobs.values()) {
      if (read === limit) break;
      if (!DUE_STATUSES.includes(j.status) || j.runAt.getTime() > nowMs) continue;
      read++;
      const k = JSON.stringify([j.queue, j.type, j.status]);
      const g = groups.get(k);
      if (g) g.n++;
      else groups.set(k, { queue: j.queue, type: j.type, status: j.status, n: 1 });
    }
    return dueCountsOf([...groups.values()], limit);
  }

  /** Per queue with due or running jobs: how many of each, and how long the oldest due one has waited. */
  async health(): Promise<QueueHealth[]> {
    const nowMs = this.db.now().getTime();
    const queues = new Map<string, QueueHealth>();
    for (const j of this.db.jobs.values()) {
      const due = DUE_STATUSES.includes(j.status) && j.runAt.getTime() <= nowMs;
      if (!due && j.status !== 'running') continue;
      let q = queues.get(j.queue);
      if (!q) queues.set(j.queue, (q = { queue: j.queue, due: 0, running: 0, oldestDueAgeMs: null }));
      if (j.status === 'running') q.running++;
      else {
        q.due++;
        q.oldestDueAgeMs = Math.max(q.oldestDueAgeMs ?? 0, nowMs - j.runAt.getTime());
      }
    }
    return [...queues.values()].sort((a, b) => (a.queue < b.queue ? -1 : a.queue > b.queue ? 1 : 0));
  }

  async pause(p: { queue: string }): Promise<QueueState> {
    return this.#set(p.queue, true);
  }

  async resume(p: { queue: string }): Promise<QueueState> {
    return this.#set(p.queue, false);
  }

  /** By queue name. */
  async states(): Promise<QueueState[]> {
    this.db.now();
    return [...this.db.queueStates.values()].sort((a, b) => (a.queue < b.queue ? -1 : a.queue > b.queue ? 1 : 0)).map(stateOut);
  }

  #set(queue: string, paused: boolean): QueueState {
    const now = this.db.now();
    const prev = this.db.queueStates.get(queue);
    const state = { queue, paused, pausedAt: paused ? now : (prev?.pausedAt ?? null), updatedAt: now };
    this.db.queueStates.set(queue, state);
    return stateOut(state);
  }
}

const stateOut = (q: QueueState): QueueState => ({ ...q, pausedAt: copyDateOrNull(q.pausedAt), updatedAt: copyDate(q.updatedAt) });
