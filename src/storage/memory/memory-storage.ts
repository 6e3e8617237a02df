/**
 * MemoryStorage: the Storage contract kept in process memory, for unit tests. It passes the
 * same conformance suite as the SQL adapters. Every method does its whole mutation
 * synchronously (no await in between), so each call is atomic like one SQL transaction;
 * "now" is the injected clock. Rows handed out are always copies.
 */
import { LeaseholdError } from '../../core/errors.js';
import type { JobStatus } from '../../core/status.js';
import type { AttemptRow, Capabilities, ClaimParams, ClaimedJob, EffectParams, EffectReservation, EffectRow, ExpiredLease } from '../../core/storage.js';
import type { FinishParams, FinishResult, HeartbeatParams, HeartbeatResult, InsertResult, JobCount, JobQuery } from '../../core/storage.js';
import type { JobRow, MigrateResult, NewJob, PruneParams, Storage, WorkerInfo, WorkerRow } from '../../core/storage.js';
import * as admin from './memory-admin.js';
import * as ledger from './memory-effects.js';
import * as sched from './memory-schedules.js';
import type { AcquireLockParams, FireScheduleParams, FireScheduleResult, LockGrant, LockRow, ScheduledJob, ScheduleRow, ScheduleUpsert } from '../../core/schedules.js';
import type { StoredJob } from './memory-state.js';
import { MemoryTables, attemptOut, jobOut, newToken, toJson } from './memory-state.js';

export interface MemoryStorageOptions {
  /** the "database clock", epoch milliseconds; default Date.now */
  clock?: () => number;
}

