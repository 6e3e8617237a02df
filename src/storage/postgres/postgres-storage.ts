/**
 * The PostgreSQL storage adapter on node-postgres. Every write is one statement (claims,
 * finishes, heartbeats and inserts are batched through unnest arrays and data-modifying CTEs),
 * so it is atomic without an explicit transaction. Two operations use a transaction of their
 * own: `migrate()` (under an advisory lock) and `cancelJob()` (lock the row first, so a claim
 * committing meanwhile has its attempt row closed too). `insertJobs` and `finishJobs` accept
 * `{ tx }`: the caller's own `pg.PoolClient`/`pg.Client` inside their transaction, used as is
 * (no BEGIN/COMMIT of ours), so the job exists, or the finish lands, iff their transaction
 * commits. Enqueues, retries and finishes that make a job due now send
 * `pg_notify(NOTIFY_CHANNEL, schema)` in the same transaction, delivered on commit;
 * `subscribe()` listens for them on a dedicated connection (postgres-listener.ts). The class
 * delegates: each group of operations is in its own postgres-*.ts sibling.
 */
import pg from 'pg';
import { LeaseholdError, SchemaTooNewError, ValidationError } from '../../core/errors.js';
import { idleTransactionTimeoutMs } from '../../core/limits.js';
import type {
  AttemptRow, Capabilities, ClaimedJob, ClaimParams, EffectParams, EffectRecord, EffectReservation, EffectRow,
  ExpiredLease, ExpiredLeaseQuery, FinishParams, FinishResult, HeartbeatParams, HeartbeatResult, InsertResult, JobCount,
  JobQuery, JobRow, MigrateResult, NewJob, PruneParams, Storage, WorkerInfo, WorkerRow,
} from '../../core/storage.js';
import { ClaimBases } from './postgres-claim-bases.js';
import { prepared, query, transaction } from './postgres-db.js';
import { fastTypes } from './postgres-types.js';
import type { Prepared } from './postgres-db.js';
import { NOTIFY_CHANNEL, PgListener } from './postgres-listener.js';
import { POSTGRES_MIGRATIONS, POSTGRES_SCHEMA_VERSION } from './postgres-migrations.js';
import { quoteSchema, toWorkerRow, txClient, type Queryable, type Row } from './postgres-rows.js';
import { adminSql, migrationSql } from './postgres-sql-admin.js';
import { effectsSql } from './postgres-sql-effects.js';
import { insertSql } from './postgres-sql-insert.js';
import { jobsSql } from './postgres-sql-jobs.js';
import { insertJobs, type InsertContext } from './postgres-insert.js';
import * as admin from './postgres-admin.js';
import * as fx from './postgres-effects.js';
import { finishJobs } from './postgres-finish.js';
import * as hot from './postgres-jobs.js';
import * as sched from './postgres-schedules.js';
import type { AcquireLockParams, FireScheduleParams, FireScheduleResult, LockGrant, LockRow, ScheduledJob, ScheduleRow, ScheduleUpsert } from '../../core/schedules.js';

export { NOTIFY_CHANNEL };

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
  /** the server ends a connection of our pool left idle inside a transaction this long (default 10 s) */
  idleTransactionTimeoutMs?: number;
}

/** See PostgresStorageOptions.connectTimeoutMs. */
export const DEFAULT_CONNECT_TIMEOUT_MS = 30_000;

export class PostgresStorage implements Storage {
  readonly dialect = 'postgres';
  readonly capabilities: Capabilities = { multiProcess: true, transactionalEnqueue: true, listenNotify: true };
  readonly schema: string;
  readonly pool: pg.Pool;
  private readonly ownsPool: boolean;
  /** The job statements; the hot ones also prepared (their functions: postgres-functions.ts). */
  private readonly sql: ReturnType<typeof jobsSql>;
  private readonly hot: { claim: Prepared; heartbeat: Prepared; finish: Prepared; finishSucceeded: Prepared; finishSucceededBy: Prepared };
  /** which worker made this storage's recent claims, for the finishes of their successes */
  private readonly bases = new ClaimBases();
  private readonly inserts: InsertContext;
  private readonly admin: ReturnType<typeof adminSql>;
  private readonly effects: fx.EffectStatements;
  private readonly mig: ReturnType<typeof migrationSql>;
  private readonly sch: ReturnType<typeof sched.schedulesSql>;
  /** NOTIFY channel and payload (the schema) for the wake-up of jobs due now */
  private readonly notify: [string, string];
  private closing: Promise<void> | null = null;
  private listener: PgListener | null = null;

