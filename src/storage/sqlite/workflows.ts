/** Results, progress and workflows on SQLite: the job row's workflow columns, the fenced progress write, workflow inserts and what a parent's finish does to its children. */
import { batchCallbackKey, batchCallbackPayload, batchFires } from '../../core/batches.js';
import { parentFailedMessage, startFlow } from '../../core/workflow-graph.js';
import type { BatchRow, FlowInsert, JobDependencies, JobRow, NewBatch, ProgressParams, WorkflowStore } from '../../core/storage.js';
import type { SqliteDb } from './db.js';
import { NEXT_JOB_ID, type SqlJob, toBatchRow, toJobRow, toSqlId } from './sql.js';

/** The jobs table's workflow columns, in the baseline migration's CREATE TABLE (after unique_key); JSON as TEXT. */
export const WORKFLOW_JOB_COLUMNS = `,
  result          TEXT,
  progress        TEXT,
  progress_note   TEXT,
  progress_at     INTEGER,
  pending_parents INTEGER,
  dependents      INTEGER,
  parent_policy   TEXT    CHECK (parent_policy IN ('cancel','hold')),
  batch_id        INTEGER`;

/** Retention keeps a job while a job depending on it has not ended: it may still wait for it or read it (ctx.parents) (`j`: the jobs row's name). */
export const notHeld = (j: string): string =>
  `(${j}.dependents IS NULL OR NOT EXISTS (SELECT 1 FROM {p}job_dependencies d JOIN {p}jobs c ON c.id = d.child_id WHERE d.parent_id = ${j}.id AND c.status NOT IN ('succeeded','dead','cancelled')))`;

/** A deleted job's edges to its parents go with it; its edges to children stay with them, so a child still names a parent that is gone. */
export const FORGET_EDGES = `-- leasehold jobs.prune (workflow): the edges of the jobs deleted, as children
    DELETE FROM {p}job_dependencies WHERE child_id IN (SELECT value FROM json_each(@ids))`;

/** Pruning: a done batch goes once its members and its callback job are all gone (@ids: the batches the pruned jobs belonged to or called back). */
export const FORGET_BATCHES = `-- leasehold jobs.prune (batch): done batches left without members or callback job
    DELETE FROM {p}batches WHERE id IN (SELECT value FROM json_each(@ids)) AND state = 'done'
      AND NOT EXISTS (SELECT 1 FROM {p}jobs m WHERE m.batch_id = {p}batches.id)
      AND NOT EXISTS (SELECT 1 FROM {p}jobs c WHERE c.idempotency_key = 'leasehold:batch:' || {p}batches.id)`;

/** The workflow tables and indexes, in the baseline migration. */
export const WORKFLOW_TABLES = `
-- job_dependencies: a workflow's edges, written with its jobs; a parent's finish reads its children by the primary key
CREATE TABLE {p}job_dependencies (
  parent_id INTEGER NOT NULL,
  child_id  INTEGER NOT NULL,
  PRIMARY KEY (parent_id, child_id)
) STRICT, WITHOUT ROWID;
-- a job's parents, for its page
CREATE INDEX {p}job_dependencies_child_idx ON {p}job_dependencies (child_id);
-- an operator's search and counts of jobs waiting for their parents: rare rows, as failed_idx
CREATE INDEX {p}jobs_waiting_idx ON {p}jobs (id) WHERE status = 'waiting';
-- batches: members counted by their finishes; callback: the spec of the job the last one enqueues
CREATE TABLE {p}batches (
  id              INTEGER PRIMARY KEY,
  state           TEXT    NOT NULL CHECK (state IN ('open','closed','done')),
  on_success_only INTEGER NOT NULL,
  total           INTEGER NOT NULL DEFAULT 0,
  pending         INTEGER NOT NULL DEFAULT 0,
  succeeded       INTEGER NOT NULL DEFAULT 0,
  dead            INTEGER NOT NULL DEFAULT 0,
  cancelled       INTEGER NOT NULL DEFAULT 0,
  callback        TEXT    NOT NULL,
  callback_type   TEXT    NOT NULL,
  created_at      INTEGER NOT NULL,
  finished_at     INTEGER
) STRICT;
`;

