/**
 * An operator's change to one stored job in memory — retry, cancel, delete — the same for
 * jobs.retry, jobs.cancel, pruning and every job of a bulk batch. Each is part of its caller's
 * one synchronous step; a recorded change writes its event only when it applied.
 */
import { ACTION_STATUSES, retryRefusal } from '../../core/operator.js';
import type { JobStatus } from '../../core/status.js';
import { slotKey, type MemoryDb, type StoredJob } from './db.js';
import { type Recording, forgetEvents, recordEvent } from './events.js';
import { settleBatch, settleChildren } from './workflows.js';

const CANCEL_MESSAGE = 'cancelled by an operator';
/** the statuses a unique key holds in */
const ACTIVE: readonly JobStatus[] = ['queued', 'failed', 'running'];

/** The queued, failed or running job holding a unique key, if any. */
export function uniqueHolder(db: MemoryDb, key: string): StoredJob | undefined {
  for (const j of db.jobs.values()) if (j.uniqueKey === key && ACTIVE.includes(j.status)) return j;
  return undefined;
}

/** queued/failed/dead/cancelled → queued, due now, attempts reset, lease and finished_at cleared; false when its status does not allow it. */
export function retryStored(db: MemoryDb, j: StoredJob, now: Date, rec: Recording | null): boolean {
  if (!ACTION_STATUSES.retry.includes(j.status) || retryRefusal(j) !== null) return false;
  const before = { status: j.status, attempts: j.attempts };
  // another job took its unique key meanwhile: it comes back without it
  if (j.uniqueKey !== undefined && !ACTIVE.includes(j.status)) {
    const holder = uniqueHolder(db, j.uniqueKey);
    if (holder && holder !== j) delete j.uniqueKey;
  }
  j.status = 'queued';
  j.runAt = now;
  j.attempts = 0;
  j.lockedBy = null;
  j.leaseToken = null;
  j.lockedUntil = null;
  j.finishedAt = null;
  j.updatedAt = now;
  if (rec) recordEvent(db, j.id, now, 'retried', before, rec);
  return true;
}

/** queued/failed/running → cancelled, a running attempt closed as 'cancelled'; false when its status does not allow it. */
export function cancelStored(db: MemoryDb, j: StoredJob, now: Date, rec: Recording | null): boolean {
  if (!ACTION_STATUSES.cancel.includes(j.status)) return false;
  const before = { status: j.status, attempts: j.attempts };
  const token = j.leaseToken;
  j.status = 'cancelled';
  j.finishedAt = now;
  j.lockedBy = null;
  j.leaseToken = null;
  j.lockedUntil = null;
  j.lastErrorCode = 'CANCELLED';
  j.lastError = CANCEL_MESSAGE;
  j.updatedAt = now;
  if (token !== null) db.closeAttempt(j.id, token, { outcome: 'cancelled', error: { code: 'CANCELLED', message: CANCEL_MESSAGE } }, now);
  if (rec) recordEvent(db, j.id, now, 'cancelled', before, rec);
  // it ends for its workflow and its batch as a finish would
  if (j.children) settleChildren(db, j, now);
  if (j.batchId !== undefined) settleBatch(db, j, now);
  return true;
}

/** Delete a job that is not running with its attempts, events and keys (the effect ledger stays); false for a running one. */
export function deleteStored(db: MemoryDb, j: StoredJob): boolean {
  if (j.status === 'running') return false;
  db.jobs.delete(j.id);
  if (j.idempotencyKey !== null) db.idempotency.delete(j.idempotencyKey);
  // the (schedule, slot) unique key goes with its row, as it does in SQL
  if (j.scheduleName !== undefined && j.slotAt !== undefined) db.slotKeys.delete(slotKey(j.scheduleName, j.slotAt));
  for (const [aid, a] of db.attempts) if (a.jobId === j.id) db.attempts.delete(aid);
  forgetEvents(db, j.id);
  // its edges as a child go with it; a deleted parent stays named by its children, as in SQL
  for (const pid of j.parents ?? []) {
    const p = db.jobs.get(pid);
    if (p?.children) p.children = p.children.filter((c) => c !== j.id);
  }
  return true;
}
