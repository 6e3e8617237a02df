/**
 * The effect ledger behind `ctx.once` on PostgreSQL: reserve an effect under the job's lease,
 * record it done (one at a time, or a batch through the functions of migration 7), list and
 * count. Plain functions over the pool that PostgresStorage delegates to; the SQL is in
 * postgres-sql-effects.ts (writes) and postgres-sql-admin.ts (listing). A job id that is not
 * one holds no lease.
 */
import { assertDistinctEffectKeys } from '../../core/effects.js';
import { TransientStorageError } from '../../core/errors.js';
import type { EffectParams, EffectRecord, EffectReservation, EffectRow } from '../../core/storage.js';
import { prepared, query, type Prepared } from './postgres-db.js';
import { jsonParam, toEffectRow, validId, type Queryable } from './postgres-rows.js';
import type { adminSql } from './postgres-sql-admin.js';
import type { effectsSql } from './postgres-sql-effects.js';

type AdminSql = ReturnType<typeof adminSql>;
type EffectsSql = ReturnType<typeof effectsSql>;

/**
 * The two writes of every `ctx.once`, and the read after a reserve that did not land, as named
 * prepared statements: each is one commit of its own, and parsing and planning the reserve's
 * CTE anew each time was a good part of the server's work per call.
 */
export interface EffectStatements {
  reserveEffect: Prepared;
  getEffect: Prepared;
  completeEffect: Prepared;
  reserveEffects: Prepared;
  getEffects: Prepared;
  completeEffects: Prepared;
}

export function effectStatements(sql: EffectsSql): EffectStatements {
  const names = ['reserveEffect', 'getEffect', 'completeEffect', 'reserveEffects', 'getEffects', 'completeEffects'] as const;
  return Object.fromEntries(names.map((n) => [n, prepared(sql[n])])) as unknown as EffectStatements;
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

/**
 * Several reserves in one statement (one commit). An item whose row was neither reserved nor
 * found afterwards (it changed in between) is asked again alone, as reserveEffect retries.
 */
export async function reserveEffects(db: Queryable, sql: EffectStatements, ps: readonly EffectParams[]): Promise<EffectReservation[]> {
  assertDistinctEffectKeys(ps, 'reserveEffects');
  const out: (EffectReservation | undefined)[] = ps.map((p) => (validId(p.jobId) === null ? { state: 'lost' } : undefined));
  const asked = ps.flatMap((p, i) => (out[i] === undefined ? [{ p, i }] : []));
  if (asked.length === 0) return out as EffectReservation[];
  const rows = await query(db, 'reserveEffects', sql.reserveEffects, [asked.map((a) => a.p.key), asked.map((a) => validId(a.p.jobId)), asked.map((a) => a.p.leaseToken)]);
  const seen: { p: EffectParams; i: number }[] = [];
  for (const r of rows) {
    const a = asked[Number(r.ord) - 1]!;
    if (!r.held) out[a.i] = { state: 'lost' };
    else if (r.reserved) out[a.i] = { state: 'reserved' };
    else seen.push(a);
  }
  if (seen.length > 0) {
    const effects = new Map((await query(db, 'reserveEffects', sql.getEffects, [seen.map((a) => a.p.key)])).map((e) => [e.effect_key as string, e]));
    for (const a of seen) {
      const e = effects.get(a.p.key);
      if (e?.state === 'done') out[a.i] = { state: 'done', result: e.result ?? null };
      else if (e?.state === 'pending') out[a.i] = { state: 'busy' };
      else out[a.i] = await reserveEffect(db, sql, a.p);
    }
  }
  return out as EffectReservation[];
}

/** Several records in one statement (one commit); true where this lease's pending row became done. */
export async function completeEffects(db: Queryable, sql: EffectStatements, ps: readonly EffectRecord[]): Promise<boolean[]> {
  assertDistinctEffectKeys(ps, 'completeEffects');
  const valid = ps.filter((p) => validId(p.jobId) !== null);
  if (valid.length === 0) return ps.map(() => false);
  const params = [valid.map((p) => p.key), valid.map((p) => validId(p.jobId)), valid.map((p) => p.leaseToken), valid.map((p) => jsonParam(p.result))];
  const done = new Set((await query(db, 'completeEffects', sql.completeEffects, params)).map((r) => r.done_key as string));
  return ps.map((p) => validId(p.jobId) !== null && done.has(p.key));
}

export async function completeEffect(db: Queryable, sql: EffectStatements, p: EffectRecord): Promise<boolean> {
  const jobId = validId(p.jobId);
  if (jobId === null) return false;
  return (await query(db, 'completeEffect', sql.completeEffect, [p.key, jobId, p.leaseToken, jsonParam(p.result)])).length > 0;
}

export async function getEffect(db: Queryable, sql: AdminSql, key: string): Promise<EffectRow | null> {
  const [row] = await query(db, 'getEffect', sql.effectByKey, [key]);
  return row ? toEffectRow(row) : null;
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
