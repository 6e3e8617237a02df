/**
 * leasehold/mysql: the MySQL 8.0.4+ / MariaDB 10.6+ storage adapter on mysql2/promise. Its
 * semantics are the contract in core/storage.ts. Times are UTC_TIMESTAMP(6) in DATETIME(6)
 * columns, independent of the session or server time zone. `jobs.insert` and `leases.finish`
 * accept `{ tx }`: the caller's own mysql2 connection inside their transaction, used as is, so
 * the job exists, or the finish lands, iff their transaction commits. Idle workers are woken
 * through a parked connection (wakeups.ts); polling stays the backstop.
 */
import type mysql from 'mysql2/promise';
import { ValidationError } from '../../core/errors.js';
import { idleTransactionTimeoutMs } from '../../core/limits.js';
import { AggregateStorage } from '../aggregates.js';
import type { Capabilities, MigrateResult, Storage } from '../../core/storage.js';
import { MysqlAlerts } from './alerts.js';
import { MysqlDiagnostics } from './diagnostics.js';
import { MysqlAttempts } from './attempts.js';
import { Db, type PoolLike, createPool, run } from './db.js';
import { MysqlEffects } from './effects.js';
import { MysqlJobs } from './jobs.js';
import { MysqlLeases } from './leases.js';
import { MysqlLocks } from './locks.js';
import { SCHEMA_VERSION, migrate, schemaVersion } from './migrations.js';
import { MysqlQueues } from './queues.js';
import { MysqlSchedules } from './schedules.js';
import { NOW, parseUtc } from './sql.js';
import { wakeupsOf } from './wakeups.js';
import { MysqlWorkers } from './workers.js';
import { MysqlWorkflowReads } from './workflow-reads.js';

export { classifyMysqlError, type MysqlErrorKind } from './db.js';
export { MIGRATIONS, SCHEMA_VERSION, type Migration } from './migrations.js';
export { checkServerVersion, parseServerVersion, type MysqlServerInfo } from './server-version.js';

/** Options for {@link mysqlStorage}: a URI or your own pool. */
export interface MysqlStorageOptions {
  /** mysql://user:pass@host:port/database */
  uri?: string;
  /** a mysql2/promise pool you own (we never end it) */
  pool?: mysql.Pool;
  /** prefix of every table name; default 'leasehold_' */
  tablePrefix?: string;
  /** connections in the pool we create; default 10 */
  poolSize?: number;
  /** MariaDB ends a connection of our pool left idle inside a transaction this long (default 10 s) */
  idleTransactionTimeoutMs?: number;
}

const PREFIX_RE = /^[A-Za-z0-9_]{0,32}$/;
/** The smallest pool a subscriber parks one of its connections from (the worker's claims and finishes need the rest). */
const MIN_POOL_TO_PARK = 3;

const NOW_SQL = `-- leasehold now: the database's clock, UTC, microseconds
  SELECT ${NOW} AS now`;

const MYSQL_AGGREGATES = { jobs: MysqlJobs, leases: MysqlLeases, attempts: MysqlAttempts, effects: MysqlEffects, schedules: MysqlSchedules, locks: MysqlLocks, workers: MysqlWorkers, queues: MysqlQueues, alerts: MysqlAlerts, diagnostics: MysqlDiagnostics, workflows: MysqlWorkflowReads } as const;

export class MysqlStorage extends AggregateStorage<Db, typeof MYSQL_AGGREGATES> implements Storage {
  readonly dialect = 'mysql';
  readonly expectedSchemaVersion = SCHEMA_VERSION;
  readonly capabilities: Capabilities;
  /** prefix of every table and index name */
  readonly tablePrefix: string;
  private readonly ownPool: mysql.Pool | null;
  private closed = false;

  constructor(opts: MysqlStorageOptions) {
    const prefix = opts.tablePrefix ?? 'leasehold_';
    if (!PREFIX_RE.test(prefix)) throw new ValidationError('INVALID_OPTION', `tablePrefix must match ${PREFIX_RE}; got ${JSON.stringify(prefix)}`);
    if (!opts.pool && !opts.uri) throw new ValidationError('INVALID_OPTION', 'mysql storage needs a `uri` or a `pool`');
    const ownPool = opts.pool ? null : createPool(opts.uri!, opts.poolSize ?? 10, idleTransactionTimeoutMs(opts.idleTransactionTimeoutMs));
    // only our own pool is known to accept several statements per query
    super(new Db((opts.pool ?? ownPool) as unknown as PoolLike, prefix, ownPool !== null), MYSQL_AGGREGATES);
    this.tablePrefix = prefix;
    this.ownPool = ownPool;
    // a parked connection is one the pool lacks: not in a pool of fewer than 3
    const limit = (opts.pool as { pool?: { config?: { connectionLimit?: unknown } } } | undefined)?.pool?.config?.connectionLimit ?? opts.poolSize ?? 10;
    this.capabilities = { multiProcess: true, transactionalEnqueue: true, listenNotify: typeof limit !== 'number' || limit >= MIN_POOL_TO_PARK };
  }

  migrate(): Promise<MigrateResult> {
    return migrate(this.db);
  }

  schemaVersion(): Promise<number> {
    return schemaVersion(this.db);
  }

  /**
   * Calls `onWake` soon after jobs become due through another storage or process (an enqueue,
   * not one in the caller's own transaction; a workflow; a batch's callback; a finish that
   * makes a job due again; an operator's retry; a schedule's run-now; a resumed queue), through
   * one connection of the pool parked in `SLEEP` until such a write interrupts it (wakeups.ts);
   * in a pool of fewer than 3 connections it never wakes and `capabilities.listenNotify` is
   * false. Polling stays the backstop. Resolves to an unsubscribe.
   */
  async subscribe(p: { onWake: () => void }): Promise<() => Promise<void>> {
    if (!this.capabilities.listenNotify) return async () => {};
    return wakeupsOf(this.db).subscribe(p.onWake);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await wakeupsOf(this.db).stop();
    if (this.ownPool) await this.ownPool.end();
  }

  async now(): Promise<Date> {
    const [row] = await this.db.one('now', (c) => run(c, NOW_SQL));
    return parseUtc(row?.now);
  }
}

/** A MySQL/MariaDB storage; call `migrate()` before first use. */
export function mysqlStorage(opts: MysqlStorageOptions): MysqlStorage {
  return new MysqlStorage(opts);
}
