/**
 * The effect ledger behind `ctx.once` on MySQL/MariaDB.
 *
 * A reserve is fenced by a locking read of the job row under its lease token, in the same
 * transaction as the insert: a plain read (an autocommitted INSERT … SELECT under READ
 * COMMITTED) sees the job as last committed, and would reserve for a lease a sweeper's rescue is
 * taking away; the locking read waits for the rescue and finds the lease gone. It locks the job
 * row, never the missing key: InnoDB answers a locking read of a missing key with a gap lock,
 * and two workers holding gap locks on neighbouring new keys deadlock on their inserts. A key
 * never seen is two round trips (BEGIN with the locking read, the insert with COMMIT); only a
 * key already in the ledger takes the transaction that reads, locks and decides.
 *
 * Batches: one transaction for the new keys, its jobs share-locked in id order (as finishes and
 * heartbeats lock them), a plain read of which keys the ledger holds, one insert of the new keys
 * in key order with the COMMIT. A key found done is answered from that read (done is final);
 * one found pending goes the one-key way. A key another batch inserted meanwhile fails the
 * insert, and the batch is asked one key at a time. Records: one UPDATE for the batch (a
 * multi-table UPDATE costs the optimizer more than its work, so one per key is slow); when not
 * every record applied, it is rolled back and each goes alone, so each gets its own answer.
 */
import { assertDistinctEffectKeys } from '../../core/effects.js';
import { TransientStorageError } from '../../core/errors.js';
import type { EffectParams, EffectRecord, EffectReservation, EffectRow, EffectStore } from '../../core/storage.js';
import { type Db, type Queryable, type ResultHeader, exec, isDuplicate, run, runLast } from './db.js';
import { NOW, type Row, type Tables, fromJsonText, idParam, parseUtc, parseUtcOrNull, toJsonText } from './sql.js';
import { SqlAggregate } from '../aggregates.js';

/** A batch's item as JSON_TABLE reads it: key, job id, lease token (and the result, for records). */
const ITEM_COLS = `n FOR ORDINALITY, k LONGTEXT PATH '$[0]', id BIGINT UNSIGNED PATH '$[1]', t VARCHAR(64) PATH '$[2]'`;
const EFFECT_COLS = 'effect_key, job_id, state, result, created_at, done_at';

