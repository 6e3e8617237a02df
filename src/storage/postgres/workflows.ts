/** Results and progress on PostgreSQL: the job row's workflow columns and the fenced progress write. */
import { parentFailedMessage, startFlow } from '../../core/workflow-graph.js';
import type { BatchRow, FlowInsert, JobDependencies, JobRow, NewBatch, ProgressParams, WorkflowStore } from '../../core/storage.js';
import { type Db, type Queryable, query } from './db.js';
import { NOW, jsonParam, ms, toBatchRow, toJobRow, validId } from './sql.js';
import { settleChildrenFunction } from './workflow-settle.js';

export { settleChildrenSql } from './workflow-settle.js';
import { SqlAggregate } from '../aggregates.js';

/** The jobs table's workflow columns, in the baseline migration's CREATE TABLE (after unique_key). */
export const WORKFLOW_JOB_COLUMNS = `,
  result           json,
  progress         json,
  progress_note    text,
  progress_at      timestamptz(3),
  pending_parents  integer,
  dependents       integer,
  parent_policy    text CHECK (parent_policy IN ('cancel','hold')),
  batch_id         bigint`;

/**
 * Retention keeps a job while a job depending on it has not ended: it may still wait for it or
 * read it (ctx.parents) (`j`: the jobs row's alias). OFFSET 0: probed per row through the primary
 * keys, never planned as one hash of every job not ended.
 */
export const notHeld = (s: string, j: string): string =>
  `(${j}.dependents IS NULL OR NOT EXISTS (SELECT 1 FROM ${s}.job_dependencies d JOIN ${s}.jobs c ON c.id = d.child_id WHERE d.parent_id = ${j}.id AND c.status NOT IN ('succeeded','dead','cancelled') OFFSET 0))`;

/** The workflow tables and indexes, in the baseline migration. */
export const workflowTables = (s: string): string => `
-- job_dependencies: a workflow's edges, written with its jobs; a parent's finish reads its children by the primary key
CREATE TABLE ${s}.job_dependencies (
  parent_id  bigint NOT NULL,
  child_id   bigint NOT NULL,
  PRIMARY KEY (parent_id, child_id)
);
-- a job's parents, for its page
CREATE INDEX job_dependencies_child_idx ON ${s}.job_dependencies (child_id);
-- an operator's search and counts of jobs waiting for their parents: rare rows, as failed_idx
CREATE INDEX jobs_waiting_idx ON ${s}.jobs (id) WHERE status = 'waiting';
-- batches: members counted by their finishes; callback: the spec of the job the last one enqueues
CREATE TABLE ${s}.batches (
  id               bigserial PRIMARY KEY,
  state            text    NOT NULL CHECK (state IN ('open','closed','done')),
  on_success_only  boolean NOT NULL,
  total            integer NOT NULL DEFAULT 0,
  pending          integer NOT NULL DEFAULT 0,
  succeeded        integer NOT NULL DEFAULT 0,
  dead             integer NOT NULL DEFAULT 0,
  cancelled        integer NOT NULL DEFAULT 0,
  callback         json    NOT NULL,
  callback_type    text    NOT NULL,
  created_at       timestamptz(3) NOT NULL DEFAULT date_trunc('milliseconds', now()),
  finished_at      timestamptz(3)
);
${settleChildrenFunction(s)}`;

/**
 * A done batch's callback (core/batches.ts): from the rows of \`from\` (batches just made done),
 * unless onSuccessOnly and a member did not succeed; its idempotency key makes a second one nothing.
 */
const fireSql = (s: string, from: string): string => `INSERT INTO ${s}.jobs (queue, type, payload, status, priority, run_at, attempts, max_attempts,
                         idempotency_key, timeout_ms, max_runtime_ms, created_at, updated_at)
  SELECT c.callback->>'queue', c.callback_type,
         (CASE WHEN json_typeof(c.callback->'payload') = 'object' THEN (c.callback->'payload')::jsonb ELSE '{}'::jsonb END
          || jsonb_build_object('batch', jsonb_build_object('id', c.id::text, 'total', c.total, 'succeeded', c.succeeded, 'dead', c.dead, 'cancelled', c.cancelled)))::json,
         'queued', (c.callback->>'priority')::int, ${NOW} + ${ms("(c.callback->>'runAfterMs')::float8")}, 0, (c.callback->>'maxAttempts')::int,
         'leasehold:batch:' || c.id, (c.callback->>'timeoutMs')::bigint, (c.callback->>'maxRuntimeMs')::bigint, ${NOW}, ${NOW}
  FROM ${from} c WHERE c.state = 'done' AND (NOT c.on_success_only OR c.succeeded = c.total)
  ON CONFLICT DO NOTHING
  RETURNING run_at`;

