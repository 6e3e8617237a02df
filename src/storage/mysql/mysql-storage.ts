/**
 * `Storage` on MySQL 8.0.4+ / MariaDB 10.6+ through mysql2/promise. Semantics are the contract
 * in core/storage.ts; SQL is in mysql-sql.ts, the write paths in mysql-jobs.ts, mysql-effects.ts
 * and mysql-admin.ts, the reads in mysql-listing.ts. Times are UTC_TIMESTAMP(6) in DATETIME(6)
 * columns, independent of the session or server time zone.
 */
import mysql from 'mysql2/promise';
import { ValidationError } from '../../core/errors.js';
import { idleTransactionTimeoutMs } from '../../core/limits.js';
import type {
  AttemptRow, Capabilities, ClaimParams, ClaimedJob, EffectParams, EffectRecord, EffectReservation, EffectRow, ExpiredLease, ExpiredLeaseQuery,
  FinishParams, FinishResult, HeartbeatParams, HeartbeatResult, InsertResult, JobCount, JobQuery, JobRow,
  MigrateResult, NewJob, PruneParams, Storage, WorkerInfo, WorkerRow,
} from '../../core/storage.js';
import { cancelJobOn, migrateOn, pruneOn, readSchemaVersion, retryJobOn } from './mysql-admin.js';
import { completeEffectOn, reserveEffectWith } from './mysql-effects.js';
import * as batches from './mysql-effect-batches.js';
import type { PoolLike, Queryable } from './mysql-db.js';
import { callerTx, createPool, exec, idParam, micros, parseUtc, run, toWorkerRow } from './mysql-db.js';
import { inAutocommit, inTransaction } from './mysql-tx.js';
import { toStorageError, withRetry } from './mysql-errors.js';
import { finishOn } from './mysql-finish.js';
import type { MysqlFeatures } from './mysql-insert.js';
import { featuresOf, insertJobsOn, isSingleStatement, prepareInsert } from './mysql-insert.js';
import { claimOn, heartbeatOn } from './mysql-jobs.js';
import * as listing from './mysql-listing.js';
import type { RunOne } from './mysql-listing.js';
import type { MysqlSql } from './mysql-sql.js';
import { mysqlSql } from './mysql-sql.js';
import * as sched from './mysql-schedules.js';
import type { AcquireLockParams, FireScheduleParams, FireScheduleResult, LockGrant, LockRow, ScheduledJob, ScheduleRow, ScheduleUpsert } from '../../core/schedules.js';

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

export class MysqlStorage implements Storage {
  readonly dialect = 'mysql';
  readonly capabilities: Capabilities = { multiProcess: true, transactionalEnqueue: true, listenNotify: false };
  readonly tablePrefix: string;
  private readonly pool: PoolLike;
  private readonly ownPool: mysql.Pool | null;
  private readonly sql: MysqlSql;
  private readonly sch: sched.MysqlScheduleSql;
  private closed = false;
  private serverFeatures: Promise<MysqlFeatures> | null = null;

  constructor(opts: MysqlStorageOptions) {
    const prefix = opts.tablePrefix ?? 'leasehold_';
    if (!PREFIX_RE.test(prefix)) throw new ValidationError('INVALID_OPTION', `tablePrefix must match ${PREFIX_RE}; got ${JSON.stringify(prefix)}`);
    this.tablePrefix = prefix;
    this.sql = mysqlSql(prefix);
    this.sch = sched.mysqlScheduleSql(prefix);
    if (opts.pool) {
      this.ownPool = null;
      this.pool = opts.pool as unknown as PoolLike;
    } else {
      if (!opts.uri) throw new ValidationError('INVALID_OPTION', 'mysql storage needs a `uri` or a `pool`');
      this.ownPool = createPool(opts.uri, opts.poolSize ?? 10, idleTransactionTimeoutMs(opts.idleTransactionTimeoutMs));
      this.pool = this.ownPool as unknown as PoolLike;
    }
  }

