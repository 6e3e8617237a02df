/** Results, progress and workflows in memory: each call one synchronous step, fenced like the SQL adapters. */
import type { FlowInsert, JobRow, ProgressParams, WorkflowStore } from '../../core/storage.js';
import { type MemoryDb, type StoredJob, jobOut, toJson } from './db.js';

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

  async insertFlow(p: FlowInsert): Promise<JobRow[]> {
    const now = this.db.now();
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
      if (j.parents.length > 0) Object.assign(row, { status: 'waiting', pendingParents: j.parents.length, parentPolicy: p.onParentFailure });
      for (const at of j.parents) (rows[at]!.children ??= []).push(row.id);
      rows.push(row);
    });
    return rows.map(jobOut);
  }
}