const WORKFLOW_SQL = {
  progress: `-- leasehold workflows.progress: record a running attempt's progress, only under its lease (id + token + running)
    UPDATE {p}jobs SET progress = @value, progress_note = @note, progress_at = @now, updated_at = @now
    WHERE id = @id AND lease_token = @token AND status = 'running'`,
  insert: `-- leasehold workflows.insertFlow: one job of a workflow, waiting when it has parents, cancelled when a stored parent already failed
    INSERT INTO {p}jobs (id, queue, type, payload, status, priority, run_at, attempts, max_attempts, timeout_ms, max_runtime_ms,
      created_at, updated_at, trace_context, concurrency_key, pending_parents, dependents, parent_policy, batch_id,
      finished_at, last_error_code, last_error)
    VALUES (${NEXT_JOB_ID}, @queue, @type, @payload, @status, @priority, @runAt, 0, @maxAttempts, @timeoutMs, @maxRuntimeMs,
      @now, @now, @traceContext, @concurrencyKey, @pendingParents, @dependents, @policy, @batchId,
      @finishedAt, @errorCode, @error)
    RETURNING *`,
  join: `-- leasehold workflows.insertFlow: an open batch counts the members added to it (those cancelled at insert as ended)
    UPDATE {p}batches SET total = total + @n, pending = pending + @n - @cancelled, cancelled = cancelled + @cancelled WHERE id = @id AND state = 'open'`,
  storedParents: `-- leasehold workflows.insertFlow: the stored jobs a workflow waits for, as they are inside its write transaction
    SELECT id, status FROM {p}jobs WHERE id IN (SELECT value FROM json_each(@ids))`,
  adopt: `-- leasehold workflows.insertFlow: a stored parent counts its new children, so its finish settles them and retention keeps it
    UPDATE {p}jobs SET dependents = coalesce(dependents, 0) + @n WHERE id = @id`,
  createBatch: `-- leasehold workflows.createBatch: a new open batch with its callback's spec
    INSERT INTO {p}batches (state, on_success_only, callback, callback_type, created_at) VALUES ('open', @onSuccessOnly, @callback, @type, @now) RETURNING *`,
  closeBatch: `-- leasehold workflows.closeBatch: an open batch takes no more members; with nothing pending it is done
    UPDATE {p}batches SET state = CASE WHEN pending <= 0 THEN 'done' ELSE 'closed' END, finished_at = CASE WHEN pending <= 0 THEN @now END
    WHERE id = @id AND state = 'open' RETURNING *`,
  dependencies: `-- leasehold workflows.dependencies: the jobs a job waits for and those waiting for it, each in id order
    SELECT * FROM (SELECT 'parent' AS side, parent_id AS id FROM {p}job_dependencies WHERE child_id = @id ORDER BY parent_id LIMIT @limit)
    UNION ALL
    SELECT * FROM (SELECT 'child', child_id FROM {p}job_dependencies WHERE parent_id = @id ORDER BY child_id LIMIT @limit)`,
  getBatch: `-- leasehold workflows.getBatch: one batch
    SELECT * FROM {p}batches WHERE id = ?`,
  countMembers: `-- leasehold leases.finish (batch): members ended; a closed batch left with nothing pending is done
    UPDATE {p}batches SET pending = pending - @n, succeeded = succeeded + @ok, dead = dead + @dead, cancelled = cancelled + @cancelled,
      state = CASE WHEN state = 'closed' AND pending <= @n THEN 'done' ELSE state END,
      finished_at = CASE WHEN state = 'closed' AND pending <= @n THEN @now ELSE finished_at END
    WHERE id = @id RETURNING *`,
  fire: `-- leasehold workflows (batch): a done batch's callback job, once by its idempotency key
    INSERT INTO {p}jobs (id, queue, type, payload, status, priority, run_at, attempts, max_attempts, idempotency_key, timeout_ms, max_runtime_ms, created_at, updated_at)
    VALUES (${NEXT_JOB_ID}, @queue, @type, @payload, 'queued', @priority, @runAt, 0, @maxAttempts, @key, @timeoutMs, @maxRuntimeMs, @now, @now)
    ON CONFLICT DO NOTHING`,
  edge: `-- leasehold workflows.insertFlow: one edge of a workflow
    INSERT INTO {p}job_dependencies (parent_id, child_id) VALUES (?, ?)`,
  release: `-- leasehold leases.finish (workflow): a succeeded parent's waiting children wait for one parent fewer; at none they are due, no earlier than now
    UPDATE {p}jobs SET pending_parents = pending_parents - 1,
      status = CASE WHEN pending_parents = 1 THEN 'queued' ELSE status END,
      run_at = CASE WHEN pending_parents = 1 THEN max(run_at, @now) ELSE run_at END, updated_at = @now
    WHERE status = 'waiting' AND id IN (SELECT child_id FROM {p}job_dependencies WHERE parent_id = @id)`,
  doom: `-- leasehold leases.finish (workflow): a parent ended dead or cancelled: its waiting descendants under policy 'cancel' are cancelled
    WITH RECURSIVE doomed(id) AS (
      SELECT child_id FROM {p}job_dependencies WHERE parent_id = @id
      UNION SELECT d.child_id FROM {p}job_dependencies d JOIN doomed x ON d.parent_id = x.id
    )
    UPDATE {p}jobs SET status = 'cancelled', finished_at = @now, updated_at = @now, last_error_code = 'PARENT_FAILED', last_error = @message
    WHERE status = 'waiting' AND parent_policy = 'cancel' AND id IN (SELECT id FROM doomed)
    RETURNING batch_id`,
} as const;

