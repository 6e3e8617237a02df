/**
 * `client.enqueueFlow`: a workflow — jobs that wait for other jobs of the same call or for jobs
 * already stored — checked whole (each item as `enqueue` checks it, the graph by
 * core/workflow-graph.ts) and written in one transaction. A job with parents is `waiting` until
 * they all succeeded.
 */
import { type StoredParent, ValidationError, planFlow } from '../core/index.js';
import type { FlowJob, JobRow, NewJob, ParentPolicy } from '../core/storage.js';
import type { Enqueuer } from './client-enqueue.js';
import { LocalBus } from './env.js';
import type { EnqueueItem, JobList } from './job-types.js';

/**
 * One job of a workflow: what `enqueueMany` takes, named by a key unique in the call, and the
 * jobs it waits for: keys of the same call, or `{ jobId }` of jobs already stored.
 */
export type FlowItem<J extends JobList = JobList> = EnqueueItem<J> & {
  /** names the job within the call (what other items' `dependsOn` give) */
  key: string;
  /**
   * the jobs it runs after: it is claimed only once every one of them succeeded. A stored job
   * (`{ jobId: '123' }`) that already succeeded counts as done; one that ended dead or cancelled
   * applies `onParentFailure` at once; an id that names no job is a ValidationError, nothing written.
   */
  dependsOn?: readonly (string | StoredParent)[];
};

/** How a workflow treats its waiting jobs. */
export interface FlowOptions {
  /**
   * when a job they wait for ends dead or cancelled: 'cancel' (default) cancels every waiting
   * job downstream of it (last error PARENT_FAILED); 'hold' leaves them waiting for an operator
   * (retrying the failed job and its success releases them)
   */
  onParentFailure?: ParentPolicy;
}

/**
 * Check and write a workflow; the jobs as written, by key.
 *
 * @param batchId - add every job to this batch (client-batches.ts); null when it is not open
 */
export async function enqueueFlow(enqueuer: Enqueuer, items: readonly FlowItem[], options: FlowOptions = {}, batchId?: string): Promise<Record<string, JobRow> | null> {
  const policy = options.onParentFailure ?? 'cancel';
  if (policy !== 'cancel' && policy !== 'hold') throw new ValidationError('INVALID_FLOW', `onParentFailure must be 'cancel' or 'hold'; got ${JSON.stringify(policy)}`);
  if (!Array.isArray(items)) throw new ValidationError('INVALID_FLOW', 'enqueueFlow takes an array of jobs');
  for (const it of items) {
    const o = it.options;
    if (o?.tx !== undefined || o?.idempotencyKey !== undefined || o?.unique !== undefined) {
      throw new ValidationError('INVALID_FLOW', `"${String(it.key)}": a workflow's jobs take no tx, idempotencyKey or unique option`);
    }
    if (it.dependsOn !== undefined && !Array.isArray(it.dependsOn)) {
      throw new ValidationError('INVALID_FLOW', `"${String(it.key)}": dependsOn must be an array of keys of this call and { jobId } of stored jobs`);
    }
  }
  const order = planFlow(items.map((it) => ({ key: it.key, dependsOn: it.dependsOn })));
  const rows: NewJob[] = [];
  for (const it of items) rows.push(await enqueuer.prepare(it));
  const position = new Map(order.map((i, at) => [items[i]!.key, at]));
  const jobs: FlowJob[] = order.map((i) => {
    const deps: readonly (string | StoredParent)[] = items[i]!.dependsOn ?? [];
    const stored = deps.flatMap((d) => (typeof d === 'string' ? [] : [d.jobId]));
    return { ...rows[i]!, parents: deps.flatMap((d) => (typeof d === 'string' ? [position.get(d)!] : [])), ...(stored.length > 0 ? { storedParents: stored } : {}) };
  });
  const written = await enqueuer.storage.workflows.insertFlow({ jobs, onParentFailure: policy, ...(batchId === undefined ? {} : { batchId }) });
  if (written.length < jobs.length) return null;
  LocalBus.for(enqueuer.storage).jobsEnqueued();
  return Object.fromEntries(order.map((i, at) => [items[i]!.key, written[at]!]));
}
