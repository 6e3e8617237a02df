/** Every attempt's history row, kept in memory as its own row from claim to finish. */
import type { AttemptRow, AttemptStore } from '../../core/storage.js';
import { attemptOut, type MemoryDb } from './db.js';

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
}