  private tx<T>(what: string, fn: (c: Queryable) => Promise<T>, readCommitted = false): Promise<T> {
    // only our own pool is known to accept several statements per query
    return inTransaction(this.pool, this.sql, what, fn, { readCommitted, multi: this.ownPool !== null });
  }

  /** A single statement (read or idempotent write) on the pool, retried on lock or connection errors. */
  private readonly one: RunOne = (what, fn) => withRetry(what, () => fn(this.pool), true);

  async migrate(): Promise<MigrateResult> {
    return withRetry(
      'migrate',
      async () => {
        const c = await this.pool.getConnection();
        try {
          return await migrateOn(c, this.sql, this.tablePrefix);
        } finally {
          c.release();
        }
      },
      true,
    );
  }

  schemaVersion(): Promise<number> {
    return this.one('schemaVersion', (c) => readSchemaVersion(c, this.sql));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.ownPool) await this.ownPool.end();
  }

  async now(): Promise<Date> {
    const rows = await this.one('now', (c) => run(c, this.sql.now));
    return parseUtc(rows[0]?.now);
  }

  // ---- jobs ----------------------------------------------------------------------------------

  /**
   * What the server can do, asked once (a failed ask is asked again next time); on the caller's
   * connection when there is one, which may hold the last connection of a shared pool.
   */
  private features(on?: Queryable): Promise<MysqlFeatures> {
    if (this.serverFeatures) return this.serverFeatures;
    const ask = on ? run(on, this.sql.features) : this.one('features', (c) => run(c, this.sql.features));
    this.serverFeatures = ask.then(
      (rows) => featuresOf(rows[0]),
      (e: unknown) => {
        this.serverFeatures = null;
        throw e;
      },
    );
    return this.serverFeatures;
  }

  async insertJobs(jobs: readonly NewJob[], opts?: { tx?: unknown }): Promise<InsertResult[]> {
    const c = opts?.tx !== undefined && opts.tx !== null ? callerTx(opts.tx) : null;
    if (jobs.length === 0) return [];
    const batch = prepareInsert(jobs);
    if (c) {
      try {
        return await insertJobsOn(c, this.sql, batch, await this.features(c));
      } catch (e) {
        throw toStorageError(e, 'insertJobs');
      }
    }
    const f = await this.features();
    // one INSERT … RETURNING is atomic by itself: no BEGIN / COMMIT round trips
    if (isSingleStatement(batch, f)) return inAutocommit(this.pool, 'insertJobs', (c) => insertJobsOn(c, this.sql, batch, f));
    return this.tx('insertJobs', (c) => insertJobsOn(c, this.sql, batch, f));
  }

  claimJobs(params: ClaimParams): Promise<ClaimedJob[]> {
    return this.tx('claimJobs', (c) => claimOn(c, this.sql, params), true);
  }

  async heartbeat(params: HeartbeatParams): Promise<HeartbeatResult> {
    if (params.leases.length === 0) return { lost: [] };
    return this.one('heartbeat', (c) => heartbeatOn(c, this.sql, params));
  }

  async finishJobs(params: readonly FinishParams[], opts?: { tx?: unknown }): Promise<FinishResult[]> {
    if (opts?.tx !== undefined && opts.tx !== null) {
      const c = callerTx(opts.tx);
      try {
        return await finishOn(c, this.sql, params);
      } catch (e) {
        throw toStorageError(e, 'finishJobs');
      }
    }
    if (params.length === 0) return [];
    // READ COMMITTED: every read is a locking read of the batch's own rows; no gap locks to make
    // claimers (or other finishers inserting attempt rows) wait for this commit
    return this.tx('finishJobs', (c) => finishOn(c, this.sql, params), true);
  }

  // ---- admin and listing: reads in mysql-listing.ts, writes in mysql-admin.ts -----------------

  findExpiredLeases(params: ExpiredLeaseQuery): Promise<ExpiredLease[]> {
    return listing.findExpiredLeases(this.one, this.sql, params);
  }

  getJob(id: string): Promise<JobRow | null> {
    return listing.getJob(this.one, this.sql, id);
  }

  listJobs(query: JobQuery): Promise<JobRow[]> {
    return listing.listJobs(this.one, this.sql, query);
  }

  countJobs(): Promise<JobCount[]> {
    return listing.countJobs(this.one, this.sql);
  }

  listAttempts(jobId: string): Promise<AttemptRow[]> {
    return listing.listAttempts(this.one, this.sql, jobId);
  }

  async retryJob(id: string): Promise<{ job: JobRow | null; applied: boolean }> {
    const idp = idParam(id);
    if (idp === null) return { job: null, applied: false };
    return this.tx('retryJob', (c) => retryJobOn(c, this.sql, idp));
  }

  async cancelJob(id: string): Promise<{ job: JobRow | null; applied: boolean }> {
    const idp = idParam(id);
    if (idp === null) return { job: null, applied: false };
    return this.tx('cancelJob', (c) => cancelJobOn(c, this.sql, idp));
  }

  pruneJobs(params: PruneParams): Promise<number> {
    return this.tx('pruneJobs', (c) => pruneOn(c, this.sql, params), true);
  }

  // ---- effect ledger -------------------------------------------------------------------------

  async reserveEffect(params: EffectParams): Promise<EffectReservation> {
    const jobId = idParam(params.jobId);
    if (jobId === null) return { state: 'lost' };
    return reserveEffectWith((what, fn) => this.tx(what, fn), this.sql, params, jobId);
  }

  async completeEffect(params: EffectRecord): Promise<boolean> {
    const jobId = idParam(params.jobId);
    if (jobId === null) return false;
    // not re-run on a dropped connection (a landed update would then read as lost): the caller
    // retries the record and asks the ledger whether the first write landed
    return inAutocommit(this.pool, 'completeEffect', (c) => completeEffectOn(c, this.sql, params, jobId));
  }

  reserveEffects(ps: readonly EffectParams[]): Promise<EffectReservation[]> {
    return batches.reserveEffects(this.batchDeps, ps);
  }

  completeEffects(ps: readonly EffectRecord[]): Promise<boolean[]> {
    return batches.completeEffects(this.batchDeps, ps);
  }

  #keyCollation: Promise<string> | undefined;

  /** What the effect batches (mysql-effect-batches.ts) use of this storage. */
  private get batchDeps(): batches.BatchDeps {
    return {
      sql: this.sql,
      tx: (what, fn, readCommitted) => this.tx(what, fn, readCommitted),
      reserveEffect: (p) => this.reserveEffect(p),
      keyCollation: () => (this.#keyCollation ??= this.one('completeEffects', (c) => batches.readKeyCollation(c, this.sql)).catch((e: unknown) => {
        this.#keyCollation = undefined;
        throw e;
      })),
    };
  }

  getEffect(key: string): Promise<EffectRow | null> {
    return listing.getEffect(this.one, this.sql, key);
  }

  listEffects(params: { jobId?: string; limit: number }): Promise<EffectRow[]> {
    return listing.listEffects(this.one, this.sql, params);
  }

  countEffects(): Promise<number> {
    return listing.countEffects(this.one, this.sql);
  }

  // ---- workers -------------------------------------------------------------------------------

  async registerWorker(info: WorkerInfo): Promise<void> {
    const values = [info.id, info.host, info.pid, info.version, info.queues === null ? null : JSON.stringify(info.queues), JSON.stringify(info.types)];
    await this.one('registerWorker', (c) => exec(c, this.sql.registerWorker, values));
  }

  async heartbeatWorker(id: string): Promise<void> {
    await this.one('heartbeatWorker', (c) => exec(c, this.sql.heartbeatWorker, [id]));
  }

  async removeWorker(id: string): Promise<void> {
    await this.one('removeWorker', (c) => exec(c, this.sql.removeWorker, [id]));
  }

  async listWorkers(): Promise<WorkerRow[]> {
    const rows = await this.one('listWorkers', (c) => run(c, this.sql.listWorkers));
    return rows.map(toWorkerRow);
  }

  async pruneWorkers(params: { silentForMs: number }): Promise<number> {
    const res = await this.one('pruneWorkers', (c) => exec(c, this.sql.pruneWorkers, [micros(params.silentForMs)]));
    return res.affectedRows;
  }

  // ---- schedules and locks: see mysql-schedules.ts -----------------------------------------
  upsertSchedules(items: readonly ScheduleUpsert[]): Promise<ScheduleRow[]> {
    return this.tx('upsertSchedules', async (c) => { const out: ScheduleRow[] = []; for (const u of items) out.push(await sched.upsertOn(c, this.sch, u)); return out; });
  }
  syncSchedules(items: readonly ScheduleUpsert[]): Promise<{ schedules: ScheduleRow[]; removed: string[] }> { return this.tx('syncSchedules', (c) => sched.syncOn(c, this.sch, items)); }
  async getSchedule(name: string): Promise<ScheduleRow | null> { const [r] = await this.one('getSchedule', (c) => run(c, this.sch.get, [name])); return r ? sched.toScheduleRow(r) : null; }
  async listSchedules(): Promise<ScheduleRow[]> { return (await this.one('listSchedules', (c) => run(c, this.sch.list))).map(sched.toScheduleRow); }
  async removeSchedule(name: string): Promise<boolean> { return (await this.one('removeSchedule', (c) => exec(c, this.sch.remove, [name]))).affectedRows > 0; }
  async setScheduleEnabled(p: { name: string; enabled: boolean; nextRunAt?: Date | null }): Promise<ScheduleRow | null> {
    const next = p.nextRunAt ? p.nextRunAt.toISOString().slice(0, 23).replace('T', ' ') : null;
    await this.one('setScheduleEnabled', (c) => exec(c, this.sch.setEnabled, [p.enabled ? 1 : 0, p.nextRunAt !== undefined ? 1 : 0, next, p.name]));
    return this.getSchedule(p.name);
  }
  async dueSchedules(p: { limit: number }): Promise<ScheduleRow[]> { return (await this.one('dueSchedules', (c) => run(c, this.sch.due, [p.limit]))).map(sched.toScheduleRow); }
  fireSchedule(p: FireScheduleParams): Promise<FireScheduleResult> { return this.tx('fireSchedule', (c) => sched.fireOn(c, this.sch, p)); }
  runScheduleNow(p: { name: string; job: ScheduledJob }): Promise<JobRow | null> { return this.tx('runScheduleNow', (c) => sched.runNowOn(c, this.sch, p)); }
  async tryAcquireLock(p: AcquireLockParams): Promise<LockGrant | null> {
    await this.one('tryAcquireLock', (c) => exec(c, this.sch.ensureCounter, [p.name]));
    return this.tx('tryAcquireLock', (c) => sched.acquireOn(c, this.sch, p), true);
  }
  async extendLock(p: { name: string; token: string; ttlMs: number }): Promise<boolean> { return (await this.one('extendLock', (c) => exec(c, this.sch.extend, [micros(p.ttlMs), p.name, p.token]))).affectedRows > 0; }
  async releaseLock(p: { name: string; token: string }): Promise<boolean> { return (await this.one('releaseLock', (c) => exec(c, this.sch.release, [p.name, p.token]))).affectedRows > 0; }
  async listLocks(p: { name?: string } = {}): Promise<LockRow[]> { return (await this.one('listLocks', (c) => run(c, this.sch.listLocks, [p.name ?? null, p.name ?? null]))).map(sched.toLockRow); }
}

/** A MySQL/MariaDB storage; call `migrate()` before first use. */
export function mysqlStorage(opts: MysqlStorageOptions): MysqlStorage {
  return new MysqlStorage(opts);
}
