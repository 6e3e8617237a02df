/**
 * MemoryStorage: the Storage contract kept in process memory, for unit tests. It passes the
 * same conformance suite as the SQL adapters. Every method does its whole mutation
 * synchronously (no await in between), so each call is atomic like one SQL transaction;
 * "now" is the injected clock. Rows handed out are always copies.
 */
import { LeaseholdError } from '../../core/errors.js';
import { assertDistinctEffectKeys } from '../../core/effects.js';
import type { AttemptRow, Capabilities, ClaimParams, ClaimedJob, EffectParams, EffectRecord, EffectReservation, EffectRow, ExpiredLease, ExpiredLeaseQuery } from '../../core/storage.js';
import type { FinishParams, FinishResult, HeartbeatParams, HeartbeatResult, InsertResult, JobCount, JobQuery } from '../../core/storage.js';
import type { JobRow, MigrateResult, NewJob, PruneParams, Storage, WorkerInfo, WorkerRow } from '../../core/storage.js';
import * as admin from './memory-admin.js';
import * as ledger from './memory-effects.js';
import * as lifecycle from './memory-jobs.js';
import * as sched from './memory-schedules.js';
import type { AcquireLockParams, FireScheduleParams, FireScheduleResult, LockGrant, LockRow, ScheduledJob, ScheduleRow, ScheduleUpsert } from '../../core/schedules.js';
import { MemoryTables, attemptOut, jobOut } from './memory-state.js';

export interface MemoryStorageOptions {
  /** the "database clock", epoch milliseconds; default Date.now */
  clock?: () => number;
}

/** The versions mean what they mean in the other dialects; there is nothing to build in memory. */
const MIGRATIONS = [
  { version: 1, name: 'memory tables' },
  { version: 2, name: 'schedules, locks, job slots' },
  { version: 9, name: 'semaphores keep their slot count' },
];
const SCHEMA_VERSION = Math.max(...MIGRATIONS.map((m) => m.version));

export class MemoryStorage implements Storage {
  readonly dialect = 'memory';
  readonly capabilities: Capabilities = { multiProcess: false, transactionalEnqueue: false, listenNotify: false };

  private readonly t = new MemoryTables();
  private readonly clock: () => number;
  private version = 0;
  private closed = false;

  constructor(opts: MemoryStorageOptions = {}) {
    this.clock = opts.clock ?? Date.now;
  }

  private nowDate(): Date {
    if (this.closed) throw new LeaseholdError('STORAGE', 'memory storage is closed');
    return new Date(this.clock());
  }

  async migrate(): Promise<MigrateResult> {
    this.nowDate();
    const from = this.version;
    this.version = SCHEMA_VERSION;
    const applied = MIGRATIONS.filter((m) => m.version > from && m.version <= SCHEMA_VERSION);
    return { from, to: this.version, applied };
  }

  async schemaVersion(): Promise<number> {
    return this.version;
  }

  async close(): Promise<void> {
    this.closed = true;
  }

  async now(): Promise<Date> {
    return this.nowDate();
  }

  // --- jobs: the lifecycle is in memory-jobs.ts, operator operations in memory-admin.ts -------

  async insertJobs(jobs: readonly NewJob[], opts?: { tx?: unknown }): Promise<InsertResult[]> {
    if (opts?.tx !== undefined) throw new LeaseholdError('NOT_SUPPORTED', 'transactional enqueue is not supported by the memory storage');
    return lifecycle.insertJobs(this.t, jobs, this.nowDate());
  }

  async claimJobs(p: ClaimParams): Promise<ClaimedJob[]> {
    return lifecycle.claimJobs(this.t, p, this.nowDate());
  }

  async heartbeat(p: HeartbeatParams): Promise<HeartbeatResult> {
    return lifecycle.heartbeat(this.t, p, this.nowDate());
  }

  async finishJobs(params: readonly FinishParams[], opts?: { tx?: unknown }): Promise<FinishResult[]> {
    if (opts?.tx !== undefined) throw new LeaseholdError('NOT_SUPPORTED', 'caller transactions are not supported by the memory storage');
    const now = this.nowDate();
    return params.map((p) => ({ id: p.id, applied: lifecycle.finishJob(this.t, p, now) }));
  }

  async findExpiredLeases(p: ExpiredLeaseQuery): Promise<ExpiredLease[]> {
    return lifecycle.findExpiredLeases(this.t, p, this.nowDate());
  }

  async getJob(id: string): Promise<JobRow | null> {
    this.nowDate();
    const j = this.t.jobs.get(id);
    return j ? jobOut(j) : null;
  }

  async listJobs(q: JobQuery): Promise<JobRow[]> {
    this.nowDate();
    return admin.listJobs(this.t, q);
  }

  async countJobs(): Promise<JobCount[]> {
    return admin.countJobs(this.t, this.nowDate());
  }

  async listAttempts(jobId: string): Promise<AttemptRow[]> {
    this.nowDate();
    return [...this.t.attempts.values()]
      .filter((a) => a.jobId === jobId)
      .sort((a, b) => a.seq - b.seq)
      .map(attemptOut);
  }

