/**
 * The SQLite adapter (better-sqlite3, or node:sqlite by option): the embedded default. Implements the Storage contract of
 * src/core/storage.ts; every decision comes from the caller, this file performs it as one
 * guarded write and reports which rows changed.
 *
 * Clock: SQLite has no server, so "the database's clock" is this process's clock — the `clock`
 * option (default Date.now), read once per operation and passed to SQL as `@now`. Processes
 * sharing one file must therefore share a host clock (they share a file system, so they do).
 *
 * Transactions are synchronous in both drivers, so a caller's own transaction cannot span
 * an `await`: `transactionalEnqueue` is false and `opts.tx` is rejected with NotSupportedError.
 */
import { NotSupportedError } from '../../core/errors.js';
import type {
  AttemptRow, Capabilities, ClaimedJob, ClaimParams, EffectParams, EffectRecord, EffectReservation, EffectRow, ExpiredLease, ExpiredLeaseQuery,
  FinishParams, FinishResult, HeartbeatParams, HeartbeatResult, InsertResult, JobCount, JobQuery, JobRow,
  MigrateResult, NewJob, PruneParams, Storage, WorkerInfo, WorkerRow,
} from '../../core/storage.js';
import { SqliteDb } from './sqlite-db.js';
import { checkDriver } from './sqlite-driver.js';
import type { SqliteDriverName } from './sqlite-driver.js';
import { checkPrefix } from './sqlite-migrations.js';
import * as admin from './sqlite-admin.js';
import * as fx from './sqlite-effects.js';
import * as hot from './sqlite-jobs.js';
import * as sched from './sqlite-schedules.js';
import type { AcquireLockParams, FireScheduleParams, FireScheduleResult, LockGrant, LockRow, ScheduledJob, ScheduleRow, ScheduleUpsert } from '../../core/schedules.js';
import { toExpiredLease, toJobRow, toSqlId } from './sqlite-rows.js';
import type { SqlExpired, SqlJob } from './sqlite-rows.js';
import { JOB_SQL } from './sqlite-sql.js';

export interface SqliteStorageOptions {
  /** database file; ':memory:' works for a single connection but cannot be shared */
  path: string;
  /** how long a write waits for another process's write lock before failing (default 5000) */
  busyTimeoutMs?: number;
  /** the "database clock" in epoch ms (default Date.now); see the header comment */
  clock?: () => number;
  /** prefix of every table and index name (default 'leasehold_') */
  tablePrefix?: string;
  /** 'better-sqlite3' (default) or 'node:sqlite' (built into Node, no native module) */
  driver?: SqliteDriverName;
}

export class SqliteStorage implements Storage {
  readonly dialect = 'sqlite';
  readonly capabilities: Capabilities = { multiProcess: true, transactionalEnqueue: false, listenNotify: false };
  private readonly conn: SqliteDb;
  private readonly clock: () => number;

  constructor(opts: SqliteStorageOptions) {
    this.clock = opts.clock ?? Date.now;
    this.conn = new SqliteDb(opts.path, checkPrefix(opts.tablePrefix ?? 'leasehold_'), opts.busyTimeoutMs ?? 5000, checkDriver(opts.driver));
  }

  async migrate(): Promise<MigrateResult> {
    return this.conn.migrate(this.clock());
  }

  async schemaVersion(): Promise<number> {
    return this.conn.schemaVersion();
  }

  async close(): Promise<void> {
    this.conn.close();
  }

  async now(): Promise<Date> {
    return new Date(this.clock());
  }

  // --- jobs -------------------------------------------------------------------------------

  async insertJobs(jobs: readonly NewJob[], opts?: { tx?: unknown }): Promise<InsertResult[]> {
    this.rejectTx(opts, 'insertJobs');
    if (jobs.length === 0) return [];
    return hot.insertJobs(this.conn, this.clock(), jobs);
  }

  async claimJobs(p: ClaimParams): Promise<ClaimedJob[]> {
    if (p.types.length === 0 || p.limit <= 0) return [];
    return hot.claimJobs(this.conn, this.clock(), p);
  }

  async heartbeat(p: HeartbeatParams): Promise<HeartbeatResult> {
    if (p.leases.length === 0) return { lost: [] };
    return hot.heartbeat(this.conn, this.clock(), p);
  }

  async finishJobs(params: readonly FinishParams[], opts?: { tx?: unknown }): Promise<FinishResult[]> {
    this.rejectTx(opts, 'finishJobs');
    if (params.length === 0) return [];
    return hot.finishJobs(this.conn, this.clock(), params);
  }

  async findExpiredLeases(p: ExpiredLeaseQuery): Promise<ExpiredLease[]> {
    const types = p.types === undefined ? null : JSON.stringify(p.types);
    const rows = this.conn.read(() => this.conn.stmt(JOB_SQL.expired).all({ now: this.clock(), limit: p.limit, types }) as SqlExpired[]);
    return rows.map(toExpiredLease);
  }

  async getJob(id: string): Promise<JobRow | null> {
    const n = toSqlId(id);
    if (n === null) return null;
    const row = this.conn.read(() => this.conn.stmt(JOB_SQL.get).get(n) as SqlJob | undefined);
    return row ? toJobRow(row) : null;
  }