export function effectsSql(t: Tables) {
  return {
    leaseHeld: `-- leasehold leaseHeld: is this lease still running? Share-locks the job so no finish lands until we commit
      SELECT id FROM ${t.jobs} WHERE id = ? AND lease_token = ? AND status = 'running' LOCK IN SHARE MODE`,
    effectForUpdate: `-- leasehold effectForUpdate: the effect row of a key, locked
      SELECT state, lease_token, result FROM ${t.effects} WHERE effect_key = ? FOR UPDATE`,
    reserveNewEffect: `-- leasehold reserveNewEffect: insert a never-seen key as pending under a lease just share-locked by leaseHeld (a seen key is a duplicate-key error)
      INSERT INTO ${t.effects} (effect_key, job_id, lease_token, state, created_at) VALUES (?, ?, ?, 'pending', ${NOW})`,
    takeOverEffect: `-- leasehold takeOverEffect: take over a pending reservation left by another lease
      UPDATE ${t.effects} e SET e.job_id = ?, e.lease_token = ? WHERE e.effect_key = ? AND e.state = 'pending'
      AND NOT EXISTS (SELECT 1 FROM ${t.jobs} j WHERE j.id = e.job_id AND j.lease_token = e.lease_token AND j.status = 'running')`,
    leasesHeld: `-- leasehold leasesHeld (reserveEffects): which of these jobs run, under which lease; share-locked in id order, as finishes lock them
      SELECT id, lease_token FROM ${t.jobs} WHERE id IN (?) AND status = 'running' ORDER BY id LOCK IN SHARE MODE`,
    effectKeysSeen: `-- leasehold effectKeysSeen (reserveEffects): which of these keys the ledger holds already, and the results of those done (a plain read: no gap locks)
      SELECT effect_key, state, IF(state = 'done', result, NULL) AS result FROM ${t.effects} WHERE effect_key IN (?)`,
    // keys as LONGTEXT: a key too long for the column fails the insert, as the one-key insert
    // does, instead of being cut short by JSON_TABLE (and meeting another key's row)
    reserveNewEffects: `-- leasehold reserveNewEffects: insert never-seen keys as pending under leases just share-locked, in array (key) order
      INSERT INTO ${t.effects} (effect_key, job_id, lease_token, state, created_at)
      SELECT v.k, v.id, v.t, 'pending', ${NOW} FROM JSON_TABLE(?, '$[*]' COLUMNS (${ITEM_COLS})) AS v ORDER BY v.n`,
    effectKeyCollation: `-- leasehold effectKeyCollation (completeEffects): the collation the ledger's keys were created with
      SELECT COLLATION_NAME AS c FROM information_schema.COLUMNS
      WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = '${t.effects}' AND COLUMN_NAME = 'effect_key'`,
    // each key compared in the column's own collation, so the unique key finds its one row
    // (compared as bytes, every effect row of the job was read and locked); tokens as bytes
    completeEffects: (collation: string): string => `-- leasehold completeEffects: mark these leases' pending reservations done with their results, only while each lease runs its job
      UPDATE JSON_TABLE(?, '$[*]' COLUMNS (${ITEM_COLS}, r LONGTEXT PATH '$[3]')) AS v
        STRAIGHT_JOIN ${t.jobs} j ON j.id = v.id AND CAST(j.lease_token AS BINARY) = CAST(v.t AS BINARY) AND j.status = 'running'
        STRAIGHT_JOIN ${t.effects} e ON e.effect_key = v.k COLLATE ${collation} AND e.job_id = j.id
          AND CAST(e.lease_token AS BINARY) = CAST(v.t AS BINARY) AND e.state = 'pending'
      SET e.state = 'done', e.result = v.r, e.done_at = ${NOW}`,
    // the job row is read (share-locked) before the effect row is locked, the order every
    // reserve takes them in: the other order let a record, a reserve and a heartbeat deadlock
    completeEffect: `-- leasehold completeEffect: mark this lease's pending reservation done with its result, only while the lease runs its job
      UPDATE ${t.jobs} j STRAIGHT_JOIN ${t.effects} e ON e.effect_key = ? AND e.lease_token = j.lease_token AND e.state = 'pending'
      SET e.state = 'done', e.result = ?, e.done_at = ${NOW}
      WHERE j.id = ? AND j.lease_token = ? AND j.status = 'running'`,
    effectByKey: `-- leasehold getEffect: the effect recorded under this key (the column's collation compares exactly)
      SELECT ${EFFECT_COLS} FROM ${t.effects} WHERE effect_key = ?`,
    listEffects: (byJob: boolean): string => `-- leasehold listEffects: effects, newest first, optionally of one job
      SELECT ${EFFECT_COLS} FROM ${t.effects}${byJob ? ' WHERE job_id = ?' : ''} ORDER BY id DESC LIMIT ?`,
    countEffects: `-- leasehold countEffects: how many effects are recorded
      SELECT COUNT(*) AS n FROM ${t.effects}`,
  };
}

type EffectsSql = ReturnType<typeof effectsSql>;
type Item<P> = { i: number; p: P; id: bigint };
/** What a batch's transaction decided per item; 'seen': pending in the ledger already. */
type BatchReserve = 'lost' | 'reserved' | 'seen' | { state: 'done'; result: unknown };

/** Not every record of a batch applied: the batch's statement is rolled back and each is asked alone. */
class PartialRecord extends Error {}

export class MysqlEffects extends SqlAggregate<Db, EffectsSql> implements EffectStore {
  #keyCollation: Promise<string> | undefined;

  constructor(db: Db) {
    super(db, effectsSql(db.t));
  }

