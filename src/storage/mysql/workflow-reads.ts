/**
 * The bounded reads of workflows and batches on MySQL/MariaDB: a workflow's graph, the batch list
 * and a batch's members. MariaDB cannot stop a recursive read at a row count, so the graph is two
 * statements: the workflow's edges level by level (at most as many levels as jobs shown), then
 * the jobs nearest the one asked for (core/workflow-reads.ts).
 */
import { edgesWithin, nearestJobs } from '../../core/workflow-reads.js';
import type { BatchRow, WorkflowGraph, WorkflowNode, WorkflowReads } from '../../core/storage.js';
import type { JobStatus } from '../../core/status.js';
import { type Db, run } from './db.js';
import { type Tables, idParam, toBatchRow } from './sql.js';
import { MysqlWorkflows } from './workflows.js';

/** The batch members' key, in the baseline migration's jobs table (InnoDB appends the id). */
export const BATCH_MEMBERS_KEY = `,
        -- a batch's members, in id order, for its page
        KEY {p}jobs_batch (batch_id)`;

function readsSql(t: Tables) {
  return {
    // levels: MariaDB stops the recursion there (a warning, not an error); the N nearest jobs are never further than N - 1 levels
    edges: (levels: number | null): string => `-- leasehold graph: the edges of the workflow reached from a job either way, each read from its parent (a pruned parent's edge not followed)
      ${levels === null ? '' : `SET STATEMENT max_recursive_iterations = ${levels} FOR `}WITH RECURSIVE wf(id) AS (
        SELECT id FROM ${t.jobs} WHERE id = ?
        UNION SELECT d.child_id FROM wf JOIN ${t.dependencies} d ON d.parent_id = wf.id
        UNION SELECT d.parent_id FROM wf JOIN ${t.dependencies} d ON d.child_id = wf.id JOIN ${t.jobs} pj ON pj.id = d.parent_id
      )
      SELECT 'job' AS kind, wf.id AS parent_id, NULL AS child_id FROM wf WHERE wf.id = ?
      UNION ALL SELECT 'edge', d.parent_id, d.child_id FROM wf JOIN ${t.dependencies} d ON d.parent_id = wf.id`,
    jobs: `-- leasehold graph: the jobs shown
      SELECT id, type, status FROM ${t.jobs} WHERE id IN (?) ORDER BY id`,
    listBatches: `-- leasehold listBatches: batches newest first, below a cursor
      SELECT * FROM ${t.batches} WHERE id < ? ORDER BY id DESC LIMIT ?`,
    batchMembers: `-- leasehold batchMembers: a batch's members in id order, above a cursor (jobs_batch)
      SELECT id, type, status FROM ${t.jobs} WHERE batch_id = ? AND id > ? ORDER BY id LIMIT ?`,
  };
}

/** The workflow store with the dashboard's reads. */
export class MysqlWorkflowReads extends MysqlWorkflows implements WorkflowReads {
  readonly #reads: ReturnType<typeof readsSql>;

  constructor(db: Db) {
    super(db);
    this.#reads = readsSql(db.t);
  }

  async graph(p: { jobId: string; limit: number }): Promise<WorkflowGraph> {
    const id = idParam(p.jobId);
    if (id === null) return { jobs: [], edges: [], capped: false };
    const { returning: mariadb } = await this.db.features();
    return this.db.one('graph', async (q) => {
      const rows = await run(q, this.#reads.edges(mariadb ? p.limit : null), [id, id]);
      if (!rows.some((r) => r.kind === 'job')) return { jobs: [], edges: [], capped: false };
      const all = rows.filter((r) => r.kind === 'edge').map((r) => [String(r.parent_id), String(r.child_id)] as const);
      const { ids, capped } = nearestJobs(String(id), all, p.limit);
      const jobs = await run(q, this.#reads.jobs, [ids]);
      return { jobs: jobs.map((r) => ({ id: String(r.id), type: String(r.type), status: r.status as JobStatus })), edges: edgesWithin(ids, all), capped };
    });
  }

  async listBatches(p: { beforeId?: string | undefined; limit: number }): Promise<BatchRow[]> {
    const before = p.beforeId === undefined ? 2n ** 64n - 1n : idParam(p.beforeId);
    if (before === null) return [];
    return (await this.db.one('listBatches', (q) => run(q, this.#reads.listBatches, [before, p.limit]))).map(toBatchRow);
  }

  async batchMembers(p: { batchId: string; afterId?: string | undefined; limit: number }): Promise<WorkflowNode[]> {
    const batch = idParam(p.batchId);
    const after = p.afterId === undefined ? 0n : idParam(p.afterId);
    if (batch === null || after === null) return [];
    const rows = await this.db.one('batchMembers', (q) => run(q, this.#reads.batchMembers, [batch, after, p.limit]));
    return rows.map((r) => ({ id: String(r.id), type: String(r.type), status: r.status as JobStatus }));
  }
}
