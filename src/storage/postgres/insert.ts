/**
 * Enqueues on PostgreSQL. An enqueue takes the statement that fits its batch: one job without an
 * idempotency or unique key (`insertOne`, scalar parameters); a run of such jobs alike but for
 * their payload (`insertRun`, the shared values once and the payloads as one JSON array text);
 * any other batch without keys (`insertPlain`, one array per column); a batch with idempotency
 * keys (`insertKeyed`, duplicates skipped, then the holders of the skipped keys read back). Rows
 * are built from what the caller passed plus what the database chose (id, run_at, created_at),
 * never read back whole. A batch with unique keys runs in one transaction: `insertKeyed` skips
 * the rows whose key is held (the partial unique index decides, so concurrent inserts of one key
 * make one job), then each skipped item, in input order, is answered by its key's holder under
 * its mode, retried when the holder changed in between. Enqueues that make a job due now send
 * `pg_notify` in the same statement, delivered on commit.
 */
import { TransientStorageError } from '../../core/errors.js';
import type { InsertResult, JobRow, NewJob } from '../../core/storage.js';
import { alikeButPayload, insertedJobRow } from '../row-mapping.js';
import { query, txClient, type Db, type Prepared, type Queryable } from './db.js';
import { JOB_COLUMNS, NOW, jobColumns, jsonParam, ms, toJobRow } from './sql.js';

