/**
 * The SQLite handle every aggregate shares: one connection with its pragmas, the clock, a
 * prepared-statement cache, IMMEDIATE write transactions, and what the driver's errors mean.
 *
 * Clock: SQLite has no server, so "the database's clock" is this process's clock — the `clock`
 * option (default Date.now), read once per operation and passed to SQL as a parameter, so every
 * timestamp of one operation is equal. Processes sharing one file share a host clock.
 *
 * Several processes may share one database file: every write of more than one statement runs
 * in `BEGIN IMMEDIATE`, which takes SQLite's single write lock up front (waiting up to the busy
 * timeout), so a read-then-write never fails with SQLITE_BUSY_SNAPSHOT. A write that is one
 * statement (a claim's UPDATE … RETURNING, one run of inserts) runs alone in autocommit: it
 * takes the write lock at its start, so two claimers still never see the same due row.
 * WAL lets readers proceed while a writer holds the lock. A busy write lock is waited for here
 * (`retryBusy`, short waits up to the busy timeout), not by SQLite's busy handler.
 */
import { Backoff } from '../../core/backoff.js';
import { NotSupportedError, TransientStorageError, ValidationError } from '../../core/errors.js';
import type { RetryPolicy } from '../../core/retry.js';
import { openSqlite, sqliteErrorCode } from './driver.js';
import type { SqliteConnection, SqliteDriverName, SqliteStatement } from './driver.js';
import { withPrefix } from './sql.js';

/** SQLite result codes worth retrying (BUSY, LOCKED): the lock was not granted within the busy timeout. */
function isTransient(e: unknown): boolean {
  const code = sqliteErrorCode(e);
  return code === 5 || code === 6;
}

/** Rethrow SQLITE_BUSY / SQLITE_LOCKED as TransientStorageError; anything else unchanged. */
function mapError(e: unknown): never {
  if (isTransient(e)) {
    const msg = e instanceof Error ? e.message : String(e);
    throw new TransientStorageError(`sqlite: ${msg} (database busy; retry)`, { cause: e });
  }
  throw e;
}

/** Where the caller's handle is not taken (a finish): `{ tx }` refused with NotSupportedError. */
export function refuseTx(tx: unknown, what: string): void {
  if (tx !== undefined && tx !== null) throw new NotSupportedError(`${what} in the caller's transaction`, 'sqlite');
}

/** What a write on a connection needs of it: prepared statements by SQL template. */
export interface Statements {
  stmt(template: string): SqliteStatement;
}

/** The caller's own handle: a better-sqlite3 Database or a node:sqlite DatabaseSync. */
interface CallerHandle {
  prepare(sql: string): SqliteStatement & { setAllowUnknownNamedParameters?(on: boolean): void };
  /** better-sqlite3 */
  readonly inTransaction?: boolean;
  readonly open?: boolean;
  /** node:sqlite */
  readonly isTransaction?: boolean;
  readonly isOpen?: boolean;
}

const HANDLE = 'sqlite storage: `tx` must be your better-sqlite3 Database (or node:sqlite DatabaseSync) on the same file, inside its open transaction';

function callerHandle(tx: unknown): CallerHandle {
  const h = tx as Partial<CallerHandle> | null;
  // `in`, not a read: node:sqlite's isTransaction throws on a closed handle
  const known = typeof h === 'object' && h !== null && typeof h.prepare === 'function' && ('inTransaction' in h || 'isTransaction' in h);
  if (!known) throw new ValidationError('INVALID_OPTION', HANDLE);
  if (h.open === false || h.isOpen === false) throw new ValidationError('INVALID_OPTION', 'sqlite storage: `tx` is a closed database handle');
  return h as CallerHandle;
}

/** The main database file a connection is on ('' in memory). */
function mainFile(rows: unknown[]): string {
  const main = (rows as { name?: unknown; file?: unknown }[]).find((r) => r.name === 'main');
  return typeof main?.file === 'string' ? main.file : '';
}

const DATABASE_LIST = `-- leasehold sqlite.databaseList: the file each attached database is on
  PRAGMA database_list`;

const sleeper = new Int32Array(new SharedArrayBuffer(4));
function sleepSync(ms: number): void {
  Atomics.wait(sleeper, 0, 0, ms);
}

/**
 * Waits between tries for a busy write lock, read in MICROseconds: 50 µs doubling to 2 ms, each
 * half to all of it. SQLite's own busy handler sleeps 1, 2, 5, 10… ms, long next to a drain's
 * write transactions. The waits block, as SQLite's do: a timer cannot wait under a millisecond.
 */
const LOCK_WAIT_US: RetryPolicy = { kind: 'exponential', baseMs: 50, factor: 2, maxMs: 2_000, jitter: 'equal' };

export interface SqliteDbOptions {
  path: string;
  prefix: string;
  busyTimeoutMs: number;
  driver: SqliteDriverName;
  clock: () => number;
}

export class SqliteDb {
  readonly conn: SqliteConnection;
  readonly prefix: string;
  /** the database clock in epoch ms */
  readonly now: () => number;
  private readonly busyTimeoutMs: number;
  private readonly cache = new Map<string, SqliteStatement>();
  /** callers' handles checked to be on this file, with their statements */
  private readonly callers = new WeakMap<object, Statements>();

