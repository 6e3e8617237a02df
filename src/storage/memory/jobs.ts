/**
 * The job rows in memory: insert (idempotency keys), get, list, and an operator's retry,
 * cancel and prune. Each call is one synchronous step over the tables in ./db.ts.
 */
import { LeaseholdError } from '../../core/errors.js';
import type { JobStatus } from '../../core/status.js';
import type { InsertResult, JobQuery, JobRow, JobStore, NewJob, PruneParams } from '../../core/storage.js';
import { jobOut, slotKey, toJson, type MemoryDb, type StoredJob } from './db.js';

const RETRYABLE: readonly JobStatus[] = ['queued', 'failed', 'dead', 'cancelled'];
const CANCELLABLE: readonly JobStatus[] = ['queued', 'failed', 'running'];
const CANCEL_MESSAGE = 'cancelled by an operator';
/** the statuses a unique key holds in */
const ACTIVE: readonly JobStatus[] = ['queued', 'failed', 'running'];

export class MemoryJobs implements JobStore {
  constructor(private readonly db: MemoryDb) {}

  /** An existing idempotency key (or an earlier item of the batch) returns that job; a unique key follows its mode. */
  async insert(p: { jobs: readonly NewJob[]; tx?: unknown }): Promise<InsertResult[]> {
    if (p.tx !== undefined) throw new LeaseholdError('NOT_SUPPORTED', 'transactional enqueue is not supported by the memory storage');
    const now = this.db.now();
    // serialise every payload first so a bad one leaves nothing half-inserted
    const payloads = p.jobs.map((j) => toJson(j.payload));
    return p.jobs.map((j, i) => {
      const payloadJson = payloads[i] as string;
      const runAt = j.runAt ? new Date(j.runAt.getTime()) : new Date(now.getTime() + j.runAfterMs);
      const existing = j.idempotencyKey === null ? undefined : this.db.idempotency.get(j.idempotencyKey);
      if (existing !== undefined) return { job: jobOut(this.stored(existing)), created: false, outcome: 'existing' };
      const holder = j.unique ? this.#uniqueHolder(j.unique.key) : undefined;
      if (holder && j.unique?.mode === 'active') return { job: jobOut(holder), created: false, outcome: 'existing' };
      if (holder && holder.status !== 'running') {
        Object.assign(holder, { payloadJson, runAt, updatedAt: now });
        return { job: jobOut(holder), created: false, outcome: 'replaced' };
      }
      // a running holder gives its key up to the new job
      if (holder) delete holder.uniqueKey;
      const row = this.db.insertJob(
        {
          queue: j.queue,
          type: j.type,
          payloadJson,
          priority: j.priority,
          runAt,
          maxAttempts: j.maxAttempts,
          idempotencyKey: j.idempotencyKey,
          timeoutMs: j.timeoutMs,
          maxRuntimeMs: j.maxRuntimeMs,
          ...(j.traceContext !== undefined ? { traceContext: j.traceContext } : {}),
          ...(j.concurrencyKey != null ? { concurrencyKey: j.concurrencyKey } : {}),
          ...(j.unique ? { uniqueKey: j.unique.key } : {}),
        },
        now,
      );
      if (j.idempotencyKey !== null) this.db.idempotency.set(j.idempotencyKey, row.id);
      return { job: jobOut(row), created: true, outcome: 'created' };
    });
  }

  /** The queued, failed or running job holding a unique key, if any. */
  #uniqueHolder(key: string): StoredJob | undefined {
    for (const j of this.db.jobs.values()) if (j.uniqueKey === key && ACTIVE.includes(j.status)) return j;
    return undefined;
  }

  async get(p: { id: string }): Promise<JobRow | null> {
    this.db.now();
    const j = this.db.jobs.get(p.id);
    return j ? jobOut(j) : null;
  }

  /** Newest first (numeric id order), keyset-paginated by `beforeId`. */
  async list(q: JobQuery): Promise<JobRow[]> {
    this.db.now();
    const before = q.beforeId === undefined ? Infinity : Number(q.beforeId);
    return [...this.db.jobs.values()]
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

  /** queued/failed/dead/cancelled → queued, due now, attempts reset, lease and finished_at cleared. */
  async retry(p: { id: string }): Promise<{ job: JobRow | null; applied: boolean }> {
    const now = this.db.now();
    const j = this.db.jobs.get(p.id);
    if (!j) return { job: null, applied: false };
    if (!RETRYABLE.includes(j.status)) return { job: jobOut(j), applied: false };
    // another job took its unique key meanwhile: it comes back without it
    if (j.uniqueKey !== undefined && !ACTIVE.includes(j.status)) {
      const holder = this.#uniqueHolder(j.uniqueKey);
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
    return { job: jobOut(j), applied: true };
  }

  /** queued/failed/running → cancelled; a running attempt closes as 'cancelled'. */
  async cancel(p: { id: string }): Promise<{ job: JobRow | null; applied: boolean }> {
    const now = this.db.now();
    const j = this.db.jobs.get(p.id);
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
    if (token !== null) this.db.closeAttempt(j.id, token, { outcome: 'cancelled', error: { code: 'CANCELLED', message: CANCEL_MESSAGE } }, now);
    return { job: jobOut(j), applied: true };
  }

  /** Oldest finished first, at most `limit`; attempts go with their job, effects stay. */
  async prune(p: PruneParams): Promise<number> {
    const cutoff = this.db.now().getTime() - p.olderThanMs;
    const victims = [...this.db.jobs.values()]
      .filter((j) => p.statuses.includes(j.status) && j.finishedAt !== null && j.finishedAt.getTime() < cutoff)
      .sort((a, b) => (a.finishedAt as Date).getTime() - (b.finishedAt as Date).getTime() || a.seq - b.seq)
      .slice(0, Math.max(0, p.limit));
    for (const j of victims) {
      this.db.jobs.delete(j.id);
      if (j.idempotencyKey !== null) this.db.idempotency.delete(j.idempotencyKey);
      // the (schedule, slot) unique key goes with its row, as it does in SQL
      if (j.scheduleName !== undefined && j.slotAt !== undefined) this.db.slotKeys.delete(slotKey(j.scheduleName, j.slotAt));
      for (const [aid, a] of this.db.attempts) if (a.jobId === j.id) this.db.attempts.delete(aid);
    }
    return victims.length;
  }

  private stored(id: string): StoredJob {
    const j = this.db.jobs.get(id);
    if (!j) throw new LeaseholdError('STORAGE', `memory storage: job ${id} indexed but missing`);
    return j;
  }
}
