/**
 * The SQLite connection: pragmas, a prepared-statement cache, IMMEDIATE write transactions,
 * error mapping, and migrations. Used by sqlite-storage.ts only.
 *
 * Several processes may share one database file: every write of more than one statement runs
 * in `BEGIN IMMEDIATE`, which takes SQLite's single write lock up front (waiting up to the busy
 * timeout), so a read-then-write never fails with SQLITE_BUSY_SNAPSHOT. A write that is one
 * statement (a claim's UPDATE … RETURNING, one run of inserts) runs alone in autocommit: it
 * takes the write lock at its start, so two claimers still never see the same due row.
 * WAL lets readers proceed while a writer holds the lock. A busy write lock is waited for here
 * (`retryBusy`, short waits up to the busy timeout), not by SQLite's busy handler.
 */
import { SchemaTooNewError, TransientStorageError } from '../../core/errors.js';
import type { MigrateResult } from '../../core/storage.js';
import { MIGRATIONS_SQL } from './sqlite-sql.js';
import { SQLITE_LATEST_VERSION, SQLITE_MIGRATIONS, withPrefix } from './sqlite-migrations.js';
import { openSqlite, sqliteErrorCode } from './sqlite-driver.js';
import type { SqliteConnection, SqliteDriverName, SqliteStatement as Stmt } from './sqlite-driver.js';

/** SQLite result codes worth retrying (BUSY, LOCKED): the lock was not granted within the busy timeout. */
function isTransient(e: unknown): boolean {
  const code = sqliteErrorCode(e);
  return code === 5 || code === 6;
}

/** Rethrow SQLITE_BUSY / SQLITE_LOCKED as TransientStorageError; anything else unchanged. */
export function mapError(e: unknown): never {
  if (isTransient(e)) {
    const msg = e instanceof Error ? e.message : String(e);
    throw new TransientStorageError(`sqlite: ${msg} (database busy; retry)`, { cause: e });
  }
  throw e;
}

const sleeper = new Int32Array(new SharedArrayBuffer(4));
function sleepSync(ms: number): void {
  Atomics.wait(sleeper, 0, 0, ms);
}

/**
 * Waits between attempts to take the write lock, in ms: from 50 µs, doubling to 2 ms, with
 * jitter. SQLite's own busy handler sleeps 1, 2, 5, 10… ms, long next to a drain's write
 * transactions (0.1–2 ms): with these waits two processes on one file drained 4–8 % faster
 * (the harness's 2-process drain, alternated runs). The waits block, as SQLite's do; waiting on
 * timers instead, so the event loop could go on, measured slower (1 ms timer granularity).
 */
function lockWaitMs(attempt: number): number {
  const base = Math.min(2, 0.05 * 2 ** attempt);
  return base * (0.5 + Math.random());
}

export class SqliteDb {
  readonly db: SqliteConnection;
  private readonly cache = new Map<string, Stmt>();

  constructor(
    path: string,
    readonly prefix: string,
    private readonly busyTimeoutMs: number,
    driver: SqliteDriverName = 'better-sqlite3',
  ) {
    this.db = openSqlite(path, driver);
    try {
      this.pragmas(busyTimeoutMs);
    } catch (e) {
      this.db.close();
      mapError(e);
    }
  }

  private pragmas(busyTimeoutMs: number): void {
    this.db.pragma('busy_timeout = 0');
    // Switching to WAL needs a brief exclusive lock; a process opening the same new file at
    // the same moment can make it fail with SQLITE_BUSY, so retry within the busy timeout.
    const deadline = Date.now() + busyTimeoutMs;
    for (;;) {
      try {
        this.db.pragma('journal_mode = WAL');
        break;
      } catch (e) {
        if (!isTransient(e) || Date.now() >= deadline) throw e;
        sleepSync(5 + Math.floor(Math.random() * 20));
      }
    }
    // NORMAL is durable across application crashes in WAL mode (not across power loss of
    // the last commits), and much faster than FULL.
    this.db.pragma('synchronous = NORMAL');
    // job_attempts.job_id references jobs.id
    this.db.pragma('foreign_keys = ON');
    // A 32 MiB page cache (the default is 2 MiB): with a million finished rows kept for the
    // dashboard, the indexes a claim and a finish touch no longer fit the default, and a drain
    // on such a file ran at 0.47-0.68x the speed of one on an empty file (0.73-0.78x with this
    // cache; 128 MiB did no better). Memory is only
    // taken as pages are read.
    this.db.pragma('cache_size = -32768');
  }