  constructor(opts: SqliteDbOptions) {
    this.prefix = opts.prefix;
    this.now = opts.clock;
    this.busyTimeoutMs = opts.busyTimeoutMs;
    this.conn = openSqlite(opts.path, opts.driver);
    try {
      this.pragmas();
    } catch (e) {
      this.conn.close();
      mapError(e);
    }
  }

  private pragmas(): void {
    this.conn.pragma('busy_timeout = 0');
    // switching to WAL needs a brief exclusive lock, which a process opening the same new file
    // at the same moment may hold
    this.read(() => this.conn.pragma('journal_mode = WAL'));
    // NORMAL is durable across application crashes in WAL mode (not across power loss of
    // the last commits), and much faster than FULL.
    this.conn.pragma('synchronous = NORMAL');
    // job_attempts.job_id references jobs.id
    this.conn.pragma('foreign_keys = ON');
    // a 32 MiB page cache (default 2 MiB) keeps the indexes a claim and a finish touch in memory
    // on a file holding many finished jobs; pages are only taken as they are read
    this.conn.pragma('cache_size = -32768');
  }

  /**
   * A prepared statement for an SQL template (`{p}` = table prefix), prepared once per
   * connection and cached. `raw` ones return rows as arrays, cheaper than an object per row
   * (the claim uses it); a separate cache entry.
   */
  stmt(template: string, mode: 'objects' | 'raw' = 'objects'): SqliteStatement {
    const key = mode === 'raw' ? `raw:${template}` : template;
    let s = this.cache.get(key);
    if (s === undefined) {
      s = this.conn.prepare(withPrefix(template, this.prefix), mode === 'raw');
      this.cache.set(key, s);
    }
    return s;
  }

  /**
   * Run `fn` in one BEGIN IMMEDIATE transaction; commit on return, roll back on throw. The
   * BEGIN is retried while another connection holds the write lock (within the busy timeout);
   * once `fn` has started, a busy error is not retried (its effects outside SQLite would repeat).
   */
  write<T>(fn: () => T): T {
    let started = false;
    const run = (): T => {
      started = true;
      return fn();
    };
    return this.retryBusy(() => this.conn.immediate(run), () => !started);
  }

  /**
   * Run a read, or ONE write statement, in autocommit; busy errors still map to
   * TransientStorageError. A lone INSERT/UPDATE is atomic and takes the write lock at its start,
   * so it needs no BEGIN/COMMIT around it; refused the lock, it did nothing and is run again
   * (within the busy timeout).
   */
  read<T>(fn: () => T): T {
    return this.retryBusy(fn, () => true);
  }

  /** `attempt()`, again after a short wait each time it is refused a lock (and `retryable()` says so), until the busy timeout. */
  private retryBusy<T>(attempt: () => T, retryable: () => boolean): T {
    // made at the first refusal only: most calls get the lock at once
    let backoff: Backoff | undefined;
    let deadline = 0;
    for (;;) {
      try {
        return attempt();
      } catch (e) {
        if (!isTransient(e) || !retryable()) return mapError(e);
        const now = Date.now();
        if (backoff === undefined) {
          backoff = new Backoff(LOCK_WAIT_US);
          deadline = now + this.busyTimeoutMs;
        }
        if (now >= deadline) return mapError(e);
        sleepSync(Math.min(backoff.next() / 1000, deadline - now));
      }
    }
  }

  /**
   * `fn` on the caller's handle inside their open transaction on this file: they commit or roll
   * back. The statements are prepared on their handle (cached per handle). A busy error maps to
   * TransientStorageError and is not retried: their transaction decides what happens next.
   */
  onCaller<T>(tx: unknown, fn: (on: Statements) => T): T {
    const h = callerHandle(tx);
    const on = this.callers.get(h) ?? this.adopt(h);
    if (!(h.inTransaction ?? h.isTransaction)) {
      throw new ValidationError('INVALID_OPTION', 'sqlite storage: `tx` has no open transaction: enqueue inside db.transaction(…), or after BEGIN');
    }
    try {
      return fn(on);
    } catch (e) {
      return mapError(e);
    }
  }

  /** The caller's handle as statements, once it is known to be on this file. */
  private adopt(h: CallerHandle): Statements {
    const ours = mainFile(this.conn.prepare(DATABASE_LIST).all());
    const theirs = mainFile(h.prepare(DATABASE_LIST).all());
    if (ours === '') throw new ValidationError('INVALID_OPTION', 'sqlite storage: its database is in memory, which no other handle can share: `tx` cannot be used');
    if (theirs !== ours) throw new ValidationError('INVALID_OPTION', `sqlite storage: \`tx\` is on ${theirs === '' ? 'an in-memory database' : theirs}, not on the storage's file ${ours}`);
    const cache = new Map<string, SqliteStatement>();
    const on: Statements = {
      stmt: (template) => {
        let st = cache.get(template);
        if (st === undefined) {
          const made = h.prepare(withPrefix(template, this.prefix));
          // better-sqlite3 ignores named parameters a statement does not use; the statements rely on it
          made.setAllowUnknownNamedParameters?.(true);
          st = made;
          cache.set(template, st);
        }
        return st;
      },
    };
    this.callers.set(h, on);
    return on;
  }

  /** The database file's absolute path ('' for an in-memory or temporary database). */
  file(): string {
    return mainFile(this.conn.prepare(DATABASE_LIST).all());
  }

  close(): void {
    if (this.conn.open) this.conn.close();
    this.cache.clear();
  }
}