  /** A new key in one transaction, a key in the ledger in another; a reserve whose connection broke after its COMMIT went out is asked once more (it then finds its own row). */
  async reserve(p: EffectParams): Promise<EffectReservation> {
    const id = idParam(p.jobId);
    if (id === null) return { state: 'lost' };
    for (let asked = 1; ; asked++) {
      try {
        return await this.db.tx('reserveEffect', async (c) => {
          if ((await run(c, this.sql.leaseHeld, [id, p.leaseToken])).length === 0) return { state: 'lost' };
          await runLast(c, [{ sql: this.sql.reserveNewEffect, values: [p.key, id, p.leaseToken] }]);
          return { state: 'reserved' };
        });
      } catch (e) {
        if (isDuplicate(e)) break;
        if (asked > 1 || !(e instanceof TransientStorageError)) throw e;
      }
    }
    return this.db.tx('reserveEffect', (c) => this.reserveSeenOn(c, p, id));
  }

  /** A key already in the ledger, inside a transaction: done, ours, taken over from a dead lease, or busy. */
  private async reserveSeenOn(c: Queryable, p: EffectParams, id: bigint): Promise<EffectReservation> {
    if ((await run(c, this.sql.leaseHeld, [id, p.leaseToken])).length === 0) return { state: 'lost' };
    const [row] = await run(c, this.sql.effectForUpdate, [p.key]);
    // nothing deletes effects, so the row the insert collided with is there unless removed by hand
    if (!row) throw new TransientStorageError(`mysql: effect "${p.key}" vanished during reserveEffect; retry`);
    if (row.state === 'done') return { state: 'done', result: fromJsonText(row.result) };
    if (row.lease_token !== p.leaseToken && (await exec(c, this.sql.takeOverEffect, [id, p.leaseToken, p.key])).affectedRows === 0) return { state: 'busy' };
    return { state: 'reserved' };
  }

  /** Not re-run on a dropped connection (a landed update would then read as lost): the caller retries and asks the ledger. */
  async complete(p: EffectRecord): Promise<boolean> {
    const id = idParam(p.jobId);
    if (id === null) return false;
    return this.db.autocommit('completeEffect', async (c) => (await exec(c, this.sql.completeEffect, [p.key, toJsonText(p.result), id, p.leaseToken])).affectedRows > 0);
  }

  async reserveMany(p: { items: readonly EffectParams[] }): Promise<EffectReservation[]> {
    assertDistinctEffectKeys(p.items, 'reserveEffects');
    const asked = withIds(p.items);
    const out: EffectReservation[] = p.items.map(() => ({ state: 'lost' }));
    if (asked.length === 0) return out;
    let decided: BatchReserve[];
    try {
      decided = await this.db.tx('reserveEffects', (c) => this.reserveNewOn(c, asked));
    } catch (e) {
      if (!isDuplicate(e)) throw e;
      return Promise.all(p.items.map((x) => this.reserve(x)));
    }
    await Promise.all(asked.map(async (a, k) => {
      const r = decided[k]!;
      out[a.i] = r === 'seen' ? await this.db.tx('reserveEffect', (c) => this.reserveSeenOn(c, a.p, a.id)) : typeof r === 'string' ? { state: r } : r;
    }));
    return out;
  }

  /** The new keys of a batch in one transaction (see the header). */
  private async reserveNewOn(c: Queryable, items: readonly Item<EffectParams>[]): Promise<BatchReserve[]> {
    const seen = new Map((await run(c, this.sql.effectKeysSeen, [items.map((a) => a.p.key)])).map((r) => [String(r.effect_key), r]));
    const held = new Map((await run(c, this.sql.leasesHeld, [[...new Set(items.map((a) => a.id))]])).map((r) => [String(r.id), r.lease_token]));
    const out = items.map(({ p, id }): BatchReserve => {
      if (held.get(String(id)) !== p.leaseToken) return 'lost';
      const e = seen.get(p.key);
      if (e === undefined) return 'reserved';
      return e.state === 'done' ? { state: 'done', result: fromJsonText(e.result) } : 'seen';
    });
    const fresh = items.filter((_, i) => out[i] === 'reserved').sort((a, b) => byKey(a.p, b.p));
    if (fresh.length > 0) await runLast(c, [{ sql: this.sql.reserveNewEffects, values: [JSON.stringify(fresh.map((a) => [a.p.key, String(a.id), a.p.leaseToken]))] }]);
    return out;
  }