interface SqlBatch { id: number; state: string; on_success_only: number; total: number; succeeded: number; dead: number; cancelled: number; callback: string; callback_type: string }

/** A batch that became done now: its callback, unless onSuccessOnly and a member did not succeed. */
function fire(db: SqliteDb, b: SqlBatch, now: number): void {
  const row = toBatchRow(b);
  if (row.state !== 'done' || !batchFires(row)) return;
  const c = JSON.parse(b.callback) as { queue: string; payload: unknown; priority: number; runAfterMs: number; maxAttempts: number; timeoutMs: number; maxRuntimeMs: number };
  db.stmt(WORKFLOW_SQL.fire).run({
    queue: c.queue, type: b.callback_type, payload: JSON.stringify(batchCallbackPayload(c.payload, row)), priority: c.priority, runAt: now + c.runAfterMs,
    maxAttempts: c.maxAttempts, key: batchCallbackKey(row.id), timeoutMs: c.timeoutMs, maxRuntimeMs: c.maxRuntimeMs, now,
  });
}

/** The members a finish call ended, by batch: counted once per batch at the end of its transaction. */
export class BatchTally {
  readonly #counts = new Map<number, { n: number; ok: number; dead: number; cancelled: number }>();

  add(batchId: number, status: string): void {
    if (status !== 'succeeded' && status !== 'dead' && status !== 'cancelled') return;
    const c = this.#counts.get(batchId) ?? { n: 0, ok: 0, dead: 0, cancelled: 0 };
    c.n += 1;
    if (status === 'succeeded') c.ok += 1;
    else c[status] += 1;
    this.#counts.set(batchId, c);
  }

  /** Each batch counted (one statement each); one that became done fires its callback. */
  settle(db: SqliteDb, now: number): void {
    for (const [id, c] of this.#counts) {
      const b = db.stmt(WORKFLOW_SQL.countMembers).get({ id, now, ...c }) as SqlBatch | undefined;
      // counted here, so it was pending before: done now means it became done now
      if (b) fire(db, b, now);
    }
  }
}

/** A parent's finish, inside its write transaction: a success releases its children, a death or cancel applies their policy (batch members it cancels counted in `tally`). */
export function settleChildren(db: SqliteDb, id: number, status: string, now: number, tally: BatchTally): void {
  if (status === 'succeeded') db.stmt(WORKFLOW_SQL.release).run({ id, now });
  else if (status === 'dead' || status === 'cancelled') {
    const cancelled = db.stmt(WORKFLOW_SQL.doom).all({ id, now, message: `job ${id} it depends on ended ${status}` }) as { batch_id: number | null }[];
    for (const c of cancelled) if (c.batch_id !== null) tally.add(c.batch_id, 'cancelled');
  }
}

export class SqliteWorkflows implements WorkflowStore {
  constructor(private readonly db: SqliteDb) {}

  async progress(p: ProgressParams): Promise<boolean> {
    const id = toSqlId(p.id);
    if (id === null) return false;
    const now = this.db.now();
    const row = { id, token: p.leaseToken, value: p.value, note: p.note, now };
    return this.db.write(() => this.db.stmt(WORKFLOW_SQL.progress).run(row).changes) > 0;
  }

  async createBatch(p: NewBatch): Promise<BatchRow> {
    const now = this.db.now();
    const c = p.callback;
    const callback = JSON.stringify({ queue: c.queue, payload: c.payload, priority: c.priority, runAfterMs: c.runAfterMs, maxAttempts: c.maxAttempts, timeoutMs: c.timeoutMs, maxRuntimeMs: c.maxRuntimeMs });
    const row = this.db.write(() => this.db.stmt(WORKFLOW_SQL.createBatch).get({ onSuccessOnly: p.onSuccessOnly ? 1 : 0, callback, type: c.type, now }) as SqlBatch);
    return toBatchRow(row);
  }

