/**
 * The connection side of the MySQL/MariaDB adapter: queries through mysql2/promise with options
 * that make results independent of how the pool (ours or the caller's) is configured, the pool
 * we create, what the driver's errors mean, and transactions with few round trips.
 *
 * Errors: `lock` (deadlock 1213, lock wait timeout 1205, and 1467, which MariaDB reports for a
 * deadlock on the auto-increment lock, MDEV-33593) left nothing of ours behind, so the operation
 * runs again. `connection` is retried only when nothing could have committed (a read, an
 * idempotent statement, a transaction before its COMMIT). What cannot be retried, or runs out of
 * tries, surfaces as `TransientStorageError`; `other` errors are thrown as they are.
 *
 * Round trips cost more than small statements: where the connection accepts several statements
 * per query (our pool), a transaction's opening statements go out with its first statement and
 * the write paths send their last ones with COMMIT (`runLast`), so a claim or a finish batch is
 * two round trips. On a caller's pool they go one by one. An empty transaction sends nothing.
 */
import mysql from 'mysql2/promise';
import { type Sleep, retrying } from '../../core/backoff.js';
import { TransientStorageError, ValidationError } from '../../core/errors.js';
import type { RetryPolicy } from '../../core/retry.js';
import { FEATURES_SQL, type MysqlFeatures, type Row, type Tables, featuresOf, tables } from './sql.js';

/** What the adapter needs of a connection or pool: mysql2/promise's `query`. */
export interface Queryable {
  query(options: { sql: string; values?: unknown }, values?: unknown): Promise<[unknown, unknown]>;
}

/** A pooled connection we can hand back (or throw away when it broke). */
export interface Leased extends Queryable { release(): void; destroy(): void }
export interface PoolLike extends Queryable { getConnection(): Promise<Leased> }
export interface ResultHeader { affectedRows: number; insertId: number | string }

/** Per-query options, whatever the connection says: DATETIME as its text (read as UTC), BIGINT as a decimal string. */
const QUERY_OPTS = { dateStrings: true, supportBigNumbers: true, bigNumberStrings: true, timezone: 'Z' } as const;

export async function run<T = Row[]>(c: Queryable, sql: string, values?: readonly unknown[]): Promise<T> {
  const [res] = await c.query({ sql, values, ...QUERY_OPTS } as { sql: string; values?: unknown });
  return res as T;
}

export function exec(c: Queryable, sql: string, values?: readonly unknown[]): Promise<ResultHeader> {
  return run<ResultHeader>(c, sql, values);
}

/** The pool the adapter creates and owns from a URI. */
export function createPool(uri: string, size: number, idleTxMs: number): mysql.Pool {
  const pool = mysql.createPool({
    uri, connectionLimit: size, charset: 'utf8mb4', enableKeepAlive: true, dateStrings: false,
    // DATETIME holds UTC: mysql2 reads and writes it as UTC whatever the session time zone says
    timezone: 'Z', supportBigNumbers: true, bigNumberStrings: true,
    // no call-site stack captured on every query: our errors name the operation that failed
    trace: false,
    // a transaction's statements travel together; values are still escaped by mysql2
    multipleStatements: true,
  });
  // MariaDB only (MySQL skips the /*M! … */ part): a process frozen inside one of our
  // transactions must not hold its row locks, and so block a rescue, for ever
  const idle = `SET @leasehold_pool = 1 /*M!100300 , SESSION idle_transaction_timeout = ${Math.ceil(idleTxMs / 1000)} */`;
  pool.pool.on('connection', (c) => void c.query(idle));
  return pool;
}

/** What a MySQL error means for a retry: a lock conflict, a lost connection, or anything else. */
export type MysqlErrorKind = 'lock' | 'connection' | 'other';

const LOCK_ERRNOS = new Set([1213, 1205, 1467]);
/** too many connections, shutdown, KILL, connection killed (MariaDB), idle disconnect (MySQL), gone away, lost */
const CONNECTION_ERRNOS = new Set([1040, 1053, 1317, 1927, 4031, 2006, 2013]);
const CONNECTION_CODES = new Set([
  'PROTOCOL_CONNECTION_LOST', 'PROTOCOL_SEQUENCE_TIMEOUT', 'PROTOCOL_ENQUEUE_AFTER_FATAL_ERROR', 'PROTOCOL_ENQUEUE_AFTER_QUIT',
  'ECONNRESET', 'ECONNREFUSED', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND', 'EAI_AGAIN',
  'ER_CON_COUNT_ERROR', 'ER_SERVER_SHUTDOWN', 'ER_CONNECTION_KILLED', 'ER_CLIENT_INTERACTION_TIMEOUT',
]);
/** mysql2 reports a query on an already-closed connection with no code, only this message */
const CLOSED = /connection is in closed state/i;

