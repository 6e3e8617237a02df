/** Every attempt's history row, kept in memory as its own row from claim to finish. */
import type { AttemptOutcomeCount, AttemptRow, AttemptStore } from '../../core/storage.js';
import { checkRollUp } from '../../core/chart-rollups.js';
import { attemptOut, type MemoryDb } from './db.js';
import type { AttemptSeries, AttemptSeriesQuery } from '../../core/charts.js';
import { attemptSeries } from './series.js';

export class MemoryAttempts implements AttemptStore {
  constructor(private readonly db: MemoryDb) {}

  /** Oldest first; a running attempt included. */
  async list(p: { jobId: string }): Promise<AttemptRow[]> {
    this.db.now();
    return [...this.db.attempts.values()]
      .filter((a) => a.jobId === p.jobId)
      .sort((a, b) => a.seq - b.seq)
      .map(attemptOut);
  }

  /** Ended attempts with finished_at >= now - sinceMs, counted by their job's type and queue. */
  /** Nothing is kept counted in memory: a chart counts the attempts themselves. */
  async rollUp(p: { slots: number }): Promise<number> {
    checkRollUp(p);
    return 0;
  }

  /** Ended attempts per time bucket (./series.ts). */
  async series(p: AttemptSeriesQuery): Promise<AttemptSeries> {
    return attemptSeries(this.db, p);
  }

  async outcomes(p: { sinceMs: number }): Promise<AttemptOutcomeCount[]> {
    const cutoff = this.db.now().getTime() - p.sinceMs;
    const groups = new Map<string, AttemptOutcomeCount>();
    for (const a of this.db.attempts.values()) {
      if (a.outcome === 'running' || a.finishedAt === null || a.finishedAt.getTime() < cutoff) continue;
      const j = this.db.jobs.get(a.jobId);
      if (!j) continue;
      const k = JSON.stringify([j.type, j.queue, a.outcome]);
      let g = groups.get(k);
      if (!g) groups.set(k, (g = { type: j.type, queue: j.queue, outcome: a.outcome, count: 0 }));
      g.count++;
    }
    return [...groups.values()];
  }
}
