/**
 * The effect ledger's batches on MySQL/MariaDB: the `ctx.once` calls of a worker's concurrent
 * attempts, each item answered as the one-key calls of mysql-effects.ts would answer it.
 *
 * Reserves: one transaction for the batch's new keys. Its jobs are share-locked in id order (as
 * finishes and heartbeats lock them); a plain read finds which keys the ledger holds (no locking
 * read of a missing key: InnoDB would answer it with a gap lock, see mysql-effects.ts); one
 * insert adds the new keys of held leases in key order (as every batch inserts them), sent with
 * the COMMIT. A key the read finds done is answered from that read (done is final: no write
 * undoes it); other keys already in the ledger (pending) go the one-key way. A key another batch
 * inserted meanwhile fails the insert (nothing of ours lands), and the batch is asked one key at
 * a time.
 *
 * Records: one UPDATE for the batch (a multi-table UPDATE costs the optimizer about 0.3 ms,
 * more than its work, so one per key made a batch of 25 take 9 ms instead of under 2). When not
 * every record applied, it is rolled back and each goes alone, in one transaction, so that each
 * gets its own answer.
 */
import { assertDistinctEffectKeys } from '../../core/effects.js';
import { TransientStorageError } from '../../core/errors.js';
import type { EffectParams, EffectRecord, EffectReservation } from '../../core/storage.js';
import type { Queryable, ResultHeader } from './mysql-db.js';
import { exec, fromJsonText, idParam, run, toJsonText } from './mysql-db.js';
import { ER_DUP_ENTRY, reserveSeenEffectOn } from './mysql-effects.js';
import type { MysqlSql } from './mysql-sql.js';
import { runLast } from './mysql-tx.js';

/** What the batch functions need from the storage. */
export interface BatchDeps {
  sql: MysqlSql;
  tx: <T>(what: string, fn: (c: Queryable) => Promise<T>, readCommitted?: boolean) => Promise<T>;
  reserveEffect: (p: EffectParams) => Promise<EffectReservation>;
  /** the effect_key column's collation (read once per storage; see completeEffects' SQL) */
  keyCollation: () => Promise<string>;
}

/** Reads the effect_key column's collation; a name only, as it goes into the statement's text. */
export async function readKeyCollation(c: Queryable, sql: MysqlSql): Promise<string> {
  const name = String((await run<{ c: unknown }[]>(c, sql.effectKeyCollation))[0]?.c ?? '');
  if (!/^[a-z0-9_]+$/.test(name)) throw new TransientStorageError(`mysql: the effects table's key collation "${name}" is not one leasehold knows; migrate first`);
  return name;
}

/** The items whose job id can be one, with their position. */
function withIds<P extends EffectParams>(ps: readonly P[]): { i: number; p: P; id: bigint }[] {
  return ps.flatMap((p, i) => {
    const id = idParam(p.jobId);
    return id === null ? [] : [{ i, p, id }];
  });
}

export async function reserveEffects(d: BatchDeps, ps: readonly EffectParams[]): Promise<EffectReservation[]> {
  assertDistinctEffectKeys(ps, 'reserveEffects');
  const asked = withIds(ps);
  const out: EffectReservation[] = ps.map(() => ({ state: 'lost' }));
  if (asked.length === 0) return out;
  let decided: BatchReserve[];
  try {
    decided = await d.tx('reserveEffects', (c) => reserveNewEffectsOn(c, d.sql, asked.map((a) => [a.p, a.id])));
  } catch (e) {
    if ((e as { errno?: unknown }).errno !== ER_DUP_ENTRY) throw e;
    return Promise.all(ps.map((p) => d.reserveEffect(p)));
  }
  await Promise.all(
    asked.map(async (a, k) => {
      const r = decided[k]!;
      out[a.i] = r === 'seen' ? await d.tx('reserveEffect', (c) => reserveSeenEffectOn(c, d.sql, a.p, a.id)) : typeof r === 'string' ? { state: r } : r;
    }),
  );
  return out;
}

