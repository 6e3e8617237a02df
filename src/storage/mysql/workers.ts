/** Worker processes and their heartbeats, on MySQL/MariaDB. */
import type { WorkerInfo, WorkerRow, WorkerStore } from '../../core/storage.js';
import { type Db, exec, run } from './db.js';
import { NOW, type Row, type Tables, fromJsonText, micros, parseUtc } from './sql.js';
import { SqlAggregate } from '../aggregates.js';

export function workersSql(t: Tables) {
  return {
    registerWorker: `-- leasehold registerWorker: register (or re-register) a worker; started and seen now
      INSERT INTO ${t.workers} (id, host, pid, version, queues, types, started_at, heartbeat_at)
      VALUES (?, ?, ?, ?, ?, ?, ${NOW}, ${NOW})
      ON DUPLICATE KEY UPDATE host = VALUES(host), pid = VALUES(pid), version = VALUES(version),
        queues = VALUES(queues), types = VALUES(types), started_at = VALUES(started_at), heartbeat_at = VALUES(heartbeat_at)`,
    heartbeatWorker: `-- leasehold heartbeatWorker: a worker is still alive
      UPDATE ${t.workers} SET heartbeat_at = ${NOW} WHERE id = ?`,
    removeWorker: `-- leasehold removeWorker: a worker left
      DELETE FROM ${t.workers} WHERE id = ?`,
    listWorkers: `-- leasehold listWorkers: every registered worker, oldest first
      SELECT id, host, pid, version, queues, types, started_at, heartbeat_at FROM ${t.workers} ORDER BY started_at, id`,
    pruneWorkers: `-- leasehold pruneWorkers: forget workers silent for longer than this (µs)
      DELETE FROM ${t.workers} WHERE heartbeat_at < ${NOW} - INTERVAL ? MICROSECOND`,
  };
}

export class MysqlWorkers extends SqlAggregate<Db, ReturnType<typeof workersSql>> implements WorkerStore {
  constructor(db: Db) {
    super(db, workersSql(db.t));
  }

  async register(w: WorkerInfo): Promise<void> {
    const values = [w.id, w.host, w.pid, w.version, w.queues === null ? null : JSON.stringify(w.queues), JSON.stringify(w.types)];
    await this.db.one('registerWorker', (c) => exec(c, this.sql.registerWorker, values));
  }

  async heartbeat(p: { id: string }): Promise<void> {
    await this.db.one('heartbeatWorker', (c) => exec(c, this.sql.heartbeatWorker, [p.id]));
  }

  async remove(p: { id: string }): Promise<void> {
    await this.db.one('removeWorker', (c) => exec(c, this.sql.removeWorker, [p.id]));
  }

  async list(): Promise<WorkerRow[]> {
    return (await this.db.one('listWorkers', (c) => run(c, this.sql.listWorkers))).map(toWorkerRow);
  }

  async prune(p: { silentForMs: number }): Promise<number> {
    return (await this.db.one('pruneWorkers', (c) => exec(c, this.sql.pruneWorkers, [micros(p.silentForMs)]))).affectedRows;
  }
}

function toWorkerRow(r: Row): WorkerRow {
  return {
    id: String(r.id), host: String(r.host), pid: Number(r.pid), version: String(r.version),
    queues: (fromJsonText(r.queues) as string[] | undefined) ?? null, types: JSON.parse(String(r.types)) as string[],
    startedAt: parseUtc(r.started_at), heartbeatAt: parseUtc(r.heartbeat_at),
  };
}