/**
 * The finish's CTEs for batch members among the landed jobs (after settleChildrenSql): each that
 * ended counts for its batch (rows locked in id order first); a closed batch left with nothing
 * pending is done and fires its callback. A batch updated here was pending before, so "done"
 * after the update means it became done now.
 */
export const settleBatchesSql = (s: string): string => `, members AS (
  -- the landed jobs that ended, and the waiting jobs settleChildrenSql cancelled with them
  SELECT u.batch_id AS id, count(*)::int AS n, count(*) FILTER (WHERE u.status = 'succeeded')::int AS ok,
         count(*) FILTER (WHERE u.status = 'dead')::int AS dead, count(*) FILTER (WHERE u.status = 'cancelled')::int AS cancelled
  FROM (SELECT batch_id, status FROM upd UNION ALL SELECT batch_id, status FROM settled WHERE status = 'cancelled') u
  WHERE u.batch_id IS NOT NULL AND u.status IN ('succeeded','dead','cancelled')
  GROUP BY u.batch_id
), batch_locks AS (
  SELECT b.id FROM ${s}.batches b WHERE b.id = ANY (ARRAY(SELECT id FROM members)) ORDER BY b.id FOR UPDATE
), counted AS (
  UPDATE ${s}.batches b
  SET pending = b.pending - m.n, succeeded = b.succeeded + m.ok, dead = b.dead + m.dead, cancelled = b.cancelled + m.cancelled,
      state = CASE WHEN b.state = 'closed' AND b.pending - m.n <= 0 THEN 'done' ELSE b.state END,
      finished_at = CASE WHEN b.state = 'closed' AND b.pending - m.n <= 0 THEN ${NOW} ELSE b.finished_at END
  FROM members m
  WHERE b.id = ANY (ARRAY(SELECT id FROM batch_locks)) AND b.id = m.id
  RETURNING b.*
), fired AS (
  ${fireSql(s, 'counted')}
)`;

