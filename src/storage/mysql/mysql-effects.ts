/**
 * The effect ledger behind `ctx.once` on MySQL/MariaDB: reserve an effect under the job's lease
 * and record it done. The SQL is in mysql-sql.ts.
 *
 * The common case, a key never seen, is one autocommitted INSERT … SELECT that lands only while
 * the lease runs its job, and the record is one fenced UPDATE: a round trip each. The reserve
 * used to open with a locking read of the missing key; InnoDB answers that with a gap lock, and
 * two workers holding gap locks on neighbouring new keys deadlock on their inserts (four worker
 * processes lost 192 attempts that way on a slow machine). An INSERT takes no gap lock, so only
 * a key already in the ledger takes the transaction that reads, locks and decides.
 *
 * Batches (the worker's concurrent `ctx.once` calls) are in mysql-effect-batches.ts.
 */
import { TransientStorageError } from '../../core/errors.js';
import type { EffectParams, EffectRecord, EffectReservation } from '../../core/storage.js';
import type { Queryable } from './mysql-db.js';
import { exec, fromJsonText, run, toJsonText } from './mysql-db.js';
import type { MysqlSql } from './mysql-sql.js';

export const ER_DUP_ENTRY = 1062;

/**
 * One statement: insert the key as pending under this lease. 'seen' when the key is in the
 * ledger already (done, pending, or our own row from an earlier try of this statement).
 */
export async function reserveNewEffectOn(c: Queryable, sql: MysqlSql, p: EffectParams, jobId: bigint): Promise<'reserved' | 'lost' | 'seen'> {
  try {
    const res = await exec(c, sql.reserveNewEffect, [p.key, jobId, p.leaseToken]);
    return res.affectedRows > 0 ? 'reserved' : 'lost';
  } catch (e) {
    if ((e as { errno?: unknown }).errno === ER_DUP_ENTRY) return 'seen';
    throw e;
  }
}

/** A key already in the ledger, inside a transaction: done, ours, taken over from a dead lease, or busy. */
export async function reserveSeenEffectOn(c: Queryable, sql: MysqlSql, p: EffectParams, jobId: bigint): Promise<EffectReservation> {
  if ((await run(c, sql.leaseHeld, [jobId, p.leaseToken])).length === 0) return { state: 'lost' };
  const row = (await run(c, sql.effectForUpdate, [p.key]))[0];
  // nothing deletes effects, so the row the insert collided with is there unless removed by hand
  if (!row) throw new TransientStorageError(`mysql: effect "${p.key}" vanished during reserveEffect; retry`);
  if (row.state === 'done') return { state: 'done', result: fromJsonText(row.result) };
  // pending under another token: take over if that attempt is gone; busy while it still runs
  if (row.lease_token !== p.leaseToken && (await exec(c, sql.takeOverEffect, [jobId, p.leaseToken, p.key])).affectedRows === 0) {
    return { state: 'busy' };
  }
  return { state: 'reserved' };
}

/** One fenced statement: this lease's pending reservation becomes done with its result. */
export async function completeEffectOn(c: Queryable, sql: MysqlSql, p: EffectRecord, jobId: bigint): Promise<boolean> {
  const res = await exec(c, sql.completeEffect, [p.key, toJsonText(p.result), jobId, p.leaseToken]);
  return res.affectedRows > 0;
}
