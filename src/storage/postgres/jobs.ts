/**
 * The job rows on PostgreSQL: enqueue (insert.ts), read, list, and an operator's retry, cancel
 * and prune, recorded as events (events.ts) when an actor is given; bulk actions (bulk.ts).
 * Retries that make a job due now send `pg_notify` in the same statement, delivered on commit.
 * An id that is not a job id finds nothing.
 */
import { ValidationError } from '../../core/errors.js';
import { checkOperator } from '../../core/operator.js';
import { checkPruneCursor } from '../../core/prune-cursor.js';
import type { JobStatus } from '../../core/status.js';
import type {
  BulkBatch, BulkBatchResult, BulkRange, InsertResult, JobEvent, JobEventKind, JobQuery, JobRow, JobStore, NewJob, OperatorChange, PruneBatch, PruneParams,
} from '../../core/storage.js';
import { PostgresBulk } from './bulk.js';
import { type Db, type Queryable, query } from './db.js';
import { PostgresEvents, eventsSql, recordEvents } from './events.js';
import { JobInserts } from './insert.js';
import { NOW, durationSince, jobColumns, ms, toJobRow, validId, waitSince } from './sql.js';
import { SqlAggregate } from '../aggregates.js';
import type { JobSearch, JobSearchPage, MatchCount, MatchCountQuery } from '../../core/search.js';
import { matchCount, searchPage } from '../search-pages.js';
import { PostgresMatchReader } from './search.js';
import { notHeld, settleBatchesSql, settleChildrenSql } from './workflows.js';
import { RETRY_GUARD } from '../operator-guards.js';

