/** What the in-memory queues hold: jobs counted by queue, type and status. */
import type { JobStatus } from '../../core/status.js';
import type { JobCount, QueueStore } from '../../core/storage.js';
import type { MemoryDb } from './db.js';

const DUE: readonly JobStatus[] = ['queued', 'failed'];

export class MemoryQueues implements QueueStore {
  constructor(private readonly db: MemoryDb) {}

  /** One row per (queue, type, status); `due` counts due statuses with run_at <= now (else 0). */
  async counts(): Promise<JobCount[]> {
    const nowMs = this.db.now().getTime();
    const groups = new Map<string, JobCount>();
    for (const j of this.db.jobs.values()) {
      const k = JSON.stringify([j.queue, j.type, j.status]);
      let g = groups.get(k);
      if (!g) groups.set(k, (g = { queue: j.queue, type: j.type, status: j.status, count: 0, due: 0 }));
      g.count++;
      if (DUE.includes(j.status) && j.runAt.getTime() <= nowMs) g.due++;
    }
    return [...groups.values()];
  }
}
