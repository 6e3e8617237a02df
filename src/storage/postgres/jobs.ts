/**
 * The job rows on PostgreSQL: enqueue, read, list, and an operator's retry, cancel and prune.
 * Enqueues and retries that make a job due now send `pg_notify` in the same statement,
 * delivered on commit. An id that is not a job id finds nothing.
 *
 * An enqueue takes the statement that fits its batch: one job without an idempotency key
 * (`insertOne`, scalar parameters); a run of jobs alike but for their payload (`insertRun`,
 * the shared values once and the payloads as one JSON array text); any other batch without
 * keys (`insertPlain`, one array per column); a batch with keys (`insertKeyed`, duplicates
 * skipped, then the holders of the skipped keys read back). Rows are built from what the
 * caller passed plus what the database chose (id, run_at, created_at), never read back whole.
 */
import { TransientStorageError, ValidationError } from '../../core/errors.js';
import type { InsertResult, JobQuery, JobRow, JobStore, NewJob, PruneParams } from '../../core/storage.js';
import { alikeButPayload, insertedJobRow } from '../row-mapping.js';
import { txClient, type Db, type Queryable } from './db.js';
import { JOB_COLUMNS, NOW, durationSince, jobColumns, jsonParam, ms, toJobRow, validId } from './sql.js';
import { SqlAggregate } from '../aggregates.js';