export function jobsSql(s: string) {
  return {
    get: `-- leasehold getJob: one job by id
SELECT * FROM ${s}.jobs WHERE id = $1::bigint`,

    /** $1 status, $2 queue, $3 type, $4 before id (each null = any), $5 limit */
    list: `-- leasehold listJobs: jobs matching the filters, newest first, below a keyset cursor
SELECT * FROM ${s}.jobs
WHERE ($1::text IS NULL OR status = $1::text) AND ($2::text IS NULL OR queue = $2::text)
  AND ($3::text IS NULL OR type = $3::text) AND ($4::bigint IS NULL OR id < $4::bigint)
ORDER BY id DESC
LIMIT $5::int`,

    /** $1 id, $2 $3 notify */
    retry: `-- leasehold retryJob: queued/failed/dead/cancelled -> queued due now with attempts reset; returns the row and whether it applied
WITH upd AS (
  UPDATE ${s}.jobs
  SET status = 'queued', run_at = ${NOW}, attempts = 0, locked_by = NULL, lease_token = NULL,
      locked_until = NULL, finished_at = NULL, updated_at = ${NOW},
      -- another job took its unique key meanwhile: it comes back without it
      unique_key = CASE WHEN status IN ('dead','cancelled') AND EXISTS (
        SELECT 1 FROM ${s}.jobs h WHERE h.unique_key = jobs.unique_key AND h.id <> jobs.id AND h.status IN ('queued','failed','running')
      ) THEN NULL ELSE unique_key END
  WHERE id = $1::bigint AND status IN ('queued','failed','dead','cancelled') AND ${RETRY_GUARD}
  RETURNING *
), woke AS (
  SELECT pg_notify($2, $3) FROM (SELECT 1 FROM upd LIMIT 1) AS due
)
SELECT true AS applied, (SELECT count(*) FROM woke) AS notified, upd.* FROM upd
UNION ALL
SELECT false, 0, j.* FROM ${s}.jobs j WHERE j.id = $1::bigint AND NOT EXISTS (SELECT 1 FROM upd)`,

    /**
     * $1 id, $2 message. `locked` reads the row under its lock, as it is after a claim or finish
     * that committed meanwhile, so a running attempt is closed with the lease it really had.
     */
    cancel: `-- leasehold cancelJob: queued/failed/running/waiting -> cancelled, lease cleared, a running attempt written as cancelled, its workflow and batch settled as a finish would; returns the row and whether it applied
WITH RECURSIVE locked AS (
  SELECT id, status, attempts, locked_by, lease_token, started_at, run_at FROM ${s}.jobs WHERE id = $1::bigint FOR UPDATE
), upd AS (
  UPDATE ${s}.jobs j
  SET status = 'cancelled', finished_at = ${NOW}, locked_by = NULL, lease_token = NULL,
      locked_until = NULL, last_error_code = 'CANCELLED', last_error = $2::text, updated_at = ${NOW}
  FROM locked l
  WHERE j.id = l.id AND l.status IN ('queued','failed','running','waiting')
  RETURNING ${jobColumns('j')}, j.dependents, j.batch_id
), closed AS (
  INSERT INTO ${s}.job_attempts (job_id, attempt, worker_id, lease_token, started_at, finished_at, duration_ms,
                                 outcome, error_code, error_message, wait_ms)
  SELECT l.id, l.attempts, l.locked_by, l.lease_token, l.started_at, ${NOW}, ${durationSince('l.started_at')},
         'cancelled', 'CANCELLED', $2::text, ${waitSince('l.run_at', 'l.started_at')}
  FROM locked l
  WHERE l.status = 'running' AND EXISTS (SELECT 1 FROM upd)
)${settleChildrenSql(s)}${settleBatchesSql(s)}
SELECT true AS applied, upd.* FROM upd
UNION ALL
SELECT false, ${jobColumns('j')}, j.dependents, j.batch_id FROM ${s}.jobs j WHERE j.id = $1::bigint AND NOT EXISTS (SELECT 1 FROM upd)`,

    /** $1 statuses, $2 older than ms, $3 limit, $4 $5 the cursor's finished_at and id */
    pruneLock: `-- leasehold pruneJobs: lock up to $3 finished jobs of the listed statuses finished more than $2 ms ago and after ($4, $5)
SELECT id FROM ${s}.jobs v
-- the index scan starts at the cursor, past the entries earlier batches deleted
WHERE finished_at < ${NOW} - ${ms('$2::float8')} AND finished_at >= $4::timestamptz AND (finished_at > $4::timestamptz OR id > $5::bigint)
  AND status = ANY($1::text[]) AND ${notHeld(s, 'v')}
ORDER BY finished_at, id
LIMIT $3::int
FOR UPDATE SKIP LOCKED`,

    /**
     * $1 the ids pruneLock locked; attempts and events go with their jobs. A statement of its
     * own: its snapshot, taken after the lock, sees an edge to a locked job committed meanwhile.
     */
    prune: `-- leasehold pruneJobs (delete): the locked jobs nothing depending on them still needs, and their attempts and events
WITH gone AS (
  -- each delete takes its ids as an array, not as a join, so no plan hashes a whole table
  DELETE FROM ${s}.jobs j WHERE j.id = ANY ($1::bigint[]) AND ${notHeld(s, 'j')} RETURNING j.id, j.finished_at, j.batch_id, j.idempotency_key
), history AS (
  DELETE FROM ${s}.job_attempts a WHERE a.job_id = ANY (ARRAY(SELECT id FROM gone))
), events AS (
  DELETE FROM ${s}.job_events e WHERE e.job_id = ANY (ARRAY(SELECT id FROM gone))
), edges_in AS (
  -- only its edges as a child: a pruned parent's stay with its children, which still name it
  DELETE FROM ${s}.job_dependencies d WHERE d.child_id = ANY (ARRAY(SELECT id FROM gone))
)
-- with the last deleted key (to the ms, rounded down) and the batches the pruned jobs belonged to or called back, which they may have left empty
SELECT (SELECT count(*)::int FROM gone) AS n,
       (SELECT ARRAY[to_char(date_trunc('milliseconds', finished_at) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), id::text]
          FROM gone ORDER BY finished_at DESC, id DESC LIMIT 1) AS cursor,
       ARRAY(SELECT batch_id FROM gone WHERE batch_id IS NOT NULL
             UNION SELECT substr(idempotency_key, 17)::bigint FROM gone WHERE idempotency_key ~ '^leasehold:batch:[0-9]+$')::text[] AS batches`,

    /**
     * $1 batch ids; run after the prune committed, so of two prunes taking members of one batch
     * the later sees both gone. OFFSET 0: each batch probed through jobs_batch_idx, never a hash of every member.
     */
    forgetBatches: `-- leasehold pruneJobs (batch): done batches left without members or callback job
DELETE FROM ${s}.batches b WHERE b.id = ANY($1::bigint[]) AND b.state = 'done'
  AND NOT EXISTS (SELECT 1 FROM ${s}.jobs m WHERE m.batch_id = b.id AND m.batch_id IS NOT NULL OFFSET 0)
  AND NOT EXISTS (SELECT 1 FROM ${s}.jobs c WHERE c.idempotency_key = 'leasehold:batch:' || b.id OFFSET 0)`,
  };
}

type AdminResult = { job: JobRow | null; applied: boolean };

const CANCEL_MESSAGE = 'cancelled by an operator';

/** A prune batch is never JIT-compiled: on millions of finished jobs its estimated cost passes jit_above_cost, and compiling costs more than the delete. */
const PRUNE_BEGIN = `-- leasehold pruneJobs: open its transaction without JIT
BEGIN; SET LOCAL jit = off`;

