/**
 * Enqueues of batches carrying unique keys, on MySQL/MariaDB. A unique key holds while its job
 * is queued, failed or running: MySQL has no partial index, so the STORED column unique_live
 * (the key then, else NULL, and NULLs never collide) carries the UNIQUE index. One READ
 * COMMITTED transaction goes item by item in input order, answering each as the memory adapter
 * does (idempotency key first, then the unique key), so an item naming an earlier item's key
 * finds that item's job: 'active' returns the holder; 'debounce' sets a waiting holder's payload
 * and run_at, or takes the key from a running holder for a new job.
 *
 * Races: an INSERT whose key another transaction inserted meanwhile waits for it, then fails
 * with ER_DUP_ENTRY, holding a shared lock on that job. 'active' reads the holder under that
 * lock. 'debounce' needs it exclusively, and two such upgrades deadlock: it rolls back and runs
 * the transaction again, whose locking read then waits for the holder like any other.
 */
import { TransientStorageError } from '../../core/errors.js';
import type { InsertResult } from '../../core/storage.js';
import { type Db, type Queryable, exec, isDuplicate, run } from './db.js';
import { type InsertSql, type PreparedInsert, insertChunk } from './insert.js';
import { JOB_COLS, type MysqlFeatures, NOW, type Tables, micros, toJobRow, utcLiteral } from './sql.js';

/** Transactions of one batch, the first included, while debounces keep losing races. */
const TRANSACTIONS = 4;
/** Tries of one item while concurrent inserts keep taking its keys. */
const ITEM_TRIES = 4;

export function uniqueKeySql(t: Tables) {
  return {
    uniqueHolder: (lock: 'FOR UPDATE' | 'LOCK IN SHARE MODE'): string => `-- leasehold insertJobs: the queued, failed or running job holding a unique key, locked
      SELECT ${JOB_COLS} FROM ${t.jobs} WHERE unique_live = ? ${lock}`,
    debounceJob: `-- leasehold insertJobs: a debounced enqueue gives the waiting holder of its unique key its payload and run_at
      UPDATE ${t.jobs} SET payload = ?, run_at = COALESCE(CAST(? AS DATETIME(6)), ${NOW} + INTERVAL ? MICROSECOND), updated_at = ${NOW} WHERE id = ?`,
    releaseUniqueKey: `-- leasehold releaseUniqueKey: a job gives its unique key up (to a debounced enqueue, or when retried while another job holds it)
      UPDATE ${t.jobs} SET unique_key = NULL WHERE id = ?`,
  };
}

type Sql = InsertSql & ReturnType<typeof uniqueKeySql> & { jobById: string };

/** A debounce lost a race: the transaction is rolled back and run again. */
class KeyTaken extends Error {}

/** A batch with unique keys in a transaction of our own. */
export async function insertWithUniqueKeys(db: Db, sql: Sql, p: PreparedInsert, f: MysqlFeatures): Promise<InsertResult[]> {
  for (let n = 1; ; n++) {
    try {
      return await db.tx('insertJobs', (c) => insertUniqueOn(c, sql, p, f, true), true);
    } catch (e) {
      if (!(e instanceof KeyTaken)) throw e;
      if (n >= TRANSACTIONS) throw new TransientStorageError('mysql insertJobs: concurrent enqueues kept taking a unique key; nothing was inserted');
    }
  }
}

/**
 * The batch on `c`, item by item. `restartable`: `c` is our own transaction, which a lost
 * debounce race rolls back (on a caller's, the holder is locked where it stands: InnoDB may
 * then end the caller's transaction as a deadlock victim).
 */
export async function insertUniqueOn(c: Queryable, sql: Sql, p: PreparedInsert, f: MysqlFeatures, restartable: boolean): Promise<InsertResult[]> {
  const out: InsertResult[] = [];
  for (let i = 0; i < p.jobs.length; i++) out.push(await insertItem(c, sql, p, f, i, restartable));
  return out;
}

async function insertItem(c: Queryable, sql: Sql, p: PreparedInsert, f: MysqlFeatures, i: number, restartable: boolean): Promise<InsertResult> {
  const j = p.jobs[i]!;
  const debounce = j.unique?.mode === 'debounce';
  for (let n = 1; ; n++) {
    if (j.idempotencyKey !== null) {
      const [held] = await run(c, sql.jobsByKeysLocked, [[j.idempotencyKey]]);
      if (held) return { job: toJobRow(held), created: false, outcome: 'existing' };
    }
    const [holder] = j.unique ? await run(c, sql.uniqueHolder(debounce ? 'FOR UPDATE' : 'LOCK IN SHARE MODE'), [j.unique.key]) : [];
    if (holder && !debounce) return { job: toJobRow(holder), created: false, outcome: 'existing' };
    const holderId = holder ? BigInt(String(holder.id)) : null;
    if (holder && holder.status !== 'running') {
      await exec(c, sql.debounceJob, [p.payloads[i], j.runAt ? utcLiteral(j.runAt) : null, micros(j.runAfterMs), holderId]);
      const [row] = await run(c, sql.jobById, [holderId]);
      return { job: toJobRow(row!), created: false, outcome: 'replaced' };
    }
    // a running holder gives its key up to the new job
    if (holderId !== null) await exec(c, sql.releaseUniqueKey, [holderId]);
    try {
      const [row] = await insertChunk(c, sql, p, f, [i]);
      return { job: toJobRow(row!), created: true, outcome: 'created' };
    } catch (e) {
      if (!isDuplicate(e) || n >= ITEM_TRIES) throw e;
      if (debounce && restartable) throw new KeyTaken();
    }
  }
}
