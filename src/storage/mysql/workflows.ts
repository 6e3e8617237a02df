/**
 * Results, progress and workflows on MySQL/MariaDB: the job row's workflow columns, the finish's
 * result write and its release of children, the fenced progress write and workflow inserts.
 */
import { batchCallbackKey, batchCallbackPayload, batchFires } from '../../core/batches.js';
import { type FlowStart, parentFailedMessage, startFlow } from '../../core/workflow-graph.js';
import type { BatchRow, BatchState, FinishParams, FlowInsert, JobDependencies, JobRow, NewBatch, ProgressParams, WorkflowStore } from '../../core/storage.js';
import { type Db, type Queryable, type Stmt, exec, run } from './db.js';
import { JOB_COLS, NOW, type Row, type Tables, idParam, micros, toBatchRow, toJobRow, utcLiteral } from './sql.js';
import { SqlAggregate } from '../aggregates.js';
import { wakeIf } from './wakeups.js';

/** The jobs table's workflow columns, in the baseline migration's CREATE TABLE (after unique_key); JSON as text. */
export const WORKFLOW_JOB_COLUMNS = `
        result LONGTEXT NULL,
        progress TEXT NULL,
        progress_note TEXT NULL,
        progress_at DATETIME(6) NULL,
        pending_parents INT NULL,
        dependents INT NULL,
        parent_policy VARCHAR(8) NULL,
        batch_id BIGINT UNSIGNED NULL,`;

/** The workflow tables, steps of the baseline migration (waiting jobs are found by the status-led indexes); the table options follow each. */
export const WORKFLOW_TABLES: readonly string[] = [
  // job_dependencies: a workflow's edges, written with its jobs
  `CREATE TABLE IF NOT EXISTS {p}job_dependencies (
        parent_id BIGINT UNSIGNED NOT NULL,
        child_id BIGINT UNSIGNED NOT NULL,
        PRIMARY KEY (parent_id, child_id),
        KEY {p}job_dependencies_child (child_id)
      )`,
  // batches: members counted by their finishes; callback: the spec of the job the last one enqueues
  `CREATE TABLE IF NOT EXISTS {p}batches (
        id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
        state VARCHAR(8) NOT NULL,
        on_success_only TINYINT NOT NULL,
        total INT NOT NULL DEFAULT 0,
        pending INT NOT NULL DEFAULT 0,
        succeeded INT NOT NULL DEFAULT 0,
        dead INT NOT NULL DEFAULT 0,
        cancelled INT NOT NULL DEFAULT 0,
        callback LONGTEXT NOT NULL,
        callback_type VARCHAR(255) NOT NULL,
        created_at DATETIME(6) NOT NULL,
        finished_at DATETIME(6) NULL,
        PRIMARY KEY (id)
      )`,
];

/** Retention keeps a job while a job depending on it (may still wait for it or read it) has not ended (`j`: the jobs row's alias). */
// a scalar subquery, probed per row through the primary keys: MariaDB made NOT EXISTS one materialized read of every edge
export const notHeld = (t: Tables, j: string): string =>
  `(${j}.dependents IS NULL OR (SELECT 1 FROM ${t.dependencies} d JOIN ${t.jobs} c ON c.id = d.child_id WHERE d.parent_id = ${j}.id AND c.status NOT IN ('succeeded','dead','cancelled') LIMIT 1) IS NULL)`;

