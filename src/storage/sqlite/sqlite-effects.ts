/**
 * The effect ledger (ctx.once) and the workers table on SQLite. Plain functions over a
 * connection and a "now" (the process clock, see sqlite-storage.ts); SqliteStorage delegates.
 */
import { assertDistinctEffectKeys } from '../../core/effects.js';
import type { EffectParams, EffectRecord, EffectReservation, EffectRow, WorkerInfo, WorkerRow } from '../../core/storage.js';
import type { SqliteDb } from './sqlite-db.js';
import { jsonOrNull, parseJsonOrUndefined, toEffectRow, toSqlId, toWorkerRow } from './sqlite-rows.js';
import type { SqlEffect, SqlWorker } from './sqlite-rows.js';
import { EFFECT_SQL, WORKER_SQL } from './sqlite-sql.js';

/** Fenced on the job's lease; one IMMEDIATE transaction. */
export function reserveEffect(c: SqliteDb, now: number, p: EffectParams): EffectReservation {
  return c.write(() => reserveIn(c, now, p));
}

/**
 * Several reserves in one IMMEDIATE transaction: one commit (a WAL append) for the batch
 * instead of one each, and each answered as reserveEffect would have answered it alone.
 */
export function reserveEffects(c: SqliteDb, now: number, ps: readonly EffectParams[]): EffectReservation[] {
  assertDistinctEffectKeys(ps, 'reserveEffects');
  return c.write(() => ps.map((p) => reserveIn(c, now, p)));
}

/** One reserve, inside the caller's write transaction. */
function reserveIn(c: SqliteDb, now: number, p: EffectParams): EffectReservation {
  const jobId = toSqlId(p.jobId);
  if (jobId === null) return { state: 'lost' };
  if (!c.stmt(EFFECT_SQL.leaseHolds).get({ jobId, leaseToken: p.leaseToken })) return { state: 'lost' };
  const row = c.stmt(EFFECT_SQL.get).get(p.key) as SqlEffect | undefined;
  if (!row) {
    c.stmt(EFFECT_SQL.insert).run({ key: p.key, jobId, leaseToken: p.leaseToken, now });
    return { state: 'reserved' };
  }
  if (row.state === 'done') return { state: 'done', result: parseJsonOrUndefined(row.result) };
  // pending under another token: take over if that attempt is gone; busy while it still runs
  if (row.lease_token !== p.leaseToken && c.stmt(EFFECT_SQL.takeOver).run({ key: p.key, jobId, leaseToken: p.leaseToken }).changes === 0) {
    return { state: 'busy' };
  }
  return { state: 'reserved' };
}

export function completeEffect(c: SqliteDb, now: number, p: EffectRecord): boolean {
  return c.write(() => completeIn(c, now, p));
}

/** Several records in one IMMEDIATE transaction, each answered as completeEffect would have. */
export function completeEffects(c: SqliteDb, now: number, ps: readonly EffectRecord[]): boolean[] {
  assertDistinctEffectKeys(ps, 'completeEffects');
  return c.write(() => ps.map((p) => completeIn(c, now, p)));
}

/** One record, inside the caller's write transaction. */
function completeIn(c: SqliteDb, now: number, p: EffectRecord): boolean {
  const jobId = toSqlId(p.jobId);
  if (jobId === null) return false;
  if (!c.stmt(EFFECT_SQL.leaseHolds).get({ jobId, leaseToken: p.leaseToken })) return false;
  return c.stmt(EFFECT_SQL.complete).run({ key: p.key, leaseToken: p.leaseToken, result: jsonOrNull(p.result), now }).changes > 0;
}

export function getEffect(c: SqliteDb, key: string): EffectRow | null {
  const row = c.read(() => c.stmt(EFFECT_SQL.get).get(key) as SqlEffect | undefined);
  return row === undefined ? null : toEffectRow(row);
}

export function listEffects(c: SqliteDb, p: { jobId?: string; limit: number }): EffectRow[] {
  let rows: SqlEffect[];
  if (p.jobId === undefined) {
    rows = c.read(() => c.stmt(EFFECT_SQL.listAll).all({ limit: p.limit }) as SqlEffect[]);
  } else {
    const jobId = toSqlId(p.jobId);
    if (jobId === null) return [];
    rows = c.read(() => c.stmt(EFFECT_SQL.listByJob).all({ jobId, limit: p.limit }) as SqlEffect[]);
  }
  return rows.map(toEffectRow);
}

export function countEffects(c: SqliteDb): number {
  return c.read(() => (c.stmt(EFFECT_SQL.count).get() as { n: number }).n);
}

export function registerWorker(c: SqliteDb, now: number, w: WorkerInfo): void {
  c.write(() =>
    c.stmt(WORKER_SQL.upsert).run({
      id: w.id,
      host: w.host,
      pid: w.pid,
      version: w.version,
      queues: w.queues === null ? null : JSON.stringify(w.queues),
      types: JSON.stringify(w.types),
      now,
    }),
  );
}

export function heartbeatWorker(c: SqliteDb, now: number, id: string): void {
  c.write(() => c.stmt(WORKER_SQL.heartbeat).run({ id, now }));
}

export function removeWorker(c: SqliteDb, id: string): void {
  c.write(() => c.stmt(WORKER_SQL.remove).run(id));
}

export function listWorkers(c: SqliteDb): WorkerRow[] {
  return c.read(() => c.stmt(WORKER_SQL.list).all() as SqlWorker[]).map(toWorkerRow);
}

export function pruneWorkers(c: SqliteDb, cutoff: number): number {
  return c.write(() => c.stmt(WORKER_SQL.prune).run({ cutoff }).changes);
}
