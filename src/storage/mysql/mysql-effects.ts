/**
 * The effect ledger behind `ctx.once` on MySQL/MariaDB: reserve an effect under the job's lease
 * and record it done. The SQL is in mysql-sql.ts.
 *
 * A reserve is fenced by a locking read of the job row under its lease token, in the same
 * transaction as the insert: a plain read (an autocommitted INSERT … SELECT under READ
 * COMMITTED) sees the job as last committed, and reserved the effect for a lease a sweeper's
 * rescue was taking away. The locking read waits for that rescue and then finds the lease gone.
 * It locks the job row, never the missing key: InnoDB answers a locking read of a missing key
 * with a gap lock, and two workers holding gap locks on neighbouring new keys deadlock on their
 * inserts (four worker processes lost 192 attempts that way on a slow machine). The common case,
 * a key never seen, is two round trips (BEGIN with the locking read, the insert with COMMIT);
 * only a key already in the ledger takes the transaction that reads, locks and decides.
 *
 * Batches (the worker's concurrent `ctx.once` calls) are in mysql-effect-batches.ts.
 */
import { TransientStorageError } from '../../core/errors.js';
import type { EffectParams, EffectRecord, EffectReservation } from '../../core/storage.js';
import type { Queryable } from './mysql-db.js';
import { exec, fromJsonText, run, toJsonText } from './mysql-db.js';
import type { MysqlSql } from './mysql-sql.js';
import { runLast } from './mysql-tx.js';

export const ER_DUP_ENTRY = 1062;

/** What reserveEffect needs from the storage: its transactions. */
type RunTx = <T>(what: string, fn: (c: Queryable) => Promise<T>) => Promise<T>;

/**
 * Reserve one effect: a new key in one transaction, a key already in the ledger in another. A
 * reserve whose connection broke after its COMMIT went out is asked once more: it then finds its
 * own pending row (a seen key under this lease: reserved) or inserts it.
 */
export async function reserveEffectWith(tx: RunTx, sql: MysqlSql, p: EffectParams, jobId: bigint): Promise<EffectReservation> {
  for (let asked = 1; ; asked++) {
    try {
      return await tx('reserveEffect', (c) => reserveNewEffectOn(c, sql, p, jobId));
    } catch (e) {
      if ((e as { errno?: unknown }).errno === ER_DUP_ENTRY) break;
      if (asked > 1 || !(e instanceof TransientStorageError)) throw e;
    }
  }
  return tx('reserveEffect', (c) => reserveSeenEffectOn(c, sql, p, jobId));
}

/**
 * Inside a transaction: share-lock the job under this lease (lost if it no longer runs under
 * it), then insert the key as pending with the COMMIT. A key in the ledger already throws
 * ER_DUP_ENTRY (the transaction is rolled back).
 */
async function reserveNewEffectOn(c: Queryable, sql: MysqlSql, p: EffectParams, jobId: bigint): Promise<EffectReservation> {
  if ((await run(c, sql.leaseHeld, [jobId, p.leaseToken])).length === 0) return { state: 'lost' };
  await runLast(c, [{ sql: sql.reserveNewEffect, values: [p.key, jobId, p.leaseToken] }]);
  return { state: 'reserved' };
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