export function jobsSql(s: string) {
  return {
    /** $1 queue, $2 type, $3 payload json, $4 priority, $5 run_at (null: use $6), $6 run_after_ms, $7 max_attempts, $8 timeout_ms, $9 max_runtime_ms, $10 $11 notify, $12 trace context */
    insertOne: `-- leasehold insert (one job, no idempotency key): add a queued job, notify if it is due now
WITH ins AS (
  INSERT INTO ${s}.jobs (queue, type, payload, status, priority, run_at, attempts, max_attempts,
                         timeout_ms, max_runtime_ms, created_at, updated_at, trace_context)
  VALUES ($1::text, $2::text, $3::json, 'queued', $4::int, coalesce($5::timestamptz, ${NOW} + ${ms('$6::float8')}), 0,
          $7::int, $8::bigint, $9::bigint, ${NOW}, ${NOW}, $12::text)
  RETURNING id, run_at, created_at
)
SELECT id, run_at, created_at, CASE WHEN run_at <= ${NOW} THEN pg_notify($10, $11) END AS notified FROM ins`,

    /**
     * The parameters of insertOne, $3 the payloads as one JSON array text. One row back: the ids
     * in array order as one comma-separated text (a split is cheaper than the driver's int8[]
     * parser), and the run_at and created_at all the rows share.
     */
    insertRun: `-- leasehold insert (a run of alike jobs): add queued jobs that differ only in payload, notify if they are due now
WITH ins AS (
  INSERT INTO ${s}.jobs (queue, type, payload, status, priority, run_at, attempts, max_attempts,
                         timeout_ms, max_runtime_ms, created_at, updated_at, trace_context)
  SELECT $1::text, $2::text, p.value, 'queued', $4::int, coalesce($5::timestamptz, ${NOW} + ${ms('$6::float8')}), 0,
         $7::int, $8::bigint, $9::bigint, ${NOW}, ${NOW}, $12::text
  FROM json_array_elements($3::json) WITH ORDINALITY AS p(value, ord)
  ORDER BY p.ord
  RETURNING id, run_at, created_at
), woke AS (
  SELECT pg_notify($10, $11) FROM (SELECT 1 FROM ins WHERE ins.run_at <= ${NOW} LIMIT 1) AS due
)
SELECT string_agg(id::text, ',' ORDER BY id) AS ids, min(run_at) AS run_at, min(created_at) AS created_at,
       (SELECT count(*) FROM woke) AS notified
FROM ins`,

    /**
     * insertOne's parameters, each an array (one item per job; $12 may be empty when no job has a
     * trace context: unnest pads it with NULLs); ids are drawn in input order, so sorting by id restores it.
     */
    insertPlain: `-- leasehold insert (no idempotency keys): add a batch of queued jobs, notify if any is due now
WITH ins AS (
  INSERT INTO ${s}.jobs (queue, type, payload, status, priority, run_at, attempts, max_attempts,
                         timeout_ms, max_runtime_ms, created_at, updated_at, trace_context)
  SELECT queue, type, payload, 'queued', priority, coalesce(run_at, ${NOW} + ${ms('run_after_ms')}), 0,
         max_attempts, timeout_ms, max_runtime_ms, ${NOW}, ${NOW}, trace_context
  FROM unnest($1::text[], $2::text[], $3::json[], $4::int[], $5::timestamptz[], $6::float8[],
              $7::int[], $8::bigint[], $9::bigint[], $12::text[])
       WITH ORDINALITY AS u(queue, type, payload, priority, run_at, run_after_ms,
                            max_attempts, timeout_ms, max_runtime_ms, trace_context, ord)
  ORDER BY ord
  RETURNING id, run_at, created_at
), woke AS (
  SELECT pg_notify($10, $11) FROM (SELECT 1 FROM ins WHERE ins.run_at <= ${NOW} LIMIT 1) AS due
)
SELECT id, run_at, created_at, (SELECT count(*) FROM woke) AS notified FROM ins ORDER BY id`,

    /** insertPlain's parameters with $8 the idempotency keys (the rest one later, the trace contexts $13). One row per item in input order; `id` null where a duplicate key skipped it. */
    insertKeyed: `-- leasehold insert: add a batch of queued jobs (duplicate idempotency keys skipped), notify if any is due now
WITH input AS MATERIALIZED (
  SELECT nextval('${s}.jobs_id_seq'::regclass) AS new_id, u.*
  FROM unnest($1::text[], $2::text[], $3::json[], $4::int[], $5::timestamptz[], $6::float8[],
              $7::int[], $8::text[], $9::bigint[], $10::bigint[], $13::text[])
       WITH ORDINALITY AS u(queue, type, payload, priority, run_at, run_after_ms,
                            max_attempts, idempotency_key, timeout_ms, max_runtime_ms, trace_context, ord)
), ins AS (
  INSERT INTO ${s}.jobs (id, queue, type, payload, status, priority, run_at, attempts, max_attempts,
                         idempotency_key, timeout_ms, max_runtime_ms, created_at, updated_at, trace_context)
  SELECT new_id, queue, type, payload, 'queued', priority,
         coalesce(run_at, ${NOW} + ${ms('run_after_ms')}), 0, max_attempts,
         idempotency_key, timeout_ms, max_runtime_ms, ${NOW}, ${NOW}, trace_context
  FROM input ORDER BY ord
  ON CONFLICT (idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
  RETURNING ${JOB_COLUMNS.join(', ')}
), woke AS (
  SELECT pg_notify($11, $12) FROM (SELECT 1 FROM ins WHERE ins.run_at <= ${NOW} LIMIT 1) AS due
)
SELECT input.ord AS input_ord, (SELECT count(*) FROM woke) AS notified, ${jobColumns('ins')}
FROM input LEFT JOIN ins ON ins.id = input.new_id
ORDER BY input.ord`,

    byIdempotencyKeys: `-- leasehold insert (duplicates): read the existing jobs holding these idempotency keys
SELECT * FROM ${s}.jobs WHERE idempotency_key = ANY($1::text[])`,

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
      locked_until = NULL, finished_at = NULL, updated_at = ${NOW}
  WHERE id = $1::bigint AND status IN ('queued','failed','dead','cancelled')
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
    cancel: `-- leasehold cancelJob: queued/failed/running -> cancelled, lease cleared, a running attempt written as cancelled; returns the row and whether it applied
WITH locked AS (
  SELECT id, status, attempts, locked_by, lease_token, started_at FROM ${s}.jobs WHERE id = $1::bigint FOR UPDATE
), upd AS (
  UPDATE ${s}.jobs j
  SET status = 'cancelled', finished_at = ${NOW}, locked_by = NULL, lease_token = NULL,
      locked_until = NULL, last_error_code = 'CANCELLED', last_error = $2::text, updated_at = ${NOW}
  FROM locked l
  WHERE j.id = l.id AND l.status IN ('queued','failed','running')
  RETURNING ${jobColumns('j')}
), closed AS (
  INSERT INTO ${s}.job_attempts (job_id, attempt, worker_id, lease_token, started_at, finished_at, duration_ms,
                                 outcome, error_code, error_message)
  SELECT l.id, l.attempts, l.locked_by, l.lease_token, l.started_at, ${NOW}, ${durationSince('l.started_at')},
         'cancelled', 'CANCELLED', $2::text
  FROM locked l
  WHERE l.status = 'running' AND EXISTS (SELECT 1 FROM upd)
)
SELECT true AS applied, upd.* FROM upd
UNION ALL
SELECT false, ${jobColumns('j')} FROM ${s}.jobs j WHERE j.id = $1::bigint AND NOT EXISTS (SELECT 1 FROM upd)`,

    /** $1 statuses, $2 older than ms, $3 limit; attempts go with their jobs */
    prune: `-- leasehold pruneJobs: delete up to $3 finished jobs of the listed statuses finished more than $2 ms ago, and their attempts
WITH victims AS (
  SELECT id FROM ${s}.jobs
  WHERE finished_at < ${NOW} - ${ms('$2::float8')} AND status = ANY($1::text[])
  ORDER BY finished_at
  LIMIT $3::int
  FOR UPDATE SKIP LOCKED
), gone AS (
  DELETE FROM ${s}.jobs j USING victims v WHERE j.id = v.id RETURNING j.id
), history AS (
  DELETE FROM ${s}.job_attempts a USING gone g WHERE a.job_id = g.id
)
SELECT count(*)::int AS n FROM gone`,
  };
}

