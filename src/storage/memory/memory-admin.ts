/**
 * Operator-facing job operations of MemoryStorage (list, count, retry, cancel, prune) as plain
 * synchronous functions over the tables: each call is one atomic step.
 */
import type { JobStatus } from '../../core/status.js';
import type { JobCount, JobQuery, JobRow, PruneParams } from '../../core/storage.js';
import type { MemoryTables } from './memory-state.js';
import { jobOut } from './memory-state.js';

const DUE: readonly JobStatus[] = ['queued', 'failed'];
const RETRYABLE: readonly JobStatus[] = ['queued', 'failed', 'dead', 'cancelled'];
const CANCELLABLE: readonly JobStatus[] = ['queued', 'failed', 'running'];
const CANCEL_MESSAGE = 'cancelled by an operator';

/** Newest first (numeric id order), keyset-paginated by `beforeId`. */
export function listJobs(t: MemoryTables, q: JobQuery): JobRow[] {
  const before = q.beforeId === undefined ? Infinity : Number(q.beforeId);
  return [...t.jobs.values()]
    .filter(
      (j) =>
        j.seq < before &&
        (q.status === undefined || j.status === q.status) &&
        (q.queue === undefined || j.queue === q.queue) &&
        (q.type === undefined || j.type === q.type),
    )
    .sort((a, b) => b.seq - a.seq)
    .slice(0, Math.max(0, q.limit))
    .map(jobOut);
}

/** One row per (queue, type, status); `due` counts due statuses with run_at <= now (else 0). */
export function countJobs(t: MemoryTables, now: Date): JobCount[] {
  const groups = new Map<string, JobCount>();
  for (const j of t.jobs.values()) {
    const k = JSON.stringify([j.queue, j.type, j.status]);
    let g = groups.get(k);
    if (!g) groups.set(k, (g = { queue: j.queue, type: j.type, status: j.status, count: 0, due: 0 }));
    g.count++;
    if (DUE.includes(j.status) && j.runAt.getTime() <= now.getTime()) g.due++;
  }
  return [...groups.values()];
}

/** queued/failed/dead/cancelled → queued, due now, attempts reset, lease and finished_at cleared. */
export function retryJob(t: MemoryTables, id: string, now: Date): { job: JobRow | null; applied: boolean } {
  const j = t.jobs.get(id);
  if (!j) return { job: null, applied: false };
  if (!RETRYABLE.includes(j.status)) return { job: jobOut(j), applied: false };
  j.status = 'queued';
  j.runAt = now;
  j.attempts = 0;
  j.lockedBy = null;
  j.leaseToken = null;
  j.lockedUntil = null;
  j.finishedAt = null;
  j.updatedAt = now;
  return { job: jobOut(j), applied: true };
}

/** queued/failed/running → cancelled; a running attempt row closes as 'cancelled'. */
export function cancelJob(t: MemoryTables, id: string, now: Date): { job: JobRow | null; applied: boolean } {
  const j = t.jobs.get(id);
  if (!j) return { job: null, applied: false };
  if (!CANCELLABLE.includes(j.status)) return { job: jobOut(j), applied: false };
  const token = j.leaseToken;
  j.status = 'cancelled';
  j.finishedAt = now;
  j.lockedBy = null;
  j.leaseToken = null;
  j.lockedUntil = null;
  j.lastErrorCode = 'CANCELLED';
  j.lastError = CANCEL_MESSAGE;
  j.updatedAt = now;
  for (const a of t.attempts.values()) {
    if (a.jobId !== j.id || a.leaseToken !== token || a.outcome !== 'running') continue;
    a.finishedAt = now;
    a.durationMs = Math.max(0, now.getTime() - a.startedAt.getTime());
    a.outcome = 'cancelled';
    a.errorCode = 'CANCELLED';
    a.errorMessage = CANCEL_MESSAGE;
  }
  return { job: jobOut(j), applied: true };
}

/** Oldest finished first, at most `limit`; attempts go with their job, effects stay. */
export function pruneJobs(t: MemoryTables, p: PruneParams, now: Date): number {
  const cutoff = now.getTime() - p.olderThanMs;
  const victims = [...t.jobs.values()]
    .filter((j) => p.statuses.includes(j.status) && j.finishedAt !== null && j.finishedAt.getTime() < cutoff)
    .sort((a, b) => (a.finishedAt as Date).getTime() - (b.finishedAt as Date).getTime() || a.seq - b.seq)
    .slice(0, Math.max(0, p.limit));
  for (const j of victims) {
    t.jobs.delete(j.id);
    if (j.idempotencyKey !== null) t.idempotency.delete(j.idempotencyKey);
    for (const [aid, a] of t.attempts) if (a.jobId === j.id) t.attempts.delete(aid);
  }
  return victims.length;
}
