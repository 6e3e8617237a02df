/**
 * leasehold/postgres: the PostgreSQL storage adapter on node-postgres. Every write is one
 * statement (claims, finishes, heartbeats and inserts take their batches as arrays), atomic
 * without an explicit transaction; migrations, schedules, locks, the claim of a type with flow
 * limits and inserts with unique keys use short transactions of their own. `jobs.insert` and `leases.finish` accept `{ tx }`: the caller's own
 * `pg.PoolClient`/`pg.Client` inside their transaction, used as is (no BEGIN/COMMIT of ours),
 * so the job exists, or the finish lands, iff their transaction commits. Writes that make a
 * job due now send `pg_notify(NOTIFY_CHANNEL, schema)`, delivered on commit; `subscribe()`
 * listens for them on a dedicated connection (listener.ts). Behind PgBouncer in transaction
 * pooling mode (`pgbouncer: 'transaction'`) statements are unnamed, nothing is set per session,
 * and LISTEN runs only on `listenUrl`, a direct connection; without one, workers poll.
 */
import pg from 'pg';
import { ValidationError } from '../../core/errors.js';
import { idleTransactionTimeoutMs } from '../../core/limits.js';
import { AggregateStorage } from '../aggregates.js';
import type { Capabilities, MigrateResult, Storage } from '../../core/storage.js';
import { PostgresAlerts } from './alerts.js';
import { PostgresDiagnostics } from './diagnostics.js';
import { PostgresAttempts } from './attempts.js';
import { Db } from './db.js';
import { PostgresEffects } from './effects.js';
import { PostgresJobs } from './jobs.js';
import { PostgresLeases } from './leases.js';
import { PgListener } from './listener.js';
import { PostgresLocks } from './locks.js';
import { SCHEMA_VERSION, migrate, schemaVersion } from './migrations.js';
import { PostgresQueues } from './queues.js';
import { PostgresSchedules } from './schedules.js';
import { NOW, quoteSchema } from './sql.js';
import { PostgresWorkers } from './workers.js';
import { PostgresWorkflowReads } from './workflow-reads.js';

export { classifyPgError, isTransientPgError } from './db.js';
export { NOTIFY_CHANNEL, PgListener } from './listener.js';
export { MIGRATIONS, SCHEMA_VERSION, type Migration } from './migrations.js';
export { quoteSchema } from './sql.js';

/** Options for {@link postgresStorage}: a connection string or your own pool, and the schema. */
export interface PostgresStorageOptions {
  /** e.g. postgres://user@host:5432/db; ignored when `pool` is given */
  connectionString?: string;
  /** your own pool; `close()` leaves it open */
  pool?: pg.Pool;
  /** schema holding leasehold's tables; default 'leasehold'; must match /^[a-z_][a-z0-9_]*$/ */
  schema?: string;
  /** size of the pool this adapter creates (default 10); follow the worker's concurrency */
  poolSize?: number;
  /**
   * How long a call waits for a connection of the pool this adapter creates — a free one, or a
   * new one being opened — before it fails with a TransientStorageError (default 30 s; 0 waits
   * forever). A pool starved by long transactions, or a server that accepts no connections,
   * then shows up as errors the worker logs and backs off from, instead of claims that never
   * return.
   */
  connectTimeoutMs?: number;
  /**
   * the server ends a connection of our pool left idle inside a transaction this long (default
   * 10 s); not with `pgbouncer`, which refuses it at connect: set its `idle_transaction_timeout`
   */
  idleTransactionTimeoutMs?: number;
  /**
   * 'transaction': the URL (or pool) reaches PostgreSQL through PgBouncer in transaction pooling
   * mode, where each transaction may run on another server connection: statements are not
   * prepared by name, no setting is sent at connect, and LISTEN needs `listenUrl`.
   */
  pgbouncer?: 'transaction';
  /** a direct connection (not through a pooler) for LISTEN; default: the pool's settings, or none with `pgbouncer` (workers poll) */
  listenUrl?: string;
}

/** See PostgresStorageOptions.connectTimeoutMs. */
export const DEFAULT_CONNECT_TIMEOUT_MS = 30_000;

