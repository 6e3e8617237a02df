/**
 * The job rows in memory: insert (idempotency keys), get, list, and an operator's retry,
 * cancel and prune (operator.ts), history (events.ts) and bulk actions (bulk.ts). Each call is
 * one synchronous step over the tables in ./db.ts.
 */
import { LeaseholdError } from '../../core/errors.js';
import type { JobSearch, JobSearchPage, MatchCount, MatchCountQuery } from '../../core/search.js';
import { matchCount, searchPage } from '../search-pages.js';
import { MemoryMatchReader } from './search.js';
import { checkOperator } from '../../core/operator.js';
import type { BulkBatch, BulkBatchResult, BulkRange, InsertResult, JobEvent, JobQuery, JobRow, JobStore, NewJob, OperatorChange, PruneBatch, PruneParams } from '../../core/storage.js';
import { MemoryBulk } from './bulk.js';
import { jobOut, toJson, type MemoryDb, type StoredJob } from './db.js';
import { MemoryEvents } from './events.js';
import { cancelStored, deleteStored, retryStored, uniqueHolder } from './operator.js';
import { forgetBatches, heldByChild } from './workflows.js';
import { batchesOf } from '../../core/batches.js';
import { checkPruneCursor } from '../../core/prune-cursor.js';


export class MemoryJobs implements JobStore {
  readonly #events: MemoryEvents;
  readonly #bulk: MemoryBulk;

  constructor(private readonly db: MemoryDb) {
    this.#events = new MemoryEvents(db);
    this.#bulk = new MemoryBulk(db);
  }

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
      const holder = j.unique ? uniqueHolder(this.db, j.unique.key) : undefined;
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

  async get(p: { id: string }): Promise<JobRow | null> {
    this.db.now();
    const j = this.db.jobs.get(p.id);
    return j ? jobOut(j) : null;
  }

  /** Newest first (numeric id order), keyset-paginated by `beforeId`. */
  /** One page of a search: the pages decided in ../search-pages.ts over this database's reads (./search.ts). */
  search(p: JobSearch): Promise<JobSearchPage> {
    return searchPage(new MemoryMatchReader(this.db), p);
  }

  countMatching(p: MatchCountQuery): Promise<MatchCount> {
    return matchCount(new MemoryMatchReader(this.db), p);
  }

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

  /** queued/failed/dead/cancelled → queued, due now, attempts reset, lease and finished_at cleared; recorded when an actor is given. */
  async retry(p: OperatorChange): Promise<{ job: JobRow | null; applied: boolean }> {
    return this.#admin(p, retryStored);
  }

  /** queued/failed/running → cancelled; a running attempt closes as 'cancelled'; recorded when an actor is given. */
  async cancel(p: OperatorChange): Promise<{ job: JobRow | null; applied: boolean }> {
    return this.#admin(p, cancelStored);
  }

  #admin(p: OperatorChange, act: typeof retryStored): { job: JobRow | null; applied: boolean } {
    const by = checkOperator(p);
    const now = this.db.now();
    const j = this.db.jobs.get(p.id);
    if (!j) return { job: null, applied: false };
    const applied = act(this.db, j, now, by && { ...by, bulkId: null });
    return { job: jobOut(j), applied };
  }

  async prune(p: PruneParams): Promise<number> {
    return (await this.pruneBatch(p)).deleted;
  }

  /** Oldest finished first, after the cursor, at most `limit`; attempts and events go with their job, effects stay. */
  async pruneBatch(p: PruneParams): Promise<PruneBatch> {
    checkPruneCursor(p.after);
    const cutoff = this.db.now().getTime() - p.olderThanMs;
    const after = p.after ? { at: p.after.finishedAt.getTime(), seq: Number(p.after.id) } : null;
    const key = (j: StoredJob) => ({ at: (j.finishedAt as Date).getTime(), seq: j.seq });
    const past = (j: StoredJob) => !after || key(j).at > after.at || (key(j).at === after.at && j.seq > after.seq);
    const victims = [...this.db.jobs.values()]
      .filter((j) => p.statuses.includes(j.status) && j.finishedAt !== null && j.finishedAt.getTime() < cutoff && past(j) && !heldByChild(this.db, j))
      .sort((a, b) => key(a).at - key(b).at || a.seq - b.seq)
      .slice(0, Math.max(0, p.limit));
    const pruned = victims.filter((j) => deleteStored(this.db, j));
    forgetBatches(this.db, batchesOf(pruned));
    const last = victims[victims.length - 1];
    return { deleted: pruned.length, cursor: last ? { finishedAt: new Date(key(last).at), id: last.id } : (p.after ?? null) };
  }

  events(p: { jobId: string; limit?: number | undefined }): Promise<JobEvent[]> {
    return this.#events.list(p);
  }

  bulk(p: BulkBatch): Promise<BulkBatchResult> {
    return this.#bulk.batch(p);
  }

  bulkCount(p: BulkRange): Promise<number> {
    return this.#bulk.count(p);
  }

  private stored(id: string): StoredJob {
    const j = this.db.jobs.get(id);
    if (!j) throw new LeaseholdError('STORAGE', `memory storage: job ${id} indexed but missing`);
    return j;
  }
}