  /**
   * A cached prepared statement for an SQL template (`{p}` = table prefix). `raw` ones return
   * rows as arrays, cheaper than an object per row (the claim uses it); a separate cache entry.
   */
  stmt(template: string, mode: 'objects' | 'raw' = 'objects'): Stmt {
    const key = mode === 'raw' ? `raw:${template}` : template;
    let s = this.cache.get(key);
    if (s === undefined) {
      s = this.db.prepare(withPrefix(template, this.prefix), mode === 'raw');
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
    return this.retryBusy(() => this.db.immediate(run), () => !started);
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
    let deadline = 0;
    for (let i = 0; ; i++) {
      try {
        return attempt();
      } catch (e) {
        if (!isTransient(e) || !retryable()) return mapError(e);
        const now = Date.now();
        if (i === 0) deadline = now + this.busyTimeoutMs;
        if (now >= deadline) return mapError(e);
        sleepSync(Math.min(lockWaitMs(i), deadline - now));
      }
    }
  }

  schemaVersion(): number {
    return this.read(() => {
      if (this.db.prepare(withPrefix(MIGRATIONS_SQL.ledgerExists, this.prefix)).get() === undefined) return 0;
      return (this.stmt(MIGRATIONS_SQL.maxVersion).get() as { v: number }).v;
    });
  }

  /**
   * Check and apply inside ONE immediate transaction: a second process migrating at the same
   * time waits for the lock, then finds everything applied. DDL is transactional in SQLite, so
   * a failing migration leaves nothing half-applied.
   */
  migrate(now: number): MigrateResult {
    // a table rebuild needs foreign keys off, and the pragma is a no-op inside a transaction
    const from = this.schemaVersion();
    const rebuilds = SQLITE_MIGRATIONS.some((m) => m.rebuildsTables && m.version > from);
    if (!rebuilds) return this.applyMigrations(now, false);
    this.db.pragma('foreign_keys = OFF');
    try {
      return this.applyMigrations(now, true);
    } finally {
      this.db.pragma('foreign_keys = ON');
    }
  }

  private applyMigrations(now: number, checkKeys: boolean): MigrateResult {
    return this.write(() => {
      this.db.exec(withPrefix(MIGRATIONS_SQL.createLedger, this.prefix));
      const from = (this.db.prepare(withPrefix(MIGRATIONS_SQL.maxVersion, this.prefix)).get() as { v: number }).v;
      if (from > SQLITE_LATEST_VERSION) throw new SchemaTooNewError(from, SQLITE_LATEST_VERSION);
      // attempt rows pointing at no job: the rebuild must add none (rows an operator orphaned
      // before, e.g. deleting jobs from a shell with foreign keys off, are not ours to judge)
      const orphans = (): number => (this.db.pragma(`foreign_key_check(${this.prefix}job_attempts)`) as unknown[]).length;
      const orphansBefore = checkKeys && from > 0 ? orphans() : 0;
      const applied: { version: number; name: string }[] = [];
      const record = this.db.prepare(withPrefix(MIGRATIONS_SQL.record, this.prefix));
      for (const m of [...SQLITE_MIGRATIONS].sort((a, b) => a.version - b.version)) {
        if (m.version <= from) continue;
        this.db.exec(withPrefix(m.sql, this.prefix));
        record.run({ version: m.version, name: m.name, now });
        applied.push({ version: m.version, name: m.name });
      }
      if (checkKeys && applied.length > 0 && orphans() > orphansBefore) {
        throw new Error(`sqlite migrate: the rebuild left ${this.prefix}job_attempts rows without their job; nothing was applied`);
      }
      return { from, to: Math.max(from, ...applied.map((a) => a.version)), applied };
    });
  }

  close(): void {
    if (this.db.open) this.db.close();
    this.cache.clear();
  }
}
