/**
 * Bulk actions on SQLite, one bounded batch per call: the batch's ids are read and changed in
 * one IMMEDIATE transaction, so every status read is the status the change lands on (no
 * claimer can write in between). Each job is retried or cancelled exactly as jobs.retry /
 * jobs.cancel do (operator.ts), its event naming the bulk action; a delete takes the batch's
 * jobs with their attempts and events. The scan walks the id range in rowid order, so a batch
 * reads at most the range it is given.
 */
import { checkBulkBatch, checkBulkRange, nextAfter, rangeIsEmpty } from '../../core/operator.js';
import type { CheckedRange } from '../../core/operator.js';
import type { BulkBatch, BulkBatchResult, BulkRange } from '../../core/storage.js';
import type { SqliteDb } from './db.js';
import { cancelRow, deleteJobs, retryRow } from './operator.js';
import { STATUS_TERM } from './search.js';
import { DELETE_GUARD, RETRY_GUARD } from '../operator-guards.js';
import { notHeld } from './workflows.js';

/** The filter's clauses in use only, so SQLite plans each combination on its own (cached per text). */
function where(b: CheckedRange): string {
  return [
    'id > @after AND id <= @through',
    // constant terms, so a status with a partial index (failed, dead, cancelled) is read from it
    `(${b.statuses.map((st) => STATUS_TERM[st]).join(' OR ')})`,
    b.action === 'retry' ? RETRY_GUARD : null,
    // a delete leaves the jobs a workflow or a batch still waits for
    b.action === 'delete' ? `${notHeld('{p}jobs')} AND ${DELETE_GUARD}` : null,
    b.queue !== null ? 'queue = @queue' : null,
    b.type !== null ? 'type = @type' : null,
    b.ids !== null ? 'id IN (SELECT value FROM json_each(@ids))' : null,
  ].filter((x) => x !== null).join(' AND ');
}

export const takeSql = (b: CheckedRange): string => `-- leasehold jobs.bulk: the jobs of one bulk batch: ids in (@after, @through] of the statuses and the filter, lowest first, at most @limit
    SELECT id FROM {p}jobs WHERE ${where(b)} ORDER BY id LIMIT @limit`;

export const countSql = (b: CheckedRange): string => `-- leasehold jobs.bulkCount: how many jobs of ids in (@after, @through] of the statuses and the filter a bulk action would take
    SELECT count(*) AS n FROM {p}jobs WHERE ${where(b)}`;

function params(b: CheckedRange): Record<string, unknown> {
  return {
    after: Number(b.afterId),
    // ids above 2^53 cannot be SQLite rowids here: the range ends at the largest there is
    through: Math.min(Number(b.throughId), Number.MAX_SAFE_INTEGER),
    ...(b.queue !== null ? { queue: b.queue } : {}),
    ...(b.type !== null ? { type: b.type } : {}),
    ...(b.ids !== null ? { ids: JSON.stringify(b.ids.map(Number)) } : {}),
  };
}

export class SqliteBulk {
  constructor(private readonly db: SqliteDb) {}

  async batch(p: BulkBatch): Promise<BulkBatchResult> {
    const b = checkBulkBatch(p);
    if (rangeIsEmpty(b)) return { ids: [], next: b.throughId };
    const db = this.db;
    const now = db.now();
    const rec = { ...b.operator, bulkId: b.bulkId };
    return db.write(() => {
      const taken = (db.stmt(takeSql(b)).all({ ...params(b), limit: b.limit }) as { id: number }[]).map((r) => r.id);
      const last = taken.length > 0 ? String(taken[taken.length - 1]) : null;
      let changed: number[];
      if (b.action === 'delete') {
        changed = taken;
        const n = deleteJobs(db, taken);
        if (n !== taken.length) throw new Error(`sqlite: a bulk delete of ${taken.length} jobs read in its transaction deleted ${n}`);
      } else {
        const act = b.action === 'retry' ? retryRow : cancelRow;
        changed = taken.filter((id) => act(db, id, now, rec).applied);
      }
      return { ids: changed.map(String), next: nextAfter(b, taken.length, last) };
    });
  }

  async count(p: BulkRange): Promise<number> {
    const b = checkBulkRange(p);
    if (rangeIsEmpty(b)) return 0;
    return this.db.read(() => (this.db.stmt(countSql(b)).get(params(b)) as { n: number }).n);
  }
}
