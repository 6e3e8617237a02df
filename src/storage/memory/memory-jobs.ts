/**
 * The job lifecycle of MemoryStorage — insert, claim, heartbeat, finish, find expired leases —
 * as plain synchronous functions over the tables: each call is one atomic step, like one SQL
 * transaction. The caller passes "now" from the injected clock.
 */
import { LeaseholdError } from '../../core/errors.js';
import type { JobStatus } from '../../core/status.js';
import type { ClaimParams, ClaimedJob, ExpiredLease, ExpiredLeaseQuery, FinishParams, HeartbeatParams, HeartbeatResult, InsertResult, NewJob } from '../../core/storage.js';
import type { MemoryTables, StoredJob } from './memory-state.js';
import { jobOut, newToken, toJson } from './memory-state.js';

const DUE: readonly JobStatus[] = ['queued', 'failed'];
const FINISHED: readonly JobStatus[] = ['succeeded', 'dead', 'cancelled'];

function storedJob(t: MemoryTables, id: string): StoredJob {
  const j = t.jobs.get(id);
  if (!j) throw new LeaseholdError('STORAGE', `memory storage: job ${id} indexed but missing`);
  return j;
}

/** An existing idempotency key returns that job with `created: false`. */
export function insertJobs(t: MemoryTables, jobs: readonly NewJob[], now: Date): InsertResult[] {
  // serialise every payload first so a bad one leaves nothing half-inserted
  const payloads = jobs.map((j) => toJson(j.payload));
  return jobs.map((j, i) => {
    const existing = j.idempotencyKey === null ? undefined : t.idempotency.get(j.idempotencyKey);
    if (existing !== undefined) return { job: jobOut(storedJob(t, existing)), created: false };
    const seq = t.jobSeq();
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
    t.jobs.set(row.id, row);
    if (j.idempotencyKey !== null) t.idempotency.set(j.idempotencyKey, row.id);
    return { job: jobOut(row), created: true };
  });
}

/** Due jobs by priority, run_at, id; each gets a fresh lease and a 'running' attempt row. */
export function claimJobs(t: MemoryTables, p: ClaimParams, now: Date): ClaimedJob[] {
  const due = [...t.jobs.values()]
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
    const seq = t.attemptSeq();
    t.attempts.set(String(seq), {
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

/** Extends every lease still held under its token; reports the others as lost. */
export function heartbeat(t: MemoryTables, p: HeartbeatParams, now: Date): HeartbeatResult {
  const lost: HeartbeatResult['lost'] = [];
  for (const l of p.leases) {
    const j = t.jobs.get(l.id);
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

/** Fenced by the lease token (and, for the sweeper, by expiry); false when nothing changed. */
export function finishJob(t: MemoryTables, p: FinishParams, now: Date): boolean {
  const j = t.jobs.get(p.id);
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
  for (const a of t.attempts.values()) {
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

/** Running jobs whose lease ran out, oldest expiry first. */
export function findExpiredLeases(t: MemoryTables, p: ExpiredLeaseQuery, now: Date): ExpiredLease[] {
  const nowMs = now.getTime();
  const limit = p.limit;
  const types = p.types === undefined ? null : new Set(p.types);
  return [...t.jobs.values()]
    .filter((j) => j.status === 'running' && j.leaseToken !== null && j.lockedUntil !== null && j.lockedUntil.getTime() < nowMs && (types === null || types.has(j.type)))
    .sort((a, b) => (a.lockedUntil as Date).getTime() - (b.lockedUntil as Date).getTime() || a.seq - b.seq)
    .slice(0, Math.max(0, limit))
    .map((j) => ({
      id: j.id,
      type: j.type,
      leaseToken: j.leaseToken as string,
      lockedBy: j.lockedBy,
      attempts: j.attempts,
      maxAttempts: j.maxAttempts,
    }));
}
