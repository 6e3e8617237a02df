/** The bounded reads of workflows and batches on SQLite: a workflow's graph, the batch list and a batch's members, one statement each. */
import type { BatchRow, WorkflowGraph, WorkflowNode, WorkflowReads } from '../../core/storage.js';
import type { JobStatus } from '../../core/status.js';
import type { SqliteDb } from './db.js';
import { toBatchRow, toSqlId } from './sql.js';
import { SqliteWorkflows } from './workflows.js';

/** The batch list's and members' index, in the baseline migration: members are rare rows, as failed_idx. */
export const BATCH_MEMBERS_INDEX = `
-- a batch's members, in id order, for its page
CREATE INDEX {p}jobs_batch_idx ON {p}jobs (batch_id, id) WHERE batch_id IS NOT NULL;
`;

const READS_SQL = {
  graph: `-- leasehold workflows.graph: the jobs reached from a job through edges either way (breadth first, at most @limit), the edges between them, and a row 'more' when more were reachable (a pruned parent's edge leads nowhere: not followed)
    WITH RECURSIVE wf(id) AS (
      SELECT id FROM {p}jobs WHERE id = @id
      UNION SELECT d.child_id FROM wf JOIN {p}job_dependencies d ON d.parent_id = wf.id
      UNION SELECT d.parent_id FROM wf JOIN {p}job_dependencies d ON d.child_id = wf.id JOIN {p}jobs pj ON pj.id = d.parent_id
      LIMIT @limit
    ), ids AS MATERIALIZED (SELECT id FROM wf)
    SELECT 'job' AS kind, j.id AS id, j.type AS type, j.status AS status, NULL AS child FROM ids JOIN {p}jobs j ON j.id = ids.id
    UNION ALL
    SELECT 'edge', d.parent_id, NULL, NULL, d.child_id FROM ids JOIN {p}job_dependencies d ON d.parent_id = ids.id WHERE d.child_id IN (SELECT id FROM ids)
    UNION ALL
    SELECT 'more', NULL, NULL, NULL, NULL
    WHERE EXISTS (SELECT 1 FROM ids JOIN {p}job_dependencies d ON d.parent_id = ids.id WHERE d.child_id NOT IN (SELECT id FROM ids))
       OR EXISTS (SELECT 1 FROM ids JOIN {p}job_dependencies d ON d.child_id = ids.id JOIN {p}jobs pj ON pj.id = d.parent_id WHERE d.parent_id NOT IN (SELECT id FROM ids))`,
  listBatches: `-- leasehold workflows.listBatches: batches newest first, below a cursor
    SELECT * FROM {p}batches WHERE id < @before ORDER BY id DESC LIMIT @limit`,
  batchMembers: `-- leasehold workflows.batchMembers: a batch's members in id order, above a cursor (jobs_batch_idx)
    SELECT id, type, status FROM {p}jobs WHERE batch_id = @batch AND id > @after ORDER BY batch_id, id LIMIT @limit`,
} as const;

interface GraphRow { kind: 'job' | 'edge' | 'more'; id: number | null; type: string | null; status: string | null; child: number | null }

/** The workflow store with the dashboard's reads. */
export class SqliteWorkflowReads extends SqliteWorkflows implements WorkflowReads {
  readonly #db: SqliteDb;

  constructor(db: SqliteDb) {
    super(db);
    this.#db = db;
  }

  async graph(p: { jobId: string; limit: number }): Promise<WorkflowGraph> {
    const id = toSqlId(p.jobId);
    const rows = id === null ? [] : this.#db.read(() => this.#db.stmt(READS_SQL.graph).all({ id, limit: p.limit }) as GraphRow[]);
    const jobs = rows.filter((r) => r.kind === 'job').map((r) => ({ id: String(r.id), type: String(r.type), status: r.status as JobStatus })).sort((a, b) => Number(a.id) - Number(b.id));
    const edges = rows.filter((r) => r.kind === 'edge').map((r) => [String(r.id), String(r.child)] as [string, string]).sort((a, b) => Number(a[0]) - Number(b[0]) || Number(a[1]) - Number(b[1]));
    return { jobs, edges, capped: rows.some((r) => r.kind === 'more') };
  }

  async listBatches(p: { beforeId?: string | undefined; limit: number }): Promise<BatchRow[]> {
    const before = p.beforeId === undefined ? Number.MAX_SAFE_INTEGER : toSqlId(p.beforeId);
    if (before === null) return [];
    return this.#db.read(() => this.#db.stmt(READS_SQL.listBatches).all({ before, limit: p.limit }) as Parameters<typeof toBatchRow>[0][]).map(toBatchRow);
  }

  async batchMembers(p: { batchId: string; afterId?: string | undefined; limit: number }): Promise<WorkflowNode[]> {
    const batch = toSqlId(p.batchId);
    const after = p.afterId === undefined ? 0 : toSqlId(p.afterId);
    if (batch === null || after === null) return [];
    const rows = this.#db.read(() => this.#db.stmt(READS_SQL.batchMembers).all({ batch, after, limit: p.limit }) as { id: number; type: string; status: JobStatus }[]);
    return rows.map((r) => ({ id: String(r.id), type: r.type, status: r.status }));
  }
}
