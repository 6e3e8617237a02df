/**
 * The effect ledger (ctx.once) and the worker registry of MemoryStorage, as plain synchronous
 * functions over the tables: each call is one atomic step, like one SQL transaction.
 */
import type { EffectParams, EffectRecord, EffectReservation, EffectRow, WorkerInfo, WorkerRow } from '../../core/storage.js';
import type { MemoryTables } from './memory-state.js';
import { effectOut, toJson, workerOut } from './memory-state.js';

function holdsLease(t: MemoryTables, p: EffectParams): boolean {
  const job = t.jobs.get(p.jobId);
  return job !== undefined && job.status === 'running' && job.leaseToken === p.leaseToken;
}

/** 'lost' unless the job runs under this token; otherwise reserve, report done, or take over. */
export function reserveEffect(t: MemoryTables, p: EffectParams, now: Date): EffectReservation {
  if (!holdsLease(t, p)) return { state: 'lost' };
  const row = t.effects.get(p.key);
  if (row === undefined) {
    t.effects.set(p.key, {
      key: p.key,
      jobId: p.jobId,
      leaseToken: p.leaseToken,
      state: 'pending',
      resultJson: null,
      createdAt: now,
      doneAt: null,
      seq: t.effectSeq(),
    });
    return { state: 'reserved' };
  }
  if (row.state === 'done') return { state: 'done', result: effectOut(row).result };
  if (row.leaseToken !== p.leaseToken) {
    // pending under another token: busy while that attempt still runs, else take it over
    const holder = t.jobs.get(row.jobId);
    if (holder !== undefined && holder.status === 'running' && holder.leaseToken === row.leaseToken) return { state: 'busy' };
  }
  row.jobId = p.jobId;
  row.leaseToken = p.leaseToken;
  return { state: 'reserved' };
}

/** Pending row under this (still held) lease → done with its result. */
export function completeEffect(t: MemoryTables, p: EffectRecord, now: Date): boolean {
  if (!holdsLease(t, p)) return false;
  const row = t.effects.get(p.key);
  if (row === undefined || row.state !== 'pending' || row.leaseToken !== p.leaseToken) return false;
  row.state = 'done';
  row.resultJson = toJson(p.result);
  row.doneAt = now;
  return true;
}

/** The effect under exactly this key, or null. */
export function getEffect(t: MemoryTables, key: string): EffectRow | null {
  const row = t.effects.get(key);
  return row === undefined ? null : effectOut(row);
}

/** Newest first. */
export function listEffects(t: MemoryTables, p: { jobId?: string; limit: number }): EffectRow[] {
  return [...t.effects.values()]
    .filter((e) => p.jobId === undefined || e.jobId === p.jobId)
    .sort((a, b) => b.seq - a.seq)
    .slice(0, Math.max(0, p.limit))
    .map(effectOut);
}

/** Insert or replace: a worker re-registering under its id starts afresh. */
export function registerWorker(t: MemoryTables, info: WorkerInfo, now: Date): void {
  t.workers.set(
    info.id,
    workerOut({
      id: info.id,
      host: info.host,
      pid: info.pid,
      version: info.version,
      queues: info.queues,
      types: info.types,
      startedAt: now,
      heartbeatAt: now,
    }),
  );
}

export function heartbeatWorker(t: MemoryTables, id: string, now: Date): void {
  const w = t.workers.get(id);
  if (w) w.heartbeatAt = now;
}

/** Oldest registration first. */
export function listWorkers(t: MemoryTables): WorkerRow[] {
  return [...t.workers.values()].sort((a, b) => a.startedAt.getTime() - b.startedAt.getTime() || (a.id < b.id ? -1 : 1)).map(workerOut);
}

export function pruneWorkers(t: MemoryTables, silentForMs: number, now: Date): number {
  const cutoff = now.getTime() - silentForMs;
  let n = 0;
  for (const [id, w] of t.workers) {
    if (w.heartbeatAt.getTime() < cutoff) {
      t.workers.delete(id);
      n++;
    }
  }
  return n;
}
