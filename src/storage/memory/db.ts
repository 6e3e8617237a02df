/**
 * The in-memory "database": its tables, its clock, and the copy helpers that keep callers from
 * ever holding a reference into the tables. Payloads and effect results are stored as JSON
 * text, as a database would, so a round trip behaves the same as with the SQL adapters.
 * Every aggregate call does its whole mutation synchronously after one `now()`, so each call
 * is atomic like one SQL transaction.
 */
import { randomBytes } from 'node:crypto';
import { LeaseholdError } from '../../core/errors.js';
import type { LockRow, ScheduleRow } from '../../core/schedules.js';
import type { Bucket } from '../../core/flow.js';
import type { AlertStateRow, AttemptRow, BatchRow, EffectRow, FinishParams, JobEvent, JobRow, NewJob, ParentPolicy, QueueState, WorkerRow } from '../../core/storage.js';

/** A job as stored: the payload kept as JSON text. */
export interface StoredJob extends Omit<JobRow, 'payload' | 'result' | 'progress'> {
  payloadJson: string;
  /** a succeeded job's result, as JSON text */
  resultJson?: string;
  /** the last progress reported, its value as JSON text */
  progressJson?: { json: string; note: string | null; at: Date };
  /** a workflow's parent: the ids of the jobs waiting for it */
  children?: string[];
  /** a workflow's child: the ids of the jobs it waits for (kept when one is deleted, as the SQL edges are) */
  parents?: string[];
  /** a workflow's child: what it does when a parent ends dead or cancelled */
  parentPolicy?: ParentPolicy;
  /** numeric id, for ordering */
  seq: number;
}

/** What a new job row is made of; everything else starts empty. */
export type NewJobRow = Pick<StoredJob, 'queue' | 'type' | 'payloadJson' | 'priority' | 'runAt' | 'maxAttempts' | 'idempotencyKey' | 'timeoutMs' | 'maxRuntimeMs'> &
  Partial<Pick<StoredJob, 'scheduleName' | 'slotAt' | 'traceContext' | 'concurrencyKey' | 'uniqueKey'>>;

export interface StoredAttempt extends AttemptRow {
  seq: number;
}

export interface StoredEvent extends JobEvent {
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

export type StoredSchedule = Omit<ScheduleRow, 'payload'> & { payloadJson: string };
export type StoredLock = Omit<LockRow, 'expired'> & { token: string | null };

export class MemoryDb {
  readonly jobs = new Map<string, StoredJob>();
  /** idempotency key → job id */
  readonly idempotency = new Map<string, string>();
  readonly attempts = new Map<string, StoredAttempt>();
  readonly effects = new Map<string, StoredEffect>();
  readonly workers = new Map<string, WorkerRow>();
  readonly schedules = new Map<string, StoredSchedule>();
  /** "name\0slotMs" → job id: the unique (schedule_name, slot_at) key */
  readonly slotKeys = new Map<string, string>();
  /** "name\0slot" → holding (with its token) */
  readonly locks = new Map<string, StoredLock>();
  /** the per-name fence counter, which never goes down */
  readonly lockFences = new Map<string, number>();
  /** the slot count each lock name was last granted with */
  readonly lockSlots = new Map<string, number>();
  /** rule → its alert state */
  readonly alerts = new Map<string, AlertStateRow>();
  /** queue → its paused state */
  readonly queueStates = new Map<string, QueueState>();
  /** flow token buckets by bucket name */
  readonly buckets = new Map<string, Bucket>();
  /** operator events by id */
  readonly events = new Map<string, StoredEvent>();
  /** batches by id, with their callback's spec */
  readonly batches = new Map<string, BatchRow & { callback: NewJob }>();
  private nextJob = 1;
  private nextAttempt = 1;
  private nextEffect = 1;
  private nextEvent = 1;
  private nextBatch = 1;
  private closed = false;

  constructor(private readonly clock: () => number) {}

  /** The "database clock"; throws once closed, so every call on a closed storage fails. */
  now(): Date {
    if (this.closed) throw new LeaseholdError('STORAGE', 'memory storage is closed');
    return new Date(this.clock());
  }

  close(): void {
    this.closed = true;
  }

  attemptSeq(): number {
    return this.nextAttempt++;
  }

  effectSeq(): number {
    return this.nextEffect++;
  }

  eventSeq(): number {
    return this.nextEvent++;
  }

  batchSeq(): number {
    return this.nextBatch++;
  }

  /** Insert a queued job under the next id. */
  insertJob(spec: NewJobRow, now: Date): StoredJob {
    const seq = this.nextJob++;
    const row: StoredJob = {
      ...spec,
      id: String(seq),
      seq,
      status: 'queued',
      attempts: 0,
      lockedBy: null,
      leaseToken: null,
      lockedUntil: null,
      heartbeatAt: null,
      startedAt: null,
      finishedAt: null,
      lastErrorCode: null,
      lastError: null,
      createdAt: now,
      updatedAt: now,
    };
    this.jobs.set(row.id, row);
    return row;
  }

  /** Close the running attempt of (job, lease token): finished now, with its outcome. */
  closeAttempt(jobId: string, token: string | null, end: FinishParams['attempt'], now: Date): void {
    for (const a of this.attempts.values()) {
      if (a.jobId !== jobId || a.leaseToken !== token || a.outcome !== 'running') continue;
      const err = end.error ?? null;
      a.finishedAt = now;
      a.durationMs = Math.max(0, now.getTime() - a.startedAt.getTime());
      a.outcome = end.outcome;
      a.errorCode = err ? err.code : null;
      a.errorMessage = err ? err.message : null;
      a.errorStack = err ? (err.stack ?? null) : null;
      a.retryDelayMs = end.retryDelayMs ?? null;
    }
  }
}

/** The unique (schedule_name, slot_at) key of a schedule's job. */
export function slotKey(name: string, slot: Date): string {
  return `${name}\0${slot.getTime()}`;
}

/** A fresh lease or lock token: 128 random bits, hex. */
export function newToken(): string {
  return randomBytes(16).toString('hex');
}

export function toJson(value: unknown): string {
  return JSON.stringify(value === undefined ? null : value);
}

export const copyDate = (d: Date): Date => new Date(d.getTime());
export const copyDateOrNull = (d: Date | null): Date | null => (d === null ? null : copyDate(d));

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
    ...(j.traceContext !== undefined ? { traceContext: j.traceContext } : {}),
    ...(j.concurrencyKey !== undefined ? { concurrencyKey: j.concurrencyKey } : {}),
    ...(j.uniqueKey !== undefined ? { uniqueKey: j.uniqueKey } : {}),
    // JSON null reads as no result, as in the SQL adapters
    ...(j.resultJson !== undefined && j.resultJson !== 'null' ? { result: JSON.parse(j.resultJson) as NonNullable<unknown> } : {}),
    ...(j.progressJson !== undefined ? { progress: { value: JSON.parse(j.progressJson.json) as unknown, note: j.progressJson.note, at: copyDate(j.progressJson.at) } } : {}),
    ...(j.pendingParents !== undefined ? { pendingParents: j.pendingParents } : {}),
    ...(j.batchId !== undefined ? { batchId: j.batchId } : {}),
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
    waitMs: a.waitMs,
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

export function alertOut(a: AlertStateRow): AlertStateRow {
  return { rule: a.rule, state: a.state, episode: a.episode, since: copyDate(a.since), value: a.value, updatedAt: copyDate(a.updatedAt) };
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
