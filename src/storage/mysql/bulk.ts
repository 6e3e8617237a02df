/**
 * Bulk actions on MySQL/MariaDB, one bounded batch per call, in one READ COMMITTED transaction:
 * a locking read of the batch's jobs in id order (waiting for a claimer or finisher holding one,
 * then reading its committed status; rows that no longer match are let go), the change of
 * exactly those rows as jobs.retry / jobs.cancel change one job, then their events (events.ts)
 * or, for a delete, their history rows, sent with the COMMIT. The scan walks the primary key
 * over the batch's id range, so it reads at most that range.
 */
import { type CheckedBatch, type CheckedRange, checkBulkBatch, checkBulkRange, nextAfter, rangeIsEmpty } from '../../core/operator.js';
import type { BulkBatch, BulkBatchResult, BulkRange } from '../../core/storage.js';
import type { JobStatus } from '../../core/status.js';
import { SqlAggregate } from '../aggregates.js';
import { type Db, type Queryable, type ResultHeader, type Stmt, exec, isDuplicate, run, runLast } from './db.js';
import { type Changed, eventStatement, eventsSql } from './events.js';
import { NOW, type Row, type Tables, parseUtc, sharedSql, waitMs } from './sql.js';
import { DELETE_GUARD, RETRY_GUARD } from '../operator-guards.js';
import { notHeld, settleCancelled, workflowsSql } from './workflows.js';
import { makesDue } from './finish.js';
import { wakeupsOf } from './wakeups.js';

const CANCEL_MESSAGE = 'cancelled by an operator';

function where(t: Tables, b: CheckedRange): string {
  const terms = ['id > ? AND id <= ? AND status IN (?)', b.action === 'retry' ? RETRY_GUARD : null, b.action === 'delete' ? `${notHeld(t, t.jobs)} AND ${DELETE_GUARD}` : null, b.queue !== null ? 'queue = ?' : null, b.type !== null ? 'type = ?' : null, b.ids !== null ? 'id IN (?)' : null];
  return terms.filter((x) => x !== null).join(' AND ');
}

const rangeValues = (b: CheckedRange): unknown[] => [
  BigInt(b.afterId), BigInt(b.throughId), [...b.statuses], ...(b.queue !== null ? [b.queue] : []), ...(b.type !== null ? [b.type] : []),
  ...(b.ids !== null ? [b.ids.map(BigInt)] : []),
];

/**
 * Every statement of a batch names its index: MariaDB turns an IN of 1000 ids or more into a join,
 * and a plan that scans would lock every row it reads.
 */
export function bulkSql(t: Tables) {
  return {
    ...sharedSql(t),
    take: (b: CheckedRange): string => `-- leasehold bulkTake: lock the jobs of one bulk batch in id order (ids in a range, of the action's statuses and the filter), with the now of the change
      SELECT id, status, attempts, locked_by, lease_token, started_at, run_at, dependents, batch_id, ${NOW} AS db_now FROM ${t.jobs} FORCE INDEX (PRIMARY)
      WHERE ${where(t, b)} ORDER BY id LIMIT ? FOR UPDATE`,
    count: (b: CheckedRange): string => `-- leasehold bulkCount: how many jobs of an id range, of the action's statuses and the filter, a bulk action would take
      SELECT COUNT(*) AS n FROM ${t.jobs} WHERE ${where(t, b)}`,
    retry: `-- leasehold bulkRetry: back to queued, due now, attempts reset, lease and finish cleared (rows this transaction locked)
      UPDATE ${t.jobs} FORCE INDEX (PRIMARY) SET status = 'queued', run_at = CAST(? AS DATETIME(6)), attempts = 0, locked_by = NULL, lease_token = NULL,
        locked_until = NULL, finished_at = NULL, updated_at = CAST(? AS DATETIME(6))
      WHERE id IN (?) AND status IN ('queued', 'failed', 'dead', 'cancelled')`,
    releaseUniqueKey: `-- leasehold bulkRetry: a job another job's unique key now blocks comes back without it
      UPDATE ${t.jobs} SET unique_key = NULL WHERE id = ?`,
    cancel: `-- leasehold bulkCancel: cancelled now, lease cleared, error code CANCELLED (rows this transaction locked)
      UPDATE ${t.jobs} FORCE INDEX (PRIMARY) SET status = 'cancelled', finished_at = CAST(? AS DATETIME(6)), locked_by = NULL, lease_token = NULL,
        locked_until = NULL, last_error_code = 'CANCELLED', last_error = ?, updated_at = CAST(? AS DATETIME(6))
      WHERE id IN (?) AND status IN ('queued', 'failed', 'running')`,
    deleteAttempts: `-- leasehold bulkDelete: delete the attempt rows of the jobs deleted
      DELETE a FROM ${t.attempts} a FORCE INDEX (${t.attempts}_lease) WHERE a.job_id IN (?)`,
    deleteEvents: `-- leasehold bulkDelete: delete the events of the jobs deleted
      DELETE e FROM ${t.events} e FORCE INDEX (${t.events}_job) WHERE e.job_id IN (?)`,
    deleteJobs: `-- leasehold bulkDelete: delete the jobs (rows this transaction locked; never a running one)
      DELETE j FROM ${t.jobs} j FORCE INDEX (PRIMARY) WHERE j.id IN (?) AND j.status <> 'running'`,
  };
}

