/**
 * Results, progress and workflows on MySQL/MariaDB: the job row's workflow columns, the finish's
 * result write and its release of children, the fenced progress write and workflow inserts.
 */
import type { FinishParams, FlowInsert, JobRow, ProgressParams, WorkflowStore } from '../../core/storage.js';
import { type Db, type Queryable, type Stmt, exec, run } from './db.js';
import { JOB_COLS, NOW, type Row, type Tables, idParam, micros, toJobRow, utcLiteral } from './sql.js';
import { SqlAggregate } from '../aggregates.js';

/** The jobs table's workflow columns, in the baseline migration's CREATE TABLE (after unique_key); JSON as text. */
export const WORKFLOW_JOB_COLUMNS = `
        result LONGTEXT NULL,
        progress TEXT NULL,
        progress_note TEXT NULL,
        progress_at DATETIME(6) NULL,
        pending_parents INT NULL,
        dependents INT NULL,
        parent_policy VARCHAR(8) NULL,`;

/** The workflow table, a step of the baseline migration; waiting jobs are found by the status-led indexes. */
export const WORKFLOW_TABLE = `CREATE TABLE IF NOT EXISTS {p}job_dependencies (
        parent_id BIGINT UNSIGNED NOT NULL,
        child_id BIGINT UNSIGNED NOT NULL,
        PRIMARY KEY (parent_id, child_id)
      )`;

export function workflowsSql(t: Tables) {
  return {
    progress: `-- leasehold progress: record a running attempt's progress, only under its lease (id + token + running)
      UPDATE ${t.jobs} SET progress = ?, progress_note = ?, progress_at = ${NOW}, updated_at = ${NOW}
      WHERE id = ? AND lease_token = ? AND status = 'running'`,
    // run inside the finish's transaction, on rows its lock read found under the finishing leases
    results: `-- leasehold finishJobs: store the results of the succeeded jobs the finish landed
      UPDATE JSON_TABLE(?, '$[*]' COLUMNS (id BIGINT UNSIGNED PATH '$.i', result LONGTEXT PATH '$.r')) AS v
        STRAIGHT_JOIN ${t.jobs} j FORCE INDEX (PRIMARY) ON j.id = v.id
      SET j.result = v.result`,
    insertJob: `-- leasehold insertFlow: one job of a workflow, waiting when it has parents
      INSERT INTO ${t.jobs} (queue, type, payload, status, priority, run_at, attempts, max_attempts, timeout_ms, max_runtime_ms,
        created_at, updated_at, trace_context, concurrency_key, pending_parents, dependents, parent_policy)
      VALUES (?, ?, ?, ?, ?, COALESCE(CAST(? AS DATETIME(6)), ${NOW} + INTERVAL ? MICROSECOND), 0, ?, ?, ?, ${NOW}, ${NOW}, ?, ?, ?, ?, ?)`,
    insertEdges: (n: number): string => `-- leasehold insertFlow: a workflow's ${n} edge(s)
      INSERT INTO ${t.dependencies} (parent_id, child_id) VALUES ${Array<string>(n).fill('(?, ?)').join(', ')}`,
    readJobs: `-- leasehold insertFlow: the workflow's jobs as inserted
      SELECT ${JOB_COLS} FROM ${t.jobs} WHERE id IN (?)`,
    children: `-- leasehold finishJobs (workflow): the children of these parents
      SELECT parent_id, child_id FROM ${t.dependencies} WHERE parent_id IN (?)`,
    lockChildren: `-- leasehold finishJobs (workflow): lock these children in id order and read what waits
      SELECT j.id, j.status, j.pending_parents, j.parent_policy
      FROM JSON_TABLE(?, '$[*]' COLUMNS (id BIGINT UNSIGNED PATH '$')) AS v STRAIGHT_JOIN ${t.jobs} j FORCE INDEX (PRIMARY) ON j.id = v.id FOR UPDATE`,
    release: `-- leasehold finishJobs (workflow): a waiting child has fewer parents to wait for; at none it is due, no earlier than the finish's now
      UPDATE ${t.jobs} SET pending_parents = ?, status = IF(? <= 0, 'queued', 'waiting'),
        run_at = IF(? <= 0, GREATEST(run_at, CAST(? AS DATETIME(6))), run_at), updated_at = CAST(? AS DATETIME(6))
      WHERE id = ? AND status = 'waiting'`,
    doom: `-- leasehold finishJobs (workflow): a waiting descendant of a parent that ended dead or cancelled is cancelled (policy 'cancel')
      UPDATE ${t.jobs} SET status = 'cancelled', finished_at = CAST(? AS DATETIME(6)), updated_at = CAST(? AS DATETIME(6)),
        last_error_code = 'PARENT_FAILED', last_error = ?
      WHERE id = ? AND status = 'waiting'`,
  };
}

type WorkflowsSql = ReturnType<typeof workflowsSql>;

