/**
 * Bulk actions in memory, one bounded batch per call, in one synchronous step: the batch's jobs
 * (ids in the range, matching the filter, lowest first) are changed as jobs.retry / jobs.cancel
 * change one job (operator.ts), each event naming the bulk action, or deleted with their history.
 */
import { type CheckedRange, checkBulkBatch, checkBulkRange, nextAfter, rangeIsEmpty, retryRefusal } from '../../core/operator.js';
import type { BulkBatch, BulkBatchResult, BulkRange } from '../../core/storage.js';
import type { MemoryDb, StoredJob } from './db.js';
import { cancelStored, deleteStored, retryStored } from './operator.js';
import { heldByChild } from './workflows.js';

/** What an action may take besides its statuses, as the SQL adapters' guards (operator-guards.ts): a delete leaves what a workflow or a batch still waits for. */
function takes(db: MemoryDb, action: CheckedRange['action'], j: StoredJob): boolean {
  if (action === 'retry') return retryRefusal(j) === null;
  if (action === 'delete') return !heldByChild(db, j) && !(j.batchId !== undefined && (j.status === 'queued' || j.status === 'failed'));
  return true;
}

/** The range's jobs that the action may take, lowest id first. */
function inRange(db: MemoryDb, b: CheckedRange): StoredJob[] {
  const after = BigInt(b.afterId);
  const through = BigInt(b.throughId);
  const ids = b.ids === null ? null : new Set(b.ids);
  return [...db.jobs.values()]
    .filter((j) => BigInt(j.seq) > after && BigInt(j.seq) <= through && b.statuses.includes(j.status) &&
      (b.queue === null || j.queue === b.queue) && (b.type === null || j.type === b.type) && (ids === null || ids.has(j.id)) && takes(db, b.action, j))
    .sort((x, y) => x.seq - y.seq);
}


export class MemoryBulk {
  constructor(private readonly db: MemoryDb) {}

  async batch(p: BulkBatch): Promise<BulkBatchResult> {
    const b = checkBulkBatch(p);
    const now = this.db.now();
    if (rangeIsEmpty(b)) return { ids: [], next: b.throughId };
    const taken = inRange(this.db, b).slice(0, b.limit);
    const rec = { ...b.operator, bulkId: b.bulkId };
    const changed = taken.filter((j) => {
      if (b.action === 'delete') return deleteStored(this.db, j);
      return b.action === 'retry' ? retryStored(this.db, j, now, rec) : cancelStored(this.db, j, now, rec);
    });
    const last = taken.length > 0 ? (taken[taken.length - 1] as StoredJob).id : null;
    return { ids: changed.map((j) => j.id), next: nextAfter(b, taken.length, last) };
  }

  async count(p: BulkRange): Promise<number> {
    const b = checkBulkRange(p);
    this.db.now();
    return rangeIsEmpty(b) ? 0 : inRange(this.db, b).length;
  }
}
