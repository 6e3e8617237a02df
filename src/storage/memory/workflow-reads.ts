/** The bounded reads of workflows and batches in memory, as the SQL adapters answer them: a workflow's graph, the batch list and a batch's members. */
import { edgesWithin, nearestJobs } from '../../core/workflow-reads.js';
import type { BatchRow, WorkflowGraph, WorkflowNode, WorkflowReads } from '../../core/storage.js';
import { type MemoryDb, type StoredJob, copyDate, copyDateOrNull } from './db.js';
import { MemoryWorkflows } from './workflows.js';

const byId = (a: string, b: string) => Number(a) - Number(b);
const node = (j: StoredJob): WorkflowNode => ({ id: j.id, type: j.type, status: j.status });

/** The workflow store with the dashboard's reads. */
export class MemoryWorkflowReads extends MemoryWorkflows implements WorkflowReads {
  readonly #db: MemoryDb;

  constructor(db: MemoryDb) {
    super(db);
    this.#db = db;
  }

  async graph(p: { jobId: string; limit: number }): Promise<WorkflowGraph> {
    const db = this.#db;
    db.now();
    if (!db.jobs.has(p.jobId)) return { jobs: [], edges: [], capped: false };
    const all = [...db.jobs.values()].flatMap((j) => (j.children ?? []).map((c) => [j.id, c] as const));
    const { ids, capped } = nearestJobs(p.jobId, all, p.limit);
    return { jobs: ids.sort(byId).map((id) => node(db.jobs.get(id)!)), edges: edgesWithin(ids, all), capped };
  }

  async listBatches(p: { beforeId?: string | undefined; limit: number }): Promise<BatchRow[]> {
    this.#db.now();
    const below = p.beforeId === undefined ? Infinity : Number(p.beforeId);
    return [...this.#db.batches.values()].filter((b) => Number(b.id) < below).sort((a, b) => byId(b.id, a.id)).slice(0, p.limit)
      .map(({ callback: _, ...b }) => ({ ...b, createdAt: copyDate(b.createdAt), finishedAt: copyDateOrNull(b.finishedAt) }));
  }

  async batchMembers(p: { batchId: string; afterId?: string | undefined; limit: number }): Promise<WorkflowNode[]> {
    this.#db.now();
    const above = p.afterId === undefined ? -Infinity : Number(p.afterId);
    return [...this.#db.jobs.values()].filter((j) => j.batchId === p.batchId && Number(j.id) > above).sort((a, b) => byId(a.id, b.id)).slice(0, p.limit).map(node);
  }
}
