/** Results, progress and workflows in memory: each call one synchronous step, fenced like the SQL adapters. */
import { batchCallbackKey, batchCallbackPayload, batchFires } from '../../core/batches.js';
import { parentFailedMessage, startFlow } from '../../core/workflow-graph.js';
import type { BatchRow, FlowInsert, JobDependencies, JobRow, NewBatch, NewJob, ProgressParams, WorkflowStore } from '../../core/storage.js';
import { type MemoryDb, type StoredJob, copyDate, copyDateOrNull, jobOut, toJson } from './db.js';

type StoredBatch = BatchRow & { callback: NewJob };

const batchOut = ({ callback: _, ...b }: StoredBatch): BatchRow => ({ ...b, createdAt: copyDate(b.createdAt), finishedAt: copyDateOrNull(b.finishedAt) });

/** A closed batch with nothing pending: done, and its callback enqueued once (unless onSuccessOnly and a member did not succeed). */
function completeBatch(db: MemoryDb, b: StoredBatch, now: Date): void {
  if (b.state !== 'closed' || b.pending > 0) return;
  Object.assign(b, { state: 'done', finishedAt: now });
  const key = batchCallbackKey(b.id);
  if (!batchFires(b) || db.idempotency.has(key)) return;
  const c = b.callback;
  const row = db.insertJob({
    queue: c.queue, type: c.type, payloadJson: toJson(batchCallbackPayload(c.payload, b)), priority: c.priority,
    runAt: new Date(now.getTime() + c.runAfterMs), maxAttempts: c.maxAttempts, idempotencyKey: key, timeoutMs: c.timeoutMs, maxRuntimeMs: c.maxRuntimeMs,
  }, now);
  db.idempotency.set(key, row.id);
}

/** A member's finish, in the same step: it ends for its batch, which completes when it was the last. */
export function settleBatch(db: MemoryDb, job: StoredJob, now: Date): void {
  const b = job.batchId === undefined ? undefined : db.batches.get(job.batchId);
  if (!b || (job.status !== 'succeeded' && job.status !== 'dead' && job.status !== 'cancelled')) return;
  b.pending -= 1;
  b[job.status] += 1;
  completeBatch(db, b, now);
}

const ENDED = new Set(['succeeded', 'dead', 'cancelled']);

/** Retention keeps a job while a job depending on it has not ended: it may still wait for it or read it (ctx.parents). */
export const heldByChild = (db: MemoryDb, j: StoredJob): boolean =>
  (j.children ?? []).some((id) => {
    const c = db.jobs.get(id);
    return c !== undefined && !ENDED.has(c.status);
  });

/** Pruning: a done batch goes once its members and its callback job are all gone. */
export function forgetBatches(db: MemoryDb, ids: readonly string[]): void {
  for (const id of ids) {
    if (db.batches.get(id)?.state !== 'done' || db.idempotency.has(batchCallbackKey(id))) continue;
    if (![...db.jobs.values()].some((j) => j.batchId === id)) db.batches.delete(id);
  }
}

/** A parent's finish, in the same step: a success releases its children, a death or cancel applies their policy. */
export function settleChildren(db: MemoryDb, parent: StoredJob, now: Date): void {
  const waiting = (id: string) => {
    const c = db.jobs.get(id);
    return c?.status === 'waiting' ? c : undefined;
  };
  if (parent.status === 'succeeded') {
    for (const c of (parent.children ?? []).map(waiting)) {
      if (!c) continue;
      c.pendingParents = (c.pendingParents ?? 1) - 1;
      c.updatedAt = now;
      if (c.pendingParents > 0) continue;
      c.status = 'queued';
      if (c.runAt.getTime() < now.getTime()) c.runAt = now;
    }
    return;
  }
  if (parent.status !== 'dead' && parent.status !== 'cancelled') return;
  const message = `job ${parent.id} it depends on ended ${parent.status}`;
  const stack = [...(parent.children ?? [])];
  for (let id = stack.pop(); id !== undefined; id = stack.pop()) {
    const c = waiting(id);
    if (!c || c.parentPolicy !== 'cancel') continue;
    Object.assign(c, { status: 'cancelled', finishedAt: now, updatedAt: now, lastErrorCode: 'PARENT_FAILED', lastError: message });
    if (c.batchId !== undefined) settleBatch(db, c, now);
    stack.push(...(c.children ?? []));
  }
}

