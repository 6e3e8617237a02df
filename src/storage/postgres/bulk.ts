/**
 * Bulk actions on PostgreSQL, one bounded batch per call, in one transaction: a statement that
 * locks the batch's jobs in id order (FOR UPDATE, waiting for a claimer or finisher holding
 * one, whose status it then reads as committed and rechecks) and changes them as jobs.retry /
 * jobs.cancel change one job, then the events (events.ts) or, for a delete, the history rows
 * of the jobs deleted, each by a statement of its own so it sees what committed meanwhile.
 * The scan walks the primary key over the batch's id range, so it reads at most that range.
 */
import { type CheckedBatch, type CheckedRange, checkBulkBatch, checkBulkRange, nextAfter, rangeIsEmpty } from '../../core/operator.js';
import type { BulkBatch, BulkBatchResult, BulkRange } from '../../core/storage.js';
import type { JobStatus } from '../../core/status.js';
import { SqlAggregate } from '../aggregates.js';
import { type Db, type Queryable, query } from './db.js';
import { type EventsSql, eventsSql, recordEvents } from './events.js';
import { NOW, durationSince, waitSince } from './sql.js';
import { DELETE_GUARD, RETRY_GUARD } from '../operator-guards.js';
import { notHeld, settleBatchesSql, settleChildrenSql } from './workflows.js';

const CANCEL_MESSAGE = 'cancelled by an operator';

function bulkSql(s: string) {
  // what each action may take besides its statuses (operator-guards.ts)
  const guard: Record<CheckedRange['action'], string> = { retry: RETRY_GUARD, cancel: 'true', delete: `${notHeld(s, `${s}.jobs`)} AND ${DELETE_GUARD}` };
  /** $1 after id, $2 through id, $3 statuses, $4 queue, $5 type, $7 ids (null: any), $6 limit */
  const cand = (cols: string, guard = 'true'): string => `cand AS (
  SELECT ${cols} FROM ${s}.jobs
  WHERE id > $1::bigint AND id <= $2::bigint AND status = ANY($3::text[]) AND ${guard}
    AND ($4::text IS NULL OR queue = $4::text) AND ($5::text IS NULL OR type = $5::text)
    AND ($7::bigint[] IS NULL OR id = ANY($7::bigint[]))
  ORDER BY id
  LIMIT $6::int
  FOR UPDATE
)`;
  return {
    /**
     * $8 $9 notify. A unique key another job holds, or an earlier job of the batch takes back,
     * stays with that job: this one comes back without it (jobs.retry's rule, batch-wide).
     */
    retry: `-- leasehold bulkRetry: back to queued, due now, attempts reset, for the batch's jobs; returns each with its status and attempts before
WITH ${cand('id, status, attempts, unique_key', guard.retry)}, upd AS (
  UPDATE ${s}.jobs j
  SET status = 'queued', run_at = ${NOW}, attempts = 0, locked_by = NULL, lease_token = NULL,
      locked_until = NULL, finished_at = NULL, updated_at = ${NOW},
      unique_key = CASE WHEN c.status IN ('dead','cancelled') AND (
        EXISTS (SELECT 1 FROM ${s}.jobs h WHERE h.unique_key = j.unique_key AND h.id <> j.id AND h.status IN ('queued','failed','running'))
        OR EXISTS (SELECT 1 FROM cand o WHERE o.unique_key = j.unique_key AND o.id < j.id)
      ) THEN NULL ELSE j.unique_key END
  FROM cand c
  WHERE j.id = c.id
  RETURNING j.id, c.status AS was, c.attempts AS was_attempts
), woke AS (
  SELECT pg_notify($8, $9) FROM (SELECT 1 FROM upd LIMIT 1) AS due
)
SELECT u.id::text AS id, u.was, u.was_attempts, (SELECT count(*) FROM woke) AS notified FROM upd u ORDER BY u.id`,

    /** $8 message. A running job's attempt is written as cancelled from the values the lock read, as jobs.cancel writes it. */
    cancel: `-- leasehold bulkCancel: cancelled now, lease cleared, running attempts written as cancelled, workflows and batches settled as a finish would, for the batch's jobs; returns each with its status and attempts before
WITH RECURSIVE ${cand('id, status, attempts, locked_by, lease_token, started_at, run_at')}, upd AS (
  UPDATE ${s}.jobs j
  SET status = 'cancelled', finished_at = ${NOW}, locked_by = NULL, lease_token = NULL,
      locked_until = NULL, last_error_code = 'CANCELLED', last_error = $8::text, updated_at = ${NOW}
  FROM cand c
  WHERE j.id = c.id
  RETURNING j.id, c.status AS was, c.attempts AS was_attempts, j.status, j.dependents, j.batch_id
), closed AS (
  INSERT INTO ${s}.job_attempts (job_id, attempt, worker_id, lease_token, started_at, finished_at, duration_ms,
                                 outcome, error_code, error_message, wait_ms)
  SELECT c.id, c.attempts, c.locked_by, c.lease_token, c.started_at, ${NOW}, ${durationSince('c.started_at')},
         'cancelled', 'CANCELLED', $8::text, ${waitSince('c.run_at', 'c.started_at')}
  FROM cand c
  WHERE c.status = 'running' AND c.lease_token IS NOT NULL
)${settleChildrenSql(s)}${settleBatchesSql(s)}
SELECT u.id::text AS id, u.was, u.was_attempts FROM upd u ORDER BY u.id`,

    delete: `-- leasehold bulkDelete: delete the batch's jobs (none running: the statuses say so)
WITH ${cand('id', guard.delete)}
DELETE FROM ${s}.jobs j USING cand c WHERE j.id = c.id
RETURNING j.id::text AS id`,

    /** $1 ids: a statement of its own, after the jobs' delete, so it sees rows committed while that waited */
    forget: `-- leasehold bulkDelete: delete the attempt rows, events and workflow edges of the jobs just deleted
WITH history AS (
  DELETE FROM ${s}.job_attempts WHERE job_id = ANY($1::bigint[])
), edges AS (
  DELETE FROM ${s}.job_dependencies WHERE child_id = ANY($1::bigint[])
)
DELETE FROM ${s}.job_events WHERE job_id = ANY($1::bigint[])`,

    /** the range of `cand`, counted; $6 ids (null: any) */
    count: (action: CheckedRange['action']): string => `-- leasehold bulkCount: how many jobs of an id range, of these statuses and the filter, a bulk action would take
SELECT count(*)::int AS n FROM ${s}.jobs
WHERE id > $1::bigint AND id <= $2::bigint AND status = ANY($3::text[]) AND ${guard[action]}
  AND ($4::text IS NULL OR queue = $4::text) AND ($5::text IS NULL OR type = $5::text)
  AND ($6::bigint[] IS NULL OR id = ANY($6::bigint[]))`,
  };
}