  async retryJob(id: string): Promise<{ job: JobRow | null; applied: boolean }> {
    return admin.retryJob(this.t, id, this.nowDate());
  }

  async cancelJob(id: string): Promise<{ job: JobRow | null; applied: boolean }> {
    return admin.cancelJob(this.t, id, this.nowDate());
  }

  async pruneJobs(p: PruneParams): Promise<number> {
    return admin.pruneJobs(this.t, p, this.nowDate());
  }

  // --- effect ledger ------------------------------------------------------------------------

  async reserveEffect(p: EffectParams): Promise<EffectReservation> {
    return ledger.reserveEffect(this.t, p, this.nowDate());
  }

  async completeEffect(p: EffectRecord): Promise<boolean> {
    return ledger.completeEffect(this.t, p, this.nowDate());
  }

  async reserveEffects(ps: readonly EffectParams[]): Promise<EffectReservation[]> {
    assertDistinctEffectKeys(ps, 'reserveEffects');
    const now = this.nowDate();
    return ps.map((p) => ledger.reserveEffect(this.t, p, now));
  }

  async completeEffects(ps: readonly EffectRecord[]): Promise<boolean[]> {
    assertDistinctEffectKeys(ps, 'completeEffects');
    const now = this.nowDate();
    return ps.map((p) => ledger.completeEffect(this.t, p, now));
  }

  async getEffect(key: string): Promise<EffectRow | null> {
    this.nowDate();
    return ledger.getEffect(this.t, key);
  }

  async listEffects(p: { jobId?: string; limit: number }): Promise<EffectRow[]> {
    this.nowDate();
    return ledger.listEffects(this.t, p);
  }

  async countEffects(): Promise<number> {
    this.nowDate();
    return this.t.effects.size;
  }

  // --- workers ------------------------------------------------------------------------------

  async registerWorker(info: WorkerInfo): Promise<void> {
    ledger.registerWorker(this.t, info, this.nowDate());
  }

  async heartbeatWorker(id: string): Promise<void> {
    ledger.heartbeatWorker(this.t, id, this.nowDate());
  }

  async removeWorker(id: string): Promise<void> {
    this.nowDate();
    this.t.workers.delete(id);
  }

  async listWorkers(): Promise<WorkerRow[]> {
    this.nowDate();
    return ledger.listWorkers(this.t);
  }

  async pruneWorkers(p: { silentForMs: number }): Promise<number> {
    return ledger.pruneWorkers(this.t, p.silentForMs, this.nowDate());
  }

  // --- schedules and locks: see memory-schedules.ts -------------------------------------------

  async upsertSchedules(items: readonly ScheduleUpsert[]): Promise<ScheduleRow[]> {
    return sched.upsertSchedules(this.t, items, this.nowDate());
  }

  async syncSchedules(items: readonly ScheduleUpsert[]): Promise<{ schedules: ScheduleRow[]; removed: string[] }> {
    return sched.syncSchedules(this.t, items, this.nowDate());
  }

  async getSchedule(name: string): Promise<ScheduleRow | null> {
    this.nowDate();
    const s = this.t.schedules.get(name);
    return s ? sched.scheduleOut(s) : null;
  }

  async listSchedules(): Promise<ScheduleRow[]> {
    this.nowDate();
    return [...this.t.schedules.values()].sort((a, b) => (a.name < b.name ? -1 : 1)).map(sched.scheduleOut);
  }

  async removeSchedule(name: string): Promise<boolean> {
    this.nowDate();
    return this.t.schedules.delete(name);
  }

  async setScheduleEnabled(p: { name: string; enabled: boolean; nextRunAt?: Date | null }): Promise<ScheduleRow | null> {
    return sched.setEnabled(this.t, p, this.nowDate());
  }

  async dueSchedules(p: { limit: number }): Promise<ScheduleRow[]> {
    return sched.dueSchedules(this.t, p.limit, this.nowDate());
  }

  async fireSchedule(p: FireScheduleParams): Promise<FireScheduleResult> {
    return sched.fireSchedule(this.t, p, this.nowDate());
  }

  async runScheduleNow(p: { name: string; job: ScheduledJob }): Promise<JobRow | null> {
    return sched.runScheduleNow(this.t, p, this.nowDate());
  }

  async tryAcquireLock(p: AcquireLockParams): Promise<LockGrant | null> {
    return sched.tryAcquireLock(this.t, p, this.nowDate());
  }

  async extendLock(p: { name: string; token: string; ttlMs: number }): Promise<boolean> {
    return sched.extendLock(this.t, p, this.nowDate());
  }

  async releaseLock(p: { name: string; token: string }): Promise<boolean> {
    return sched.releaseLock(this.t, p, this.nowDate());
  }

  async listLocks(p: { name?: string } = {}): Promise<LockRow[]> {
    return sched.listLocks(this.t, p.name, this.nowDate());
  }
}

export function memoryStorage(opts?: MemoryStorageOptions): MemoryStorage {
  return new MemoryStorage(opts);
}