  async completeMany(p: { items: readonly EffectRecord[] }): Promise<boolean[]> {
    assertDistinctEffectKeys(p.items, 'completeEffects');
    const asked = byJobId(withIds(p.items));
    const out = p.items.map(() => false);
    if (asked.length === 0) return out;
    const statement = this.sql.completeEffects(await this.keyCollation());
    const rows = JSON.stringify(asked.map((a) => [a.p.key, String(a.id), a.p.leaseToken, toJsonText(a.p.result)]));
    try {
      await this.db.tx('completeEffects', async (c) => {
        if ((await exec(c, statement, [rows])).affectedRows !== asked.length) throw new PartialRecord();
      }, true);
      for (const a of asked) out[a.i] = true;
      return out;
    } catch (e) {
      if (!(e instanceof PartialRecord)) throw e;
    }
    const stmts = asked.map((a) => ({ sql: this.sql.completeEffect, values: [a.p.key, toJsonText(a.p.result), a.id, a.p.leaseToken] }));
    const results = (await this.db.tx('completeEffects', (c) => runLast(c, stmts))) as ResultHeader[];
    asked.forEach((a, k) => (out[a.i] = (results[k]?.affectedRows ?? 0) > 0));
    return out;
  }

  /** The effect_key column's collation, read once; a name only, as it goes into the statement's text. */
  private keyCollation(): Promise<string> {
    this.#keyCollation ??= this.db.one('completeEffects', async (c) => {
      const name = String((await run(c, this.sql.effectKeyCollation))[0]?.c ?? '');
      if (!/^[a-z0-9_]+$/.test(name)) throw new TransientStorageError(`mysql: the effects table's key collation "${name}" is not one leasehold knows; migrate first`);
      return name;
    }).catch((e: unknown) => {
      this.#keyCollation = undefined;
      throw e;
    });
    return this.#keyCollation;
  }

  async get(p: { key: string }): Promise<EffectRow | null> {
    const [row] = await this.db.one('getEffect', (c) => run(c, this.sql.effectByKey, [p.key]));
    return row ? toEffectRow(row) : null;
  }

  async list(p: { jobId?: string; limit: number }): Promise<EffectRow[]> {
    const id = p.jobId === undefined ? undefined : idParam(p.jobId);
    if (p.limit <= 0 || id === null) return [];
    const values = id === undefined ? [p.limit] : [id, p.limit];
    return (await this.db.one('listEffects', (c) => run(c, this.sql.listEffects(id !== undefined), values))).map(toEffectRow);
  }

  async count(): Promise<number> {
    return Number((await this.db.one('countEffects', (c) => run(c, this.sql.countEffects)))[0]?.n ?? 0);
  }
}

/** The items whose job id can be one, with their position. */
function withIds<P extends EffectParams>(ps: readonly P[]): Item<P>[] {
  return ps.flatMap((p, i) => {
    const id = idParam(p.jobId);
    return id === null ? [] : [{ i, p, id }];
  });
}

const byKey = (a: { key: string }, b: { key: string }): number => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);

/** Items in job id order (the order finishes and heartbeats lock jobs in), then key order. */
function byJobId<P extends EffectParams>(items: Item<P>[]): Item<P>[] {
  return [...items].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : byKey(a.p, b.p)));
}

function toEffectRow(r: Row): EffectRow {
  return {
    key: String(r.effect_key), jobId: String(r.job_id), state: String(r.state) as 'pending' | 'done', result: fromJsonText(r.result),
    createdAt: parseUtc(r.created_at), doneAt: parseUtcOrNull(r.done_at),
  };
}