/** The finish's statement storing the results of landed items (none: no statement). */
export function resultsStatement(sql: WorkflowsSql, landed: readonly { id: bigint; result: string | undefined }[]): Stmt[] {
  const items = landed.flatMap((l) => (l.result === undefined ? [] : [{ i: String(l.id), r: l.result }]));
  return items.length === 0 ? [] : [{ sql: sql.results, values: [JSON.stringify(items)] }];
}

const byId = (a: bigint, b: bigint): number => (a < b ? -1 : a > b ? 1 : 0);

/**
 * Inside the finish's transaction, for landed parents with dependents: succeeded ones release
 * their waiting children, dead or cancelled ones cancel their waiting descendants under policy
 * 'cancel'. Children are locked in id order before they are read; returns the writes, sent with
 * the finish's COMMIT.
 */
export async function settleChildren(c: Queryable, sql: WorkflowsSql, parents: readonly { id: bigint; status: FinishParams['status'] }[], now: string): Promise<Stmt[]> {
  const released = new Map<bigint, number>();
  const doomed = new Map<bigint, string>();
  let frontier = parents.filter((p) => p.status === 'dead' || p.status === 'cancelled').map((p) => ({ id: p.id, why: `job ${p.id} it depends on ended ${p.status}` }));
  const succeeded = parents.filter((p) => p.status === 'succeeded').map((p) => p.id);
  if (succeeded.length > 0) {
    for (const r of await run(c, sql.children, [succeeded])) released.set(BigInt(String(r.child_id)), (released.get(BigInt(String(r.child_id))) ?? 0) + 1);
  }
  while (frontier.length > 0) {
    const why = new Map(frontier.map((f) => [f.id, f.why]));
    const next: typeof frontier = [];
    for (const r of await run(c, sql.children, [frontier.map((f) => f.id)])) {
      const child = BigInt(String(r.child_id));
      if (doomed.has(child)) continue;
      doomed.set(child, why.get(BigInt(String(r.parent_id)))!);
      next.push({ id: child, why: doomed.get(child)! });
    }
    frontier = next;
  }
  const ids = [...new Set([...released.keys(), ...doomed.keys()])].sort(byId);
  if (ids.length === 0) return [];
  const rows: Row[] = await run(c, sql.lockChildren, [JSON.stringify(ids.map(String))]);
  return rows.flatMap((r): Stmt[] => {
    const id = BigInt(String(r.id));
    if (r.status !== 'waiting') return [];
    if (doomed.has(id) && r.parent_policy === 'cancel') return [{ sql: sql.doom, values: [now, now, doomed.get(id), id] }];
    const n = released.get(id);
    if (n === undefined) return [];
    const left = Number(r.pending_parents) - n;
    return [{ sql: sql.release, values: [left, left, left, now, now, id] }];
  });
}

export class MysqlWorkflows extends SqlAggregate<Db, WorkflowsSql> implements WorkflowStore {
  constructor(db: Db) {
    super(db, workflowsSql(db.t));
  }

  async progress(p: ProgressParams): Promise<boolean> {
    const id = idParam(p.id);
    if (id === null) return false;
    const r = await this.db.one('progress', (c) => exec(c, this.sql.progress, [p.value, p.note, id, p.leaseToken]));
    return r.affectedRows > 0;
  }

  /** One transaction: the jobs one by one in input order (each parent's id known before its children), then the edges. */
  async insertFlow(p: FlowInsert): Promise<JobRow[]> {
    const payloads = p.jobs.map((j) => JSON.stringify(j.payload));
    const dependents = p.jobs.map(() => 0);
    for (const j of p.jobs) for (const at of j.parents) dependents[at]! += 1;
    return this.db.tx('insertFlow', async (c) => {
      const ids: string[] = [];
      for (const [i, j] of p.jobs.entries()) {
        const waits = j.parents.length > 0;
        const res = await exec(c, this.sql.insertJob, [
          j.queue, j.type, payloads[i], waits ? 'waiting' : 'queued', j.priority, j.runAt ? utcLiteral(j.runAt) : null, micros(j.runAfterMs),
          j.maxAttempts, j.timeoutMs, j.maxRuntimeMs, j.traceContext ?? null, j.concurrencyKey ?? null,
          waits ? j.parents.length : null, dependents[i]! > 0 ? dependents[i] : null, waits ? p.onParentFailure : null,
        ]);
        ids.push(String(res.insertId));
      }
      const edges = p.jobs.flatMap((j, i) => j.parents.flatMap((at) => [ids[at], ids[i]]));
      if (edges.length > 0) await exec(c, this.sql.insertEdges(edges.length / 2), edges);
      const rows = new Map((await run(c, this.sql.readJobs, [ids])).map((r) => [String(r.id), toJobRow(r)]));
      return ids.map((id) => rows.get(id)!);
    });
  }
}