export class PostgresJobs extends SqlAggregate<Db, ReturnType<typeof jobsSql>> implements JobStore {
  private readonly inserts = new JobInserts(this.db);
  private readonly history = new PostgresEvents(this.db);
  private readonly eventSql = eventsSql(this.db.q);
  private readonly bulkActions = new PostgresBulk(this.db);

  constructor(db: Db) {
    super(db, jobsSql(db.q));
  }

  /** See insert.ts. */
  insert(p: { jobs: readonly NewJob[]; tx?: unknown }): Promise<InsertResult[]> {
    return this.inserts.insert(p);
  }

  async get(p: { id: string }): Promise<JobRow | null> {
    const id = validId(p.id);
    if (id === null) return null;
    const [row] = await this.db.run('getJob', this.sql.get, [id]);
    return row ? toJobRow(row) : null;
  }

  /** One page of a search: the pages decided in ../search-pages.ts over this database's reads (./search.ts). */
  search(p: JobSearch): Promise<JobSearchPage> {
    return searchPage(new PostgresMatchReader(this.db), p);
  }

  countMatching(p: MatchCountQuery): Promise<MatchCount> {
    return matchCount(new PostgresMatchReader(this.db), p);
  }

  async list(q: JobQuery): Promise<JobRow[]> {
    let before: string | null = null;
    if (q.beforeId !== undefined) {
      before = validId(q.beforeId);
      if (before === null) throw new ValidationError('INVALID_OPTION', `beforeId must be a job id, got "${q.beforeId}"`);
    }
    if (q.limit <= 0) return [];
    const rows = await this.db.run('listJobs', this.sql.list, [q.status ?? null, q.queue ?? null, q.type ?? null, before, q.limit]);
    return rows.map(toJobRow);
  }

  async retry(p: OperatorChange): Promise<AdminResult> {
    return this.#admin(p, 'retryJob', this.sql.retry, [...this.db.notify], 'retried');
  }

  async cancel(p: OperatorChange): Promise<AdminResult> {
    return this.#admin(p, 'cancelJob', this.sql.cancel, [CANCEL_MESSAGE], 'cancelled');
  }

  /**
   * One statement without an actor; with one, a transaction: the job locked and read as it is,
   * the change, and its event (events.ts) when it applied.
   */
  async #admin(p: OperatorChange, what: string, text: string, rest: unknown[], kind: JobEventKind): Promise<AdminResult> {
    const by = checkOperator(p);
    const id = validId(p.id);
    if (id === null) return { job: null, applied: false };
    const change = async (on?: Queryable): Promise<AdminResult> => {
      const [row] = await this.db.run(what, text, [id, ...rest], on);
      return row ? { job: toJobRow(row), applied: row.applied === true } : { job: null, applied: false };
    };
    if (!by) return change();
    return this.db.transaction(what, async (c) => {
      const [before] = await query(c, what, this.eventSql.lockJob, [id]);
      if (!before) return { job: null, applied: false };
      const res = await change(c);
      if (res.applied) await recordEvents(c, this.eventSql, kind, [{ id, was: before.status as JobStatus, wasAttempts: Number(before.attempts) }], { ...by, bulkId: null });
      return res;
    });
  }

  async prune(p: PruneParams): Promise<number> {
    return (await this.pruneBatch(p)).deleted;
  }

  async pruneBatch(p: PruneParams): Promise<PruneBatch> {
    checkPruneCursor(p.after);
    const none = { deleted: 0, cursor: p.after ?? null };
    if (p.limit <= 0 || p.statuses.length === 0) return none;
    // no cursor: from before every finished_at and id
    const after = p.after ? [p.after.finishedAt.toISOString(), validId(p.after.id) ?? '0'] : ['-infinity', '0'];
    const [row] = await this.db.transaction('pruneJobs', async (c) => {
      const locked = await query(c, 'pruneJobs', this.sql.pruneLock, [[...p.statuses], p.olderThanMs, p.limit, ...after]);
      return locked.length === 0 ? [] : query(c, 'pruneJobs', this.sql.prune, [locked.map((r) => r.id)]);
    }, PRUNE_BEGIN);
    const batches = (row?.batches ?? []) as string[];
    if (batches.length > 0) await this.db.run('pruneJobs', this.sql.forgetBatches, [batches]);
    const last = row?.cursor as [string, string] | null | undefined;
    return last ? { deleted: Number(row?.n ?? 0), cursor: { finishedAt: new Date(last[0]), id: last[1] } } : none;
  }

  events(p: { jobId: string; limit?: number | undefined }): Promise<JobEvent[]> {
    return this.history.list(p);
  }

  bulk(p: BulkBatch): Promise<BulkBatchResult> {
    return this.bulkActions.batch(p);
  }

  bulkCount(p: BulkRange): Promise<number> {
    return this.bulkActions.count(p);
  }
}
