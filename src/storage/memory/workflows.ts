/** Results and progress in memory: each call one synchronous step, fenced like the SQL adapters. */
import type { ProgressParams, WorkflowStore } from '../../core/storage.js';
import type { MemoryDb } from './db.js';

export class MemoryWorkflows implements WorkflowStore {
  constructor(private readonly db: MemoryDb) {}

  async progress(p: ProgressParams): Promise<boolean> {
    const now = this.db.now();
    const j = this.db.jobs.get(p.id);
    if (!j || j.status !== 'running' || j.leaseToken !== p.leaseToken) return false;
    j.progressJson = { json: p.value, note: p.note, at: now };
    j.updatedAt = now;
    return true;
  }
}