export async function completeEffects(d: BatchDeps, ps: readonly EffectRecord[]): Promise<boolean[]> {
  assertDistinctEffectKeys(ps, 'completeEffects');
  const asked = withIds(ps);
  const out = ps.map(() => false);
  if (asked.length === 0) return out;
  const items = asked.map((a): [EffectRecord, bigint] => [a.p, a.id]);
  const collation = await d.keyCollation();
  try {
    await d.tx('completeEffects', (c) => completeAllEffectsOn(c, d.sql.completeEffects(collation), items), true);
    for (const a of asked) out[a.i] = true;
    return out;
  } catch (e) {
    if (!(e instanceof PartialRecord)) throw e;
  }
  const recorded = await d.tx('completeEffects', (c) => completeEffectsOn(c, d.sql, items));
  asked.forEach((a, k) => (out[a.i] = recorded[k]!));
  return out;
}

/** What a batch's transaction decided per item: lost, reserved, done, or seen (pending in the ledger already). */
type BatchReserve = 'lost' | 'reserved' | 'seen' | { state: 'done'; result: unknown };

/**
 * The new keys of a batch in one transaction (see the header). Items are [params, job id].
 */
async function reserveNewEffectsOn(c: Queryable, sql: MysqlSql, items: readonly [EffectParams, bigint][]): Promise<BatchReserve[]> {
  const keys = items.map(([p]) => p.key);
  const seen = new Map((await run<{ effect_key: string; state: string; result: unknown }[]>(c, sql.effectKeysSeen, [keys])).map((r) => [String(r.effect_key), r]));
  const held = new Map((await run<{ id: unknown; lease_token: string }[]>(c, sql.leasesHeld, [[...new Set(items.map(([, id]) => id))]])).map((r) => [String(r.id), r.lease_token]));
  const out = items.map(([p, id]): BatchReserve => {
    if (held.get(String(id)) !== p.leaseToken) return 'lost';
    const e = seen.get(p.key);
    if (e === undefined) return 'reserved';
    return e.state === 'done' ? { state: 'done', result: fromJsonText(e.result) } : 'seen';
  });
  const fresh = items.filter((_, i) => out[i] === 'reserved').sort(([a], [b]) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  if (fresh.length > 0) await runLast(c, [{ sql: sql.reserveNewEffects, values: [JSON.stringify(fresh.map(([p, id]) => [p.key, String(id), p.leaseToken]))] }]);
  return out;
}

/** Items of a batch in job id order (the order finishes and heartbeats lock jobs in), then key order. */
function byJobId<T extends { key: string }>(items: readonly [T, bigint][]): [T, bigint, number][] {
  const key = (a: T, b: T): number => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);
  return items.map(([p, id], i): [T, bigint, number] => [p, id, i]).sort((a, b) => (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : key(a[0], b[0])));
}

/** Not every record of a batch applied: the batch's statement is rolled back and each is asked alone. */
class PartialRecord extends Error {}

/** The records of a batch in one statement; throws PartialRecord unless every one applied. */
async function completeAllEffectsOn(c: Queryable, statement: string, items: readonly [EffectRecord, bigint][]): Promise<void> {
  const rows = byJobId(items).map(([p, id]) => [p.key, String(id), p.leaseToken, toJsonText(p.result)]);
  if ((await exec(c, statement, [JSON.stringify(rows)])).affectedRows !== items.length) throw new PartialRecord();
}

/** The records of a batch, each the one-key update, in job id order; sent with the COMMIT. */
async function completeEffectsOn(c: Queryable, sql: MysqlSql, items: readonly [EffectRecord, bigint][]): Promise<boolean[]> {
  const order = byJobId(items);
  const stmts = order.map(([p, id]) => ({ sql: sql.completeEffect, values: [p.key, toJsonText(p.result), id, p.leaseToken] }));
  const results = (await runLast(c, stmts)) as ResultHeader[];
  const out = items.map(() => false);
  order.forEach(([, , i], k) => (out[i] = (results[k]?.affectedRows ?? 0) > 0));
  return out;
}