export function workflowsSql(t: Tables) {
  return {
    // a deleted parent's edges stay with its children, which still name it
    forgetEdges: `-- leasehold pruneJobs (workflow): the edges of the jobs deleted, as children
      DELETE FROM ${t.dependencies} WHERE child_id IN (?)`,
    progress: `-- leasehold progress: record a running attempt's progress, only under its lease (id + token + running)
      UPDATE ${t.jobs} SET progress = ?, progress_note = ?, progress_at = ${NOW}, updated_at = ${NOW}
      WHERE id = ? AND lease_token = ? AND status = 'running'`,
    // run inside the finish's transaction, on rows its lock read found under the finishing leases
    results: `-- leasehold finishJobs: store the results of the succeeded jobs the finish landed
      UPDATE JSON_TABLE(?, '$[*]' COLUMNS (id BIGINT UNSIGNED PATH '$.i', result LONGTEXT PATH '$.r')) AS v
        STRAIGHT_JOIN ${t.jobs} j FORCE INDEX (PRIMARY) ON j.id = v.id
      SET j.result = v.result`,
    // a "simple insert": its auto-increment ids are consecutive (insert.ts relies on it too)
    insertJobs: (n: number): string => `-- leasehold insertFlow: ${n} job(s) of a workflow, those with parents waiting, those a failed stored parent cancels cancelled
      INSERT INTO ${t.jobs} (queue, type, payload, status, priority, run_at, attempts, max_attempts, timeout_ms, max_runtime_ms,
        created_at, updated_at, trace_context, concurrency_key, pending_parents, dependents, parent_policy, batch_id,
        finished_at, last_error_code, last_error)
      VALUES ${Array<string>(n).fill(`(?, ?, ?, ?, ?, COALESCE(CAST(? AS DATETIME(6)), ${NOW} + INTERVAL ? MICROSECOND), 0, ?, ?, ?, ${NOW}, ${NOW}, ?, ?, ?, ?, ?, ?, CASE WHEN ? THEN ${NOW} END, ?, ?)`).join(', ')}`,
    join: `-- leasehold insertFlow: an open batch counts the members added to it (those cancelled at insert as ended)
      UPDATE ${t.batches} SET total = total + ?, pending = pending + ?, cancelled = cancelled + ? WHERE id = ? AND state = 'open'`,
    lockParents: `-- leasehold insertFlow: lock the stored jobs a workflow waits for in id order and read their status as committed
      SELECT j.id, j.status FROM JSON_TABLE(?, '$[*]' COLUMNS (id BIGINT UNSIGNED PATH '$')) AS v STRAIGHT_JOIN ${t.jobs} j FORCE INDEX (PRIMARY) ON j.id = v.id FOR UPDATE`,
    adopt: `-- leasehold insertFlow: a stored parent counts its new children, so its finish settles them and retention keeps it
      UPDATE ${t.jobs} SET dependents = COALESCE(dependents, 0) + ? WHERE id = ?`,
    createBatch: `-- leasehold createBatch: a new open batch with its callback's spec
      INSERT INTO ${t.batches} (state, on_success_only, callback, callback_type, created_at) VALUES ('open', ?, ?, ?, ${NOW})`,
    dependencies: `-- leasehold dependencies: the jobs a job waits for and those waiting for it, each in id order
      (SELECT 'parent' AS side, parent_id AS id FROM ${t.dependencies} WHERE child_id = ? ORDER BY parent_id LIMIT ?)
      UNION ALL
      (SELECT 'child', child_id FROM ${t.dependencies} WHERE parent_id = ? ORDER BY child_id LIMIT ?)`,
    getBatch: `-- leasehold getBatch: one batch
      SELECT * FROM ${t.batches} WHERE id = ?`,
    lockBatches: `-- leasehold batches: lock these batches in id order and read them
      SELECT b.* FROM JSON_TABLE(?, '$[*]' COLUMNS (id BIGINT UNSIGNED PATH '$')) AS v STRAIGHT_JOIN ${t.batches} b FORCE INDEX (PRIMARY) ON b.id = v.id FOR UPDATE`,
    saveBatch: `-- leasehold batches: a batch's counts and state as its members' finishes (or its closing) left them
      UPDATE ${t.batches} SET state = ?, pending = ?, succeeded = ?, dead = ?, cancelled = ?, finished_at = CAST(? AS DATETIME(6)) WHERE id = ?`,
    fire: `-- leasehold batches: a done batch's callback job, once by its idempotency key
      INSERT INTO ${t.jobs} (queue, type, payload, status, priority, run_at, attempts, max_attempts, idempotency_key, timeout_ms, max_runtime_ms, created_at, updated_at)
      VALUES (?, ?, ?, 'queued', ?, CAST(? AS DATETIME(6)) + INTERVAL ? MICROSECOND, 0, ?, ?, ?, ?, CAST(? AS DATETIME(6)), CAST(? AS DATETIME(6)))
      ON DUPLICATE KEY UPDATE id = id`,
    insertEdges: (n: number): string => `-- leasehold insertFlow: a workflow's ${n} edge(s)
      INSERT INTO ${t.dependencies} (parent_id, child_id) VALUES ${Array<string>(n).fill('(?, ?)').join(', ')}`,
    readJobs: `-- leasehold insertFlow: the workflow's jobs as inserted
      SELECT ${JOB_COLS} FROM ${t.jobs} WHERE id IN (?)`,
    children: `-- leasehold finishJobs (workflow): the children of these parents
      SELECT parent_id, child_id FROM ${t.dependencies} WHERE parent_id IN (?)`,
    lockChildren: `-- leasehold finishJobs (workflow): lock these children in id order and read what waits
      SELECT j.id, j.status, j.pending_parents, j.parent_policy, j.batch_id
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

/** Jobs per multi-row INSERT of a workflow (21 placeholders each). */
const FLOW_CHUNK = 500;

/** A batch's writes once its counts moved (`b` as locked, with the new counts): its row, and its callback when it became done. */
function batchWrites(sql: WorkflowsSql, b: Row, next: Omit<BatchRow, 'callbackType' | 'createdAt' | 'finishedAt' | 'onSuccessOnly'>, now: string): Stmt[] {
  const row = toBatchRow({ ...b, ...next });
  const done = row.state === 'done' && b.state !== 'done';
  const out: Stmt[] = [{ sql: sql.saveBatch, values: [row.state, row.pending, row.succeeded, row.dead, row.cancelled, done ? now : (b.finished_at ?? null), b.id] }];
  if (!done || !batchFires(row)) return out;
  const c = JSON.parse(String(b.callback)) as { queue: string; payload: unknown; priority: number; runAfterMs: number; maxAttempts: number; timeoutMs: number; maxRuntimeMs: number };
  out.push({ sql: sql.fire, values: [c.queue, row.callbackType, JSON.stringify(batchCallbackPayload(c.payload, row)), c.priority, now, micros(c.runAfterMs), c.maxAttempts, batchCallbackKey(row.id), c.timeoutMs, c.maxRuntimeMs, now, now] });
  return out;
}

/** Inside the finish's transaction: the members that ended count for their batches (locked in id order); a closed batch left with nothing pending is done and fires. */
export async function settleBatches(c: Queryable, sql: WorkflowsSql, members: readonly { batchId: bigint; status: FinishParams['status'] }[], now: string): Promise<Stmt[]> {
  const ended = members.filter((m) => m.status === 'succeeded' || m.status === 'dead' || m.status === 'cancelled');
  const ids = [...new Set(ended.map((m) => m.batchId))].sort(byId);
  if (ids.length === 0) return [];
  const rows = await run(c, sql.lockBatches, [JSON.stringify(ids.map(String))]);
  return rows.flatMap((b) => {
    const mine = ended.filter((m) => m.batchId === BigInt(String(b.id)));
    const count = (s: string) => Number(b[s]) + mine.filter((m) => m.status === s).length;
    const pending = Number(b.pending) - mine.length;
    return batchWrites(sql, b, { id: String(b.id), state: b.state === 'closed' && pending <= 0 ? 'done' : (b.state as BatchState), total: Number(b.total), pending, succeeded: count('succeeded'), dead: count('dead'), cancelled: count('cancelled') }, now);
  });
}

/**
 * Inside the finish's transaction, for landed parents with dependents: succeeded ones release
 * their waiting children, dead or cancelled ones cancel their waiting descendants under policy
 * 'cancel'. Children are locked in id order before they are read; returns the writes, sent with
 * the finish's COMMIT.
 */
export async function settleChildren(
  c: Queryable, sql: WorkflowsSql, parents: readonly { id: bigint; status: FinishParams['status'] }[], now: string,
  /** told of each batch member it cancels, so the batch counts it */
  cancelledMember: (batchId: bigint) => void,
): Promise<Stmt[]> {
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
    if (doomed.has(id) && r.parent_policy === 'cancel') {
      if (r.batch_id !== null) cancelledMember(BigInt(String(r.batch_id)));
      return [{ sql: sql.doom, values: [now, now, doomed.get(id), id] }];
    }
    const n = released.get(id);
    if (n === undefined) return [];
    const left = Number(r.pending_parents) - n;
    return [{ sql: sql.release, values: [left, left, left, now, now, id] }];
  });
}

/** An operator's cancel of these locked jobs ends them for their workflows and batches as a finish would: the writes to send in its transaction. */
export async function settleCancelled(c: Queryable, sql: WorkflowsSql, jobs: readonly Row[], now: string): Promise<Stmt[]> {
  const members = jobs.filter((r) => r.batch_id != null).map((r) => ({ batchId: BigInt(String(r.batch_id)), status: 'cancelled' as const }));
  const parents = jobs.filter((r) => r.dependents != null).map((r) => ({ id: BigInt(String(r.id)), status: 'cancelled' as const }));
  const out = parents.length > 0 ? await settleChildren(c, sql, parents, now, (batchId) => members.push({ batchId, status: 'cancelled' })) : [];
  if (members.length > 0) out.push(...(await settleBatches(c, sql, members, now)));
  return out;
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

  async createBatch(p: NewBatch): Promise<BatchRow> {
    const c = p.callback;
    const callback = JSON.stringify({ queue: c.queue, payload: c.payload, priority: c.priority, runAfterMs: c.runAfterMs, maxAttempts: c.maxAttempts, timeoutMs: c.timeoutMs, maxRuntimeMs: c.maxRuntimeMs });
    return this.db.tx('createBatch', async (q) => {
      const res = await exec(q, this.sql.createBatch, [p.onSuccessOnly ? 1 : 0, callback, c.type]);
      return toBatchRow((await run(q, this.sql.getBatch, [BigInt(String(res.insertId))]))[0]!);
    });
  }

  /** One transaction: the batch locked; an open one closed, done (and firing) when nothing is pending. */
  async closeBatch(p: { batchId: string }): Promise<BatchRow | null> {
    const id = idParam(p.batchId);
    if (id === null) return null;
    return this.db.tx('closeBatch', async (q) => {
      const [b] = await run(q, this.sql.lockBatches, [JSON.stringify([String(id)])]);
      if (!b) return null;
      if (b.state !== 'open') return toBatchRow(b);
      const now = String((await run(q, `-- leasehold closeBatch: the database's now
      SELECT ${NOW} AS now`))[0]!.now);
      const next = { id: String(b.id), state: (Number(b.pending) <= 0 ? 'done' : 'closed') as BatchState, total: Number(b.total), pending: Number(b.pending), succeeded: Number(b.succeeded), dead: Number(b.dead), cancelled: Number(b.cancelled) };
      for (const st of batchWrites(this.sql, b, next, now)) await exec(q, st.sql, st.values);
      return toBatchRow((await run(q, this.sql.getBatch, [id]))[0]!);
    }).then((b) => wakeIf(this.db, b?.state === 'done', b));
  }

  async dependencies(p: { jobId: string; limit: number }): Promise<JobDependencies> {
    const id = idParam(p.jobId);
    const rows = id === null ? [] : await this.db.one('dependencies', (q) => run(q, this.sql.dependencies, [id, p.limit, id, p.limit]));
    return { parents: rows.filter((r) => r.side === 'parent').map((r) => String(r.id)), children: rows.filter((r) => r.side === 'child').map((r) => String(r.id)) };
  }

  async getBatch(p: { batchId: string }): Promise<BatchRow | null> {
    const id = idParam(p.batchId);
    if (id === null) return null;
    const [b] = await this.db.one('getBatch', (q) => run(q, this.sql.getBatch, [id]));
    return b ? toBatchRow(b) : null;
  }

  /** One transaction: the batch's count first (none inserted unless it is open), the jobs in multi-row INSERTs in input order (ids consecutive, checked when read back), then the edges. */
  async insertFlow(p: FlowInsert): Promise<JobRow[]> {
    const batchId = p.batchId === undefined ? null : (idParam(p.batchId) ?? 0n);
    const payloads = p.jobs.map((j) => JSON.stringify(j.payload));
    const dependents = p.jobs.map(() => 0);
    for (const j of p.jobs) for (const at of j.parents) dependents[at]! += 1;
    const adopted = new Map<string, number>();
    for (const id of p.jobs.flatMap((j) => j.storedParents ?? [])) adopted.set(id, (adopted.get(id) ?? 0) + 1);
    const values = (i: number, { status, pendingParents, failedBy: f }: FlowStart, j = p.jobs[i]!): unknown[] => [
      j.queue, j.type, payloads[i], status, j.priority, j.runAt ? utcLiteral(j.runAt) : null, micros(j.runAfterMs), j.maxAttempts, j.timeoutMs, j.maxRuntimeMs,
      j.traceContext ?? null, j.concurrencyKey ?? null, pendingParents, dependents[i]! > 0 ? dependents[i] : null, pendingParents === null ? null : p.onParentFailure,
      batchId, f ? 1 : 0, f ? 'PARENT_FAILED' : null, f ? parentFailedMessage(f) : null];
    const { idStep } = await this.db.features();
    return this.db.tx('insertFlow', async (c) => {
      // locked: a finish of a stored parent waits for this commit, then reads the new edges (READ COMMITTED reads per statement)
      const ask = [...adopted.keys()].flatMap((id) => idParam(id) ?? []).sort(byId);
      const found = ask.length === 0 ? [] : await run(c, this.sql.lockParents, [JSON.stringify(ask.map(String))]);
      const starts = startFlow(p.jobs, new Map(found.map((r) => [String(r.id), String(r.status)])), p.onParentFailure);
      const ended = starts.filter((s) => s.status === 'cancelled').length;
      if (batchId !== null && (await exec(c, this.sql.join, [p.jobs.length, p.jobs.length - ended, ended, batchId])).affectedRows === 0) return [];
      for (const [id, n] of adopted) await exec(c, this.sql.adopt, [n, idParam(id)]);
      const ids: string[] = [];
      for (let from = 0; from < p.jobs.length; from += FLOW_CHUNK) {
        const n = Math.min(FLOW_CHUNK, p.jobs.length - from);
        const res = await exec(c, this.sql.insertJobs(n), Array.from({ length: n }, (_, k) => values(from + k, starts[from + k]!)).flat());
        for (let k = 0; k < n; k++) ids.push(String(BigInt(String(res.insertId)) + BigInt(k) * idStep));
      }
      const edges = p.jobs.flatMap((j, i) => [...(j.storedParents ?? []).map((id) => [String(idParam(id)), ids[i]]), ...j.parents.map((at) => [ids[at], ids[i]])]);
      for (let from = 0; from < edges.length; from += FLOW_CHUNK * 4) {
        const part = edges.slice(from, from + FLOW_CHUNK * 4);
        await exec(c, this.sql.insertEdges(part.length), part.flat());
      }
      const rows = new Map((await run(c, this.sql.readJobs, [ids])).map((r) => [String(r.id), r]));
      // anything else would hand out (and link) the wrong jobs
      if (!ids.every((id, i) => rows.get(id)?.type === p.jobs[i]!.type && rows.get(id)?.payload === payloads[i])) {
        throw new Error('mysql insertFlow: the inserted rows could not be matched to the workflow (non-consecutive auto-increment ids?)');
      }
      return ids.map((id) => toJobRow(rows.get(id)!));
    }).then((rows) => wakeIf(this.db, rows.some((r) => r.status === 'queued' && r.runAt <= r.createdAt), rows));
  }
}