function workflowsSql(s: string) {
  return {
    /**
     * $1..$11 per job: queue, type, payload, priority, run_at (null: now + $6), run_after_ms,
     * max_attempts, timeout_ms, max_runtime_ms, trace_context, concurrency_key; $12 pending
     * parents (null: none), $13 dependents (null: none), $14 policy, $15 $16 edges as 1-based
     * input positions (parent, child), $17 $18 notify, $19 batch (null: none): added to it only
     * while it is open, else nothing is inserted; $20 status, $21 last error (null: none; a job
     * cancelled at insert), $22 $23 edges from stored jobs (parent id, child position), $24 $25
     * stored parents and how many children each gains. Ids are drawn first so the edges can name them.
     */
    insertFlow: `-- leasehold insertFlow: add a workflow's jobs (those with parents waiting) and its edges in one statement, notify if any is due now
WITH input AS MATERIALIZED (
  SELECT nextval('${s}.jobs_id_seq'::regclass) AS new_id, u.*
  FROM unnest($1::text[], $2::text[], $3::json[], $4::int[], $5::timestamptz[], $6::float8[], $7::int[], $8::bigint[],
              $9::bigint[], $10::text[], $11::text[], $12::int[], $13::int[], $20::text[], $21::text[])
       WITH ORDINALITY AS u(queue, type, payload, priority, run_at, run_after_ms, max_attempts, timeout_ms, max_runtime_ms,
                            trace_context, concurrency_key, pending_parents, dependents, status, last_error, ord)
), bump AS (
  UPDATE ${s}.batches SET total = total + (SELECT count(*) FROM input),
                          pending = pending + (SELECT count(*) FROM input WHERE status <> 'cancelled'),
                          cancelled = cancelled + (SELECT count(*) FROM input WHERE status = 'cancelled')
  WHERE id = $19::bigint AND state = 'open'
  RETURNING id
), ins AS (
  INSERT INTO ${s}.jobs (id, queue, type, payload, status, priority, run_at, attempts, max_attempts, timeout_ms, max_runtime_ms,
                         created_at, updated_at, trace_context, concurrency_key, pending_parents, dependents, parent_policy, batch_id,
                         finished_at, last_error_code, last_error)
  SELECT new_id, queue, type, payload, status, priority,
         coalesce(run_at, ${NOW} + ${ms('run_after_ms')}), 0, max_attempts, timeout_ms, max_runtime_ms, ${NOW}, ${NOW},
         trace_context, concurrency_key, pending_parents, dependents, CASE WHEN pending_parents IS NULL THEN NULL ELSE $14::text END, $19::bigint,
         CASE WHEN last_error IS NOT NULL THEN ${NOW} END, CASE WHEN last_error IS NOT NULL THEN 'PARENT_FAILED' END, last_error
  FROM input WHERE $19::bigint IS NULL OR EXISTS (SELECT 1 FROM bump) ORDER BY ord
  RETURNING *
), edges AS (
  INSERT INTO ${s}.job_dependencies (parent_id, child_id)
  SELECT p.new_id, c.new_id FROM unnest($15::int[], $16::int[]) AS e(parent_ord, child_ord)
  JOIN input p ON p.ord = e.parent_ord JOIN input c ON c.ord = e.child_ord
  WHERE $19::bigint IS NULL OR EXISTS (SELECT 1 FROM bump)
  UNION ALL
  SELECT e.parent_id, c.new_id FROM unnest($22::bigint[], $23::int[]) AS e(parent_id, child_ord)
  JOIN input c ON c.ord = e.child_ord
  WHERE $19::bigint IS NULL OR EXISTS (SELECT 1 FROM bump)
), adopted AS (
  -- a stored parent counts its new children, so its finish settles them and retention keeps it
  UPDATE ${s}.jobs j SET dependents = coalesce(j.dependents, 0) + a.n
  FROM unnest($24::bigint[], $25::int[]) AS a(id, n)
  WHERE j.id = a.id AND ($19::bigint IS NULL OR EXISTS (SELECT 1 FROM bump))
), woke AS (
  SELECT pg_notify($17, $18) FROM (SELECT 1 FROM ins WHERE ins.status = 'queued' AND ins.run_at <= ${NOW} LIMIT 1) AS due
)
SELECT (SELECT count(*) FROM woke) AS notified, ins.* FROM input JOIN ins ON ins.id = input.new_id ORDER BY input.ord`,

    /** $1 on success only, $2 callback spec (JSON), $3 callback type */
    createBatch: `-- leasehold createBatch: a new open batch with its callback's spec
INSERT INTO ${s}.batches (state, on_success_only, callback, callback_type, created_at)
VALUES ('open', $1::bool, $2::json, $3::text, ${NOW}) RETURNING *`,

    /** $1 id, $2 $3 notify */
    closeBatch: `-- leasehold closeBatch: an open batch takes no more members; with nothing pending it is done and fires its callback; notify if that is due now
WITH closing AS (
  UPDATE ${s}.batches SET state = CASE WHEN pending <= 0 THEN 'done' ELSE 'closed' END,
                          finished_at = CASE WHEN pending <= 0 THEN ${NOW} END
  WHERE id = $1::bigint AND state = 'open'
  RETURNING *
), fired AS (
  ${fireSql(s, 'closing')}
), woke AS (
  SELECT pg_notify($2, $3) FROM (SELECT 1 FROM fired WHERE run_at <= ${NOW} LIMIT 1) AS due
)
SELECT * FROM closing CROSS JOIN (SELECT count(*) AS notified FROM woke) w
UNION ALL
SELECT *, 0 FROM ${s}.batches WHERE id = $1::bigint AND NOT EXISTS (SELECT 1 FROM closing)`,

    /** $1 ids */
    lockParents: `-- leasehold insertFlow: lock the stored jobs a workflow waits for in id order and read their status as committed
SELECT id::text AS id, status FROM ${s}.jobs WHERE id = ANY($1::bigint[]) ORDER BY id FOR UPDATE`,

    /** $1 job id, $2 limit */
    dependencies: `-- leasehold dependencies: the jobs a job waits for and those waiting for it, each in id order
(SELECT 'parent' AS side, parent_id::text AS id FROM ${s}.job_dependencies WHERE child_id = $1::bigint ORDER BY parent_id LIMIT $2::int)
UNION ALL
(SELECT 'child', child_id::text FROM ${s}.job_dependencies WHERE parent_id = $1::bigint ORDER BY child_id LIMIT $2::int)`,

    /** $1 id */
    getBatch: `-- leasehold getBatch: one batch
SELECT * FROM ${s}.batches WHERE id = $1::bigint`,

    /** $1 id, $2 token, $3 value (JSON text), $4 note */
    progress: `-- leasehold progress: record a running attempt's progress, only under its lease (id + token + running)
UPDATE ${s}.jobs SET progress = $3::json, progress_note = $4::text, progress_at = ${NOW}, updated_at = ${NOW}
WHERE id = $1::bigint AND lease_token = $2::text AND status = 'running'
RETURNING 1 AS landed`,
  };
}

