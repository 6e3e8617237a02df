/**
 * The metrics read from the database, filled at scrape time from the sampler's current sample
 * (db-sampler.ts). A process that is not the cluster's sampler shows them empty, so summing
 * over instances counts each job once.
 */
import { Gauge } from 'prom-client';
import type { Registry } from 'prom-client';
import type { DbSample, DbSampler } from './db-sampler.js';

export function registerDbMetrics(registry: Registry, sampler: DbSampler): void {
  const registers = [registry];
  /** a gauge cleared and refilled from the sample at every scrape */
  const fromSample = <L extends string>(name: string, help: string, labelNames: readonly L[], fill: (g: Gauge<L>, s: DbSample) => void) =>
    new Gauge<L>({
      name,
      help,
      labelNames,
      registers,
      async collect() {
        const s = await sampler.sample();
        this.reset();
        if (s) fill(this, s);
      },
    });

  fromSample('leasehold_jobs', 'Jobs in the database by queue, type and status (sampled); a status past the count cap is one series with empty queue and type, estimated', ['queue', 'type', 'status'], (g, s) => {
    for (const c of s.counts) g.set({ queue: c.queue, type: c.type, status: c.status }, c.count);
    // grouping a status of more jobs than the cap would read them all: its total alone, estimated
    for (const t of s.totals) if (!t.exact) g.set({ queue: '', type: '', status: t.status }, t.count);
  });
  fromSample('leasehold_queue_due_jobs', 'Jobs due now (queued or failed, run_at passed) per queue (sampled)', ['queue'], (g, s) => {
    for (const [queue, h] of queueHealth(s)) g.set({ queue }, h.due);
  });
  fromSample('leasehold_queue_running_jobs', 'Jobs running per queue (sampled)', ['queue'], (g, s) => {
    for (const [queue, h] of queueHealth(s)) g.set({ queue }, h.running);
  });
  fromSample('leasehold_queue_oldest_due_age_seconds', 'How long the oldest due job of each queue has been waiting, 0 when none is due (sampled; alert on it)', ['queue'], (g, s) => {
    for (const [queue, h] of queueHealth(s)) g.set({ queue }, h.oldestDueAgeMs / 1000);
  });
  fromSample('leasehold_workers_live', 'Workers whose heartbeat is less than a minute old (sampled)', [], (g, s) => g.set(s.liveWorkers));
  fromSample('leasehold_db_sample_age_seconds', 'Age of the database sample shown; absent on processes that do not sample', [], (g, s) => g.set((Date.now() - s.takenAt) / 1000));
  new Gauge({
    name: 'leasehold_db_sampler',
    help: "1 when this process samples the database for the cluster (it holds the lock 'leasehold:metrics-sampler')",
    registers,
    async collect() {
      await sampler.sample();
      this.set(sampler.sampling ? 1 : 0);
    },
  });
}

/** Every queue the sample knows (a queue with nothing due or running shows zeros, not a gap). */
function queueHealth(s: DbSample): Map<string, { due: number; running: number; oldestDueAgeMs: number }> {
  const out = new Map<string, { due: number; running: number; oldestDueAgeMs: number }>();
  for (const c of s.counts) out.set(c.queue, { due: 0, running: 0, oldestDueAgeMs: 0 });
  for (const h of s.queues) out.set(h.queue, { due: h.due, running: h.running, oldestDueAgeMs: h.oldestDueAgeMs ?? 0 });
  return out;
}
