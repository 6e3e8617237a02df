/** Results, progress and workflows on SQLite: the job row's workflow columns, the fenced progress write, workflow inserts and what a parent's finish does to its children. */
import type { FlowInsert, JobRow, ProgressParams, WorkflowStore } from '../../core/storage.js';
import type { SqliteDb } from './db.js';
import { NEXT_JOB_ID, type SqlJob, toJobRow, toSqlId } from './sql.js';

/** The jobs table's workflow columns, in the baseline migration's CREATE TABLE (after unique_key); JSON as TEXT. */
export const WORKFLOW_JOB_COLUMNS = `,
  result          TEXT,
  progress        TEXT,
  progress_note   TEXT,
  progress_at     INTEGER,
  pending_parents INTEGER,
  dependents      INTEGER,
  parent_policy   TEXT    CHECK (parent_policy IN ('cancel','hold'))`;

/** The workflow tables and indexes, in the baseline migration. */
export const WORKFLOW_TABLES = `
-- job_dependencies: a workflow's edges, written with its jobs; a parent's finish reads its children by the primary key
CREATE TABLE {p}job_dependencies (
  parent_id INTEGER NOT NULL,
  child_id  INTEGER NOT NULL,
  PRIMARY KEY (parent_id, child_id)
) STRICT, WITHOUT ROWID;
-- an operator's search and counts of jobs waiting for their parents: rare rows, as failed_idx
CREATE INDEX {p}jobs_waiting_idx ON {p}jobs (id) WHERE status = 'waiting';
`;

const WORKFLOW_SQL = {
  progress: `-- leasehold workflows.progress: record a running attempt's progress, only under its lease (id + token + running)
    UPDATE {p}jobs SET progress = @value, progress_note = @note, progress_at = @now, updated_at = @now
    WHERE id = @id AND lease_token = @token AND status = 'running'`,
  insert: `-- leasehold workflows.insertFlow: one job of a workflow, waiting when it has parents
    INSERT INTO {p}jobs (id, queue, type, payload, status, priority, run_at, attempts, max_attempts, timeout_ms, max_runtime_ms,
      created_at, updated_at, trace_context, concurrency_key, pending_parents, dependents, parent_policy)
    VALUES (${NEXT_JOB_ID}, @queue, @type, @payload, @status, @priority, @runAt, 0, @maxAttempts, @timeoutMs, @maxRuntimeMs,
      @now, @now, @traceContext, @concurrencyKey, @pendingParents, @dependents, @policy)
    RETURNING *`,
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
    WHERE status = 'waiting' AND parent_policy = 'cancel' AND id IN (SELECT id FROM doomed)`,
} as const;

/** A parent's finish, inside its write transaction: a success releases its children, a death or cancel applies their policy. */
export function settleChildren(db: SqliteDb, id: number, status: string, now: number): void {
  if (status === 'succeeded') db.stmt(WORKFLOW_SQL.release).run({ id, now });
  else if (status === 'dead' || status === 'cancelled') db.stmt(WORKFLOW_SQL.doom).run({ id, now, message: `job ${id} it depends on ended ${status}` });
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

  async insertFlow(p: FlowInsert): Promise<JobRow[]> {
    const now = this.db.now();
    const payloads = p.jobs.map((j) => JSON.stringify(j.payload));
    const dependents = p.jobs.map(() => 0);
    for (const j of p.jobs) for (const at of j.parents) dependents[at]! += 1;
    const rows = this.db.write(() => {
      const insert = this.db.stmt(WORKFLOW_SQL.insert);
      const edge = this.db.stmt(WORKFLOW_SQL.edge);
      const out: SqlJob[] = [];
      p.jobs.forEach((j, i) => {
        const waits = j.parents.length > 0;
        const row = insert.get({
          queue: j.queue, type: j.type, payload: payloads[i], status: waits ? 'waiting' : 'queued', priority: j.priority,
          runAt: j.runAt ? j.runAt.getTime() : now + j.runAfterMs, maxAttempts: j.maxAttempts, timeoutMs: j.timeoutMs, maxRuntimeMs: j.maxRuntimeMs,
          now, traceContext: j.traceContext ?? null, concurrencyKey: j.concurrencyKey ?? null,
          pendingParents: waits ? j.parents.length : null, dependents: dependents[i]! > 0 ? dependents[i] : null, policy: waits ? p.onParentFailure : null,
        }) as SqlJob;
        for (const at of j.parents) edge.run(out[at]!.id, row.id);
        out.push(row);
      });
      return out;
    });
    return rows.map(toJobRow);
  }
}