/** The row handed back for input `j`: what the database chose, the payload as its text reads back. */
function inserted(j: NewJob, payload: string, id: string, runAt: Date, createdAt: Date): InsertResult {
  return { job: insertedJobRow(j, { id, runAt, createdAt, payload: JSON.parse(payload) as unknown }), created: true };
}

/** The jobs' trace contexts as one array, [] when none has one (unnest pads it with NULLs). */
function traceContexts(jobs: readonly NewJob[]): (string | null)[] {
  return jobs.some((j) => j.traceContext !== undefined) ? jobs.map((j) => j.traceContext ?? null) : [];
}

/** A job's scalar values in insertOne's order ($4 … $9 after queue, type and payload). */
const scalars = (j: NewJob): unknown[] => [j.priority, j.runAt ?? null, j.runAfterMs, j.maxAttempts, j.timeoutMs, j.maxRuntimeMs];

export class PostgresJobs extends SqlAggregate<Db, ReturnType<typeof jobsSql>> implements JobStore {
  /** the enqueues without idempotency keys, prepared */
  private readonly hot = { insertOne: this.db.prepare(this.sql.insertOne), insertRun: this.db.prepare(this.sql.insertRun), insertPlain: this.db.prepare(this.sql.insertPlain) };

  constructor(db: Db) {
    super(db, jobsSql(db.q));
  }

  async insert(p: { jobs: readonly NewJob[]; tx?: unknown }): Promise<InsertResult[]> {
    const { jobs } = p;
    const on = txClient(p.tx);
    if (jobs.length === 0) return [];
    if (jobs.some((j) => j.idempotencyKey !== null)) return this.insertKeyed(jobs, on);
    const payloads = jobs.map((j) => jsonParam(j.payload));
    const first = jobs[0] as NewJob;
    if (jobs.length === 1) {
      const [r] = await this.db.run('insertJobs', this.hot.insertOne, [first.queue, first.type, payloads[0], ...scalars(first), ...this.db.notify, first.traceContext ?? null], on);
      if (!r) throw new Error('postgres insertJobs: no row back for one job');
      return [inserted(first, payloads[0] as string, String(r.id), r.run_at as Date, r.created_at as Date)];
    }
    if (jobs.every((j) => alikeButPayload(first, j))) {
      // each payload text is JSON already: joined, they are a JSON array
      const [r] = await this.db.run('insertJobs', this.hot.insertRun, [first.queue, first.type, `[${payloads.join(',')}]`, ...scalars(first), ...this.db.notify, first.traceContext ?? null], on);
      const ids = typeof r?.ids === 'string' ? r.ids.split(',') : [];
      if (ids.length !== jobs.length) throw new Error(`postgres insertJobs: ${ids.length} ids back for ${jobs.length} jobs`);
      const runAt = r?.run_at as Date;
      const createdAt = r?.created_at as Date;
      // each row its own Date objects, as rows read back have
      return jobs.map((x, i) => inserted(x, payloads[i] as string, ids[i] as string, new Date(runAt.getTime()), new Date(createdAt.getTime())));
    }
    const columns = [0, 1, 2, 3, 4, 5].map((k) => jobs.map((j) => scalars(j)[k]));
    const rows = await this.db.run('insertJobs', this.hot.insertPlain, [jobs.map((j) => j.queue), jobs.map((j) => j.type), payloads, ...columns, ...this.db.notify, traceContexts(jobs)], on);
    if (rows.length !== jobs.length) throw new Error(`postgres insertJobs: ${rows.length} rows back for ${jobs.length} jobs`);
    return rows.map((r, i) => inserted(jobs[i] as NewJob, payloads[i] as string, String(r.id), r.run_at as Date, r.created_at as Date));
  }

