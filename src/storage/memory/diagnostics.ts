/**
 * What `leasehold doctor` asks of the in-memory storage: no indexes and no settings (nothing to
 * misconfigure), its tables' row counts, and the jobs a prune would delete.
 */
import type { DiagnosticsStore, PrunableQuery, StorageFacts } from '../../core/storage.js';
import type { MemoryDb } from './db.js';
import { heldByChild } from './workflows.js';

export class MemoryDiagnostics implements DiagnosticsStore {
  constructor(private readonly db: MemoryDb) {}

  async inspect(): Promise<StorageFacts> {
    this.db.now();
    const tables = Object.entries({ jobs: this.db.jobs, job_attempts: this.db.attempts, effects: this.db.effects, workers: this.db.workers, schedules: this.db.schedules, locks: this.db.locks, alert_states: this.db.alerts });
    return { indexes: [], tables: tables.map(([name, t]) => ({ name, rows: t.size, bytes: null, estimated: false })), databaseBytes: null, settings: [] };
  }

  /** The rows jobs.prune would pick, counted without its limit. */
  async prunable(p: PrunableQuery): Promise<number> {
    const cutoff = this.db.now().getTime() - p.olderThanMs;
    let n = 0;
    for (const j of this.db.jobs.values()) if (p.statuses.includes(j.status) && j.finishedAt !== null && j.finishedAt.getTime() < cutoff && !heldByChild(this.db, j)) n++;
    return n;
  }
}