/** Sorts a mysql2 error into a {@link MysqlErrorKind}. */
export function classifyMysqlError(e: unknown): MysqlErrorKind {
  if (typeof e !== 'object' || e === null) return 'other';
  const { errno, code, fatal } = e as { errno?: unknown; code?: unknown; fatal?: unknown };
  if (typeof errno === 'number' && LOCK_ERRNOS.has(errno)) return 'lock';
  if (code === 'ER_LOCK_DEADLOCK' || code === 'ER_LOCK_WAIT_TIMEOUT') return 'lock';
  if (typeof errno === 'number' && CONNECTION_ERRNOS.has(errno)) return 'connection';
  if (typeof code === 'string' && CONNECTION_CODES.has(code)) return 'connection';
  if (fatal === true || (e instanceof Error && CLOSED.test(e.message))) return 'connection';
  return 'other';
}

export const ER_DUP_ENTRY = 1062;

export function isDuplicate(e: unknown): boolean {
  return typeof e === 'object' && e !== null && (e as { errno?: unknown }).errno === ER_DUP_ENTRY;
}

/** Lock and connection errors become `TransientStorageError`; anything else is returned as it is. */
function toStorageError(e: unknown, what: string): unknown {
  const kind = classifyMysqlError(e);
  if (kind === 'other') return e;
  const why = kind === 'lock' ? 'lock conflict' : 'connection lost';
  return new TransientStorageError(`mysql ${what}: ${why} (${e instanceof Error ? e.message : String(e)})`, { cause: e });
}

/** Thrown inside `withRetry` bodies to say "this one may have committed": never retried. */
class Unretryable extends Error {
  constructor(readonly inner: unknown) {
    super('not retryable');
  }
}

/** Full jitter under doubling ceilings, 20 to 320 ms: lock conflicts clear in milliseconds. */
const LOCK_RETRY: RetryPolicy = { kind: 'exponential', baseMs: 20, factor: 2, maxMs: 1_000, jitter: 'full' };

export interface RetryOptions {
  /** tries in all, the first included (default 6) */
  attempts?: number;
  random?: () => number;
  sleep?: Sleep;
}

/** Run `fn`, again on a lock error (always) or a connection error (when `connectionSafe`); gives up with a `TransientStorageError`. */
export async function withRetry<T>(what: string, fn: () => Promise<T>, connectionSafe: boolean, opts: RetryOptions = {}): Promise<T> {
  const retryIf = (e: unknown): boolean => {
    const kind = e instanceof Unretryable ? 'other' : classifyMysqlError(e);
    return kind === 'lock' || (kind === 'connection' && connectionSafe);
  };
  try {
    return await retrying(fn, { policy: LOCK_RETRY, attempts: opts.attempts ?? 6, retryIf, random: opts.random, sleep: opts.sleep });
  } catch (e) {
    throw toStorageError(e instanceof Unretryable ? e.inner : e, what);
  }
}

/** Connection errors proving the statement never left this process, so running it again cannot run it twice. */
const neverSent = (e: unknown): boolean =>
  ['PROTOCOL_ENQUEUE_AFTER_FATAL_ERROR', 'PROTOCOL_ENQUEUE_AFTER_QUIT'].includes(String((e as { code?: unknown }).code)) || (e instanceof Error && CLOSED.test(e.message));

// ---- transactions --------------------------------------------------------------------------

/** One statement and its values. */
export interface Stmt { sql: string; values?: readonly unknown[] }

/** Statements in order, as one query where `multi`, else one by one; one result per statement. */
async function runAll(c: Queryable, stmts: readonly Stmt[], multi: boolean): Promise<unknown[]> {
  if (!multi || stmts.length < 2) {
    const out: unknown[] = [];
    for (const s of stmts) out.push(await run<unknown>(c, s.sql, s.values));
    return out;
  }
  // mysql2 fills the placeholders left to right across the whole text, and returns a result per statement
  return run<unknown[]>(c, stmts.map((s) => s.sql).join(';\n'), stmts.flatMap((s) => s.values ?? []));
}

const TX_SQL = {
  begin: `-- leasehold begin: open a transaction
    START TRANSACTION`,
  commit: `-- leasehold commit: commit the open transaction
    COMMIT`,
  rollback: `-- leasehold rollback: roll the open transaction back
    ROLLBACK`,
  readCommitted: `-- leasehold readCommitted: make the next transaction on this connection READ COMMITTED (no gap locks)
    SET TRANSACTION ISOLATION LEVEL READ COMMITTED`,
};

/** A connection inside a transaction that opens with the first statement sent on it. */
class TxConn implements Queryable {
  #pending: Stmt[];
  /** COMMIT has been sent (it may or may not have landed if the connection broke) */
  committing = false;
  committed = false;

  constructor(readonly conn: Queryable, readonly multi: boolean, readCommitted: boolean) {
    this.#pending = (readCommitted ? [TX_SQL.readCommitted, TX_SQL.begin] : [TX_SQL.begin]).map((sql) => ({ sql }));
  }

  /** Whether the opening statements have gone out (there is a transaction to end). */
  get opened(): boolean {
    return this.#pending.length === 0;
  }

  async query(options: { sql: string; values?: unknown }): Promise<[unknown, unknown]> {
    const [res] = await this.send([{ sql: options.sql, values: options.values as readonly unknown[] | undefined }], false);
    return [res, undefined];
  }

