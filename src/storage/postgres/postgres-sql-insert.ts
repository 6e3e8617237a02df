/**
 * The SQL that enqueues jobs on PostgreSQL, one statement per shape of batch (postgres-insert.ts
 * picks it). Each is one round trip and atomic on its own, starts with a one-line `--` header,
 * and takes run_at and created_at from the database clock. `s` is the quoted schema name.
 */
import { JOB_COLUMNS, NOW, jobColumns, ms } from './postgres-sql-jobs.js';

export function insertSql(s: string) {
  return {
    /**
     * $1 queues, $2 types, $3 payload json texts, $4 priorities, $5 run_at (null = use delay),
     * $6 run_after_ms, $7 max_attempts, $8 idempotency keys, $9 timeout_ms, $10 max_runtime_ms,
     * $11 notify channel, $12 notify payload. One output row per input item, in input order;
     * `id` is null where a duplicate idempotency key skipped the item.
     */
    insert: `-- leasehold insert: add a batch of queued jobs (duplicate idempotency keys skipped), notify if any is due now
WITH input AS MATERIALIZED (
  SELECT nextval('${s}.jobs_id_seq'::regclass) AS new_id, u.*
  FROM unnest($1::text[], $2::text[], $3::json[], $4::int[], $5::timestamptz[], $6::float8[],
              $7::int[], $8::text[], $9::bigint[], $10::bigint[])
       WITH ORDINALITY AS u(queue, type, payload, priority, run_at, run_after_ms,
                            max_attempts, idempotency_key, timeout_ms, max_runtime_ms, ord)
), ins AS (
  INSERT INTO ${s}.jobs (id, queue, type, payload, status, priority, run_at, attempts, max_attempts,
                         idempotency_key, timeout_ms, max_runtime_ms, created_at, updated_at)
  SELECT new_id, queue, type, payload, 'queued', priority,
         coalesce(run_at, ${NOW} + ${ms('run_after_ms')}), 0, max_attempts,
         idempotency_key, timeout_ms, max_runtime_ms, ${NOW}, ${NOW}
  FROM input ORDER BY ord
  ON CONFLICT (idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
  RETURNING ${JOB_COLUMNS.join(', ')}
), woke AS (
  SELECT pg_notify($11, $12) FROM (SELECT 1 FROM ins WHERE ins.run_at <= ${NOW} LIMIT 1) AS due
)
SELECT input.ord AS input_ord, (SELECT count(*) FROM woke) AS notified, ${jobColumns('ins')}
FROM input LEFT JOIN ins ON ins.id = input.new_id
ORDER BY input.ord`,

    /**
     * The insert when no item has an idempotency key (nothing can conflict): no id
     * pre-allocation, no join back to the input, and only what the database decided comes back
     * (id, run_at, created_at); the caller knows the rest. Same parameters as `insert` minus $8.
     * Ids are drawn in input order, so sorting by id restores it.
     */
    insertPlain: `-- leasehold insert (no idempotency keys): add a batch of queued jobs, notify if any is due now
WITH ins AS (
  INSERT INTO ${s}.jobs (queue, type, payload, status, priority, run_at, attempts, max_attempts,
                         timeout_ms, max_runtime_ms, created_at, updated_at)
  SELECT queue, type, payload, 'queued', priority, coalesce(run_at, ${NOW} + ${ms('run_after_ms')}), 0,
         max_attempts, timeout_ms, max_runtime_ms, ${NOW}, ${NOW}
  FROM unnest($1::text[], $2::text[], $3::json[], $4::int[], $5::timestamptz[], $6::float8[],
              $7::int[], $8::bigint[], $9::bigint[])
       WITH ORDINALITY AS u(queue, type, payload, priority, run_at, run_after_ms,
                            max_attempts, timeout_ms, max_runtime_ms, ord)
  ORDER BY ord
  RETURNING id, run_at, created_at
), woke AS (
  SELECT pg_notify($10, $11) FROM (SELECT 1 FROM ins WHERE ins.run_at <= ${NOW} LIMIT 1) AS due
)
SELECT id, run_at, created_at, (SELECT count(*) FROM woke) AS notified FROM ins ORDER BY id`,

    /**
     * insertPlain for one job, with scalar parameters: no arrays to encode and unnest for the
     * commonest call (one enqueue). $1 queue, $2 type, $3 payload json text, $4 priority, $5 run_at
     * (null = use delay), $6 run_after_ms, $7 max_attempts, $8 timeout_ms, $9 max_runtime_ms,
     * $10 notify channel, $11 notify payload. `notified` is null when the job is not due yet.
     */
    insertOne: `-- leasehold insert (one job, no idempotency key): add a queued job, notify if it is due now
WITH ins AS (
  INSERT INTO ${s}.jobs (queue, type, payload, status, priority, run_at, attempts, max_attempts,
                         timeout_ms, max_runtime_ms, created_at, updated_at)
  VALUES ($1::text, $2::text, $3::json, 'queued', $4::int, coalesce($5::timestamptz, ${NOW} + ${ms('$6::float8')}), 0,
          $7::int, $8::bigint, $9::bigint, ${NOW}, ${NOW})
  RETURNING id, run_at, created_at
)
SELECT id, run_at, created_at, CASE WHEN run_at <= ${NOW} THEN pg_notify($10, $11) END AS notified FROM ins`,

    /**
     * A run of jobs alike in everything but their payload, the shared values once: $1 queue,
     * $2 type, $3 the payloads as one JSON array (text), $4 priority, $5 run_at (null = use
     * delay), $6 run_after_ms, $7 max_attempts, $8 timeout_ms, $9 max_runtime_ms, $10 notify
     * channel, $11 notify payload. One row back: the ids in array order (drawn in that order),
     * as one comma-separated text (a split on the client, where an int8[] went through the
     * driver's array parser: 14 of about 100 ms of client CPU per 20,000 jobs), and the run_at
     * and created_at all the rows share. A json array element keeps its text.
     */
    insertRun: `-- leasehold insert (a run of alike jobs): add queued jobs that differ only in payload, notify if they are due now
WITH ins AS (
  INSERT INTO ${s}.jobs (queue, type, payload, status, priority, run_at, attempts, max_attempts,
                         timeout_ms, max_runtime_ms, created_at, updated_at)
  SELECT $1::text, $2::text, p.value, 'queued', $4::int, coalesce($5::timestamptz, ${NOW} + ${ms('$6::float8')}), 0,
         $7::int, $8::bigint, $9::bigint, ${NOW}, ${NOW}
  FROM json_array_elements($3::json) WITH ORDINALITY AS p(value, ord)
  ORDER BY p.ord
  RETURNING id, run_at, created_at
), woke AS (
  SELECT pg_notify($10, $11) FROM (SELECT 1 FROM ins WHERE ins.run_at <= ${NOW} LIMIT 1) AS due
)
SELECT string_agg(id::text, ',' ORDER BY id) AS ids, min(run_at) AS run_at, min(created_at) AS created_at,
       (SELECT count(*) FROM woke) AS notified
FROM ins`,

    /** $1 idempotency keys */
    byIdempotencyKeys: `-- leasehold insert (duplicates): read the existing jobs holding these idempotency keys
SELECT * FROM ${s}.jobs WHERE idempotency_key = ANY($1::text[])`,
  };
}
