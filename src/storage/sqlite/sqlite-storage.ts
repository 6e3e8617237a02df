/**
 * The SQLite adapter (better-sqlite3): the embedded default. Implements the Storage contract of
 * src/core/storage.ts; every decision comes from the caller, this file performs it as one
 * guarded write and reports which rows changed.
 *
 * Clock: SQLite has no server, so "the database's clock" is this process's clock — the `clock`
 * option (default Date.now), read once per operation and passed to SQL as `@now`. Processes
 * sharing one file must therefore share a host clock (they share a file system, so they do).
 *
 * Transactions are synchronous in better-sqlite3, so a caller's own transaction cannot span
 * an `await`: `transactionalEnqueue` is false and `opts.tx` is rejected with NotSupportedError.
 */
import { randomBytes } from 'node:crypto';
import { NotSupportedError } from '../../core/errors.js';
import { TERMINAL_STATUSES } from '../../core/status.js';
import type { JobStatus } from '../../core/status.js';
import type {
  AttemptRow, Capabilities, ClaimedJob, ClaimParams, EffectParams, EffectReservation, EffectRow, ExpiredLease,
  FinishParams, FinishResult, HeartbeatParams, HeartbeatResult, InsertResult, JobCount, JobQuery, JobRow,
  MigrateResult, NewJob, PruneParams, Storage, WorkerInfo, WorkerRow,
} from '../../core/storage.js';
import { SqliteDb } from './sqlite-db.js';
import { checkPrefix } from './sqlite-migrations.js';
import * as admin from './sqlite-admin.js';
import * as fx from './sqlite-effects.js';
import * as sched from './sqlite-schedules.js';
import type { AcquireLockParams, FireScheduleParams, FireScheduleResult, LockGrant, LockRow, ScheduledJob, ScheduleRow, ScheduleUpsert } from '../../core/schedules.js';
import { jsonOrNull, toExpiredLease, toJobRow, toSqlId } from './sqlite-rows.js';
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
}

/** `n` fresh 128-bit lease tokens (32 hex characters each), from one call to the CSPRNG. */
function newTokens(n: number): string[] {
  const hex = randomBytes(16 * n).toString('hex');
  return Array.from({ length: n }, (_, i) => hex.slice(i * 32, i * 32 + 32));
}

export class SqliteStorage implements Storage {
  readonly dialect = 'sqlite';
  readonly capabilities: Capabilities = { multiProcess: true, transactionalEnqueue: false, listenNotify: false };
  private readonly conn: SqliteDb;
  private readonly clock: () => number;

  constructor(opts: SqliteStorageOptions) {
    this.clock = opts.clock ?? Date.now;
    this.conn = new SqliteDb(opts.path, checkPrefix(opts.tablePrefix ?? 'leasehold_'), opts.busyTimeoutMs ?? 5000);
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
    const now = this.clock();
    const c = this.conn;
    return c.write(() =>
      jobs.map((j): InsertResult => {
        if (j.idempotencyKey !== null) {
          const existing = c.stmt(JOB_SQL.byIdempotencyKey).get(j.idempotencyKey) as SqlJob | undefined;
          if (existing) return { job: toJobRow(existing), created: false };
        }
        const row = c.stmt(JOB_SQL.insert).get({
          queue: j.queue,
          type: j.type,
          payload: jsonOrNull(j.payload) ?? 'null',
          priority: j.priority,
          runAt: j.runAt ? j.runAt.getTime() : now + j.runAfterMs,
          maxAttempts: j.maxAttempts,
          idempotencyKey: j.idempotencyKey,
          timeoutMs: j.timeoutMs,
          maxRuntimeMs: j.maxRuntimeMs,
          now,
        }) as SqlJob | undefined;
        if (!row) throw new Error(`sqlite: insert of a ${j.type} job conflicted but no row holds its key`);
        return { job: toJobRow(row), created: true };
      }),
    );
  }

