/** The in-memory worker registry: who runs, and when each last said so. */
import type { WorkerInfo, WorkerRow, WorkerStore } from '../../core/storage.js';
import { workerOut, type MemoryDb } from './db.js';

export class MemoryWorkers implements WorkerStore {
  constructor(private readonly db: MemoryDb) {}

  /** Insert or replace: a worker re-registering under its id starts afresh. */
  async register(info: WorkerInfo): Promise<void> {
    const now = this.db.now();
    this.db.workers.set(
      info.id,
      workerOut({ id: info.id, host: info.host, pid: info.pid, version: info.version, queues: info.queues, types: info.types, startedAt: now, heartbeatAt: now }),
    );
  }

  async heartbeat(p: { id: string }): Promise<void> {
    const now = this.db.now();
    const w = this.db.workers.get(p.id);
    if (w) w.heartbeatAt = now;
  }

  async remove(p: { id: string }): Promise<void> {
    this.db.now();
    this.db.workers.delete(p.id);
  }

  /** Oldest registration first. */
  async list(): Promise<WorkerRow[]> {
    this.db.now();
    return [...this.db.workers.values()].sort((a, b) => a.startedAt.getTime() - b.startedAt.getTime() || (a.id < b.id ? -1 : 1)).map(workerOut);
  }

  /** Forget workers silent for longer than `silentForMs`; returns how many. */
  async prune(p: { silentForMs: number }): Promise<number> {
    const cutoff = this.db.now().getTime() - p.silentForMs;
    let n = 0;
    for (const [id, w] of this.db.workers) {
      if (w.heartbeatAt.getTime() < cutoff) {
        this.db.workers.delete(id);
        n++;
      }
    }
    return n;
  }
}
