/**
 * An operator's bounded reads of workflows and batches: the workflow a job belongs to (for its
 * graph), the batch list and a batch's members. Input checked before storage is asked.
 */
import { ValidationError } from '../core/index.js';
import type { BatchRow, Storage, WorkflowGraph, WorkflowNode } from '../core/storage.js';
import { checkId } from './client-input.js';

/** The most jobs of a workflow one read returns, and its default. */
export const WORKFLOW_GRAPH_LIMIT = { max: 1_000, default: 500 } as const;

function checkLimit(limit: number | undefined, fallback: number, max: number): number {
  const n = limit ?? fallback;
  if (!Number.isInteger(n) || n < 1 || n > max) throw new ValidationError('INVALID_OPTION', `limit must be a whole number from 1 to ${max}; got ${String(limit)}`);
  return n;
}

const checkBatchId = (id: string, what = 'batch id'): string => {
  if (typeof id !== 'string' || !/^[1-9][0-9]{0,18}$/.test(id)) throw new ValidationError('INVALID_OPTION', `not a ${what}: ${JSON.stringify(id)}`);
  return id;
};

/** The workflow a job belongs to: at most `limit` jobs (default 500, at most 1,000), those nearest it, and the edges between them. */
export function workflowGraph(storage: Storage, jobId: string, limit?: number): Promise<WorkflowGraph> {
  return storage.workflows.graph({ jobId: checkId(jobId), limit: checkLimit(limit, WORKFLOW_GRAPH_LIMIT.default, WORKFLOW_GRAPH_LIMIT.max) });
}

/** Batches newest first, below `beforeId` (1–1000 a page, default 50). */
export function listBatches(storage: Storage, params: { beforeId?: string | undefined; limit?: number | undefined } = {}): Promise<BatchRow[]> {
  const beforeId = params.beforeId === undefined ? undefined : checkBatchId(params.beforeId);
  return storage.workflows.listBatches({ beforeId, limit: checkLimit(params.limit, 50, 1_000) });
}

/** A batch's members in id order, above `afterId` (1–1000 a page, default 50). */
export function batchMembers(storage: Storage, params: { batchId: string; afterId?: string | undefined; limit?: number | undefined }): Promise<WorkflowNode[]> {
  const afterId = params.afterId === undefined ? undefined : checkId(params.afterId);
  return storage.workflows.batchMembers({ batchId: checkBatchId(params.batchId), afterId, limit: checkLimit(params.limit, 50, 1_000) });
}