  // --- admin and listing: see sqlite-admin.ts ----------------------------------------------

  async listJobs(q: JobQuery): Promise<JobRow[]> {
    return admin.listJobs(this.conn, q);
  }

  async countJobs(): Promise<JobCount[]> {
    return admin.countJobs(this.conn, this.clock());
  }

  async listAttempts(jobId: string): Promise<AttemptRow[]> {
    return admin.listAttempts(this.conn, jobId);
  }

  async retryJob(id: string): Promise<{ job: JobRow | null; applied: boolean }> {
    return admin.retryJob(this.conn, this.clock(), id);
  }

  async cancelJob(id: string): Promise<{ job: JobRow | null; applied: boolean }> {
    return admin.cancelJob(this.conn, this.clock(), id);
  }

  async pruneJobs(p: PruneParams): Promise<number> {
    return admin.pruneJobs(this.conn, this.clock(), p);
  }

  // --- effect ledger (ctx.once) and workers: see sqlite-effects.ts ------------------------

  async reserveEffect(p: EffectParams): Promise<EffectReservation> {
    return fx.reserveEffect(this.conn, this.clock(), p);
  }

  async completeEffect(p: EffectRecord): Promise<boolean> {
    return fx.completeEffect(this.conn, this.clock(), p);
  }

  async reserveEffects(ps: readonly EffectParams[]): Promise<EffectReservation[]> {
    return fx.reserveEffects(this.conn, this.clock(), ps);
  }

  async completeEffects(ps: readonly EffectRecord[]): Promise<boolean[]> {
    return fx.completeEffects(this.conn, this.clock(), ps);
  }

  async getEffect(key: string): Promise<EffectRow | null> {
    return fx.getEffect(this.conn, key);
  }

  async listEffects(p: { jobId?: string; limit: number }): Promise<EffectRow[]> {
    return fx.listEffects(this.conn, p);
  }

  async countEffects(): Promise<number> {
    return fx.countEffects(this.conn);
  }

  async registerWorker(w: WorkerInfo): Promise<void> {
    fx.registerWorker(this.conn, this.clock(), w);
  }

  async heartbeatWorker(id: string): Promise<void> {
    fx.heartbeatWorker(this.conn, this.clock(), id);
  }

  async removeWorker(id: string): Promise<void> {
    fx.removeWorker(this.conn, id);
  }

  async listWorkers(): Promise<WorkerRow[]> {
    return fx.listWorkers(this.conn);
  }

  async pruneWorkers(p: { silentForMs: number }): Promise<number> {
    return fx.pruneWorkers(this.conn, this.clock() - p.silentForMs);
  }

  // --- schedules and locks: see sqlite-schedules.ts ----------------------------------------
  async upsertSchedules(items: readonly ScheduleUpsert[]): Promise<ScheduleRow[]> { return sched.upsertSchedules(this.conn, this.clock(), items); }
  async syncSchedules(items: readonly ScheduleUpsert[]): Promise<{ schedules: ScheduleRow[]; removed: string[] }> { return sched.syncSchedules(this.conn, this.clock(), items); }
  async getSchedule(name: string): Promise<ScheduleRow | null> { return sched.getSchedule(this.conn, name); }
  async listSchedules(): Promise<ScheduleRow[]> { return sched.listSchedules(this.conn); }
  async removeSchedule(name: string): Promise<boolean> { return sched.removeSchedule(this.conn, name); }
  async setScheduleEnabled(p: { name: string; enabled: boolean; nextRunAt?: Date | null }): Promise<ScheduleRow | null> { return sched.setScheduleEnabled(this.conn, this.clock(), p); }
  async dueSchedules(p: { limit: number }): Promise<ScheduleRow[]> { return sched.dueSchedules(this.conn, this.clock(), p.limit); }
  async fireSchedule(p: FireScheduleParams): Promise<FireScheduleResult> { return sched.fireSchedule(this.conn, this.clock(), p); }
  async runScheduleNow(p: { name: string; job: ScheduledJob }): Promise<JobRow | null> { return sched.runScheduleNow(this.conn, this.clock(), p); }
  async tryAcquireLock(p: AcquireLockParams): Promise<LockGrant | null> { return sched.tryAcquireLock(this.conn, this.clock(), p); }
  async extendLock(p: { name: string; token: string; ttlMs: number }): Promise<boolean> { return sched.extendLock(this.conn, this.clock(), p); }
  async releaseLock(p: { name: string; token: string }): Promise<boolean> { return sched.releaseLock(this.conn, this.clock(), p); }
  async listLocks(p: { name?: string } = {}): Promise<LockRow[]> { return sched.listLocks(this.conn, this.clock(), p.name); }

  // --- helpers ------------------------------------------------------------------------------

  private rejectTx(opts: { tx?: unknown } | undefined, what: string): void {
    if (opts?.tx !== undefined && opts.tx !== null) throw new NotSupportedError(`${what} in the caller's transaction`, this.dialect);
  }
}

export function sqliteStorage(opts: SqliteStorageOptions): SqliteStorage {
  return new SqliteStorage(opts);
}