  async closeBatch(p: { batchId: string }): Promise<BatchRow | null> {
    const id = toSqlId(p.batchId);
    if (id === null) return null;
    const now = this.db.now();
    const row = this.db.write(() => {
      const closed = this.db.stmt(WORKFLOW_SQL.closeBatch).get({ id, now }) as SqlBatch | undefined;
      if (closed) fire(this.db, closed, now);
      return closed ?? (this.db.stmt(WORKFLOW_SQL.getBatch).get(id) as SqlBatch | undefined);
    });
    return row ? toBatchRow(row) : null;
  }

  async dependencies(p: { jobId: string; limit: number }): Promise<JobDependencies> {
    const id = toSqlId(p.jobId);
    const rows = id === null ? [] : this.db.read(() => this.db.stmt(WORKFLOW_SQL.dependencies).all({ id, limit: p.limit }) as { side: string; id: number }[]);
    return { parents: rows.filter((r) => r.side === 'parent').map((r) => String(r.id)), children: rows.filter((r) => r.side === 'child').map((r) => String(r.id)) };
  }

  async getBatch(p: { batchId: string }): Promise<BatchRow | null> {
    const id = toSqlId(p.batchId);
    const row = id === null ? undefined : this.db.read(() => this.db.stmt(WORKFLOW_SQL.getBatch).get(id) as SqlBatch | undefined);
    return row ? toBatchRow(row) : null;
  }

  async insertFlow(p: FlowInsert): Promise<JobRow[]> {
    const now = this.db.now();
    const batchId = p.batchId === undefined ? null : toSqlId(p.batchId) ?? 0;
    const payloads = p.jobs.map((j) => JSON.stringify(j.payload));
    const dependents = p.jobs.map(() => 0);
    for (const j of p.jobs) for (const at of j.parents) dependents[at]! += 1;
    const adopted = new Map<number, number>();
    for (const j of p.jobs) for (const id of j.storedParents ?? []) adopted.set(toSqlId(id) ?? 0, (adopted.get(toSqlId(id) ?? 0) ?? 0) + 1);
    const rows = this.db.write(() => {
      // the write lock is held: no finish of a stored parent can come between this read and the commit
      const found = this.db.stmt(WORKFLOW_SQL.storedParents).all({ ids: JSON.stringify([...adopted.keys()]) }) as { id: number; status: string }[];
      const starts = startFlow(p.jobs, new Map(found.map((r) => [String(r.id), r.status])), p.onParentFailure);
      const cancelled = starts.filter((s) => s.status === 'cancelled').length;
      if (batchId !== null && this.db.stmt(WORKFLOW_SQL.join).run({ id: batchId, n: p.jobs.length, cancelled }).changes === 0) return [];
      const insert = this.db.stmt(WORKFLOW_SQL.insert);
      const edge = this.db.stmt(WORKFLOW_SQL.edge);
      for (const [id, n] of adopted) this.db.stmt(WORKFLOW_SQL.adopt).run({ id, n });
      const out: SqlJob[] = [];
      p.jobs.forEach((j, i) => {
        const start = starts[i]!;
        const row = insert.get({
          queue: j.queue, type: j.type, payload: payloads[i], status: start.status, priority: j.priority,
          runAt: j.runAt ? j.runAt.getTime() : now + j.runAfterMs, maxAttempts: j.maxAttempts, timeoutMs: j.timeoutMs, maxRuntimeMs: j.maxRuntimeMs,
          now, traceContext: j.traceContext ?? null, concurrencyKey: j.concurrencyKey ?? null,
          pendingParents: start.pendingParents, dependents: dependents[i]! > 0 ? dependents[i] : null, policy: start.pendingParents === null ? null : p.onParentFailure, batchId,
          finishedAt: start.failedBy ? now : null, errorCode: start.failedBy ? 'PARENT_FAILED' : null, error: start.failedBy ? parentFailedMessage(start.failedBy) : null,
        }) as SqlJob;
        for (const id of j.storedParents ?? []) edge.run(toSqlId(id), row.id);
        for (const at of j.parents) edge.run(out[at]!.id, row.id);
        out.push(row);
      });
      return out;
    });
    return rows.map(toJobRow);
  }
}