  async claimJobs(p: ClaimParams): Promise<ClaimedJob[]> {
    if (p.types.length === 0 || p.limit <= 0) return [];
    const now = this.clock();
    const tokens = newTokens(p.limit);
    const c = this.conn;
    const rows = c.write(() => {
      const claimed = c.stmt(JOB_SQL.claim).all({
        now,
        types: JSON.stringify(p.types),
        queues: p.queues === null ? null : JSON.stringify(p.queues),
        limit: p.limit,
        workerId: p.workerId,
        tokens: JSON.stringify(tokens),
        leaseMs: p.leaseMs,
      }) as SqlJob[];
      if (claimed.length > 0) c.stmt(JOB_SQL.openAttempts).run({ ids: JSON.stringify(claimed.map((r) => r.id)) });
      return claimed;
    });
    // RETURNING order is unspecified; hand jobs out in claim order
    rows.sort((a, b) => a.priority - b.priority || a.run_at - b.run_at || a.id - b.id);
    return rows.map((r) => toJobRow(r) as ClaimedJob);
  }

  async heartbeat(p: HeartbeatParams): Promise<HeartbeatResult> {
    if (p.leases.length === 0) return { lost: [] };
    const now = this.clock();
    const c = this.conn;
    return c.write(() => {
      const lost: HeartbeatResult['lost'] = [];
      for (const l of p.leases) {
        const id = toSqlId(l.id);
        const changes = id === null ? 0 : c.stmt(JOB_SQL.heartbeat).run({ id, leaseToken: l.leaseToken, leaseMs: p.leaseMs, now }).changes;
        if (changes === 0) lost.push({ id: l.id, status: this.statusOf(id) });
      }
      return { lost };
    });
  }

  async finishJobs(params: readonly FinishParams[], opts?: { tx?: unknown }): Promise<FinishResult[]> {
    this.rejectTx(opts, 'finishJobs');
    if (params.length === 0) return [];
    const now = this.clock();
    const c = this.conn;
    return c.write(() =>
      params.map((f): FinishResult => {
        const id = toSqlId(f.id);
        if (id === null) return { id: f.id, applied: false };
        const changes = c.stmt(JOB_SQL.finish).run({
          id,
          leaseToken: f.leaseToken,
          status: f.status,
          runAfterMs: f.runAfterMs ?? null,
          uncount: f.uncountAttempt ? 1 : 0,
          hasError: f.error ? 1 : 0,
          errorCode: f.error?.code ?? null,
          errorMessage: f.error?.message ?? null,
          finishedAt: TERMINAL_STATUSES.includes(f.status) ? now : null,
          onlyIfExpired: f.onlyIfExpired ? 1 : 0,
          now,
        }).changes;
        if (changes === 0) return { id: f.id, applied: false };
        const err = f.attempt.error ?? null;
        c.stmt(JOB_SQL.closeAttempt).run({
          id,
          leaseToken: f.leaseToken,
          outcome: f.attempt.outcome,
          errorCode: err?.code ?? null,
          errorMessage: err?.message ?? null,
          errorStack: err?.stack ?? null,
          retryDelayMs: f.attempt.retryDelayMs ?? null,
          now,
        });
        return { id: f.id, applied: true };
      }),
    );
  }

  async findExpiredLeases(p: { limit: number }): Promise<ExpiredLease[]> {
    const rows = this.conn.read(() => this.conn.stmt(JOB_SQL.expired).all({ now: this.clock(), limit: p.limit }) as SqlExpired[]);
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

  async completeEffect(p: EffectParams & { result: unknown }): Promise<boolean> {
    return fx.completeEffect(this.conn, this.clock(), p);
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

  private statusOf(id: number | null): JobStatus | null {
    if (id === null) return null;
    const r = this.conn.stmt(JOB_SQL.status).get(id) as { status: JobStatus } | undefined;
    return r ? r.status : null;
  }

  private rejectTx(opts: { tx?: unknown } | undefined, what: string): void {
    if (opts?.tx !== undefined && opts.tx !== null) throw new NotSupportedError(`${what} in the caller's transaction`, this.dialect);
  }
}

export function sqliteStorage(opts: SqliteStorageOptions): SqliteStorage {
  return new SqliteStorage(opts);
}
