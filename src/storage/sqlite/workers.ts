/** Worker processes and their heartbeats on SQLite: one statement each, in its own write. */
import type { WorkerInfo, WorkerRow, WorkerStore } from '../../core/storage.js';
import type { SqliteDb } from './db.js';
import { toWorkerRow } from './sql.js';
import type { SqlWorker } from './sql.js';

const WORKER_SQL = {
  upsert: `-- leasehold workers.upsert: register (or re-register) a worker; both clocks start now
    INSERT INTO {p}workers (id, host, pid, version, queues, types, started_at, heartbeat_at)
    VALUES (@id, @host, @pid, @version, @queues, @types, @now, @now)
    ON CONFLICT (id) DO UPDATE SET host = excluded.host, pid = excluded.pid,
      version = excluded.version, queues = excluded.queues, types = excluded.types,
      started_at = excluded.started_at, heartbeat_at = excluded.heartbeat_at`,
  heartbeat: `-- leasehold workers.heartbeat: a worker says it is alive
    UPDATE {p}workers SET heartbeat_at = @now WHERE id = @id`,
  remove: `-- leasehold workers.remove: a worker leaves
    DELETE FROM {p}workers WHERE id = ?`,
  list: `-- leasehold workers.list: every registered worker, oldest first
    SELECT * FROM {p}workers ORDER BY started_at, id`,
  prune: `-- leasehold workers.prune: forget workers silent since before @cutoff
    DELETE FROM {p}workers WHERE heartbeat_at < @cutoff`,
} as const;

export class SqliteWorkers implements WorkerStore {
  constructor(private readonly db: SqliteDb) {}

  async register(w: WorkerInfo): Promise<void> {
    const now = this.db.now();
    const row = { id: w.id, host: w.host, pid: w.pid, version: w.version, queues: w.queues === null ? null : JSON.stringify(w.queues), types: JSON.stringify(w.types), now };
    this.db.write(() => this.db.stmt(WORKER_SQL.upsert).run(row));
  }

  async heartbeat(p: { id: string }): Promise<void> {
    const now = this.db.now();
    this.db.write(() => this.db.stmt(WORKER_SQL.heartbeat).run({ id: p.id, now }));
  }

  async remove(p: { id: string }): Promise<void> {
    this.db.write(() => this.db.stmt(WORKER_SQL.remove).run(p.id));
  }

  async list(): Promise<WorkerRow[]> {
    return this.db.read(() => this.db.stmt(WORKER_SQL.list).all() as SqlWorker[]).map(toWorkerRow);
  }

  async prune(p: { silentForMs: number }): Promise<number> {
    const cutoff = this.db.now() - p.silentForMs;
    return this.db.write(() => this.db.stmt(WORKER_SQL.prune).run({ cutoff }).changes);
  }
}