  /** `stmts` after the opening statements not sent yet, and COMMIT after them when `commit`; their results. */
  async send(stmts: readonly Stmt[], commit: boolean): Promise<unknown[]> {
    const lead = this.#pending;
    this.#pending = [];
    const all = [...lead, ...stmts];
    if (commit) {
      all.push({ sql: TX_SQL.commit });
      this.committing = true;
    }
    const results = await runAll(this.conn, all, this.multi);
    if (commit) this.committed = true;
    return results.slice(lead.length, lead.length + stmts.length);
  }
}

/** A write path's last statements: with COMMIT in the same round trip in our transaction; one by one on a caller's connection (the caller commits). */
export function runLast(c: Queryable, stmts: readonly Stmt[]): Promise<unknown[]> {
  return c instanceof TxConn ? c.send(stmts, true) : runAll(c, stmts, false);
}

/** The pool and the ways the aggregates run statements on it. */
export class Db {
  readonly t: Tables;
  #features: Promise<MysqlFeatures> | null = null;

  /** `multi`: the pool accepts several statements per query (only our own is known to). */
  constructor(readonly pool: PoolLike, readonly prefix: string, readonly multi: boolean) {
    this.t = tables(prefix);
  }

  /** One statement (a read or an idempotent write) on the pool, retried on lock or connection errors. */
  one<T>(what: string, fn: (c: Queryable) => Promise<T>): Promise<T> {
    return withRetry(what, () => fn(this.pool), true);
  }

  /** A dedicated connection for `fn`, handed back after it, or thrown away when it broke (a connection error, or `fn` said so). */
  async leased<T>(fn: (c: Leased, lease: { broken: boolean }) => Promise<T>): Promise<T> {
    const c = await this.pool.getConnection();
    const lease = { broken: false };
    try {
      return await fn(c, lease);
    } catch (e) {
      lease.broken ||= classifyMysqlError(e instanceof Unretryable ? e.inner : e) === 'connection';
      throw e;
    } finally {
      if (lease.broken) c.destroy();
      else c.release();
    }
  }

  /** `fn` in one transaction, run again on a lock error, or on a dropped connection before COMMIT was sent. */
  tx<T>(what: string, fn: (c: Queryable) => Promise<T>, readCommitted = false): Promise<T> {
    const once = async (c: Leased, lease: { broken: boolean }): Promise<T> => {
      const tx = new TxConn(c, this.multi, readCommitted);
      try {
        const out = await fn(tx);
        if (tx.opened && !tx.committed) await tx.send([], true);
        return out;
      } catch (e) {
        lease.broken = classifyMysqlError(e) === 'connection';
        if (!lease.broken && tx.opened) await run(c, TX_SQL.rollback).catch(() => (lease.broken = true));
        // a COMMIT that broke the connection may have landed: never run the work twice
        throw tx.committing && lease.broken ? new Unretryable(e) : e;
      }
    };
    return withRetry(what, () => this.leased(once), true);
  }

  /**
   * `fn` -- ONE statement that must not run twice (an INSERT) -- in autocommit: atomic on its
   * own, without BEGIN and COMMIT. Lock errors are retried (the server rolled the statement
   * back); a dropped connection only when the statement provably was never sent.
   */
  autocommit<T>(what: string, fn: (c: Queryable) => Promise<T>): Promise<T> {
    return withRetry(what, () => this.leased(async (c) => {
      try {
        return await fn(c);
      } catch (e) {
        throw classifyMysqlError(e) === 'connection' && !neverSent(e) ? new Unretryable(e) : e;
      }
    }), true);
  }

  /** `fn` on the caller's own transaction handle, as it is (the caller commits); errors classified. */
  async onCaller<T>(tx: unknown, what: string, fn: (c: Queryable) => Promise<T>): Promise<T> {
    const c = callerTx(tx);
    try {
      return await fn(c);
    } catch (e) {
      throw toStorageError(e, what);
    }
  }

  /** What the server can do, asked once (a failed ask is asked again); on `on` when given, which may hold a shared pool's last connection. */
  features(on?: Queryable): Promise<MysqlFeatures> {
    this.#features ??= (on ? run(on, FEATURES_SQL) : this.one('features', (c) => run(c, FEATURES_SQL))).then(
      (rows) => featuresOf(rows[0]),
      (e: unknown) => {
        this.#features = null;
        throw e;
      },
    );
    return this.#features;
  }
}

/** The caller's own transaction handle: a mysql2/promise (Pool)Connection, or a callback one. */
function callerTx(tx: unknown): Queryable {
  const t = tx as { query?: unknown; promise?: unknown } | null;
  if (t && typeof t === 'object') {
    if (typeof t.promise === 'function') return (t.promise as () => Queryable).call(t);
    if (typeof t.query === 'function') return t as Queryable;
  }
  throw new ValidationError('INVALID_OPTION', 'mysql storage: `tx` must be a mysql2 connection inside your transaction');
}
