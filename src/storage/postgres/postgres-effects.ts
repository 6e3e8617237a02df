/**
 * The effect ledger behind `ctx.once` on PostgreSQL: reserve an effect under the job's lease,
 * record it done, list and count. Plain functions over the pool that PostgresStorage delegates
 * to; the SQL is in postgres-sql-admin.ts. A job id that is not one holds no lease.
 */
import { TransientStorageError } from '../../core/errors.js';
import type { EffectParams, EffectReservation, EffectRow } from '../../core/storage.js';
import { prepared, query, type Prepared } from './postgres-db.js';
import { jsonParam, toEffectRow, validId, type Queryable } from './postgres-rows.js';
import type { adminSql } from './postgres-sql-admin.js';

type AdminSql = ReturnType<typeof adminSql>;

/**
 * The two writes of every `ctx.once`, and the read after a reserve that did not land, as named
 * prepared statements: each is one commit of its own, and parsing and planning the reserve's
 * CTE anew each time was a good part of the server's work per call.
 */
export interface EffectStatements {
  reserveEffect: Prepared;
  getEffect: Prepared;
  completeEffect: Prepared;
}

export function effectStatements(sql: AdminSql): EffectStatements {
  return { reserveEffect: prepared(sql.reserveEffect), getEffect: prepared(sql.getEffect), completeEffect: prepared(sql.completeEffect) };
}

export async function reserveEffect(db: Queryable, sql: EffectStatements, p: EffectParams): Promise<EffectReservation> {
  const jobId = validId(p.jobId);
  if (jobId === null) return { state: 'lost' };
  for (let tries = 0; tries < 5; tries++) {
    const [r] = await query(db, 'reserveEffect', sql.reserveEffect, [p.key, jobId, p.leaseToken]);
    if (!r?.held) return { state: 'lost' };
    if (r.reserved) return { state: 'reserved' };
    const [e] = await query(db, 'reserveEffect', sql.getEffect, [p.key]);
    if (e?.state === 'done') return { state: 'done', result: e.result ?? null };
    // pending under another job that still runs under its lease: that attempt may be doing it
    if (e?.state === 'pending') return { state: 'busy' };
  }
  throw new TransientStorageError(`postgres: effect "${p.key}" kept changing during reserveEffect; retry`);
}

export async function completeEffect(db: Queryable, sql: EffectStatements, p: EffectParams & { result: unknown }): Promise<boolean> {
  const jobId = validId(p.jobId);
  if (jobId === null) return false;
  return (await query(db, 'completeEffect', sql.completeEffect, [p.key, jobId, p.leaseToken, jsonParam(p.result)])).length > 0;
}

export async function listEffects(db: Queryable, sql: AdminSql, p: { jobId?: string; limit: number }): Promise<EffectRow[]> {
  const jobId = p.jobId === undefined ? null : validId(p.jobId);
  if ((p.jobId !== undefined && jobId === null) || p.limit <= 0) return [];
  return (await query(db, 'listEffects', sql.listEffects, [jobId, p.limit])).map(toEffectRow);
}

export async function countEffects(db: Queryable, sql: AdminSql): Promise<number> {
  const [row] = await query(db, 'countEffects', sql.countEffects);
  return Number(row?.n ?? 0);
}