  constructor(opts: PostgresStorageOptions = {}) {
    this.schema = opts.schema ?? 'leasehold';
    this.notify = [NOTIFY_CHANNEL, this.schema];
    const q = quoteSchema(this.schema);
    const jobs = jobsSql(q);
    this.sql = jobs;
    this.hot = {
      claim: prepared(jobs.claimCall, 'array'), heartbeat: prepared(jobs.heartbeatCall), finish: prepared(jobs.finishCall),
      finishSucceeded: prepared(jobs.finishSucceededCall), finishSucceededBy: prepared(jobs.finishSucceededByCall),
    };
    const ins = insertSql(q);
    this.inserts = {
      run: (what, text, params, on) => this.run(what, text, params, on),
      sql: ins,
      hot: { insertOne: prepared(ins.insertOne), insertRun: prepared(ins.insertRun), insertPlain: prepared(ins.insertPlain) },
      notify: this.notify,
    };
    this.admin = adminSql(q);
    this.effects = fx.effectStatements(effectsSql(q));
    this.mig = migrationSql(q);
    this.sch = sched.schedulesSql(q);
    if (opts.pool) {
      this.pool = opts.pool;
      this.ownsPool = false;
    } else {
      if (!opts.connectionString) throw new ValidationError('INVALID_OPTION', 'postgresStorage needs a connectionString or a pool');
      const connectTimeoutMs = opts.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
      if (!Number.isInteger(connectTimeoutMs) || connectTimeoutMs < 0) throw new ValidationError('INVALID_OPTION', 'connectTimeoutMs must be a whole number of ms, 0 or more');
      this.pool = new pg.Pool({
        connectionString: opts.connectionString, max: opts.poolSize ?? 10, application_name: 'leasehold', types: fastTypes,
        connectionTimeoutMillis: connectTimeoutMs,
        // a process frozen inside one of our transactions must not hold its row locks, and so block a rescue, for ever
        idle_in_transaction_session_timeout: idleTransactionTimeoutMs(opts.idleTransactionTimeoutMs),
      });
      // An idle client whose connection drops emits 'error' on the pool; without a listener that
      // would crash the process. The next query gets a fresh connection (or a classified error).
      this.pool.on('error', () => {});
      this.ownsPool = true;
    }
  }

  private run(what: string, text: string | Prepared, params: unknown[] = [], on?: Queryable): Promise<Row[]> {
    return query(on ?? this.pool, what, text, params);
  }

  async migrate(): Promise<MigrateResult> {
    return transaction(this.pool, 'migrate', async (c) => {
      const server = Number((await c.query(this.mig.serverVersion)).rows[0]?.v ?? 0);
      if (server < 130000) throw new LeaseholdError('UNSUPPORTED_SERVER', `PostgreSQL ${server} is too old: leasehold needs 13 or newer (gen_random_uuid)`);
      await c.query(this.mig.lock, [`leasehold.migrate.${this.schema}`]);
      await c.query(this.mig.createSchema);
      await c.query(this.mig.createLedger);
      const from = Number((await c.query(this.mig.maxVersion)).rows[0]?.version ?? 0);
      if (from > POSTGRES_SCHEMA_VERSION) throw new SchemaTooNewError(from, POSTGRES_SCHEMA_VERSION);
      const applied: MigrateResult['applied'] = [];
      for (const m of POSTGRES_MIGRATIONS.filter((x) => x.version > from)) {
        await c.query(m.sql(quoteSchema(this.schema)));
        await c.query(this.mig.record, [m.version, m.name]);
        applied.push({ version: m.version, name: m.name });
      }
      return { from, to: Math.max(from, ...applied.map((a) => a.version)), applied };
    });
  }

