/**
 * `client.batches`: a group of jobs whose last one to end (succeeded, dead or cancelled) enqueues
 * a callback job once, however many workers finish the last ones at the same moment. Members may
 * be added while the batch is open; `close` says no more will come.
 */
import { LeaseholdError, ValidationError } from '../core/index.js';
import type { BatchRow, JobRow } from '../core/storage.js';
import type { Enqueuer } from './client-enqueue.js';
import { type FlowItem, type FlowOptions, enqueueFlow } from './client-workflows.js';
import type { EnqueueItem, JobList } from './job-types.js';

/** What a new batch does when it is done. */
export interface BatchOptions<J extends JobList = JobList> {
  /** the callback job: its payload (a JSON object) gets `batch: { id, total, succeeded, dead, cancelled }` */
  onComplete: EnqueueItem<J>;
  /** true: the callback is enqueued only if every member succeeded (default false: whatever they ended as) */
  onSuccessOnly?: boolean;
}

/** The batches of a client's storage. */
export class Batches<J extends JobList = JobList> {
  constructor(private readonly enqueuer: Enqueuer) {}

  /** A new open batch; its callback is checked as `enqueue` checks a job, before anything is written. */
  async create(options: BatchOptions<J>): Promise<BatchRow> {
    const cb = options.onComplete as EnqueueItem;
    const o = cb.options;
    if (o?.tx !== undefined || o?.idempotencyKey !== undefined || o?.unique !== undefined) {
      throw new ValidationError('INVALID_OPTION', 'a batch callback takes no tx, idempotencyKey or unique option (the batch gives it its key)');
    }
    if (cb.payload === null || typeof cb.payload !== 'object' || Array.isArray(cb.payload)) {
      throw new ValidationError('INVALID_PAYLOAD', "a batch callback's payload must be a JSON object (the counts are added to it as `batch`)");
    }
    const callback = await this.enqueuer.prepare(cb);
    return this.enqueuer.storage.workflows.createBatch({ callback, onSuccessOnly: options.onSuccessOnly === true });
  }

  /**
   * Add jobs to an open batch in one transaction: plain items, or a workflow's (with `key` and
   * `dependsOn`, as `enqueueFlow` takes them, and its options). Returns them in input order.
   *
   * @throws `LeaseholdError` (INVALID_STATE) when the batch is closed, done or unknown (nothing written)
   */
  async add(batchId: string, items: readonly (EnqueueItem<J> | FlowItem<J>)[], options?: FlowOptions): Promise<JobRow[]> {
    if (items.length === 0) return [];
    const keyed = (items as readonly (EnqueueItem & { key?: string })[]).map((it, i) => ({ ...it, key: it.key ?? `#${i}` }) as FlowItem);
    const written = await enqueueFlow(this.enqueuer, keyed, options, batchId);
    if (!written) throw new LeaseholdError('INVALID_STATE', `batch ${batchId} is not open: it takes no more members`);
    return keyed.map((it) => written[it.key]!);
  }

  /** No more members: the batch is done (and its callback enqueued) once nothing is pending, at once if nothing is. */
  async close(batchId: string): Promise<BatchRow> {
    const b = await this.enqueuer.storage.workflows.closeBatch({ batchId });
    if (!b) throw new LeaseholdError('INVALID_STATE', `no batch ${batchId}`);
    return b;
  }

  /** One batch, or null. */
  get(batchId: string): Promise<BatchRow | null> {
    return this.enqueuer.storage.workflows.getBatch({ batchId });
  }
}