function createPool(opts: PostgresStorageOptions): pg.Pool {
  if (!opts.connectionString) throw new ValidationError('INVALID_OPTION', 'postgresStorage needs a connectionString or a pool');
  const connectTimeoutMs = opts.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
  if (!Number.isInteger(connectTimeoutMs) || connectTimeoutMs < 0) throw new ValidationError('INVALID_OPTION', 'connectTimeoutMs must be a whole number of ms, 0 or more');
  if (opts.pgbouncer && opts.idleTransactionTimeoutMs !== undefined) {
    throw new ValidationError('INVALID_OPTION', "idleTransactionTimeoutMs cannot pass through PgBouncer: set idle_transaction_timeout in pgbouncer.ini");
  }
  const pool = new pg.Pool({
    connectionString: opts.connectionString, max: opts.poolSize ?? 10, application_name: 'leasehold',
    connectionTimeoutMillis: connectTimeoutMs,
    // a process frozen inside one of our transactions must not hold its row locks, and so block a rescue, for ever
    ...(opts.pgbouncer ? {} : { idle_in_transaction_session_timeout: idleTransactionTimeoutMs(opts.idleTransactionTimeoutMs) }),
  });
  // an idle client whose connection drops emits 'error' on the pool, which would crash the
  // process unheard; the next query gets a fresh connection (or a classified error)
  pool.on('error', () => {});
  // and a client out of the pool may emit it where pg-pool listens for none; its query fails
  // anyway, and a client that erred is not pooled again
  pool.on('connect', (client) => client.on('error', () => {}));
  return pool;
}

const POSTGRES_AGGREGATES = { jobs: PostgresJobs, leases: PostgresLeases, attempts: PostgresAttempts, effects: PostgresEffects, schedules: PostgresSchedules, locks: PostgresLocks, workers: PostgresWorkers, queues: PostgresQueues, alerts: PostgresAlerts, diagnostics: PostgresDiagnostics, workflows: PostgresWorkflowReads } as const;

export class PostgresStorage extends AggregateStorage<Db, typeof POSTGRES_AGGREGATES> implements Storage {
  readonly dialect = 'postgres';
  readonly expectedSchemaVersion = SCHEMA_VERSION;
  readonly capabilities: Capabilities;
  /** the schema leasehold's tables live in */
  readonly schema: string;
  /** the connection pool it uses (yours when given) */
  readonly pool: pg.Pool;
  private readonly ownsPool: boolean;
  private closing: Promise<void> | null = null;
  private listener: PgListener | null = null;
  /** where LISTEN connects; null when it cannot (through a transaction pooler, no listenUrl) */
  private readonly listenConfig: pg.ClientConfig | null;

  constructor(opts: PostgresStorageOptions = {}) {
    const schema = opts.schema ?? 'leasehold';
    // refused before a pool is made for it
    quoteSchema(schema);
    if (opts.pgbouncer !== undefined && opts.pgbouncer !== 'transaction') throw new ValidationError('INVALID_OPTION', "pgbouncer must be 'transaction' (session pooling needs no option)");
    if (opts.listenUrl !== undefined && (typeof opts.listenUrl !== 'string' || opts.listenUrl === '')) throw new ValidationError('INVALID_OPTION', 'listenUrl must be a postgres:// connection string');
    const pool = opts.pool ?? createPool(opts);
    const config = (pool as unknown as { options: pg.ClientConfig }).options;
    const listenConfig: pg.ClientConfig | null = opts.listenUrl
      ? { connectionString: opts.listenUrl, application_name: 'leasehold-listener', ...(config.connectionTimeoutMillis ? { connectionTimeoutMillis: config.connectionTimeoutMillis } : {}) }
      : opts.pgbouncer ? null : { ...config, application_name: `${config.application_name ?? 'leasehold'}-listener` };
    super(new Db(pool, schema, !opts.pgbouncer), POSTGRES_AGGREGATES);
    this.schema = schema;
    this.listenConfig = listenConfig;
    this.capabilities = { multiProcess: true, transactionalEnqueue: true, listenNotify: listenConfig !== null };
    this.pool = pool;
    this.ownsPool = !opts.pool;
  }

  migrate(): Promise<MigrateResult> {
    return migrate(this.db);
  }

  schemaVersion(): Promise<number> {
    return schemaVersion(this.db);
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      await this.listener?.stop();
      if (this.ownsPool) await this.pool.end();
    })();
    return this.closing;
  }

  /**
   * Wake-ups over LISTEN on a dedicated connection (the pool's settings, or `listenUrl`). With
   * none (`pgbouncer` without `listenUrl`: a pooler would hand the LISTEN's connection to
   * others) it never wakes and `capabilities.listenNotify` is false: workers poll.
   */
  async subscribe(p: { onWake: () => void }): Promise<() => Promise<void>> {
    if (this.listenConfig === null) return async () => {};
    this.listener ??= new PgListener(this.listenConfig, this.schema);
    return this.listener.subscribe(p.onWake);
  }

  async now(): Promise<Date> {
    const [row] = await this.db.run('now', `-- leasehold now: the database clock\nSELECT ${NOW} AS now`);
    return row?.now as Date;
  }
}

/** Create a PostgreSQL storage from a connection string or your own pool. */
export function postgresStorage(opts: PostgresStorageOptions): PostgresStorage {
  return new PostgresStorage(opts);
}
