/**
 * Bulk actions: retry, cancel or delete every job matching a filter, done on the server in
 * bounded batches (jobs.bulk: one transaction each, at most `batchSize` jobs, over a range of at
 * most RANGE_IDS ids, so a batch reads a bounded number of rows whatever the filter matches),
 * each change recorded under one bulk id. The jobs are those there when the action starts (up
 * to the newest id then); a job enqueued during it is left alone. Between batches the event loop
 * turns, so this process's claims and heartbeats never wait behind a long action. `previewBulk`
 * counts first, for the operator's confirmation.
 */
import { randomBytes } from 'node:crypto';
import { setImmediate as turn } from 'node:timers/promises';
import { ValidationError } from '../core/index.js';
import { BULK_MAX_LIMIT, checkBulkBatch, checkBulkRange } from '../core/operator.js';
import type { BulkAction, JobFilter, OperatorRef, Storage } from '../core/storage.js';
import { LocalBus } from './env.js';

/** ids per batch's range: what one batch may read, matching or not */
export const RANGE_IDS = 10_000;
/** ids per count's range */
const COUNT_RANGE_IDS = 100_000;

export const DEFAULT_BULK = { batchSize: 500, max: 100_000 } as const;

export interface BulkRequest {
  action: BulkAction;
  filter: JobFilter;
}

export interface BulkOptions extends BulkRequest, OperatorRef {
  /** jobs per batch, one transaction each (default 500, at most 1000) */
  batchSize?: number;
  /** stop after this many jobs changed (default 100,000); `done` says whether it got through */
  max?: number;
  /** ids per batch's range, what one batch may read (default RANGE_IDS) */
  rangeIds?: number;
  /** count only (as previewBulk); nothing is changed */
  dryRun?: boolean;
  /** stops between batches */
  signal?: AbortSignal;
  /** after each batch that changed jobs: the totals so far (awaited before the next batch) */
  onProgress?: (p: { changed: number; throughId: string }) => void | Promise<void>;
}

export interface BulkResult {
  /** recorded in every event of this action */
  bulkId: string;
  /** dry run: how many jobs match now (at most `max`); else how many were changed (deleted, for 'delete') */
  count: number;
  /** the jobs changed, ascending (empty on a dry run) */
  ids: string[];
  /** false when `max` or the signal stopped it before the newest job it started with (dry run: more than `max` match) */
  done: boolean;
}

const min = (a: bigint, b: bigint): bigint => (a < b ? a : b);

/** The newest job's id, or null when there is none: where an action started now ends. */
async function newestId(storage: Storage): Promise<string | null> {
  const [j] = await storage.jobs.list({ limit: 1 });
  return j ? j.id : null;
}

function positive(name: string, v: number | undefined, fallback: number, most: number): number {
  if (v === undefined) return fallback;
  if (!Number.isInteger(v) || v < 1 || v > most) throw new ValidationError('INVALID_OPTION', `${name} must be an integer from 1 to ${most}; got ${String(v)}`);
  return v;
}

/**
 * How many jobs the action would change now (the jobs up to the newest, range by range),
 * counted up to `cap` (default: the run's default max): past it `exact` is false.
 */
export async function previewBulk(storage: Storage, req: BulkRequest, cap: number = DEFAULT_BULK.max): Promise<{ count: number; exact: boolean }> {
  checkBulkRange({ ...req, afterId: null, throughId: '1' });
  positive('cap', cap, cap, Number.MAX_SAFE_INTEGER);
  const last = await newestId(storage);
  let n = 0;
  for (let after = 0n; last !== null && after < BigInt(last); after = min(after + BigInt(COUNT_RANGE_IDS), BigInt(last))) {
    if (n >= cap) return { count: cap, exact: false };
    const through = min(after + BigInt(COUNT_RANGE_IDS), BigInt(last));
    n += await storage.jobs.bulkCount({ ...req, afterId: after === 0n ? null : String(after), throughId: String(through) });
    await turn();
  }
  return n > cap ? { count: cap, exact: false } : { count: n, exact: true };
}

/** Run a bulk action to the newest job there was when it started, or until `max` or the signal. */
export async function runBulk(storage: Storage, o: BulkOptions): Promise<BulkResult> {
  const batchSize = positive('batchSize', o.batchSize, DEFAULT_BULK.batchSize, BULK_MAX_LIMIT);
  const max = positive('max', o.max, DEFAULT_BULK.max, Number.MAX_SAFE_INTEGER);
  const range = BigInt(positive('rangeIds', o.rangeIds, RANGE_IDS, Number.MAX_SAFE_INTEGER));
  const bulkId = `bulk-${Date.now().toString(36)}-${randomBytes(6).toString('hex')}`;
  // every check of a batch before the first, so bad input fails also when there is no job
  checkBulkBatch({ ...o, afterId: null, throughId: '1', limit: batchSize, bulkId });
  if (o.dryRun) {
    const preview = await previewBulk(storage, o, max);
    return { bulkId, count: preview.count, ids: [], done: preview.exact };
  }
  const last = await newestId(storage);
  const ids: string[] = [];
  let after = 0n;
  const end = last === null ? 0n : BigInt(last);
  while (after < end && ids.length < max && !o.signal?.aborted) {
    const through = min(after + range, end);
    const r = await storage.jobs.bulk({
      action: o.action, filter: o.filter, actor: o.actor, source: o.source, bulkId,
      afterId: after === 0n ? null : String(after), throughId: String(through), limit: Math.min(batchSize, max - ids.length),
    });
    ids.push(...r.ids);
    after = BigInt(r.next);
    if (r.ids.length > 0) {
      announce(storage, o.action, r.ids);
      await o.onProgress?.({ changed: ids.length, throughId: r.next });
    }
    await turn();
  }
  return { bulkId, count: ids.length, ids, done: after >= end };
}

/** What this process's workers learn at once: retried jobs are due, cancelled ones' handlers are signalled. */
function announce(storage: Storage, action: BulkAction, ids: readonly string[]): void {
  const bus = LocalBus.for(storage);
  if (action === 'retry') bus.jobsEnqueued();
  else if (action === 'cancel') for (const id of ids) bus.jobCancelled(id);
}