  private async insertKeyed(jobs: readonly NewJob[], on: Queryable | undefined): Promise<InsertResult[]> {
    const rows = await this.db.run('insertJobs', this.sql.insertKeyed, [
      jobs.map((j) => j.queue), jobs.map((j) => j.type), jobs.map((j) => jsonParam(j.payload)),
      jobs.map((j) => j.priority), jobs.map((j) => j.runAt ?? null), jobs.map((j) => j.runAfterMs),
      jobs.map((j) => j.maxAttempts), jobs.map((j) => j.idempotencyKey), jobs.map((j) => j.timeoutMs),
      jobs.map((j) => j.maxRuntimeMs), ...this.db.notify, traceContexts(jobs),
    ], on);
    const out: (InsertResult | undefined)[] = rows.map((r) => (r.id == null ? undefined : { job: toJobRow(r), created: true }));
    const missing = [...new Set(jobs.flatMap((j, i) => (out[i] ? [] : [j.idempotencyKey as string])))];
    if (missing.length === 0) return out as InsertResult[];
    const existing = new Map<string, JobRow>();
    for (const r of await this.db.run('insertJobs', this.sql.byIdempotencyKeys, [missing], on)) existing.set(String(r.idempotency_key), toJobRow(r));
    return jobs.map((j, i) => {
      const job = existing.get(j.idempotencyKey as string);
      if (out[i]) return out[i];
      // the conflicting row was deleted between the two statements (pruned): say "try again"
      if (!job) throw new TransientStorageError(`postgres: job with idempotency key "${j.idempotencyKey}" vanished during insert; retry`);
      return { job, created: false };
    });
  }

  async get(p: { id: string }): Promise<JobRow | null> {
    const id = validId(p.id);
    if (id === null) return null;
    const [row] = await this.db.run('getJob', this.sql.get, [id]);
    return row ? toJobRow(row) : null;
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

  async retry(p: { id: string }): Promise<{ job: JobRow | null; applied: boolean }> {
    const id = validId(p.id);
    if (id === null) return { job: null, applied: false };
    const [row] = await this.db.run('retryJob', this.sql.retry, [id, ...this.db.notify]);
    return row ? { job: toJobRow(row), applied: row.applied === true } : { job: null, applied: false };
  }

  async cancel(p: { id: string }): Promise<{ job: JobRow | null; applied: boolean }> {
    const id = validId(p.id);
    if (id === null) return { job: null, applied: false };
    const [row] = await this.db.run('cancelJob', this.sql.cancel, [id, 'cancelled by an operator']);
    return row ? { job: toJobRow(row), applied: row.applied === true } : { job: null, applied: false };
  }

  async prune(p: PruneParams): Promise<number> {
    if (p.limit <= 0 || p.statuses.length === 0) return 0;
    const [row] = await this.db.run('pruneJobs', this.sql.prune, [[...p.statuses], p.olderThanMs, p.limit]);
    return Number(row?.n ?? 0);
  }
}
