/**
 * The in-memory "tables" behind MemoryStorage, and the copy helpers that keep callers from
 * ever holding a reference into them. Payloads and effect results are stored as JSON text, as
 * a database would, so a round trip behaves the same as with SQL adapters.
 */
import { randomBytes } from 'node:crypto';
import type { LockRow, ScheduleRow } from '../../core/schedules.js';
import type { AttemptRow, EffectRow, JobRow, WorkerRow } from '../../core/storage.js';

/** A job as stored: the payload kept as JSON text. */
export interface StoredJob extends Omit<JobRow, 'payload'> {
  payloadJson: string;
  /** numeric id, for ordering */
  seq: number;
}

export interface StoredEffect {
  key: string;
  jobId: string;
  leaseToken: string;
  state: 'pending' | 'done';
  resultJson: string | null;
  createdAt: Date;
  doneAt: Date | null;
  seq: number;
}

export interface StoredAttempt extends AttemptRow {
  seq: number;
}

export class MemoryTables {
  readonly jobs = new Map<string, StoredJob>();
  /** idempotency key → job id */
  readonly idempotency = new Map<string, string>();
  readonly attempts = new Map<string, StoredAttempt>();
  readonly effects = new Map<string, StoredEffect>();
  readonly workers = new Map<string, WorkerRow>();
  /** schedules by name, payload kept as JSON text */
  readonly schedules = new Map<string, Omit<ScheduleRow, 'payload'> & { payloadJson: string }>();
  /** "name\0slotMs" → job id: the unique (schedule_name, slot_at) key */
  readonly slotKeys = new Map<string, string>();
  /** "name\0slot" → holding (with its token); fences per name */
  readonly locks = new Map<string, Omit<LockRow, 'expired'> & { token: string | null }>();
  readonly lockFences = new Map<string, number>();
  /** the slot count each lock name was last granted with */
  readonly lockSlots = new Map<string, number>();
  private nextJob = 1;
  private nextAttempt = 1;
  private nextEffect = 1;

  jobSeq(): number {
    return this.nextJob++;
  }
  attemptSeq(): number {
    return this.nextAttempt++;
  }
  effectSeq(): number {
    return this.nextEffect++;
  }
}

/** A fresh lease token: 128 random bits, hex. */
export function newToken(): string {
  return randomBytes(16).toString('hex');
}

export function toJson(value: unknown): string {
  return JSON.stringify(value === undefined ? null : value);
}

const copyDate = (d: Date): Date => new Date(d.getTime());
const copyDateOrNull = (d: Date | null): Date | null => (d === null ? null : copyDate(d));

export function jobOut(j: StoredJob): JobRow {
  return {
    id: j.id,
    queue: j.queue,
    type: j.type,
    payload: JSON.parse(j.payloadJson) as unknown,
    status: j.status,
    priority: j.priority,
    runAt: copyDate(j.runAt),
    attempts: j.attempts,
    maxAttempts: j.maxAttempts,
    idempotencyKey: j.idempotencyKey,
    lockedBy: j.lockedBy,
    leaseToken: j.leaseToken,
    lockedUntil: copyDateOrNull(j.lockedUntil),
    heartbeatAt: copyDateOrNull(j.heartbeatAt),
    startedAt: copyDateOrNull(j.startedAt),
    finishedAt: copyDateOrNull(j.finishedAt),
    lastErrorCode: j.lastErrorCode,
    lastError: j.lastError,
    timeoutMs: j.timeoutMs,
    maxRuntimeMs: j.maxRuntimeMs,
    createdAt: copyDate(j.createdAt),
    updatedAt: copyDate(j.updatedAt),
    ...(j.scheduleName !== undefined && j.slotAt !== undefined ? { scheduleName: j.scheduleName, slotAt: copyDate(j.slotAt) } : {}),
  };
}

export function attemptOut(a: StoredAttempt): AttemptRow {
  return {
    id: a.id,
    jobId: a.jobId,
    attempt: a.attempt,
    workerId: a.workerId,
    leaseToken: a.leaseToken,
    startedAt: copyDate(a.startedAt),
    finishedAt: copyDateOrNull(a.finishedAt),
    durationMs: a.durationMs,
    outcome: a.outcome,
    errorCode: a.errorCode,
    errorMessage: a.errorMessage,
    errorStack: a.errorStack,
    retryDelayMs: a.retryDelayMs,
  };
}

export function effectOut(e: StoredEffect): EffectRow {
  return {
    key: e.key,
    jobId: e.jobId,
    state: e.state,
    result: e.resultJson === null ? null : (JSON.parse(e.resultJson) as unknown),
    createdAt: copyDate(e.createdAt),
    doneAt: copyDateOrNull(e.doneAt),
  };
}

export function workerOut(w: WorkerRow): WorkerRow {
  return {
    id: w.id,
    host: w.host,
    pid: w.pid,
    version: w.version,
    queues: w.queues === null ? null : [...w.queues],
    types: [...w.types],
    startedAt: copyDate(w.startedAt),
    heartbeatAt: copyDate(w.heartbeatAt),
  };
}