export function insertSql(s: string) {
  return {
    /** $1 queue, $2 type, $3 payload json, $4 priority, $5 run_at (null: use $6), $6 run_after_ms, $7 max_attempts, $8 timeout_ms, $9 max_runtime_ms, $10 $11 notify, $12 trace context, $13 concurrency key */
    insertOne: `-- leasehold insert (one job, no idempotency or unique key): add a queued job, notify if it is due now
WITH ins AS (
  INSERT INTO ${s}.jobs (queue, type, payload, status, priority, run_at, attempts, max_attempts,
                         timeout_ms, max_runtime_ms, created_at, updated_at, trace_context, concurrency_key)
  VALUES ($1::text, $2::text, $3::json, 'queued', $4::int, coalesce($5::timestamptz, ${NOW} + ${ms('$6::float8')}), 0,
          $7::int, $8::bigint, $9::bigint, ${NOW}, ${NOW}, $12::text, $13::text)
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
                         timeout_ms, max_runtime_ms, created_at, updated_at, trace_context, concurrency_key)
  SELECT $1::text, $2::text, p.value, 'queued', $4::int, coalesce($5::timestamptz, ${NOW} + ${ms('$6::float8')}), 0,
         $7::int, $8::bigint, $9::bigint, ${NOW}, ${NOW}, $12::text, $13::text
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
     * insertOne's parameters, each an array (one item per job; $12 and $13 may be empty when no job
     * has a trace context or a concurrency key: unnest pads them with NULLs); ids are drawn in input
     * order, so sorting by id restores it.
     */
    insertPlain: `-- leasehold insert (no idempotency or unique keys): add a batch of queued jobs, notify if any is due now
WITH ins AS (
  INSERT INTO ${s}.jobs (queue, type, payload, status, priority, run_at, attempts, max_attempts,
                         timeout_ms, max_runtime_ms, created_at, updated_at, trace_context, concurrency_key)
  SELECT queue, type, payload, 'queued', priority, coalesce(run_at, ${NOW} + ${ms('run_after_ms')}), 0,
         max_attempts, timeout_ms, max_runtime_ms, ${NOW}, ${NOW}, trace_context, concurrency_key
  FROM unnest($1::text[], $2::text[], $3::json[], $4::int[], $5::timestamptz[], $6::float8[],
              $7::int[], $8::bigint[], $9::bigint[], $12::text[], $13::text[])
       WITH ORDINALITY AS u(queue, type, payload, priority, run_at, run_after_ms,
                            max_attempts, timeout_ms, max_runtime_ms, trace_context, concurrency_key, ord)
  ORDER BY ord
  RETURNING id, run_at, created_at
), woke AS (
  SELECT pg_notify($10, $11) FROM (SELECT 1 FROM ins WHERE ins.run_at <= ${NOW} LIMIT 1) AS due
)
SELECT id, run_at, created_at, (SELECT count(*) FROM woke) AS notified FROM ins ORDER BY id`,

    /**
     * insertPlain's parameters with $8 the idempotency keys (the rest one later: trace contexts
     * $13, concurrency keys $14, unique keys $15; those three may be empty). One row per item in
     * input order; `id` null where a held idempotency or unique key skipped it (no conflict target:
     * either index skips the row; the caller tells which).
     */
    insertKeyed: `-- leasehold insert: add a batch of queued jobs (rows whose idempotency or unique key is held skipped), notify if any is due now
WITH input AS MATERIALIZED (
  SELECT nextval('${s}.jobs_id_seq'::regclass) AS new_id, u.*
  FROM unnest($1::text[], $2::text[], $3::json[], $4::int[], $5::timestamptz[], $6::float8[],
              $7::int[], $8::text[], $9::bigint[], $10::bigint[], $13::text[], $14::text[], $15::text[])
       WITH ORDINALITY AS u(queue, type, payload, priority, run_at, run_after_ms, max_attempts, idempotency_key,
                            timeout_ms, max_runtime_ms, trace_context, concurrency_key, unique_key, ord)
), ins AS (
  INSERT INTO ${s}.jobs (id, queue, type, payload, status, priority, run_at, attempts, max_attempts,
                         idempotency_key, timeout_ms, max_runtime_ms, created_at, updated_at, trace_context,
                         concurrency_key, unique_key)
  SELECT new_id, queue, type, payload, 'queued', priority,
         coalesce(run_at, ${NOW} + ${ms('run_after_ms')}), 0, max_attempts,
         idempotency_key, timeout_ms, max_runtime_ms, ${NOW}, ${NOW}, trace_context, concurrency_key, unique_key
  FROM input ORDER BY ord
  ON CONFLICT DO NOTHING
  RETURNING ${JOB_COLUMNS.join(', ')}
), woke AS (
  SELECT pg_notify($11, $12) FROM (SELECT 1 FROM ins WHERE ins.run_at <= ${NOW} LIMIT 1) AS due
)
SELECT input.ord AS input_ord, (SELECT count(*) FROM woke) AS notified, ${jobColumns('ins')}
FROM input LEFT JOIN ins ON ins.id = input.new_id
ORDER BY input.ord`,

    byIdempotencyKeys: `-- leasehold insert (duplicates): read the existing jobs holding these idempotency keys
SELECT * FROM ${s}.jobs WHERE idempotency_key = ANY($1::text[])`,

    /** $1 unique key */
    uniqueHolder: `-- leasehold insert (unique key): the queued, failed or running job holding this unique key
SELECT ${JOB_COLUMNS.join(', ')} FROM ${s}.jobs WHERE unique_key = $1::text AND status IN ('queued','failed','running')`,

    /** $1 id, $2 unique key, $3 payload json, $4 run_at (null: use $5), $5 run_after_ms, $6 $7 notify */
    debounce: `-- leasehold insert (unique key, debounce): a waiting holder takes the new payload and run_at; notify if it is due now
WITH upd AS (
  UPDATE ${s}.jobs SET payload = $3::json, run_at = coalesce($4::timestamptz, ${NOW} + ${ms('$5::float8')}), updated_at = ${NOW}
  WHERE id = $1::bigint AND unique_key = $2::text AND status IN ('queued','failed')
  RETURNING ${JOB_COLUMNS.join(', ')}
), woke AS (
  SELECT pg_notify($6, $7) FROM (SELECT 1 FROM upd WHERE upd.run_at <= ${NOW}) AS due
)
SELECT (SELECT count(*) FROM woke) AS notified, upd.* FROM upd`,

    /** $1 id, $2 unique key */
    release: `-- leasehold insert (unique key, debounce): a running holder gives its unique key up to the new job
UPDATE ${s}.jobs SET unique_key = NULL WHERE id = $1::bigint AND unique_key = $2::text AND status = 'running'`,

  };
}

/** The row handed back for input `j`: what the database chose, the payload as its text reads back. */
function inserted(j: NewJob, payload: string, id: string, runAt: Date, createdAt: Date): InsertResult {
  return { job: insertedJobRow(j, { id, runAt, createdAt, payload: JSON.parse(payload) as unknown }), created: true, outcome: 'created' };
}

/** An optional column as one array, [] when no job has a value (unnest pads it with NULLs). */
function optional(jobs: readonly NewJob[], f: (j: NewJob) => string | null | undefined): (string | null)[] {
  return jobs.some((j) => f(j) != null) ? jobs.map((j) => f(j) ?? null) : [];
}

/** A job's scalar values in insertOne's order ($4 … $9 after queue, type and payload). */
const scalars = (j: NewJob): unknown[] => [j.priority, j.runAt ?? null, j.runAfterMs, j.maxAttempts, j.timeoutMs, j.maxRuntimeMs];

/** How often a unique key's holder may change under one item before the insert says "try again". */
const UNIQUE_TRIES = 8;

/** The enqueues of one storage; the statements without idempotency or unique keys prepared. */
export class JobInserts {
  private readonly sql: ReturnType<typeof insertSql>;
  private readonly hot: Record<'insertOne' | 'insertRun' | 'insertPlain', Prepared>;

  constructor(private readonly db: Db) {
    this.sql = insertSql(db.q);
    this.hot = { insertOne: db.prepare(this.sql.insertOne), insertRun: db.prepare(this.sql.insertRun), insertPlain: db.prepare(this.sql.insertPlain) };
  }

  async insert(p: { jobs: readonly NewJob[]; tx?: unknown }): Promise<InsertResult[]> {
    const { jobs } = p;
    const on = txClient(p.tx);
    if (jobs.length === 0) return [];
    if (jobs.some((j) => j.unique)) return on ? this.insertUnique(jobs, on) : this.db.transaction('insertJobs', (c) => this.insertUnique(jobs, c));
    if (jobs.some((j) => j.idempotencyKey !== null)) return this.insertKeyed(jobs, on);
    const payloads = jobs.map((j) => jsonParam(j.payload));
    const first = jobs[0] as NewJob;
    if (jobs.length === 1) {
      const [r] = await this.db.run('insertJobs', this.hot.insertOne, [first.queue, first.type, payloads[0], ...scalars(first), ...this.db.notify, first.traceContext ?? null, first.concurrencyKey ?? null], on);
      if (!r) throw new Error('postgres insertJobs: no row back for one job');
      return [inserted(first, payloads[0] as string, String(r.id), r.run_at as Date, r.created_at as Date)];
    }
    if (jobs.every((j) => alikeButPayload(first, j))) {
      // each payload text is JSON already: joined, they are a JSON array
      const args = [first.queue, first.type, `[${payloads.join(',')}]`, ...scalars(first), ...this.db.notify, first.traceContext ?? null, first.concurrencyKey ?? null];
      const [r] = await this.db.run('insertJobs', this.hot.insertRun, args, on);
      const ids = typeof r?.ids === 'string' ? r.ids.split(',') : [];
      if (ids.length !== jobs.length) throw new Error(`postgres insertJobs: ${ids.length} ids back for ${jobs.length} jobs`);
      const runAt = r?.run_at as Date;
      const createdAt = r?.created_at as Date;
      // each row its own Date objects, as rows read back have
      return jobs.map((x, i) => inserted(x, payloads[i] as string, ids[i] as string, new Date(runAt.getTime()), new Date(createdAt.getTime())));
    }
    const columns = [0, 1, 2, 3, 4, 5].map((k) => jobs.map((j) => scalars(j)[k]));
    const args = [jobs.map((j) => j.queue), jobs.map((j) => j.type), payloads, ...columns, ...this.db.notify, optional(jobs, (j) => j.traceContext), optional(jobs, (j) => j.concurrencyKey)];
    const rows = await this.db.run('insertJobs', this.hot.insertPlain, args, on);
    if (rows.length !== jobs.length) throw new Error(`postgres insertJobs: ${rows.length} rows back for ${jobs.length} jobs`);
    return rows.map((r, i) => inserted(jobs[i] as NewJob, payloads[i] as string, String(r.id), r.run_at as Date, r.created_at as Date));
  }

  /** insertKeyed's rows for `jobs`: the inserted rows, `id` null where a held key skipped the item. */
  private keyed(jobs: readonly NewJob[], on: Queryable | undefined) {
    return this.db.run('insertJobs', this.sql.insertKeyed, [
      jobs.map((j) => j.queue), jobs.map((j) => j.type), jobs.map((j) => jsonParam(j.payload)),
      jobs.map((j) => j.priority), jobs.map((j) => j.runAt ?? null), jobs.map((j) => j.runAfterMs),
      jobs.map((j) => j.maxAttempts), jobs.map((j) => j.idempotencyKey), jobs.map((j) => j.timeoutMs),
      jobs.map((j) => j.maxRuntimeMs), ...this.db.notify, optional(jobs, (j) => j.traceContext),
      optional(jobs, (j) => j.concurrencyKey), optional(jobs, (j) => j.unique?.key),
    ], on);
  }

  private async insertKeyed(jobs: readonly NewJob[], on: Queryable | undefined): Promise<InsertResult[]> {
    const rows = await this.keyed(jobs, on);
    const out: (InsertResult | undefined)[] = rows.map((r) => (r.id == null ? undefined : { job: toJobRow(r), created: true, outcome: 'created' }));
    const missing = [...new Set(jobs.flatMap((j, i) => (out[i] ? [] : [j.idempotencyKey as string])))];
    if (missing.length === 0) return out as InsertResult[];
    const existing = new Map<string, JobRow>();
    for (const r of await this.db.run('insertJobs', this.sql.byIdempotencyKeys, [missing], on)) existing.set(String(r.idempotency_key), toJobRow(r));
    return jobs.map((j, i) => {
      const job = existing.get(j.idempotencyKey as string);
      if (out[i]) return out[i];
      // the conflicting row was deleted between the two statements (pruned): say "try again"
      if (!job) throw new TransientStorageError(`postgres: job with idempotency key "${j.idempotencyKey}" vanished during insert; retry`);
      return { job, created: false, outcome: 'existing' };
    });
  }

  /** Inside a transaction (ours or the caller's): the batch at once, then each skipped item answered in input order. */
  private async insertUnique(jobs: readonly NewJob[], c: Queryable): Promise<InsertResult[]> {
    const rows = await this.keyed(jobs, c);
    const out: InsertResult[] = [];
    for (const [i, j] of jobs.entries()) {
      const r = rows[i];
      out.push(r && r.id != null ? { job: toJobRow(r), created: true, outcome: 'created' } : await this.answer(j, c));
    }
    return out;
  }

  /** One item whose key was held: its idempotency key's job, or its unique key's holder under the mode, or (the holder gone or giving its key up) a new job. */
  private async answer(j: NewJob, c: Queryable): Promise<InsertResult> {
    for (let tries = 0; tries < UNIQUE_TRIES; tries++) {
      if (j.idempotencyKey !== null) {
        const [row] = await query(c, 'insertJobs', this.sql.byIdempotencyKeys, [[j.idempotencyKey]]);
        if (row) return { job: toJobRow(row), created: false, outcome: 'existing' };
      }
      if (j.unique) {
        const [holder] = await query(c, 'insertJobs', this.sql.uniqueHolder, [j.unique.key]);
        if (holder && j.unique.mode === 'active') return { job: toJobRow(holder), created: false, outcome: 'existing' };
        if (holder && holder.status !== 'running') {
          const [row] = await query(c, 'insertJobs', this.sql.debounce, [holder.id, j.unique.key, jsonParam(j.payload), j.runAt ?? null, j.runAfterMs, ...this.db.notify]);
          if (row) return { job: toJobRow(row), created: false, outcome: 'replaced' };
          continue;
        }
        if (holder) await query(c, 'insertJobs', this.sql.release, [holder.id, j.unique.key]);
      }
      const [row] = await this.keyed([j], c);
      if (row && row.id != null) return { job: toJobRow(row), created: true, outcome: 'created' };
    }
    throw new TransientStorageError(`postgres: the holder of unique key "${j.unique?.key ?? ''}" kept changing during insert; retry`);
  }
}
