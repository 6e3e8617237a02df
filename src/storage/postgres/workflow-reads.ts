/** The bounded reads of workflows and batches on PostgreSQL: a workflow's graph, the batch list and a batch's members, one statement each. */
import type { BatchRow, WorkflowGraph, WorkflowNode, WorkflowReads } from '../../core/storage.js';
import type { JobStatus } from '../../core/status.js';
import type { Db } from './db.js';
import { toBatchRow, validId } from './sql.js';
import { PostgresWorkflows } from './workflows.js';

/** The batch members' index, in the baseline migration: members are rare rows, as failed_idx. */
export const batchMembersIndex = (s: string): string => `
-- a batch's members, in id order, for its page
CREATE INDEX jobs_batch_idx ON ${s}.jobs (batch_id, id) WHERE batch_id IS NOT NULL;
`;

function readsSql(s: string) {
  const within = 'ANY (ARRAY(SELECT id FROM ids))';
  return {
    /** $1 job id, $2 limit */
    graph: `-- leasehold graph: the jobs reached from a job through edges either way (breadth first, at most $2), the edges between them, and a row 'more' when more were reachable
WITH RECURSIVE wf(id) AS (
  SELECT id FROM ${s}.jobs WHERE id = $1::bigint
  UNION
  -- lateral, so each step reads its jobs' edges by the primary key and the child index
  SELECT n.id FROM wf CROSS JOIN LATERAL (
    SELECT child_id AS id FROM ${s}.job_dependencies WHERE parent_id = wf.id
    -- a pruned parent's edge leads nowhere: not followed
    UNION ALL SELECT d.parent_id FROM ${s}.job_dependencies d WHERE d.child_id = wf.id AND EXISTS (SELECT 1 FROM ${s}.jobs p WHERE p.id = d.parent_id)) n
), ids AS MATERIALIZED (
  -- the limit stops the recursion: it reads no further than the rows taken
  SELECT id FROM wf LIMIT $2::int
)
SELECT 'job' AS kind, j.id::text AS id, j.type, j.status, NULL::text AS child FROM ${s}.jobs j WHERE j.id = ${within}
UNION ALL
SELECT 'edge', d.parent_id::text, NULL, NULL, d.child_id::text FROM ${s}.job_dependencies d WHERE d.parent_id = ${within} AND d.child_id = ${within}
UNION ALL
SELECT 'more', NULL, NULL, NULL, NULL
WHERE EXISTS (SELECT 1 FROM ${s}.job_dependencies d WHERE d.parent_id = ${within} AND NOT d.child_id = ${within})
   OR EXISTS (SELECT 1 FROM ${s}.job_dependencies d WHERE d.child_id = ${within} AND NOT d.parent_id = ${within} AND EXISTS (SELECT 1 FROM ${s}.jobs p WHERE p.id = d.parent_id))`,
    /** $1 below this id (null: none), $2 limit */
    listBatches: `-- leasehold listBatches: batches newest first, below a cursor
SELECT * FROM ${s}.batches WHERE $1::bigint IS NULL OR id < $1::bigint ORDER BY id DESC LIMIT $2::int`,
    /** $1 batch, $2 above this id, $3 limit */
    batchMembers: `-- leasehold batchMembers: a batch's members in id order, above a cursor (jobs_batch_idx)
SELECT id, type, status FROM ${s}.jobs WHERE batch_id = $1::bigint AND id > $2::bigint ORDER BY id LIMIT $3::int`,
  };
}

/** The workflow store with the dashboard's reads. */
export class PostgresWorkflowReads extends PostgresWorkflows implements WorkflowReads {
  readonly #reads: ReturnType<typeof readsSql>;

  constructor(db: Db) {
    super(db);
    this.#reads = readsSql(db.q);
  }

  async graph(p: { jobId: string; limit: number }): Promise<WorkflowGraph> {
    const id = validId(p.jobId);
    const rows = id === null ? [] : await this.db.run('graph', this.#reads.graph, [id, p.limit]);
    const jobs = rows.filter((r) => r.kind === 'job').map((r) => ({ id: String(r.id), type: String(r.type), status: r.status as JobStatus })).sort((a, b) => Number(a.id) - Number(b.id));
    const edges = rows.filter((r) => r.kind === 'edge').map((r) => [String(r.id), String(r.child)] as [string, string]).sort((a, b) => Number(a[0]) - Number(b[0]) || Number(a[1]) - Number(b[1]));
    return { jobs, edges, capped: rows.some((r) => r.kind === 'more') };
  }

  async listBatches(p: { beforeId?: string | undefined; limit: number }): Promise<BatchRow[]> {
    const before = p.beforeId === undefined ? null : validId(p.beforeId);
    if (p.beforeId !== undefined && before === null) return [];
    return (await this.db.run('listBatches', this.#reads.listBatches, [before, p.limit])).map(toBatchRow);
  }

  async batchMembers(p: { batchId: string; afterId?: string | undefined; limit: number }): Promise<WorkflowNode[]> {
    const batch = validId(p.batchId);
    const after = p.afterId === undefined ? '0' : validId(p.afterId);
    if (batch === null || after === null) return [];
    const rows = await this.db.run('batchMembers', this.#reads.batchMembers, [batch, after, p.limit]);
    return rows.map((r) => ({ id: String(r.id), type: String(r.type), status: r.status as JobStatus }));
  }
}