const rangeParams = (b: CheckedRange): unknown[] => [b.afterId, b.throughId, [...b.statuses], b.queue, b.type];

export class PostgresBulk extends SqlAggregate<Db, ReturnType<typeof bulkSql>> {
  private readonly events: EventsSql;

  constructor(db: Db) {
    super(db, bulkSql(db.q));
    this.events = eventsSql(db.q);
  }

  async batch(p: BulkBatch): Promise<BulkBatchResult> {
    const b = checkBulkBatch(p);
    if (rangeIsEmpty(b)) return { ids: [], next: b.throughId };
    const ids = await this.db.transaction(`bulk ${b.action}`, (c) => this.#change(c, b));
    return { ids, next: nextAfter(b, ids.length, ids[ids.length - 1] ?? null) };
  }

  /** The batch's change, then its events or history deletes; every job the lock read is changed (it holds them). */
  async #change(c: Queryable, b: CheckedBatch): Promise<string[]> {
    const range = [...rangeParams(b), b.limit, b.ids];
    if (b.action === 'delete') {
      const ids = (await query(c, 'bulkDelete', this.sql.delete, range)).map((r) => String(r.id));
      if (ids.length > 0) await query(c, 'bulkDelete', this.sql.forget, [ids]);
      return ids.sort((x, y) => x.length - y.length || (x < y ? -1 : 1));
    }
    const rows = b.action === 'retry'
      ? await query(c, 'bulkRetry', this.sql.retry, [...range, ...this.db.notify])
      : await query(c, 'bulkCancel', this.sql.cancel, [...range, CANCEL_MESSAGE]);
    const changed = rows.map((r) => ({ id: String(r.id), was: r.was as JobStatus, wasAttempts: Number(r.was_attempts) }));
    await recordEvents(c, this.events, b.action === 'retry' ? 'retried' : 'cancelled', changed, { ...b.operator, bulkId: b.bulkId });
    return changed.map((x) => x.id);
  }

  async count(p: BulkRange): Promise<number> {
    const b = checkBulkRange(p);
    if (rangeIsEmpty(b)) return 0;
    const [row] = await this.db.run('bulkCount', this.sql.count(b.action), [...rangeParams(b), b.ids]);
    return Number(row?.n ?? 0);
  }
}