export class MemoryWorkflows implements WorkflowStore {
  constructor(private readonly db: MemoryDb) {}

  async progress(p: ProgressParams): Promise<boolean> {
    const now = this.db.now();
    const j = this.db.jobs.get(p.id);
    if (!j || j.status !== 'running' || j.leaseToken !== p.leaseToken) return false;
    j.progressJson = { json: p.value, note: p.note, at: now };
    j.updatedAt = now;
    return true;
  }

  async createBatch(p: NewBatch): Promise<BatchRow> {
    const now = this.db.now();
    toJson(p.callback.payload);
    const id = String(this.db.batchSeq());
    const b: StoredBatch = {
      id, state: 'open', onSuccessOnly: p.onSuccessOnly, total: 0, pending: 0, succeeded: 0, dead: 0, cancelled: 0,
      callbackType: p.callback.type, createdAt: now, finishedAt: null, callback: { ...p.callback, payload: JSON.parse(toJson(p.callback.payload)) as unknown },
    };
    this.db.batches.set(id, b);
    return batchOut(b);
  }

  async closeBatch(p: { batchId: string }): Promise<BatchRow | null> {
    const now = this.db.now();
    const b = this.db.batches.get(p.batchId);
    if (!b) return null;
    if (b.state === 'open') b.state = 'closed';
    completeBatch(this.db, b, now);
    return batchOut(b);
  }

  async dependencies(p: { jobId: string; limit: number }): Promise<JobDependencies> {
    this.db.now();
    const byId = (a: string, b: string) => Number(a) - Number(b);
    const children = [...(this.db.jobs.get(p.jobId)?.children ?? [])].sort(byId).slice(0, p.limit);
    const parents = [...(this.db.jobs.get(p.jobId)?.parents ?? [])].sort(byId).slice(0, p.limit);
    return { parents, children };
  }

  async getBatch(p: { batchId: string }): Promise<BatchRow | null> {
    this.db.now();
    const b = this.db.batches.get(p.batchId);
    return b ? batchOut(b) : null;
  }

  async insertFlow(p: FlowInsert): Promise<JobRow[]> {
    const now = this.db.now();
    const stored = new Map(p.jobs.flatMap((j) => j.storedParents ?? []).flatMap((id) => {
      const s = this.db.jobs.get(id);
      return s ? [[id, s] as const] : [];
    }));
    const starts = startFlow(p.jobs, new Map([...stored].map(([id, s]) => [id, s.status])), p.onParentFailure);
    const batch = p.batchId === undefined ? undefined : this.db.batches.get(p.batchId);
    if (p.batchId !== undefined && batch?.state !== 'open') return [];
    // serialise every payload first so a bad one leaves nothing half-inserted
    const payloads = p.jobs.map((j) => toJson(j.payload));
    const rows: StoredJob[] = [];
    p.jobs.forEach((j, i) => {
      const row = this.db.insertJob({
        queue: j.queue, type: j.type, payloadJson: payloads[i] as string, priority: j.priority,
        runAt: j.runAt ? new Date(j.runAt.getTime()) : new Date(now.getTime() + j.runAfterMs), maxAttempts: j.maxAttempts,
        idempotencyKey: null, timeoutMs: j.timeoutMs, maxRuntimeMs: j.maxRuntimeMs,
        ...(j.traceContext !== undefined ? { traceContext: j.traceContext } : {}),
        ...(j.concurrencyKey != null ? { concurrencyKey: j.concurrencyKey } : {}),
      }, now);
      const start = starts[i]!;
      if (start.pendingParents !== null) Object.assign(row, { status: start.status, pendingParents: start.pendingParents, parentPolicy: p.onParentFailure });
      if (start.failedBy) Object.assign(row, { finishedAt: now, lastErrorCode: 'PARENT_FAILED', lastError: parentFailedMessage(start.failedBy) });
      if (batch) row.batchId = batch.id;
      for (const parent of [...(j.storedParents ?? []).map((id) => stored.get(id)!), ...j.parents.map((at) => rows[at]!)]) {
        (parent.children ??= []).push(row.id);
        (row.parents ??= []).push(parent.id);
      }
      rows.push(row);
    });
    const cancelled = starts.filter((s) => s.status === 'cancelled').length;
    if (batch) Object.assign(batch, { total: batch.total + rows.length, pending: batch.pending + rows.length - cancelled, cancelled: batch.cancelled + cancelled });
    return rows.map(jobOut);
  }
}
