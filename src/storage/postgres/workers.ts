/** Worker processes and their heartbeats: who is alive, for the dashboard and faster rescue. */
import type { WorkerInfo, WorkerRow, WorkerStore } from '../../core/storage.js';
import { type Db } from './db.js';
import { NOW, ms, toWorkerRow } from './sql.js';
import { SqlAggregate } from '../aggregates.js';

function workersSql(s: string) {
  return {
    /** $1 id, $2 host, $3 pid, $4 version, $5 queues json (null = all), $6 types json */
    register: `-- leasehold registerWorker: record (or re-record) a live worker, started and heartbeating now
INSERT INTO ${s}.workers (id, host, pid, version, queues, types, started_at, heartbeat_at)
VALUES ($1::text, $2::text, $3::int, $4::text, $5::jsonb, $6::jsonb, ${NOW}, ${NOW})
ON CONFLICT (id) DO UPDATE SET host = excluded.host, pid = excluded.pid, version = excluded.version,
  queues = excluded.queues, types = excluded.types, started_at = excluded.started_at,
  heartbeat_at = excluded.heartbeat_at`,

    heartbeat: `-- leasehold heartbeatWorker: mark a worker alive now
UPDATE ${s}.workers SET heartbeat_at = ${NOW} WHERE id = $1::text`,

    remove: `-- leasehold removeWorker: forget a worker that stopped
DELETE FROM ${s}.workers WHERE id = $1::text`,

    list: `-- leasehold listWorkers: every registered worker, oldest first
SELECT * FROM ${s}.workers ORDER BY started_at, id`,

    /** $1 silent for ms */
    prune: `-- leasehold pruneWorkers: forget workers silent for longer than $1 ms
WITH gone AS (DELETE FROM ${s}.workers WHERE heartbeat_at < ${NOW} - ${ms('$1::float8')} RETURNING 1)
SELECT count(*)::int AS n FROM gone`,
  };
}

export class PostgresWorkers extends SqlAggregate<Db, ReturnType<typeof workersSql>> implements WorkerStore {
  constructor(db: Db) {
    super(db, workersSql(db.q));
  }

  async register(w: WorkerInfo): Promise<void> {
    await this.db.run('registerWorker', this.sql.register, [w.id, w.host, w.pid, w.version, w.queues ? JSON.stringify(w.queues) : null, JSON.stringify(w.types)]);
  }

  async heartbeat(p: { id: string }): Promise<void> {
    await this.db.run('heartbeatWorker', this.sql.heartbeat, [p.id]);
  }

  async remove(p: { id: string }): Promise<void> {
    await this.db.run('removeWorker', this.sql.remove, [p.id]);
  }

  async list(): Promise<WorkerRow[]> {
    return (await this.db.run('listWorkers', this.sql.list)).map(toWorkerRow);
  }

  async prune(p: { silentForMs: number }): Promise<number> {
    const [row] = await this.db.run('pruneWorkers', this.sql.prune, [p.silentForMs]);
    return Number(row?.n ?? 0);
  }
}