const SCHEMA_VERSION = 2;
const DUE: readonly JobStatus[] = ['queued', 'failed'];
const FINISHED: readonly JobStatus[] = ['succeeded', 'dead', 'cancelled'];

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
    const names = ['memory tables', 'schedules, locks, job slots'];
    const applied = names.map((name, i) => ({ version: i + 1, name })).filter((m) => m.version > from && m.version <= SCHEMA_VERSION);
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

  // --- jobs ---------------------------------------------------------------------------------

  async insertJobs(jobs: readonly NewJob[], opts?: { tx?: unknown }): Promise<InsertResult[]> {
    if (opts?.tx !== undefined) throw new LeaseholdError('NOT_SUPPORTED', 'transactional enqueue is not supported by the memory storage');
    const now = this.nowDate();
    // serialise every payload first so a bad one leaves nothing half-inserted
    const payloads = jobs.map((j) => toJson(j.payload));
    return jobs.map((j, i) => {
      const existing = j.idempotencyKey === null ? undefined : this.t.idempotency.get(j.idempotencyKey);
      if (existing !== undefined) return { job: jobOut(this.job(existing)), created: false };
      const seq = this.t.jobSeq();
      const row: StoredJob = {
        id: String(seq),
        seq,
        queue: j.queue,
        type: j.type,
        payloadJson: payloads[i] as string,
        status: 'queued',
        priority: j.priority,
        runAt: j.runAt ? new Date(j.runAt.getTime()) : new Date(now.getTime() + j.runAfterMs),
        attempts: 0,
        maxAttempts: j.maxAttempts,
        idempotencyKey: j.idempotencyKey,
        lockedBy: null,
        leaseToken: null,
        lockedUntil: null,
        heartbeatAt: null,
        startedAt: null,
        finishedAt: null,
        lastErrorCode: null,
        lastError: null,
        timeoutMs: j.timeoutMs,
        maxRuntimeMs: j.maxRuntimeMs,
        createdAt: now,
        updatedAt: now,
      };
      this.t.jobs.set(row.id, row);
      if (j.idempotencyKey !== null) this.t.idempotency.set(j.idempotencyKey, row.id);
      return { job: jobOut(row), created: true };
    });
  }

  async claimJobs(p: ClaimParams): Promise<ClaimedJob[]> {
    const now = this.nowDate();
    const due = [...this.t.jobs.values()]
      .filter(
        (j) =>
          DUE.includes(j.status) &&
          j.runAt.getTime() <= now.getTime() &&
          p.types.includes(j.type) &&
          (p.queues === null || p.queues.includes(j.queue)),
      )
      .sort((a, b) => a.priority - b.priority || a.runAt.getTime() - b.runAt.getTime() || a.seq - b.seq)
      .slice(0, Math.max(0, p.limit));
    return due.map((j) => {
      j.status = 'running';
      j.lockedBy = p.workerId;
      j.leaseToken = newToken();
      j.lockedUntil = new Date(now.getTime() + p.leaseMs);
      j.heartbeatAt = now;
      j.startedAt = now;
      j.attempts += 1;
      j.updatedAt = now;
      const seq = this.t.attemptSeq();
      this.t.attempts.set(String(seq), {
        seq,
        id: String(seq),
        jobId: j.id,
        attempt: j.attempts,
        workerId: p.workerId,
        leaseToken: j.leaseToken,
        startedAt: now,
        finishedAt: null,
        durationMs: null,
        outcome: 'running',
        errorCode: null,
        errorMessage: null,
        errorStack: null,
        retryDelayMs: null,
      });
      return jobOut(j) as ClaimedJob;
    });
  }

  async heartbeat(p: HeartbeatParams): Promise<HeartbeatResult> {
    const now = this.nowDate();
    const lost: HeartbeatResult['lost'] = [];
    for (const l of p.leases) {
      const j = this.t.jobs.get(l.id);
      if (j && j.status === 'running' && j.leaseToken === l.leaseToken) {
        j.lockedUntil = new Date(now.getTime() + p.leaseMs);
        j.heartbeatAt = now;
        j.updatedAt = now;
      } else {
        lost.push({ id: l.id, status: j ? j.status : null });
      }
    }
    return { lost };
  }

  async finishJobs(params: readonly FinishParams[], opts?: { tx?: unknown }): Promise<FinishResult[]> {
    if (opts?.tx !== undefined) throw new LeaseholdError('NOT_SUPPORTED', 'caller transactions are not supported by the memory storage');
    const now = this.nowDate();
    return params.map((p) => ({ id: p.id, applied: this.finishOne(p, now) }));
  }

  private finishOne(p: FinishParams, now: Date): boolean {
    const j = this.t.jobs.get(p.id);
    if (!j || j.status !== 'running' || j.leaseToken !== p.leaseToken) return false;
    if (p.onlyIfExpired && !(j.lockedUntil !== null && j.lockedUntil.getTime() < now.getTime())) return false;
    const token = j.leaseToken;
    j.status = p.status;
    if (p.runAfterMs !== undefined) j.runAt = new Date(now.getTime() + p.runAfterMs);
    if (p.uncountAttempt) j.attempts = Math.max(0, j.attempts - 1);
    if (p.error) {
      j.lastErrorCode = p.error.code;
      j.lastError = p.error.message;
    }
    j.lockedBy = null;
    j.leaseToken = null;
    j.lockedUntil = null;
    j.finishedAt = FINISHED.includes(p.status) ? now : null;
    j.updatedAt = now;
    for (const a of this.t.attempts.values()) {
      if (a.jobId !== j.id || a.leaseToken !== token) continue;
      const err = p.attempt.error ?? null;
      a.finishedAt = now;
      a.durationMs = Math.max(0, now.getTime() - a.startedAt.getTime());
      a.outcome = p.attempt.outcome;
      a.errorCode = err ? err.code : null;
      a.errorMessage = err ? err.message : null;
      a.errorStack = err ? (err.stack ?? null) : null;
      a.retryDelayMs = p.attempt.retryDelayMs ?? null;
    }
    return true;
  }

  async findExpiredLeases(p: { limit: number }): Promise<ExpiredLease[]> {
    const now = this.nowDate().getTime();
    return [...this.t.jobs.values()]
      .filter((j) => j.status === 'running' && j.leaseToken !== null && j.lockedUntil !== null && j.lockedUntil.getTime() < now)
      .sort((a, b) => (a.lockedUntil as Date).getTime() - (b.lockedUntil as Date).getTime() || a.seq - b.seq)
      .slice(0, Math.max(0, p.limit))
      .map((j) => ({
        id: j.id,
        type: j.type,
        leaseToken: j.leaseToken as string,
        lockedBy: j.lockedBy,
        attempts: j.attempts,
        maxAttempts: j.maxAttempts,
      }));
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

  private job(id: string): StoredJob {
    const j = this.t.jobs.get(id);
    if (!j) throw new LeaseholdError('STORAGE', `memory storage: job ${id} indexed but missing`);
    return j;
  }

  // --- effect ledger ------------------------------------------------------------------------

  async reserveEffect(p: EffectParams): Promise<EffectReservation> {
    return ledger.reserveEffect(this.t, p, this.nowDate());
  }

  async completeEffect(p: EffectParams & { result: unknown }): Promise<boolean> {
    return ledger.completeEffect(this.t, p, this.nowDate());
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