export class PostgresWorkflows extends SqlAggregate<Db, ReturnType<typeof workflowsSql>> implements WorkflowStore {
  constructor(db: Db) {
    super(db, workflowsSql(db.q));
  }

  /**
   * One statement, or with stored parents a transaction: they are locked first (a finish of one
   * waits for the commit, and its settle_children then sees the new edges), then the insert.
   */
  async insertFlow(p: FlowInsert): Promise<JobRow[]> {
    const j = p.jobs;
    const dependents = j.map(() => 0);
    for (const x of j) for (const at of x.parents) dependents[at]! += 1;
    const edges = j.flatMap((x, i) => x.parents.map((at) => [at + 1, i + 1] as const));
    const storedEdges = j.flatMap((x, i) => (x.storedParents ?? []).map((id) => [validId(id) ?? '0', i + 1] as const));
    const adopted = new Map<string, number>();
    for (const [id] of storedEdges) adopted.set(id, (adopted.get(id) ?? 0) + 1);
    const insert = async (statuses: ReadonlyMap<string, string>, on?: Queryable): Promise<JobRow[]> => {
      const starts = startFlow(j, statuses, p.onParentFailure);
      const rows = await this.db.run('insertFlow', this.sql.insertFlow, [
        j.map((x) => x.queue), j.map((x) => x.type), j.map((x) => jsonParam(x.payload)), j.map((x) => x.priority),
        j.map((x) => x.runAt ?? null), j.map((x) => x.runAfterMs), j.map((x) => x.maxAttempts), j.map((x) => x.timeoutMs),
        j.map((x) => x.maxRuntimeMs), j.map((x) => x.traceContext ?? null), j.map((x) => x.concurrencyKey ?? null),
        starts.map((x) => x.pendingParents), dependents.map((n) => (n > 0 ? n : null)), p.onParentFailure,
        edges.map((e) => e[0]), edges.map((e) => e[1]), ...this.db.notify, p.batchId === undefined ? null : validId(p.batchId) ?? '0',
        starts.map((x) => x.status), starts.map((x) => (x.failedBy ? parentFailedMessage(x.failedBy) : null)),
        storedEdges.map((e) => e[0]), storedEdges.map((e) => e[1]), [...adopted.keys()], [...adopted.values()],
      ], on);
      return rows.map(toJobRow);
    };
    if (adopted.size === 0) return insert(new Map());
    return this.db.transaction('insertFlow', async (c) => {
      const found = await query(c, 'insertFlow', this.sql.lockParents, [[...adopted.keys()]]);
      return insert(new Map(found.map((r) => [String(r.id), String(r.status)])), c);
    });
  }

  async createBatch(p: NewBatch): Promise<BatchRow> {
    const c = p.callback;
    const spec = { queue: c.queue, payload: c.payload, priority: c.priority, runAfterMs: c.runAfterMs, maxAttempts: c.maxAttempts, timeoutMs: c.timeoutMs, maxRuntimeMs: c.maxRuntimeMs };
    const [row] = await this.db.run('createBatch', this.sql.createBatch, [p.onSuccessOnly, JSON.stringify(spec), c.type]);
    return toBatchRow(row!);
  }

  async closeBatch(p: { batchId: string }): Promise<BatchRow | null> {
    const id = validId(p.batchId);
    if (id === null) return null;
    const [row] = await this.db.run('closeBatch', this.sql.closeBatch, [id, ...this.db.notify]);
    return row ? toBatchRow(row) : null;
  }

  async dependencies(p: { jobId: string; limit: number }): Promise<JobDependencies> {
    const id = validId(p.jobId);
    const rows = id === null ? [] : await this.db.run('dependencies', this.sql.dependencies, [id, p.limit]);
    return { parents: rows.filter((r) => r.side === 'parent').map((r) => String(r.id)), children: rows.filter((r) => r.side === 'child').map((r) => String(r.id)) };
  }

  async getBatch(p: { batchId: string }): Promise<BatchRow | null> {
    const id = validId(p.batchId);
    if (id === null) return null;
    const [row] = await this.db.run('getBatch', this.sql.getBatch, [id]);
    return row ? toBatchRow(row) : null;
  }

  async progress(p: ProgressParams): Promise<boolean> {
    const id = validId(p.id);
    if (id === null) return false;
    return (await this.db.run('progress', this.sql.progress, [id, p.leaseToken, p.value, p.note])).length > 0;
  }
}