  async schemaVersion(): Promise<number> {
    const [row] = await this.run('schemaVersion', this.mig.ledgerExists, [`${quoteSchema(this.schema)}.migrations`]);
    if (!row?.present) return 0;
    const [v] = await this.run('schemaVersion', this.mig.maxVersion);
    return Number(v?.version ?? 0);
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      await this.listener?.stop();
      if (this.ownsPool) await this.pool.end();
    })();
    return this.closing;
  }

  /** Wake-ups over LISTEN on a dedicated connection (same settings as the pool's). */
  subscribe(onWake: () => void): Promise<() => Promise<void>> {
    const config = (this.pool as unknown as { options: pg.ClientConfig }).options;
    this.listener ??= new PgListener({ ...config, application_name: `${config.application_name ?? 'leasehold'}-listener` }, this.schema);
    return this.listener.subscribe(onWake);
  }

  async now(): Promise<Date> {
    const [row] = await this.run('now', this.admin.now);
    return row?.now as Date;
  }

  // --- jobs: see postgres-insert.ts, postgres-jobs.ts, postgres-finish.ts ------------------

  async insertJobs(jobs: readonly NewJob[], opts?: { tx?: unknown }): Promise<InsertResult[]> {
    return insertJobs(this.inserts, jobs, txClient(opts?.tx));
  }

  claimJobs(p: ClaimParams): Promise<ClaimedJob[]> {
    return hot.claimJobs(this.pool, this.hot.claim, this.bases, p);
  }

  heartbeat(p: HeartbeatParams): Promise<HeartbeatResult> {
    return hot.heartbeat(this.pool, this.hot.heartbeat, this.sql, p);
  }

  async finishJobs(params: readonly FinishParams[], opts?: { tx?: unknown }): Promise<FinishResult[]> {
    const tx = txClient(opts?.tx);
    return finishJobs(tx ?? this.pool, this.hot, tx ? undefined : this.bases, params, this.notify);
  }

  findExpiredLeases(p: ExpiredLeaseQuery): Promise<ExpiredLease[]> {
    return hot.findExpiredLeases(this.pool, this.sql, p);
  }

  // --- admin and listing: see postgres-admin.ts ----------------------------------------------

  getJob(id: string): Promise<JobRow | null> {
    return admin.getJob(this.pool, this.admin, id);
  }

  listJobs(q: JobQuery): Promise<JobRow[]> {
    return admin.listJobs(this.pool, this.admin, q);
  }

  countJobs(): Promise<JobCount[]> {
    return admin.countJobs(this.pool, this.admin);
  }

  listAttempts(jobId: string): Promise<AttemptRow[]> {
    return admin.listAttempts(this.pool, this.admin, jobId);
  }

  retryJob(id: string): Promise<{ job: JobRow | null; applied: boolean }> {
    return admin.retryJob(this.pool, this.admin, id, this.notify);
  }

  cancelJob(id: string): Promise<{ job: JobRow | null; applied: boolean }> {
    return admin.cancelJob(this.pool, this.admin, id);
  }

  pruneJobs(p: PruneParams): Promise<number> {
    return admin.pruneJobs(this.pool, this.admin, p);
  }

  // --- effect ledger: see postgres-effects.ts -----------------------------------------------

  reserveEffect(p: EffectParams): Promise<EffectReservation> {
    return fx.reserveEffect(this.pool, this.effects, p);
  }

  completeEffect(p: EffectRecord): Promise<boolean> {
    return fx.completeEffect(this.pool, this.effects, p);
  }

  reserveEffects(ps: readonly EffectParams[]): Promise<EffectReservation[]> {
    return fx.reserveEffects(this.pool, this.effects, ps);
  }

  completeEffects(ps: readonly EffectRecord[]): Promise<boolean[]> {
    return fx.completeEffects(this.pool, this.effects, ps);
  }

  getEffect(key: string): Promise<EffectRow | null> {
    return fx.getEffect(this.pool, this.admin, key);
  }

  listEffects(p: { jobId?: string; limit: number }): Promise<EffectRow[]> {
    return fx.listEffects(this.pool, this.admin, p);
  }

  countEffects(): Promise<number> {
    return fx.countEffects(this.pool, this.admin);
  }

  // --- workers ------------------------------------------------------------------------------

  async registerWorker(w: WorkerInfo): Promise<void> {
    await this.run('registerWorker', this.admin.registerWorker, [w.id, w.host, w.pid, w.version, w.queues ? JSON.stringify(w.queues) : null, JSON.stringify(w.types)]);
  }

  async heartbeatWorker(id: string): Promise<void> {
    await this.run('heartbeatWorker', this.admin.heartbeatWorker, [id]);
  }

  async removeWorker(id: string): Promise<void> {
    await this.run('removeWorker', this.admin.removeWorker, [id]);
  }

  async listWorkers(): Promise<WorkerRow[]> {
    return (await this.run('listWorkers', this.admin.listWorkers)).map(toWorkerRow);
  }

  async pruneWorkers(p: { silentForMs: number }): Promise<number> {
    const [row] = await this.run('pruneWorkers', this.admin.pruneWorkers, [p.silentForMs]);
    return Number(row?.n ?? 0);
  }

  // --- schedules and locks: see postgres-schedules.ts ---------------------------------------
  upsertSchedules(items: readonly ScheduleUpsert[]): Promise<ScheduleRow[]> { return sched.upsertSchedules(this.pool, this.sch, items); }
  syncSchedules(items: readonly ScheduleUpsert[]): Promise<{ schedules: ScheduleRow[]; removed: string[] }> { return sched.syncSchedules(this.pool, this.sch, items); }
  async getSchedule(name: string): Promise<ScheduleRow | null> { const [r] = await this.run('getSchedule', this.sch.get, [name]); return r ? sched.toScheduleRow(r) : null; }
  async listSchedules(): Promise<ScheduleRow[]> { return (await this.run('listSchedules', this.sch.list)).map(sched.toScheduleRow); }
  async removeSchedule(name: string): Promise<boolean> { return (await this.run('removeSchedule', this.sch.remove, [name])).length > 0; }
  async setScheduleEnabled(p: { name: string; enabled: boolean; nextRunAt?: Date | null }): Promise<ScheduleRow | null> {
    const [r] = await this.run('setScheduleEnabled', this.sch.setEnabled, [p.name, p.enabled, p.nextRunAt !== undefined, p.nextRunAt ?? null]);
    return r ? sched.toScheduleRow(r) : null;
  }
  async dueSchedules(p: { limit: number }): Promise<ScheduleRow[]> { return (await this.run('dueSchedules', this.sch.due, [p.limit])).map(sched.toScheduleRow); }
  fireSchedule(p: FireScheduleParams): Promise<FireScheduleResult> { return sched.fireSchedule(this.pool, this.sch, p, this.notify); }
  runScheduleNow(p: { name: string; job: ScheduledJob }): Promise<JobRow | null> { return sched.runScheduleNow(this.pool, this.sch, p, this.notify); }
  tryAcquireLock(p: AcquireLockParams): Promise<LockGrant | null> { return sched.tryAcquireLock(this.pool, this.sch, p); }
  async extendLock(p: { name: string; token: string; ttlMs: number }): Promise<boolean> { return (await this.run('extendLock', this.sch.extend, [p.name, p.token, p.ttlMs])).length > 0; }
  async releaseLock(p: { name: string; token: string }): Promise<boolean> { return (await this.run('releaseLock', this.sch.release, [p.name, p.token])).length > 0; }
  async listLocks(p: { name?: string } = {}): Promise<LockRow[]> { return (await this.run('listLocks', this.sch.listLocks, [p.name ?? null])).map(sched.toLockRow); }
}

/** Create a PostgreSQL storage from a connection string or your own pool. */
export function postgresStorage(opts: PostgresStorageOptions): PostgresStorage {
  return new PostgresStorage(opts);
}
