/**
 * leasehold/sqlite: the embedded default, on better-sqlite3 or Node's built-in `node:sqlite`
 * (`driver` option). `import { sqliteStorage } from 'leasehold/sqlite'`.
 *
 * The database clock is this process's clock (db.ts), and several processes may share one file.
 * An enqueue takes `{ tx }`: the caller's own handle on the same file inside its open
 * transaction (insert.ts); completing a job in it is refused with NotSupportedError.
 * Idle workers are woken by a watch on the database's files (wakeups.ts), not only by polling.
 */
import { AggregateStorage } from '../aggregates.js';
import type { Capabilities, MigrateResult, Storage } from '../../core/storage.js';
import { SqliteAlerts } from './alerts.js';
import { SqliteDiagnostics } from './diagnostics.js';
import { SqliteAttempts } from './attempts.js';
import { SqliteDb } from './db.js';
import { checkDriver } from './driver.js';
import type { SqliteDriverName } from './driver.js';
import { SqliteEffects } from './effects.js';
import { SqliteJobs } from './jobs.js';
import { SqliteLeases } from './leases.js';
import { SqliteLocks } from './locks.js';
import { SCHEMA_VERSION, migrate, schemaVersion } from './migrations.js';
import { SqliteQueues } from './queues.js';
import { SqliteSchedules } from './schedules.js';
import { checkPrefix } from './sql.js';
import { SqliteWorkers } from './workers.js';
import { FileWakeups } from './wakeups.js';
import { SqliteWorkflowReads } from './workflow-reads.js';

export { SQLITE_DRIVERS } from './driver.js';
export type { SqliteDriverName } from './driver.js';
export { MIGRATIONS, SCHEMA_VERSION, type Migration } from './migrations.js';

/** Options for {@link sqliteStorage}. */
export interface SqliteStorageOptions {
  /** database file; ':memory:' works for a single connection but cannot be shared */
  path: string;
  /** how long a write waits for another process's write lock before failing (default 5000) */
  busyTimeoutMs?: number;
  /** the "database clock" in epoch ms (default Date.now); see db.ts */
  clock?: () => number;
  /** prefix of every table and index name (default 'leasehold_') */
  tablePrefix?: string;
  /** 'better-sqlite3' (default) or 'node:sqlite' (built into Node, no native module) */
  driver?: SqliteDriverName;
}

const SQLITE_AGGREGATES = { jobs: SqliteJobs, leases: SqliteLeases, attempts: SqliteAttempts, effects: SqliteEffects, schedules: SqliteSchedules, locks: SqliteLocks, workers: SqliteWorkers, queues: SqliteQueues, alerts: SqliteAlerts, diagnostics: SqliteDiagnostics, workflows: SqliteWorkflowReads } as const;

export class SqliteStorage extends AggregateStorage<SqliteDb, typeof SQLITE_AGGREGATES> implements Storage {
  readonly dialect = 'sqlite';
  readonly expectedSchemaVersion = SCHEMA_VERSION;
  readonly capabilities: Capabilities;
  /**
   * Present for a database in a file: calls `onWake` soon after the file changes (a commit by
   * any process on this machine). Polling stays the backstop (a network filesystem may report
   * nothing). Resolves to an unsubscribe.
   */
  readonly subscribe?: (params: { onWake: () => void }) => Promise<() => Promise<void>>;
  private readonly wakeups: FileWakeups | null;

  constructor(opts: SqliteStorageOptions) {
    const db = new SqliteDb({
      path: opts.path,
      prefix: checkPrefix(opts.tablePrefix ?? 'leasehold_'),
      busyTimeoutMs: opts.busyTimeoutMs ?? 5000,
      driver: checkDriver(opts.driver),
      clock: opts.clock ?? Date.now,
    });
    super(db, SQLITE_AGGREGATES);
    const file = db.file();
    // an in-memory database has no file to watch, nor another process to hear from
    const wakeups = file === '' ? null : new FileWakeups(file);
    this.wakeups = wakeups;
    this.capabilities = { multiProcess: true, transactionalEnqueue: true, listenNotify: wakeups !== null };
    if (wakeups) this.subscribe = (p) => wakeups.subscribe(p.onWake);
  }

  async migrate(): Promise<MigrateResult> {
    return migrate(this.db);
  }

  async schemaVersion(): Promise<number> {
    return schemaVersion(this.db);
  }

  async close(): Promise<void> {
    this.wakeups?.stop();
    this.db.close();
  }

  async now(): Promise<Date> {
    return new Date(this.db.now());
  }
}

/**
 * A storage in a SQLite file, shared by the processes of one machine; call `migrate()` before first use.
 *
 * @example
 * ```ts
 * const storage = sqliteStorage({ path: 'app.db' });
 * await storage.migrate();
 * ```
 */
export function sqliteStorage(opts: SqliteStorageOptions): SqliteStorage {
  return new SqliteStorage(opts);
}