type BulkSql = ReturnType<typeof bulkSql>;

export class MysqlBulk extends SqlAggregate<Db, BulkSql> {
  private readonly events = eventsSql(this.db.t);

  constructor(db: Db) {
    super(db, bulkSql(db.t));
  }

  async batch(p: BulkBatch): Promise<BulkBatchResult> {
    const b = checkBulkBatch(p);
    if (rangeIsEmpty(b)) return { ids: [], next: b.throughId };
    let due = false;
    const ids = await this.db.tx(`bulk ${b.action}`, (c) => this.#change(c, b, (d) => (due = d)), true);
    // retried jobs are due now; a cancel may have fired a batch's callback
    if (due) wakeupsOf(this.db).jobsDue();
    return { ids, next: nextAfter(b, ids.length, ids[ids.length - 1] ?? null) };
  }

  /** Every row the locking read returned is changed: this transaction holds them, in the statuses the action takes. */
  async #change(c: Queryable, b: CheckedBatch, madeDue: (due: boolean) => void): Promise<string[]> {
    const rows = await run(c, this.sql.take(b), [...rangeValues(b), b.limit]);
    madeDue(false);
    if (rows.length === 0) return [];
    const ids = rows.map((r) => BigInt(String(r.id)));
    const now = String(rows[0]!.db_now);
    let last: Stmt[];
    if (b.action === 'delete') {
      last = [this.sql.deleteAttempts, this.sql.deleteEvents, this.sql.deleteJobs].map((sql) => ({ sql, values: [ids] }));
      last.push({ sql: workflowsSql(this.db.t).forgetEdges, values: [ids] });
    } else {
      if (b.action === 'retry') await this.#retry(c, ids, now);
      else await exec(c, this.sql.cancel, [now, CANCEL_MESSAGE, now, ids]);
      const changed: Changed[] = rows.map((r) => ({ id: BigInt(String(r.id)), was: String(r.status) as JobStatus, wasAttempts: Number(r.attempts) }));
      const attempts = b.action === 'cancel' ? closedAttempts(this.sql, rows, now) : null;
      // cancelled jobs end for their workflows and batches as a finish would
      const settled = b.action === 'cancel' ? await settleCancelled(c, workflowsSql(this.db.t), rows, now) : [];
      const events = eventStatement(this.events, b.action === 'retry' ? 'retried' : 'cancelled', changed, { ...b.operator, bulkId: b.bulkId });
      last = [attempts, events, ...settled].filter((s): s is Stmt => s !== null);
      madeDue(b.action === 'retry' || settled.some((st) => makesDue(workflowsSql(this.db.t), st)));
    }
    const done = await runLast(c, last);
    const deleted = b.action === 'delete' ? (done[2] as ResultHeader).affectedRows : ids.length;
    if (deleted !== ids.length) throw new Error(`mysql bulk delete: ${deleted} of ${ids.length} locked jobs deleted`);
    return ids.map(String);
  }

  /** One UPDATE for the batch; when a unique key another job holds refuses it, job by job, as jobs.retry. */
  async #retry(c: Queryable, ids: readonly bigint[], now: string): Promise<void> {
    try {
      await exec(c, this.sql.retry, [now, now, ids]);
    } catch (e) {
      if (!isDuplicate(e)) throw e;
      for (const id of ids) {
        await exec(c, this.sql.retry, [now, now, [id]]).catch(async (err: unknown) => {
          if (!isDuplicate(err)) throw err;
          await exec(c, this.sql.releaseUniqueKey, [id]);
          return exec(c, this.sql.retry, [now, now, [id]]);
        });
      }
    }
  }

  async count(p: BulkRange): Promise<number> {
    const b = checkBulkRange(p);
    if (rangeIsEmpty(b)) return 0;
    const [row] = await this.db.one('bulkCount', (c) => run(c, this.sql.count(b), rangeValues(b)));
    return Number(row?.n ?? 0);
  }
}

/** The history rows of the running attempts a cancel ended, from the values the locking read saw (as jobs.cancel writes one). */
function closedAttempts(sql: BulkSql, rows: readonly Row[], now: string): Stmt | null {
  const running = rows.filter((r) => r.status === 'running' && r.lease_token !== null);
  if (running.length === 0) return null;
  const endMs = parseUtc(now).getTime();
  return {
    sql: sql.insertAttempts(running.length),
    values: running.flatMap((r) => [
      BigInt(String(r.id)), Number(r.attempts), String(r.locked_by), String(r.lease_token), String(r.started_at), now,
      endMs - parseUtc(r.started_at).getTime(), 'cancelled', 'CANCELLED', CANCEL_MESSAGE, null, null, waitMs(r.run_at, r.started_at),
    ]),
  };
}
